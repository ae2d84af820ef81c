//! `conduct nginx-conf`: the shipped nginx configuration that serves the static tree like the
//! api does and proxies the dynamic routes to it. (Being built.)

/// What the generated config needs.
#[derive(Debug, Clone)]
pub struct NginxOptions {
    /// The site directory nginx serves.
    pub root: String,
    /// The api's base URL, e.g. `http://127.0.0.1:8402`.
    pub upstream: String,
    /// nginx `listen` value, e.g. `8080` or `127.0.0.1:8080`.
    pub listen: String,
    /// nginx `server_name`.
    pub server_name: String,
}

/// The complete nginx.conf.
pub fn nginx_conf(o: &NginxOptions) -> String {
    format!("# not built yet: root {} upstream {}\n", o.root, o.upstream)
}
