//! The shipped nginx config (`conduct nginx-conf`) end to end: Debian's nginx serves a real
//! rendered tree next to the api, and for every file of the tree, at its exact path and its
//! clean URL, with every Accept and `?format=` variant, both answer the same status, the same
//! bytes, the same Content-Type, Cache-Control and Vary. The dynamic routes reach the api
//! through nginx; dotfiles and traversal are refused.

use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use conduct_tests::{client, conduct_bin, trace, Server};
use serde_json::{json, Value};

/// Debian's nginx (tests/run.sh installs nginx-light).
fn nginx_bin() -> PathBuf {
    let on_path = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .unwrap_or_default();
    on_path
        .into_iter()
        .chain([PathBuf::from("/usr/sbin"), PathBuf::from("/usr/local/sbin")])
        .map(|d| d.join("nginx"))
        .find(|p| p.is_file())
        .unwrap_or_else(|| {
            panic!(
                "nginx is not installed: run the project's test command (tests/run.sh), which \
                 installs Debian's nginx-light"
            )
        })
}

/// A running nginx (non-daemon child) on its own prefix directory.
struct Nginx {
    child: Child,
    addr: String,
    prefix: tempfile::TempDir,
}

impl Nginx {
    fn start(root: &Path, upstream: &str) -> Nginx {
        Nginx::start_on(&["--root".as_ref(), root.as_os_str()], upstream)
    }

