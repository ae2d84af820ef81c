//! `conduct nginx-conf`: the shipped nginx configuration. It serves the rendered tree exactly
//! as [`crate::http::static_site`] does (clean URLs, content negotiation between a path's
//! JSON, HTML and text twins, `?format=`, content types, cache headers, no dotfiles) and proxies
//! the dynamic routes of [`crate::routes::ROUTES`], and only those, to the api.
//!
//! Two variants, by where the tree is ([`Origin`]): a directory nginx reads from disk, or a
//! bucket nginx reads over HTTP (a public-read bucket or its website endpoint). From a bucket,
//! nginx asks for the object a request resolves to (the exact name, or the clean URL's best
//! twin by `Accept` and `?format=`), and hands anything the bucket does not hold to the api,
//! which answers it exactly (another twin, a 404 or 406 problem).
//!
//! Every rule here mirrors a rule of `http/static_site.rs` or `http/dispatch.rs`;
//! `tests/tests/nginx.rs` runs nginx with this config next to the api and compares every file
//! of a real tree, on a directory and on a bucket.

use crate::http::reply::{ALLOWED_HEADERS, EXPOSED_HEADERS};
use crate::routes::{Handler, ROUTES};

/// Where nginx reads the tree.
#[derive(Debug, Clone)]
pub enum Origin {
    /// A site directory (an absolute path).
    Dir(String),
    /// A bucket's base URL, the tree's prefix included: path style
    /// (`http://127.0.0.1:9000/bucket/prefix`) or virtual-hosted
    /// (`https://bucket.s3.eu-west-1.amazonaws.com/prefix`). Read without credentials.
    Bucket(String),
}

/// What the generated config needs.
#[derive(Debug, Clone)]
pub struct NginxOptions {
    /// Where the tree is.
    pub origin: Origin,
    /// The api's base URL, e.g. `http://127.0.0.1:8402`.
    pub upstream: String,
    /// nginx `listen` value, e.g. `8080` or `127.0.0.1:8080`.
    pub listen: String,
    /// nginx `server_name`.
    pub server_name: String,
}

/// Quality levels an `Accept` range can give a representation, lowest first: `0` is "not
/// acceptable", `a`..`j` are q in [0.0x, 0.9x] by first decimal, `k` is q = 1.
const LEVELS: [char; 12] = ['0', 'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j', 'k'];

/// The twins a clean URL can resolve to, in the api's tie order: (code, media range, its
/// `type/*` range as a regex).
const TWINS: [(char, &str, &str); 3] = [
    ('j', "application/json", "application/\\*"),
    ('h', "text/html", "text/\\*"),
    ('t', "text/plain", "text/\\*"),
];

/// The complete nginx.conf, usable as is with `nginx -p PREFIX -c PREFIX/nginx.conf`.
pub fn nginx_conf(o: &NginxOptions) -> String {
    let (upstream, dropped) = proxy_target(&o.upstream);
    let mut s = String::new();
    s.push_str(&header(o, &upstream));
    if let Some(path) = dropped {
        s.push_str(&format!(
            "# note: the path {path:?} of --upstream is ignored: requests reach the api with \
             their own paths\n"
        ));
    }
    s.push_str(MAIN);
    s.push_str("http {\n");
    s.push_str(HTTP_BASICS);
    s.push_str(&accept_maps());
    s.push_str(&order_map());
    s.push_str(RESOLVE_MAPS);
    s.push_str(&problem_map());
    match &o.origin {
        Origin::Dir(root) => s.push_str(&server(o, root, &upstream)),
        Origin::Bucket(url) => s.push_str(&bucket_server(o, url, &upstream)),
    }
    s.push_str("}\n");
    s
}

/// The request paths proxied to the api, as nginx `location` matchers, one per distinct
/// dynamic path of [`ROUTES`] in table order: `= /path` for a literal path, a quoted regex for
/// a pattern (`{X}` matches one non-empty segment).
pub fn proxied_locations() -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for r in ROUTES {
        if !matches!(r.handler, Handler::Dynamic(_)) {
            continue;
        }
        let loc = location_for(r.info.path);
        if !out.contains(&loc) {
            out.push(loc);
        }
    }
    out
}

