//! The suite's shared servers (`tests/servers.sh`) are real and usable: the PostgreSQL
//! commits what one session writes for another to read, and refuses what breaks a
//! constraint; the bucket server speaks S3 (a signed put, get, list and delete through
//! `tests/py/s3.py`, an unsigned request refused). The State and Tree backends' suites run
//! on these servers.

use std::process::Command;

use conduct_tests::{postgres, py_dir, python, Bucket};

/// Run `sql` through `psql` on the shared database; its output, or the error it printed.
fn psql(sql: &str) -> Result<String, String> {
    let (url, bin) = postgres();
    let out = Command::new(bin.join("psql"))
        .args([
            url.as_str(),
            "-X",
            "-A",
            "-t",
            "-v",
            "ON_ERROR_STOP=1",
            "-c",
            sql,
        ])
        .output()
        .expect("psql");
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

#[test]
fn the_shared_postgres_commits_across_sessions_and_keeps_its_constraints() {
    let table = format!("smoke_{}", std::process::id());
    psql(&format!(
        "CREATE TABLE {table} (k text PRIMARY KEY, v bigint NOT NULL)"
    ))
    .unwrap();
    psql(&format!(
        "BEGIN; INSERT INTO {table} VALUES ('a', 1), ('b', 2); COMMIT"
    ))
    .unwrap();
    // Another session (another psql process) reads what the first committed.
    assert_eq!(psql(&format!("SELECT sum(v) FROM {table}")).unwrap(), "3");
    // A duplicate key is refused, and the transaction it was in leaves nothing behind.
    let dup = psql(&format!(
        "BEGIN; INSERT INTO {table} VALUES ('c', 3); INSERT INTO {table} VALUES ('a', 9); COMMIT"
    ));
    assert!(dup.unwrap_err().contains("duplicate key"));
    assert_eq!(psql(&format!("SELECT count(*) FROM {table}")).unwrap(), "2");
    psql(&format!("DROP TABLE {table}")).unwrap();
}

#[test]
fn the_shared_bucket_server_speaks_s3() {
    let b = Bucket::shared();
    let s3 = |args: &[&str]| {
        let out = Command::new(python())
            .arg(py_dir().join("s3.py"))
            .args(args)
            .env("CONDUCT_TEST_S3_ENDPOINT", &b.endpoint)
            .output()
            .expect("s3.py");
        (
            out.status.success(),
            out.stdout,
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("object");
    let bytes: Vec<u8> = (0..70_000u32).map(|i| (i * 7 % 251) as u8).collect();
    std::fs::write(&file, &bytes).unwrap();
    let key = format!("smoke/{}/a b+c.bin", std::process::id());
    let (ok, _, err) = s3(&["put", &key, file.to_str().unwrap()]);
    assert!(ok, "put: {err}");
    let (ok, got, err) = s3(&["get", &key]);
    assert!(ok, "get: {err}");
    assert_eq!(got, bytes, "the bytes read back are the bytes written");
    let (ok, listed, err) = s3(&["list", &format!("smoke/{}/", std::process::id())]);
    assert!(ok, "list: {err}");
    assert_eq!(String::from_utf8_lossy(&listed).trim(), key);
    let (ok, _, err) = s3(&["delete", &key]);
    assert!(ok, "delete: {err}");
    let (ok, _, err) = s3(&["get", &key]);
    assert!(
        !ok && err.contains("404"),
        "a deleted object is gone: {err}"
    );
    // Without a signature the server refuses (it checks credentials, as a real bucket does).
    let r = conduct_tests::client()
        .get(format!("{}/{}/anything", b.endpoint, b.bucket))
        .send()
        .unwrap();
    assert_eq!(r.status(), 403);
}