    /// nginx with the config `conduct nginx-conf` prints for `origin` (`--root DIR` or
    /// `--bucket-url URL`).
    fn start_on(origin: &[&std::ffi::OsStr], upstream: &str) -> Nginx {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let addr = format!("127.0.0.1:{port}");
        let out = Command::new(conduct_bin())
            .arg("nginx-conf")
            .args(origin)
            .args(["--upstream", upstream, "--listen", &addr])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "conduct nginx-conf: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let prefix = tempfile::tempdir().unwrap();
        // Workers run as nobody when the master is root: they need to reach the temp dirs.
        std::fs::set_permissions(prefix.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let conf = prefix.path().join("nginx.conf");
        std::fs::write(&conf, &out.stdout).unwrap();
        let mut p = prefix.path().as_os_str().to_owned();
        p.push("/");
        let t = Command::new(nginx_bin())
            .arg("-p")
            .arg(&p)
            .arg("-c")
            .arg(&conf)
            .arg("-t")
            .output()
            .unwrap();
        assert!(
            t.status.success(),
            "nginx -t refuses the generated config:\n{}",
            String::from_utf8_lossy(&t.stderr)
        );
        let child = Command::new(nginx_bin())
            .arg("-p")
            .arg(&p)
            .arg("-c")
            .arg(&conf)
            .args(["-g", "daemon off;"])
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let n = Nginx {
            child,
            addr,
            prefix,
        };
        let deadline = Instant::now() + Duration::from_secs(15);
        while TcpStream::connect(&n.addr).is_err() {
            assert!(
                Instant::now() < deadline,
                "nginx did not start: {}",
                n.error_log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        n
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.addr, path)
    }

    fn error_log(&self) -> String {
        std::fs::read_to_string(self.prefix.path().join("error.log")).unwrap_or_default()
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One raw HTTP/1.1 exchange (no default headers, the path sent exactly as given).
struct Answer {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

fn raw(addr: &str, method: &str, path: &str, accept: Option<&str>) -> Answer {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut req = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    if let Some(a) = accept {
        req.push_str(&format!("Accept: {a}\r\n"));
    }
    req.push_str("\r\n");
    s.write_all(req.as_bytes()).unwrap();
    let mut buf = Vec::new();
    s.read_to_end(&mut buf).unwrap();
    let end = buf
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or_else(|| panic!("no header end from {addr} for {path}"));
    let head = String::from_utf8_lossy(&buf[..end]).into_owned();
    let mut lines = head.split("\r\n");
    let status: u16 = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("bad status line from {addr} for {path}: {head}"));
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    assert!(
        !headers
            .iter()
            .any(|(k, v)| k == "transfer-encoding" && v.contains("chunked")),
        "{path}: unexpected chunked answer"
    );
    Answer {
        status,
        headers,
        body: buf[end + 4..].to_vec(),
    }
}

fn addr_of(url: &str) -> String {
    url.trim_start_matches("http://")
        .trim_end_matches('/')
        .to_owned()
}

/// Every file under `dir`, as a path relative to it with `/` separators.
fn walk(dir: &Path, base: &Path, out: &mut Vec<String>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            walk(&p, base, out);
        } else {
            let rel = p.strip_prefix(base).unwrap().to_string_lossy().into_owned();
            out.push(rel);
        }
    }
}

/// The euid of this process (the owner of /proc/self).
fn euid() -> u32 {
    std::fs::metadata("/proc/self")
        .map(|m| m.uid())
        .unwrap_or(1)
}

/// Make the tree readable by nginx's workers (nobody, when the master runs as root): the
/// tempdir the harness made is 0700, and written files may be 0600.
fn open_tree(site: &Path) {
    if euid() != 0 {
        return;
    }
    if let Some(parent) = site.parent() {
        std::fs::set_permissions(parent, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let st = Command::new("chmod")
        .args(["-R", "a+rX"])
        .arg(site)
        .status()
        .unwrap();
    assert!(st.success());
}

/// Wait until the tree stops changing (the origin finishes re-rendering after a write), so
/// both servers read the same bytes.
fn settle(site: &Path) {
    let snapshot = || {
        let mut files = Vec::new();
        walk(site, site, &mut files);
        files.sort();
        files
            .into_iter()
            .map(|f| {
                let m = std::fs::metadata(site.join(&f)).ok();
                (f, m.map(|m| (m.len(), m.mtime(), m.mtime_nsec())))
            })
            .collect::<Vec<_>>()
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut last = snapshot();
    loop {
        std::thread::sleep(Duration::from_millis(500));
        let now = snapshot();
        if now == last {
            return;
        }
        assert!(Instant::now() < deadline, "the tree keeps changing");
        last = now;
    }
}

const CHROME: &str = "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,\
                      image/webp,image/apng,*/*;q=0.8,application/signed-exchange;v=b3;q=0.7";
const FIREFOX: &str = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8";
const ACCEPTS: &[Option<&str>] = &[
    None,
    Some("*/*"),
    Some("application/json"),
    Some(CHROME),
    Some(FIREFOX),
    Some("text/plain"),
    Some("text/html"),
    Some("text/*"),
    Some("text/html;q=0.5, application/json;q=0.9"),
    Some("application/json;q=0, */*;q=0.1"),
    Some("text/plain;q=0.9, text/html;q=0.4, */*;q=0.1"),
    Some("image/png"),
    Some("Application/JSON"),
    Some("text/html;level=1;q=0.3, application/json;q=0.2, text/plain;q=0"),
    Some("application/*;q=0.5, text/html;q=0.7"),
];
const FORMATS: &[&str] = &["json", "html", "txt", "text", "bogus", ""];

struct Tally {
    /// The headers that must match (besides the status and the bytes).
    headers: &'static [&'static str],
    compared: usize,
    ok200: usize,
    by_status: std::collections::BTreeMap<u16, usize>,
    content_types: BTreeSet<String>,
    failures: Vec<String>,
}

impl Tally {
    fn new(headers: &'static [&'static str]) -> Tally {
        Tally {
            headers,
            compared: 0,
            ok200: 0,
            by_status: Default::default(),
            content_types: BTreeSet::new(),
            failures: Vec::new(),
        }
    }
}

impl Tally {
    /// Report the tally and fail on any difference, or when a status every comparison must
    /// see (a file, a preflight, a bad format, a miss, another method, nothing acceptable)
    /// was never answered.
    fn assert_same(&self, what: &str, paths: &BTreeSet<String>, files: usize, ngx: &Nginx) {
        eprintln!(
            "{what}: compared {} requests over {} paths ({files} files): {} answered 200, statuses {:?}, types {:?}",
            self.compared,
            paths.len(),
            self.ok200,
            self.by_status,
            self.content_types
        );
        assert!(
            self.failures.is_empty(),
            "{} differences:\n{}\nnginx error log:\n{}",
            self.failures.len(),
            self.failures.join("\n"),
            ngx.error_log()
        );
        for st in [200, 204, 400, 404, 405, 406] {
            assert!(
                self.by_status.contains_key(&st),
                "no {st} case: {:?}",
                self.by_status
            );
        }
    }
}

/// The paths asked for of a tree holding `files`: each file's exact path and each twin's
/// clean URL (with and without a trailing slash; `/` for the index).
fn requested_paths(files: &[String]) -> BTreeSet<String> {
    let mut paths = BTreeSet::new();
    for f in files {
        paths.insert(format!("/{f}"));
        for ext in [".json", ".html", ".txt"] {
            if let Some(stem) = f.strip_suffix(ext) {
                paths.insert(format!("/{stem}"));
                paths.insert(format!("/{stem}/"));
                if stem == "index" {
                    paths.insert("/".to_owned());
                }
            }
        }
    }
    paths
}

/// The same request to both; record every difference.
fn compare(api: &str, ngx: &str, method: &str, path: &str, accept: Option<&str>, t: &mut Tally) {
    let a = raw(api, method, path, accept);
    let n = raw(ngx, method, path, accept);
    t.compared += 1;
    *t.by_status.entry(a.status).or_default() += 1;
    let what = format!("{method} {path} Accept={accept:?}");
    if a.status != n.status {
        t.failures.push(format!(
            "{what}: status api {} nginx {}",
            a.status, n.status
        ));
        return;
    }
    if a.status != 200 {
        // Refusals are problem documents from both (their texts may differ).
        if a.header("content-type") != n.header("content-type") {
            t.failures.push(format!(
                "{what}: {} content-type api {:?} nginx {:?}",
                a.status,
                a.header("content-type"),
                n.header("content-type")
            ));
        }
        return;
    }
    t.ok200 += 1;
    if a.body != n.body {
        t.failures.push(format!(
            "{what}: bodies differ ({} vs {} bytes)",
            a.body.len(),
            n.body.len()
        ));
    }
    for &h in t.headers {
        if a.header(h) != n.header(h) {
            t.failures.push(format!(
                "{what}: {h} api {:?} nginx {:?}",
                a.header(h),
                n.header(h)
            ));
        }
    }
    if let Some(ct) = a.header("content-type") {
        t.content_types.insert(ct.to_owned());
    }
}

fn take_vow(c: &reqwest::blocking::Client, base: &str) -> String {
    let r = c
        .post(format!("{base}/vow"))
        .json(&json!({"text": "I will summarise faithfully.", "agent": "nginx-agent", "cadence_hours": 24}))
        .send()
        .unwrap();
    assert_eq!(r.status(), 201);
    let v: Value = r.json().unwrap();
    v["vow_id"].as_str().unwrap().to_owned()
}

fn report(c: &reqwest::blocking::Client, base: &str, vow: &str, n: usize) -> u16 {
    let t = trace(n);
    c.post(format!("{base}/vow/report/demo"))
        .header("prefer", "wait=30")
        .json(&json!({"vow_id": vow, "context_key": "monitored", "turns": t["turns"]}))
        .send()
        .unwrap()
        .status()
        .as_u16()
}

/// The tree size of a C2SP checkpoint (its second line).
fn checkpoint_size(c: &reqwest::blocking::Client, url: &str) -> u64 {
    let text = c.get(url).send().unwrap().text().unwrap();
    text.lines()
        .nth(1)
        .and_then(|l| l.trim().parse().ok())
        .unwrap_or_else(|| panic!("not a checkpoint: {text}"))
}

#[test]
fn nginx_serves_the_tree_like_the_api_and_proxies_the_dynamic_routes() {
    let s = Server::start(&[]);
    let c = client();
    let vow = take_vow(&c, &s.url);
    for n in [40, 60, 80] {
        assert_eq!(report(&c, &s.url, &vow, n), 201);
    }
    settle(&s.site);
    open_tree(&s.site);
    let ngx = Nginx::start(&s.site, &s.url);
    let (api, ng) = (addr_of(&s.url), ngx.addr.clone());

    // Every file of the tree, at its exact path and at its clean URL.
    let mut files = Vec::new();
    walk(&s.site, &s.site, &mut files);
    assert!(
        files.iter().any(|f| f.starts_with("log/tile/")),
        "{files:?}"
    );
    assert!(files.iter().any(|f| f == "log/checkpoint"));
    assert!(files.iter().any(|f| f.starts_with(".well-known/")));
    let paths = requested_paths(&files);
    let mut t = Tally::new(&[
        "content-type",
        "cache-control",
        "vary",
        "access-control-allow-origin",
        "x-content-type-options",
    ]);
    for p in &paths {
        for a in ACCEPTS {
            compare(&api, &ng, "GET", p, *a, &mut t);
        }
        for f in FORMATS {
            compare(&api, &ng, "GET", &format!("{p}?format={f}"), None, &mut t);
        }
        compare(
            &api,
            &ng,
            "GET",
            &format!("{p}?x=1&format=html"),
            Some("*/*"),
            &mut t,
        );
        compare(&api, &ng, "HEAD", p, None, &mut t);
    }
    // Misses, refusals and other methods match in status.
    for p in [
        "/nope",
        "/vow/nope",
        "/vow/nope/chain",
        "/library/NOPE.md",
        "/log/tile/9/999",
        "/log/proof/",
        "/schemas/trace.json?format=json",
        "/library?format=",
        "/nope?format=bogus",
        "/.well-known",
        "/.well-known/nope.json",
    ] {
        compare(&api, &ng, "GET", p, None, &mut t);
    }
    for p in ["/pubkey", "/nope", "/library/METER.md", "/"] {
        compare(&api, &ng, "POST", p, None, &mut t);
        compare(&api, &ng, "OPTIONS", p, None, &mut t);
    }
    // The comparison exercised every branch: files, misses, refusals, every media type.
    t.assert_same("directory", &paths, files.len(), &ngx);
    for ct in [
        "application/json",
        "text/html; charset=utf-8",
        "text/plain; charset=utf-8",
        "text/markdown; charset=utf-8",
        "application/octet-stream",
    ] {
        assert!(
            t.content_types.contains(ct),
            "no {ct}: {:?}",
            t.content_types
        );
    }

    // The dynamic routes reach the api through nginx.
    let before = checkpoint_size(&c, &ngx.url("/log/checkpoint"));
    assert_eq!(report(&c, &ngx.url(""), &vow, 50), 201);
    let after = checkpoint_size(&c, &ngx.url("/log/checkpoint"));
    assert!(after > before, "the log did not grow: {before} -> {after}");
    assert_eq!(after, checkpoint_size(&c, &s.at("/log/checkpoint")));
    for p in [
        "/vow/message?text=hello%20world&agent=a&cadence_hours=24".to_owned(),
        "/log/proof/0".to_owned(),
        format!("/vow/{vow}/verify_text?text=I%20will%20summarise%20faithfully."),
        "/health".to_owned(),
        format!("/card?key={vow}"),
    ] {
        let a = c.get(s.at(&p)).send().unwrap();
        let n = c.get(ngx.url(&p)).send().unwrap();
        assert_eq!(a.status(), n.status(), "{p}");
        assert!(a.status().is_success(), "{p}: {}", a.status());
        let (ca, cn) = (
            a.headers().get("content-type").cloned(),
            n.headers().get("content-type").cloned(),
        );
        assert_eq!(ca, cn, "{p}");
        if p != "/health" {
            assert_eq!(a.bytes().unwrap(), n.bytes().unwrap(), "{p}");
        }
    }
    // A paid route answers the same way through nginx, payment headers untouched.
    let body = json!({"vow_id": vow, "context_key": "monitored", "turns": trace(40)["turns"]});
    let a = c
        .post(s.at("/vow/report"))
        .header("prefer", "wait=30")
        .json(&body)
        .send()
        .unwrap();
    let n = c
        .post(ngx.url("/vow/report"))
        .header("prefer", "wait=30")
        .json(&body)
        .send()
        .unwrap();
    assert_eq!(a.status(), n.status());
    for h in ["payment-required", "x-payment-response", "payment-response"] {
        assert_eq!(a.headers().get(h), n.headers().get(h), "{h}");
    }
    // x402 request headers reach the api: a garbage payment is refused the same way.
    let a = c
        .post(s.at("/vow/report"))
        .header("prefer", "wait=30")
        .header("PAYMENT-SIGNATURE", "bm90IGEgcGF5bWVudA==")
        .json(&body)
        .send()
        .unwrap();
    let n = c
        .post(ngx.url("/vow/report"))
        .header("prefer", "wait=30")
        .header("PAYMENT-SIGNATURE", "bm90IGEgcGF5bWVudA==")
        .json(&body)
        .send()
        .unwrap();
    assert_eq!(a.status(), n.status());
    assert_eq!(
        a.text().unwrap(),
        n.text().unwrap().replace(&ngx.addr, &api)
    );
    // Bodies up to the api's 4 MiB pass; more is refused.
    let big = vec![b' '; 4 * 1024 * 1024 + 1];
    let r = c
        .post(ngx.url("/demo/profile"))
        .header("content-type", "application/json")
        .body(big)
        .send()
        .unwrap();
    assert_eq!(r.status(), 413);
    let near = vec![b' '; 3 * 1024 * 1024];
    let r = c
        .post(ngx.url("/demo/profile"))
        .header("content-type", "application/json")
        .body(near)
        .send()
        .unwrap();
    assert_ne!(r.status(), 413);
    assert_eq!(
        r.status(),
        c.post(s.at("/demo/profile"))
            .header("content-type", "application/json")
            .body(vec![b' '; 16])
            .send()
            .unwrap()
            .status()
    );

    // Dotfiles and traversal are refused, though the files exist.
    std::fs::create_dir_all(s.site.join(".git")).unwrap();
    std::fs::write(s.site.join(".git/config"), "SECRET-GIT").unwrap();
    std::fs::write(s.site.join(".env"), "SECRET-ENV").unwrap();
    let outside = s.site.parent().unwrap().join("outside.txt");
    std::fs::write(&outside, "SECRET-OUTSIDE").unwrap();
    open_tree(&s.site);
    for p in [
        "/.git/config",
        "/.env",
        "/%2egit/config",
        "/.git/config?format=json",
        "/../outside.txt",
        "/%2e%2e/outside.txt",
        "/vow/%2e%2e/%2e%2e/outside.txt",
        "/vow/..%2f..%2foutside.txt",
        "/.well-known/../../outside.txt",
        "/log/../../outside.txt",
        "/..%2foutside.txt",
    ] {
        let n = raw(&ng, "GET", p, None);
        let body = String::from_utf8_lossy(&n.body);
        assert!(
            n.status == 400 || n.status == 404,
            "{p}: nginx answered {}",
            n.status
        );
        assert!(!body.contains("SECRET"), "{p}: {body}");
        let a = raw(&api, "GET", p, None);
        assert_ne!(a.status, 200, "{p}: the api served it");
    }
    let e = ngx.error_log();
    assert!(!e.contains("[emerg]") && !e.contains("[crit]"), "{e}");
}

/// The rsync commands of library/MIRRORS.md, in order (continuation lines joined), and the
/// value of its `OPTS=`.
fn mirror_commands() -> (String, Vec<String>) {
    let doc = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../library/MIRRORS.md"),
    )
    .unwrap();
    let opts = doc
        .lines()
        .find_map(|l| l.strip_prefix("OPTS=\""))
        .and_then(|l| l.split('"').next())
        .expect("MIRRORS.md sets OPTS")
        .to_owned();
    let mut cmds = Vec::new();
    let mut cur: Option<String> = None;
    for l in doc.lines() {
        let l = l.trim_end();
        match cur.as_mut() {
            Some(c) => c.push_str(l.trim_start()),
            None if l.starts_with("rsync ") => cur = Some(l.to_owned()),
            None => continue,
        }
        if let Some(c) = cur.as_mut() {
            if c.ends_with('\\') {
                c.pop();
            } else {
                cmds.push(std::mem::take(c));
                cur = None;
            }
        }
    }
    (opts, cmds)
}

#[test]
fn the_mirror_procedure_of_the_library_copies_a_tree_that_verifies() {
    let s = Server::start(&[]);
    let c = client();
    let vow = take_vow(&c, &s.url);
    for n in [40, 50] {
        assert_eq!(report(&c, &s.url, &vow, n), 201);
    }
    let vkey = c
        .get(s.at("/pubkey"))
        .send()
        .unwrap()
        .json::<Value>()
        .unwrap()["vkey"]
        .as_str()
        .unwrap()
        .to_owned();
    // The origin re-signs its manifest just after acknowledging a write: wait until it verifies.
    let verify_dir = |d: &Path| {
        Command::new(conduct_bin())
            .arg("verify-site")
            .arg(d)
            .args(["--pubkey", &vkey])
            .output()
            .unwrap()
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let out = verify_dir(&s.site);
        if out.status.success() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the origin's own tree does not verify: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let (opts, cmds) = mirror_commands();
    assert_eq!(cmds.len(), 6, "{cmds:#?}");
    let dir = tempfile::tempdir().unwrap();
    let dst = dir.path().join("site");
    std::fs::create_dir_all(&dst).unwrap();
    let run = |cmd: &str| {
        let out = Command::new("bash")
            .args(["-c", cmd])
            .env("SRC", format!("{}/", s.site.display()))
            .env("DST", format!("{}/", dst.display()))
            .env("OPTS", &opts)
            .output()
            .unwrap_or_else(|e| panic!("bash: {e}"));
        assert!(
            out.status.success(),
            "{cmd}: {}\n(rsync comes from tests/run.sh)",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    let files = |d: &Path| {
        let mut v = Vec::new();
        walk(d, d, &mut v);
        v.sort();
        v
    };
    // 1: only immutable files.
    run(&cmds[0]);
    let first = files(&dst);
    assert!(
        first.iter().any(|f| f.starts_with("log/tile/")),
        "{first:?}"
    );
    for f in &first {
        let chain_page = f.starts_with("vow/") && f.contains("/chain/") && f.ends_with(".json");
        assert!(
            f.starts_with("log/tile/") || chain_page,
            "step 1 copied {f}"
        );
    }
    // 2: everything but the manifest (root and bins) and the checkpoint.
    run(&cmds[1]);
    assert!(!dst.join("manifest.json").exists() && !dst.join("log/checkpoint").exists());
    assert!(!dst.join("manifest").exists());
    assert!(dst.join("index.json").exists());
    // 3, 4, 5: the bins, the root, then the checkpoint.
    run(&cmds[2]);
    assert!(dst.join("manifest").is_dir() && !dst.join("manifest.json").exists());
    run(&cmds[3]);
    assert!(dst.join("manifest.json").exists() && !dst.join("log/checkpoint").exists());
    run(&cmds[4]);
    // 6: cleanup transfers nothing, deletes what the origin does not have.
    std::fs::write(dst.join("stale.json"), "{}").unwrap();
    std::fs::write(dst.join("manifest/0000.json"), "{}").unwrap();
    std::fs::write(s.site.join("brand-new.json"), "{}").unwrap();
    run(&cmds[5]);
    assert!(!dst.join("manifest/0000.json").exists());
    assert!(!dst.join("stale.json").exists());
    assert!(!dst.join("brand-new.json").exists());
    std::fs::remove_file(s.site.join("brand-new.json")).unwrap();
    let mut src_files = files(&s.site);
    src_files.retain(|f| f != "brand-new.json");
    assert_eq!(files(&dst), src_files);
    for f in &src_files {
        assert_eq!(
            std::fs::read(s.site.join(f)).unwrap(),
            std::fs::read(dst.join(f)).unwrap(),
            "{f}"
        );
        let mode = std::fs::metadata(dst.join(f)).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o644, "{f}");
    }
    // The copy verifies against the pinned key, and a stray file fails it.
    let out = verify_dir(&dst);
    assert!(
        out.status.success(),
        "verify-site: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::write(dst.join("stray.json"), "{}").unwrap();
    assert!(!verify_dir(&dst).status.success());
}

#[test]
fn free_caps_behind_nginx_count_the_client_and_cannot_be_spoofed() {
    let s = Server::start(&["--trust-forwarded-for", "true", "--demo-daily-cap", "1"]);
    open_tree(&s.site);
    let ngx = Nginx::start(&s.site, &s.url);
    let c = client();
    let demo = |url: String, xff: &str| {
        c.post(url)
            .header("X-Forwarded-For", xff)
            .json(&trace(40))
            .send()
            .unwrap()
            .status()
            .as_u16()
    };
    // The api trusts X-Forwarded-For: two "clients" each get their one free call.
    assert_eq!(demo(s.at("/demo/profile"), "10.0.0.1"), 200);
    assert_eq!(demo(s.at("/demo/profile"), "10.0.0.2"), 200);
    assert_eq!(demo(s.at("/demo/profile"), "10.0.0.2"), 429);
    // Through nginx the header names the real client (here 127.0.0.1), whatever it claims.
    assert_eq!(demo(ngx.url("/demo/profile"), "10.0.0.3"), 200);
    assert_eq!(demo(ngx.url("/demo/profile"), "10.0.0.4"), 429);
    assert_eq!(demo(s.at("/demo/profile"), "127.0.0.1"), 429);
}

/// Whether a dynamic route of the api's route table takes `path` (a `{X}` segment matches one
/// non-empty segment).
fn dynamic(path: &str) -> bool {
    use conduct_api::routes::{Handler, ROUTES};
    let segs: Vec<&str> = path.split('/').collect();
    ROUTES.iter().any(|r| {
        let pat: Vec<&str> = r.info.path.split('/').collect();
        matches!(r.handler, Handler::Dynamic(_))
            && pat.len() == segs.len()
            && pat.iter().zip(&segs).all(|(p, s)| {
                if p.starts_with('{') {
                    !s.is_empty()
                } else {
                    p == s
                }
            })
    })
}

/// The bucket variant (`conduct nginx-conf --bucket-url`): the service publishes its tree into
/// a public-read bucket (an s3s-fs server of the test's own, without keys), nginx reads every
/// object from the bucket and hands what the bucket does not hold to the api. For every object,
/// at its exact path and clean URL, with Accept and `?format=` variants, both answer the same
/// status, bytes and Content-Type; each object nginx serves carries the bucket's Cache-Control
/// (immutable, or no-cache for a head); with the api stopped, nginx still serves the tree.
#[test]
fn nginx_serves_a_tree_from_its_bucket_like_the_api() {
    let dir = tempfile::tempdir().unwrap();
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let root = dir.path().join("s3");
    // Stopped when the test ends, however it ends.
    struct Stopped(Child);
    impl Drop for Stopped {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let _bucket = Stopped(conduct_tests::own_bucket_server(&root, port, false));
    let endpoint = format!("http://127.0.0.1:{port}");
    let envs = [
        ("AWS_ENDPOINT_URL", endpoint.as_str()),
        ("AWS_REGION", "us-east-1"),
        ("AWS_SKIP_SIGNATURE", "true"),
        ("AWS_ALLOW_HTTP", "true"),
    ];
    let site = PathBuf::from("s3://conduct-test/public");
    let mut s = Server::start_env("serve", &dir.path().join("data"), &site, &[], &envs, None);
    let c = client();
    let vow = take_vow(&c, &s.url);
    for n in [40, 60] {
        assert_eq!(report(&c, &s.url, &vow, n), 201);
    }
    // The manifest is re-signed about a second after a write: wait until it holds still.
    let manifest = || {
        c.get(s.at("/manifest.json"))
            .send()
            .unwrap()
            .bytes()
            .unwrap()
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut last = manifest();
    loop {
        std::thread::sleep(Duration::from_millis(1500));
        let now = manifest();
        if now == last {
            break;
        }
        assert!(Instant::now() < deadline, "the manifest keeps changing");
        last = now;
    }
    let bucket_url = format!("{endpoint}/conduct-test/public");
    let ngx = Nginx::start_on(&["--bucket-url".as_ref(), bucket_url.as_ref()], &s.url);
    let (api, ng) = (addr_of(&s.url), ngx.addr.clone());

    // Every object of the bucket (s3s-fs keeps each as a file under its root).
    let prefix_dir = root.join("conduct-test/public");
    let mut files = Vec::new();
    walk(&prefix_dir, &prefix_dir, &mut files);
    files
        .retain(|f| !f.split('/').any(|seg| seg.starts_with('.')) || f.starts_with(".well-known/"));
    assert!(files.iter().any(|f| f == "log/checkpoint"), "{files:?}");
    assert!(files.iter().any(|f| f.starts_with("log/tile/")));
    assert!(files.iter().any(|f| *f == format!("vow/{vow}.json")));
    let paths = requested_paths(&files);
    let mut t = Tally::new(&[
        "content-type",
        "access-control-allow-origin",
        "x-content-type-options",
    ]);
    let accepts = [None, Some("text/html"), Some(CHROME), Some("image/png")];
    for p in &paths {
        for a in accepts {
            compare(&api, &ng, "GET", p, a, &mut t);
        }
        for f in ["html", "bogus"] {
            compare(&api, &ng, "GET", &format!("{p}?format={f}"), None, &mut t);
        }
        compare(&api, &ng, "HEAD", p, None, &mut t);
    }
    for p in [
        "/nope",
        "/vow/nope",
        "/log/tile/9/999",
        "/.well-known/nope.json",
    ] {
        compare(&api, &ng, "GET", p, None, &mut t);
    }
    for p in ["/pubkey", "/nope", "/"] {
        compare(&api, &ng, "POST", p, None, &mut t);
        compare(&api, &ng, "OPTIONS", p, None, &mut t);
    }
    t.assert_same("bucket", &paths, files.len(), &ngx);
    // What nginx serves comes from the bucket (an object's ETag, which the api never sends),
    // with each object's own Cache-Control; only the paths a dynamic route takes (the api's
    // `/card/{key}` answers `/card/<agent>.txt`) reach the api, as they do from a directory.
    let mut from_bucket = 0;
    for f in &files {
        let n = raw(&ng, "GET", &format!("/{f}"), None);
        assert_eq!(n.status, 200, "/{f}");
        if dynamic(&format!("/{f}")) {
            assert!(n.header("etag").is_none(), "/{f} is the api's");
            continue;
        }
        assert!(
            n.header("etag").is_some(),
            "/{f} did not come from the bucket"
        );
        let want = conduct_indexer::tree::cache_control(conduct_indexer::tree::immutable(f));
        assert_eq!(n.header("cache-control"), Some(want), "/{f}");
        from_bucket += 1;
    }
    assert!(
        from_bucket * 10 >= files.len() * 9,
        "{from_bucket} of {}",
        files.len()
    );
    for f in ["log/checkpoint".to_owned(), format!("vow/{vow}.json")] {
        assert!(
            raw(&ng, "GET", &format!("/{f}"), None)
                .header("etag")
                .is_some(),
            "{f}"
        );
    }
    // With the api gone, the tree is still served: the bucket holds it.
    let page = raw(&ng, "GET", &format!("/vow/{vow}"), Some("text/html"));
    s.terminate();
    let again = raw(&ng, "GET", &format!("/vow/{vow}"), Some("text/html"));
    assert_eq!((again.status, &again.body), (200, &page.body));
    assert_eq!(raw(&ng, "GET", "/log/checkpoint", None).status, 200);
    // And what only the api answers is then a gateway error, never a wrong answer.
    assert_eq!(raw(&ng, "GET", "/vow/nope", None).status, 502);
}