/// The `location` matcher of one route pattern.
fn location_for(pattern: &str) -> String {
    if !pattern.contains('{') {
        return format!("= {pattern}");
    }
    let mut re = String::from("^");
    let mut rest = pattern;
    while let Some((lit, after)) = rest.split_once('{') {
        re.push_str(&regex_escape(lit));
        re.push_str("[^/]+");
        rest = after.split_once('}').map(|(_, s)| s).unwrap_or("");
    }
    re.push_str(&regex_escape(rest));
    re.push('$');
    format!("~ \"{re}\"")
}

fn regex_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if "\\.+*?()[]{}^$|\"".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// `scheme://authority` of the upstream URL (what `proxy_pass` needs so the request URI is
/// passed as the client sent it), and the path part it dropped, if any.
fn proxy_target(upstream: &str) -> (String, Option<String>) {
    let u = upstream.trim();
    let (scheme, rest) = match u.split_once("://") {
        Some((sch, rest)) => (sch, rest),
        None => ("http", u),
    };
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    let dropped = (!path.trim_matches('/').is_empty()).then(|| path.to_owned());
    (format!("{scheme}://{authority}"), dropped)
}

/// Quote a value for nginx (paths may hold spaces).
fn quoted(v: &str) -> String {
    format!("\"{}\"", v.replace('\\', "\\\\").replace('"', "\\\""))
}

fn header(o: &NginxOptions, upstream: &str) -> String {
    let from = match &o.origin {
        Origin::Dir(root) => format!("{root} from disk"),
        Origin::Bucket(url) => format!(
            "in the bucket {url} (read without credentials;\n\
             # what it does not hold is answered by the api)"
        ),
    };
    format!(
        "# nginx.conf for conduct, generated by `conduct nginx-conf` (conduct {version}).\n\
         #\n\
         # Serves the rendered tree {from} with the api's clean URLs and content\n\
         # negotiation, and proxies only the dynamic routes (writes and lookups) to {upstream}.\n\
         # Start it with a prefix directory that holds this file:\n\
         #   nginx -p /var/lib/conduct-nginx/ -c /var/lib/conduct-nginx/nginx.conf\n\
         # The pid file, logs and temp directories are relative to that prefix. Without a `user`\n\
         # directive the workers run as nobody, so the tree must be world-readable. Add TLS\n\
         # (or put a CDN in front) for a public deployment. See /library/MIRRORS.\n\
         #\n\
         # Content negotiation approximates the api's q-value arithmetic: for each twin the\n\
         # most specific matching range of Accept (exact, then type/*, then */*) gives its q,\n\
         # rounded down to one decimal; the highest wins, ties go JSON, HTML, text; no Accept\n\
         # means JSON. Two q-values within the same tenth, repeated or unparseable q\n\
         # parameters, and percent-encoded ?format= values may choose differently than the api.\n\n",
        version = env!("CARGO_PKG_VERSION"),
    )
}

const MAIN: &str = "\
worker_processes auto;
pid nginx.pid;
error_log error.log warn;

events {
    worker_connections 1024;
}

";

const HTTP_BASICS: &str = "    access_log access.log;
    server_tokens off;
    sendfile on;
    tcp_nopush on;
    keepalive_timeout 65s;

    # Temp files under the prefix, so the config needs nothing outside it.
    client_body_temp_path client_body_temp;
    proxy_temp_path proxy_temp;
    fastcgi_temp_path fastcgi_temp;
    uwsgi_temp_path uwsgi_temp;
    scgi_temp_path scgi_temp;

    # The api's request body limit (4 MiB), and room for x402 payment headers.
    client_max_body_size 4m;
    large_client_header_buffers 4 32k;
    proxy_buffer_size 64k;
    proxy_buffers 8 64k;
    proxy_busy_buffers_size 128k;

    # The api's content types (static_site.rs `content_type`); a file named `checkpoint` is a
    # text note (see the checkpoint location). charset adds `; charset=utf-8` to these text
    # types (text/html is always one of them).
    types {
        application/json json;
        text/html html;
        text/markdown md;
        text/plain txt;
        application/xml xml;
        application/atom+xml atom;
        image/svg+xml svg;
        text/css css;
        image/png png;
    }
    default_type application/octet-stream;
    charset_types text/plain text/markdown text/css;

