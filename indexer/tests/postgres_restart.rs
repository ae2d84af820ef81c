//! PostgreSQL restarted under load: four threads append through the sequencer while the
//! server is stopped (fast shutdown, every session cut) and started again. Appends fail while
//! it is down and succeed again by themselves once it is back; every acknowledged entry is in
//! the log at its index afterwards, and the stored leaves hash to the signed root. The server
//! is this test's own (Debian's PostgreSQL, `initdb` into a temporary directory as an
//! unprivileged user), so stopping it disturbs no other test.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use conduct_core::signing::ServiceKey;
use conduct_core::tlog::{leaf_hash, root, Hash};
use conduct_indexer::ledger::{Ledger, Sequencer};
use conduct_indexer::state::State;
use conduct_indexer::tree::Dir;

fn pg_bin() -> PathBuf {
    PathBuf::from(std::env::var("CONDUCT_TEST_PG_BIN").unwrap_or_else(|_| {
        panic!("CONDUCT_TEST_PG_BIN is not set: run tests/run.sh, which installs PostgreSQL")
    }))
}

/// `cmd` as the unprivileged user when this runs as root (initdb refuses root).
fn as_pg(bin: &Path, name: &str) -> Command {
    let is_root = std::fs::metadata("/proc/self")
        .map(|m| std::os::unix::fs::MetadataExt::uid(&m) == 0)
        .unwrap_or(false);
    if is_root {
        let mut c = Command::new("setpriv");
        c.args(["--reuid=nobody", "--regid=nogroup", "--clear-groups", "--"])
            .arg(bin.join(name));
        c
    } else {
        Command::new(bin.join(name))
    }
}

struct Server {
    dir: PathBuf,
    port: u16,
    child: Option<Child>,
}

impl Server {
    /// A new server in `root/pg` (`root`: a temporary directory of the test's own).
    fn init(root: &Path) -> Server {
        let dir = root.join("pg");
        std::fs::create_dir_all(&dir).unwrap();
        // The unprivileged user must reach and own the directory (when the suite runs as
        // root): the temporary directory is opened to it, the server's own is given to it.
        std::fs::set_permissions(root, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        if std::os::unix::fs::MetadataExt::uid(&std::fs::metadata(root).unwrap()) == 0 {
            std::os::unix::fs::chown(&dir, Some(65534), None).unwrap();
        }
        let out = as_pg(&pg_bin(), "initdb")
            .args(["-D"])
            .arg(dir.join("data"))
            .args([
                "-U",
                "conduct",
                "--auth=trust",
                "-E",
                "UTF8",
                "--locale=C.UTF-8",
            ])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let mut s = Server {
            dir,
            port,
            child: None,
        };
        s.start();
        let made = Command::new(pg_bin().join("createdb"))
            .args([
                "-h",
                "127.0.0.1",
                "-p",
                &port.to_string(),
                "-U",
                "conduct",
                "restart",
            ])
            .output()
            .unwrap();
        assert!(
            made.status.success(),
            "{}",
            String::from_utf8_lossy(&made.stderr)
        );
        s
    }

    fn url(&self) -> String {
        format!("postgres://conduct@127.0.0.1:{}/restart", self.port)
    }

    fn start(&mut self) {
        let child = as_pg(&pg_bin(), "postgres")
            .arg("-D")
            .arg(self.dir.join("data"))
            .args(["-h", "127.0.0.1", "-p", &self.port.to_string(), "-k"])
            .arg(&self.dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let ready = Command::new(pg_bin().join("pg_isready"))
                .args(["-q", "-h", "127.0.0.1", "-p", &self.port.to_string()])
                .status()
                .unwrap();
            if ready.success() {
                return;
            }
            assert!(Instant::now() < deadline, "PostgreSQL did not start");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Fast shutdown (SIGINT): every session is cut, as in a restart.
    fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            signal(child.id(), "INT");
            child.wait().unwrap();
        }
    }
}

fn signal(pid: u32, signal: &str) {
    Command::new("kill")
        .args([&format!("-{signal}"), &pid.to_string()])
        .status()
        .unwrap();
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Each acknowledged entry at its index.
type Acks = Vec<(u64, Vec<u8>)>;

#[test]
fn a_restart_under_load_loses_nothing_acknowledged_and_writes_resume_by_themselves() {
    let tmp = tempfile::tempdir().unwrap();
    let mut server = Server::init(tmp.path());
    let key = ServiceKey::from_seed(&[3; 32], "localhost:8402/log");
    let site = tmp.path().join("site");
    let state = State::open(Some(&server.url()), &tmp.path().join("data")).unwrap();
    let ledger = Ledger::open_log(
        state.log().unwrap(),
        key.clone(),
        Dir::shared(&site).unwrap(),
    )
    .unwrap();
    let seq = Arc::new(Sequencer::spawn(ledger, 256).unwrap());
    let acks: Arc<Mutex<Acks>> = Arc::default();
    let failures = Arc::new(Mutex::new(0usize));
    let stop = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..4)
        .map(|t| {
            let (seq, acks, failures, stop) =
                (seq.clone(), acks.clone(), failures.clone(), stop.clone());
            std::thread::spawn(move || {
                for n in 0u64.. {
                    if stop.load(Ordering::Relaxed) {
                        return;
                    }
                    let entry = format!("thread {t} entry {n}").into_bytes();
                    match seq.append_blocking(entry.clone()) {
                        Ok(idx) => acks.lock().unwrap().push((idx, entry)),
                        Err(_) => {
                            *failures.lock().unwrap() += 1;
                            std::thread::sleep(Duration::from_millis(20));
                        }
                    }
                }
            })
        })
        .collect();
    let acked = || acks.lock().unwrap().len();
    let await_acks = |at_least: usize, what: &str| {
        let deadline = Instant::now() + Duration::from_secs(60);
        while acked() < at_least {
            assert!(
                Instant::now() < deadline,
                "{what}: {} acknowledged",
                acked()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    await_acks(200, "before the restart");
    server.stop();
    let down = acked();
    let failed_before = *failures.lock().unwrap();
    // Appends fail while the server is down.
    let deadline = Instant::now() + Duration::from_secs(60);
    while *failures.lock().unwrap() == failed_before {
        assert!(
            Instant::now() < deadline,
            "no append failed with the server down"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let restarted = Instant::now();
    server.start();
    let up = restarted.elapsed();
    // They succeed again by themselves.
    await_acks(acked().max(down) + 1, "after the restart");
    let first = restarted.elapsed();
    await_acks(down + 200, "after the restart");
    stop.store(true, Ordering::Relaxed);
    for w in writers {
        w.join().unwrap();
    }
    assert!(*failures.lock().unwrap() > failed_before);
    drop(seq);

    let state = State::open(Some(&server.url()), &tmp.path().join("data")).unwrap();
    let ledger = Ledger::open_log(state.log().unwrap(), key, Dir::shared(&site).unwrap()).unwrap();
    let acks = acks.lock().unwrap();
    for (idx, entry) in acks.iter() {
        assert_eq!(
            &ledger.entry(*idx).unwrap(),
            entry,
            "acknowledged entry {idx}"
        );
    }
    let stored: Vec<Hash> = (0..ledger.size())
        .map(|i| leaf_hash(&ledger.entry(i).unwrap()))
        .collect();
    assert_eq!(root(&stored), ledger.root());
    eprintln!(
        "{} acknowledged, {} failed while down, log size {}; the server took {up:?} to start, \
         the first write after it was acknowledged {first:?} after the restart began",
        acks.len(),
        failures.lock().unwrap(),
        ledger.size()
    );
}