";

/// For each twin, the q its most specific `Accept` range gives it, as a level of [`LEVELS`].
fn accept_maps() -> String {
    let mut s = String::from(
        "    # Content negotiation (static_site.rs `negotiate`). For each twin: the first range of\n\
         \x20   # the highest specificity (exact, type/*, */*) and its q parameter ...\n",
    );
    for (code, exact, wild) in TWINS {
        let range = |media: &str| {
            format!(
                "\"~*(?:^|,)\\s*{media}\\s*(?=[;,]|$)(?:[^,]*?;\\s*(?-i:q)=([^,;]*))?\" \"q=$1\""
            )
        };
        s.push_str(&format!(
            "    map $http_accept $conduct_q{code}_raw {{\n\
             \x20       default absent;\n\
             \x20       \"\" \"q=\";\n\
             \x20       \"~^\\s*$\" \"q=\";\n\
             \x20       {};\n\
             \x20       {};\n\
             \x20       {};\n\
             \x20   }}\n",
            range(exact),
            range(wild),
            range("\\*/\\*"),
        ));
    }
    s.push_str(
        "    # ... and that q as a level: 0 unacceptable, a..j by first decimal, k for 1.\n",
    );
    for (code, ..) in TWINS {
        s.push_str(&format!(
            "    map $conduct_q{code}_raw $conduct_q{code} {{\n\
             \x20       default k;\n\
             \x20       absent 0;\n\
             \x20       \"q=\" k;\n\
             \x20       \"~^q=\\s*-\" 0;\n\
             \x20       \"~^q=\\s*(?:0+(?:\\.0*)?|0*\\.0+)\\s*$\" 0;\n"
        ));
        for (d, level) in LEVELS[1..11].iter().enumerate() {
            s.push_str(&format!("        \"~^q=\\s*0*\\.{d}\" {level};\n"));
        }
        s.push_str("    }\n");
    }
    s
}

/// The acceptable twins of one level triple (json, html, text), best first, ties in the api's
/// order (JSON, HTML, text): e.g. `"hj"`; empty when none is acceptable.
fn order_code(levels: [char; 3]) -> String {
    let mut ranked: Vec<(std::cmp::Reverse<usize>, usize, char)> = TWINS
        .iter()
        .zip(levels)
        .enumerate()
        .filter(|(_, (_, l))| *l != '0')
        .map(|(i, ((code, ..), l))| (std::cmp::Reverse(level_index(l)), i, *code))
        .collect();
    ranked.sort();
    ranked.into_iter().map(|(.., c)| c).collect()
}

fn level_index(l: char) -> usize {
    LEVELS.iter().position(|&x| x == l).unwrap_or(0)
}

/// Every level triple to its order code (12^3 entries, generated, several to a line).
fn order_map() -> String {
    let mut s = String::from(
        "    # The three levels (json, html, text) to the acceptable twins, best first.\n\
         \x20   map \"$conduct_qj$conduct_qh$conduct_qt\" $conduct_order {\n\
         \x20       default \"\";\n",
    );
    for j in LEVELS {
        for h in LEVELS {
            s.push_str("       ");
            for t in LEVELS {
                let code = order_code([j, h, t]);
                let value = if code.is_empty() {
                    "\"\"".to_owned()
                } else {
                    code
                };
                s.push_str(&format!(" {j}{h}{t} {value};"));
            }
            s.push('\n');
        }
    }
    s.push_str("    }\n\n");
    s
}

const RESOLVE_MAPS: &str = r#"    # ?format=json|html|txt|text overrides Accept; any other value is a 400 (app.rs).
    map $args $conduct_format_raw {
        default none;
        "~(?:^|&)format(?:=([^&]*))?(?:&|$)" "=$1";
    }
    map $conduct_format_raw $conduct_format {
        default bad;
        none "";
        "=json" json;
        "=html" html;
        "=txt" txt;
        "=text" txt;
    }
    map "$conduct_format:$conduct_order" $conduct_pick {
        default "";
        "~^json:" j;
        "~^html:" h;
        "~^txt:" t;
        "~^:(?<conduct_o>.*)$" $conduct_o;
    }

    # The clean URL: the decoded path without slashes at either end; `/` is `index`.
    map $uri $conduct_rel {
        "~^/*(?<conduct_r>.*?)/*$" $conduct_r;
    }
    map $conduct_rel $conduct_stem {
        "" index;
        default $conduct_rel;
    }
    # An exact file is served as it is, unless ?format= asks for a twin.
    map "$conduct_format:$conduct_rel" $conduct_exact {
        default "";
        "~^:(?<conduct_e>.+)$" /$conduct_e;
    }
    # The candidates, in order of preference.
    map $conduct_pick $conduct_c1 {
        default "";
        "~^j" /$conduct_stem.json;
        "~^h" /$conduct_stem.html;
        "~^t" /$conduct_stem.txt;
    }
    map $conduct_pick $conduct_c2 {
        default "";
        "~^.j" /$conduct_stem.json;
        "~^.h" /$conduct_stem.html;
        "~^.t" /$conduct_stem.txt;
    }
    map $conduct_pick $conduct_c3 {
        default "";
        "~^..j" /$conduct_stem.json;
        "~^..h" /$conduct_stem.html;
        "~^..t" /$conduct_stem.txt;
    }
    # Vary: Accept when the answer was chosen among two or more twins.
    map "$conduct_exact_hit:$conduct_twins" $conduct_vary {
        default "";
        "~^:.." Accept;
    }
    # Nothing acceptable: 406 when the path has twins (405 for other methods), else 404.
    map "$request_method:$conduct_twins" $conduct_unmatched {
        default 404;
        "~^(?:GET|HEAD):." 406;
        "~^[^:]+:." 405;
    }
    # Cache-Control by the file served (static_site.rs `file_response`).
    map $uri $conduct_cache {
        default "public, max-age=60";
        "~/log/tile/" "public, max-age=31536000, immutable";
        "~/log/checkpoint$" "no-cache";
    }
    # Dotfiles and dot segments (`..`, also percent-encoded) are refused, except .well-known.
    map $request_uri $conduct_unsafe {
        default 0;
        "~*^[^?]*(?:/|%2f)(?:\.|%2e)(?!well-known(?:/|%2f|\?|$))" 1;
    }

"#;

fn static_block(extra: &str) -> String {
    format!(
        "        if ($conduct_format = bad) {{
            return 400;
        }}
        if ($request_method = OPTIONS) {{
            add_header Access-Control-Allow-Origin \"*\";
            add_header Access-Control-Allow-Methods \"GET, HEAD, POST, OPTIONS\";
            add_header Access-Control-Allow-Headers \"{ALLOWED_HEADERS}\";
            add_header Access-Control-Max-Age 86400;
            add_header Access-Control-Expose-Headers \"{EXPOSED_HEADERS}\";
            add_header X-Content-Type-Options nosniff;
            return 204;
        }}
{extra}        error_page 400 404 405 406 413 @conduct_problem;
        charset utf-8;
        add_header Cache-Control $conduct_cache;
        add_header Vary $conduct_vary;
        add_header Access-Control-Allow-Origin \"*\" always;
        add_header Access-Control-Expose-Headers \"{EXPOSED_HEADERS}\" always;
        add_header X-Content-Type-Options nosniff always;
        try_files $conduct_exact $conduct_c1 $conduct_c2 $conduct_c3 @conduct_unmatched;
"
    )
    .lines()
    .map(|l| format!("    {l}\n"))
    .collect()
}

fn server(o: &NginxOptions, root: &str, upstream: &str) -> String {
    let mut s = format!(
        "    server {{
        listen {listen};
        server_name {name};
        root {root};
        autoindex off;

        # (Not 400: nginx answers a malformed request line before any location exists.)
        error_page 404 405 406 413 @conduct_problem;
        if ($conduct_unsafe) {{
            return 404;
        }}
        # Which twins the clean URL has, and whether the exact file exists.
        set $conduct_twins \"\";
        if (-f $document_root/$conduct_stem.json) {{
            set $conduct_twins \"${{conduct_twins}}j\";
        }}
        if (-f $document_root/$conduct_stem.html) {{
            set $conduct_twins \"${{conduct_twins}}h\";
        }}
        if (-f $document_root/$conduct_stem.txt) {{
            set $conduct_twins \"${{conduct_twins}}t\";
        }}
        set $conduct_exact_hit \"\";
        if (-f $document_root$conduct_exact) {{
            set $conduct_exact_hit 1;
        }}

{proxying}",
        listen = o.listen,
        name = o.server_name,
        root = quoted(root),
        proxying = proxying(upstream),
    );
    s.push_str("\n        # Everything else is the tree, from disk.\n        location / {\n");
    s.push_str(&static_block(""));
    s.push_str("        }\n");
    s.push_str(
        "        # The log checkpoint has no extension and is a text note.\n        location ~ /checkpoint/*$ {\n",
    );
    s.push_str(&static_block("        default_type text/plain;\n"));
    s.push_str("        }\n");
    s.push_str(&unmatched_and_problems());
    s
}

/// The bucket variant's server block: reads of the tree go to the bucket, and whatever the
/// bucket does not hold (or a read it cannot answer: another method, a bad `?format=`, no
/// acceptable twin) goes to the api, which answers as it does from its own bucket reads.
fn bucket_server(o: &NginxOptions, url: &str, upstream: &str) -> String {
    let (origin, dropped) = proxy_target(url);
    let base = dropped.map_or(String::new(), |p| p.trim_end_matches('/').to_owned());
    let (scheme, authority) = origin.split_once("://").unwrap_or(("http", &origin));
    let port = if scheme == "https" { 443 } else { 80 };
    let server = if authority.contains(':') {
        authority.to_owned()
    } else {
        format!("{authority}:{port}")
    };
    let host = authority.split(':').next().unwrap_or(authority);
    let tls = if scheme == "https" {
        format!("            proxy_ssl_server_name on;\n            proxy_ssl_name {host};\n")
    } else {
        String::new()
    };
    format!(
        "    # The object a read asks the bucket for: a path's exact name when it has an extension
    # or is under log/ (and ?format= asks for no twin), else the clean URL's best twin; empty
    # when there is none to ask for (the api answers).
    map \"$conduct_format:$conduct_rel\" $conduct_named {{
        default \"\";
        \"~^:(?<conduct_n>log/.+|.*\\.[A-Za-z0-9]+)$\" /$conduct_n;
    }}
    map $conduct_named $conduct_object {{
        \"\" $conduct_c1;
        default $conduct_named;
    }}
    # A twin chosen by Accept varies by it (the api says so only of a path with two twins).
    map $conduct_named $conduct_bucket_vary {{
        \"\" Accept;
        default \"\";
    }}

    upstream conduct_bucket {{
        server {server};
        keepalive 16;
    }}

    server {{
        listen {listen};
        server_name {name};

        # (Not 400: nginx answers a malformed request line before any location exists.)
        error_page 404 405 406 413 @conduct_problem;
        if ($conduct_unsafe) {{
            return 404;
        }}
        # (What the directory variant finds on disk; unknown here, the api decides.)
        set $conduct_twins \"\";
        set $conduct_exact_hit \"\";

{proxying}
        # Everything else is the tree, from the bucket: its objects carry their own
        # Content-Type and Cache-Control (immutable, or no-cache for a head).
        location / {{
            error_page 418 = @conduct_api;
            if ($conduct_format = bad) {{
                return 418;
            }}
            if ($request_method !~ ^(?:GET|HEAD)$) {{
                return 418;
            }}
            if ($conduct_object = \"\") {{
                return 418;
            }}
            proxy_intercept_errors on;
            error_page 400 403 404 405 = @conduct_api;
            proxy_pass {scheme}://conduct_bucket{base}$conduct_object;
            proxy_set_header Host {authority};
            proxy_set_header Connection \"\";
            proxy_set_header Authorization \"\";
            proxy_set_header Cookie \"\";
{tls}            proxy_hide_header Set-Cookie;
            proxy_hide_header x-amz-request-id;
            proxy_hide_header x-amz-id-2;
            proxy_hide_header x-amz-version-id;
            proxy_hide_header x-amz-server-side-encryption;
            add_header Vary $conduct_bucket_vary;
            add_header Access-Control-Allow-Origin \"*\" always;
            add_header Access-Control-Expose-Headers \"{EXPOSED_HEADERS}\" always;
            add_header X-Content-Type-Options nosniff always;
        }}
        location @conduct_api {{
            proxy_pass {upstream};
        }}
{end}",
        listen = o.listen,
        name = o.server_name,
        proxying = proxying(upstream),
        end = unmatched_and_problems(),
    )
}

/// The proxy settings and the api's dynamic routes, as every variant has them.
fn proxying(upstream: &str) -> String {
    let mut s = String::from(
        "        # The dynamic routes of the api's route table, every method (the api answers 405
        # itself). Payment headers (PAYMENT-SIGNATURE, X-PAYMENT) pass through as sent, and the
        # api's response headers (PAYMENT-REQUIRED, PAYMENT-RESPONSE, ...) come back untouched.
        # Run the api with --trust-forwarded-for so its free caps count the client address.
        # X-Forwarded-For is replaced, not appended to, so a client cannot pick the address
        # its caps are counted against; behind a CDN, set `real_ip_header` and
        # `set_real_ip_from` so that $remote_addr is the client.
        proxy_http_version 1.1;
        proxy_set_header Host $http_host;
        proxy_set_header X-Forwarded-For $remote_addr;
        proxy_set_header X-Forwarded-Proto $scheme;
        proxy_set_header X-Real-IP $remote_addr;
        proxy_set_header Connection \"\";
        proxy_redirect off;
        proxy_read_timeout 300s;
        # Answers stream through as the api writes them (server-sent events, e.g. MCP).
        proxy_buffering off;
",
    );
    for loc in proxied_locations() {
        s.push_str(&format!(
            "        location {loc} {{\n            proxy_pass {upstream};\n        }}\n"
        ));
    }
    s
}

/// The end of a server block: the unmatched location, and nginx's own problems.
fn unmatched_and_problems() -> String {
    let problems = problem_ifs();
    format!(
        "        location @conduct_unmatched {{
            if ($conduct_unmatched = 405) {{
                return 405;
            }}
            if ($conduct_unmatched = 406) {{
                return 406;
            }}
            return 404;
        }}
        # nginx's own refusals are RFC 9457 problems, like the api's (library/ERRORS.md).
        location @conduct_problem {{
            types {{}}
            default_type application/problem+json;
            add_header Access-Control-Allow-Origin \"*\" always;
            add_header Access-Control-Expose-Headers \"{EXPOSED_HEADERS}\" always;
            add_header X-Content-Type-Options nosniff always;
{problems}            return 404 $conduct_problem;
        }}
    }}
"
    )
}

/// The problems nginx itself answers: (status, type, title, detail).
const PROBLEMS: [(u16, &str, &str, &str); 5] = [
    (
        400,
        "bad-format",
        "Unknown format",
        "format= is not one of json, html, txt",
    ),
    (
        404,
        "not-found",
        "Not found",
        "nothing is served at this path; see /catalog for every endpoint",
    ),
    (
        405,
        "method-not-allowed",
        "Method not allowed",
        "this path answers GET, HEAD, OPTIONS",
    ),
    (
        406,
        "not-acceptable",
        "No acceptable representation",
        "this path is served as application/json, text/html or text/plain; use ?format= or Accept",
    ),
    (
        413,
        "too-large",
        "Body too large",
        "request bodies are limited to 4194304 bytes (4 MiB)",
    ),
];

/// `$status` to the problem document nginx answers with.
fn problem_map() -> String {
    let mut s = String::from("    map $status $conduct_problem {\n");
    for (status, kind, title, detail) in PROBLEMS {
        let body = serde_json::json!({
            "type": format!("/library/ERRORS.md#{kind}"),
            "title": title,
            "status": status,
            "detail": detail,
        });
        let key = if status == 404 {
            "default".to_owned()
        } else {
            status.to_string()
        };
        s.push_str(&format!("        {key} '{body}';\n"));
    }
    s.push_str("    }\n\n");
    s
}

/// The `if` blocks of the problem location, one per status but 404 (its fallback).
fn problem_ifs() -> String {
    let mut s = String::new();
    for (status, ..) in PROBLEMS {
        if status == 404 {
            continue;
        }
        let allow = if status == 405 {
            format!(
                "                add_header Allow \"GET, HEAD, OPTIONS\" always;
                add_header Access-Control-Allow-Origin \"*\" always;
                add_header Access-Control-Expose-Headers \"{EXPOSED_HEADERS}\" always;
                add_header X-Content-Type-Options nosniff always;
"
            )
        } else {
            String::new()
        };
        s.push_str(&format!(
            "            if ($status = {status}) {{
{allow}                return {status} $conduct_problem;
            }}
"
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::static_site::{negotiate, Variant};

    fn conf() -> String {
        nginx_conf(&NginxOptions {
            origin: Origin::Dir("/srv/conduct/site".into()),
            upstream: "http://127.0.0.1:8402/".into(),
            listen: "8080".into(),
            server_name: "_".into(),
        })
    }

    #[test]
    fn every_dynamic_route_is_proxied_and_no_static_one() {
        let c = conf();
        for r in ROUTES {
            let loc = location_for(r.info.path);
            let block = format!("location {loc} {{\n            proxy_pass http://127.0.0.1:8402;");
            match r.handler {
                Handler::Dynamic(_) => assert!(c.contains(&block), "{} not proxied", r.info.path),
                Handler::Static => assert!(!c.contains(&block), "{} proxied", r.info.path),
            }
        }
        assert_eq!(c.matches("proxy_pass ").count(), proxied_locations().len());
        for p in [
            "/profile",
            "/vow/report/demo",
            "/card",
            "/health",
            "/vow/message",
        ] {
            assert!(proxied_locations().contains(&format!("= {p}")), "{p}");
        }
        assert!(proxied_locations().contains(&"~ \"^/log/proof/[^/]+$\"".to_owned()));
        assert!(proxied_locations().contains(&"~ \"^/vow/[^/]+/verify_text$\"".to_owned()));
    }

    #[test]
    fn upstream_is_scheme_and_authority() {
        assert_eq!(
            proxy_target("http://127.0.0.1:8402/"),
            ("http://127.0.0.1:8402".into(), None)
        );
        assert_eq!(
            proxy_target("https://api.example:443/x"),
            ("https://api.example:443".into(), Some("/x".into()))
        );
        assert_eq!(
            proxy_target("127.0.0.1:1"),
            ("http://127.0.0.1:1".into(), None)
        );
    }

    #[test]
    fn conf_is_complete_and_balanced() {
        let c = conf();
        for must in [
            "pid nginx.pid;",
            "error_log error.log",
            "root \"/srv/conduct/site\";",
            "listen 8080;",
            "client_max_body_size 4m;",
            "add_header Vary $conduct_vary;",
            "\"public, max-age=31536000, immutable\"",
            "proxy_set_header X-Forwarded-For",
            "proxy_set_header Host",
        ] {
            assert!(c.contains(must), "missing {must}");
        }
        assert_eq!(c.matches('{').count(), c.matches('}').count());
        assert!(
            !c.contains("user "),
            "no user directive: the operator chooses"
        );
    }

    /// The generated order table agrees with the api's `negotiate` for every level triple.
    #[test]
    fn order_table_matches_negotiate() {
        let q = |l: char| match level_index(l) {
            0 => "0".to_owned(),
            11 => "1".to_owned(),
            i => format!("0.{}5", i - 1),
        };
        let all = [Variant::Json, Variant::Html, Variant::Text];
        let code_of = |v: Variant| match v {
            Variant::Json => 'j',
            Variant::Html => 'h',
            Variant::Text => 't',
        };
        let table = order_map();
        let mut n = 0;
        for j in LEVELS {
            for h in LEVELS {
                for t in LEVELS {
                    let accept = format!(
                        "application/json;q={}, text/html;q={}, text/plain;q={}",
                        q(j),
                        q(h),
                        q(t)
                    );
                    let code = order_code([j, h, t]);
                    // The api's pick among the remaining twins, repeatedly.
                    let mut avail: Vec<Variant> = all.to_vec();
                    let mut want = String::new();
                    while let Some(v) = negotiate(Some(&accept), &avail) {
                        want.push(code_of(v));
                        avail.retain(|&x| x != v);
                    }
                    assert_eq!(code, want, "{accept}");
                    assert!(table.contains(&format!(
                        " {j}{h}{t} {value};",
                        value = if code.is_empty() { "\"\"" } else { &code }
                    )));
                    n += 1;
                }
            }
        }
        assert_eq!(n, 1728);
    }

    #[test]
    fn a_bucket_conf_reads_the_bucket_and_hands_misses_to_the_api() {
        let c = nginx_conf(&NginxOptions {
            origin: Origin::Bucket("https://conduct.s3.eu-west-1.amazonaws.com/site/".into()),
            upstream: "http://127.0.0.1:8402".into(),
            listen: "8080".into(),
            server_name: "_".into(),
        });
        for must in [
            "server conduct.s3.eu-west-1.amazonaws.com:443;",
            "proxy_pass https://conduct_bucket/site$conduct_object;",
            "proxy_set_header Host conduct.s3.eu-west-1.amazonaws.com;",
            "proxy_ssl_name conduct.s3.eu-west-1.amazonaws.com;",
            "error_page 400 403 404 405 = @conduct_api;",
            "location @conduct_api {\n            proxy_pass http://127.0.0.1:8402;",
        ] {
            assert!(c.contains(must), "missing {must}");
        }
        assert!(!c.contains("root "), "no directory");
        assert!(!c.contains("try_files"));
        assert_eq!(c.matches('{').count(), c.matches('}').count());
        // Every dynamic route still goes to the api, once.
        assert_eq!(
            c.matches("proxy_pass http://127.0.0.1:8402;").count(),
            proxied_locations().len() + 1
        );
        let plain = nginx_conf(&NginxOptions {
            origin: Origin::Bucket("http://127.0.0.1:9000/b/p".into()),
            upstream: "http://127.0.0.1:8402".into(),
            listen: "8080".into(),
            server_name: "_".into(),
        });
        assert!(plain.contains("server 127.0.0.1:9000;"));
        assert!(plain.contains("proxy_pass http://conduct_bucket/b/p$conduct_object;"));
        assert!(!plain.contains("proxy_ssl"));
    }

    #[test]
    fn locations_of_patterns() {
        assert_eq!(location_for("/vow"), "= /vow");
        assert_eq!(
            location_for("/vow/{id}/chain/{k}"),
            "~ \"^/vow/[^/]+/chain/[^/]+$\""
        );
        assert_eq!(location_for("/a.b/{x}"), "~ \"^/a\\.b/[^/]+$\"");
    }
}
