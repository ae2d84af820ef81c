//! `conduct attest` and `conduct verify` offline, cross-checked with an independent verifier
//! (pyca/cryptography + Trail of Bits' rfc8785) against the key the server publishes;
//! `conduct manifest-hash`; `conduct quest` (the quest board's files).

use std::path::Path;
use std::process::Command;

use conduct_tests::{client, conduct_bin, py_dir, python, trace, Server};
use serde_json::Value;

fn attest(data: &Path, trace_file: &Path) -> std::process::Output {
    Command::new(conduct_bin())
        .arg("attest")
        .arg(trace_file)
        .arg("--data")
        .arg(data)
        .env_remove("CONDUCT_CONFIG")
        .output()
        .unwrap()
}

fn conduct_verify(file: &Path, key: &str) -> bool {
    let st = Command::new(conduct_bin())
        .arg("verify")
        .arg(file)
        .args(["--pubkey", key])
        .status()
        .unwrap();
    assert!(st.code() == Some(0) || st.code() == Some(1), "exit {st:?}");
    st.success()
}

fn py_verify(file: &Path, key: &str, trace_file: Option<&Path>) -> bool {
    let mut cmd = Command::new(python());
    cmd.arg(py_dir().join("verify_attestation.py"))
        .arg(file)
        .arg(key);
    if let Some(t) = trace_file {
        cmd.arg(t);
    }
    cmd.status().unwrap().success()
}

#[test]
fn attest_verifies_offline_and_tampering_fails() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let trace_file = dir.path().join("trace.json");
    std::fs::write(&trace_file, serde_json::to_vec_pretty(&trace(300)).unwrap()).unwrap();
    let out = attest(&data, &trace_file);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let att_file = dir.path().join("att.json");
    std::fs::write(&att_file, &out.stdout).unwrap();
    let att: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(att["type"], "conduct.attestation/v1");

    // The server on the same data directory publishes the same key.
    let s = Server::start_in(
        &data,
        &dir.path().join("site"),
        &["--public-url", "http://localhost:8402"],
    );
    let pk: Value = client()
        .get(s.at("/pubkey"))
        .send()
        .unwrap()
        .json()
        .unwrap();
    let b64 = pk["public_key"].as_str().unwrap();
    let vkey = pk["vkey"].as_str().unwrap();
    assert_eq!(att["key_id"], pk["key_id"]);

    assert!(conduct_verify(&att_file, b64));
    assert!(conduct_verify(&att_file, vkey));
    assert!(py_verify(&att_file, b64, Some(&trace_file)));

    // One changed number.
    let mut changed = att.clone();
    let bits = changed["profile"]["i_c_d"]["bits"].as_f64().unwrap();
    changed["profile"]["i_c_d"]["bits"] = Value::from(bits + 1e-12);
    let f = dir.path().join("changed.json");
    std::fs::write(&f, serde_json::to_vec(&changed).unwrap()).unwrap();
    assert!(!conduct_verify(&f, b64));
    assert!(!py_verify(&f, b64, None));

    // A stripped scope.
    let mut stripped = att.clone();
    stripped.as_object_mut().unwrap().remove("scope");
    let f = dir.path().join("stripped.json");
    std::fs::write(&f, serde_json::to_vec(&stripped).unwrap()).unwrap();
    assert!(!conduct_verify(&f, b64));
    assert!(!py_verify(&f, b64, None));

    // One changed byte anywhere in the file text.
    let text = std::fs::read(&att_file).unwrap();
    let at = text.iter().position(|&b| b == b'0').unwrap();
    let mut flipped = text.clone();
    flipped[at] = b'1';
    let f = dir.path().join("flipped.json");
    std::fs::write(&f, &flipped).unwrap();
    assert!(!conduct_verify(&f, b64));

    // Another key never verifies.
    let other = "11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURo=";
    assert!(!conduct_verify(&att_file, other));

    // A different trace does not match the hash.
    let t2 = dir.path().join("trace2.json");
    std::fs::write(&t2, serde_json::to_vec(&trace(301)).unwrap()).unwrap();
    assert!(!py_verify(&att_file, b64, Some(&t2)));
}

#[test]
fn attest_refuses_a_bad_trace_naming_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("bad.json");
    std::fs::write(
        &f,
        br#"{"context_key":"monitored","turns":[{"Y":"a","M":"b","D":"c","context":{"monitored":7}}]}"#,
    )
    .unwrap();
    let out = attest(&dir.path().join("data"), &f);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("/turns/0/context/monitored"), "{err}");
}

fn manifest_hash(file: &Path) -> std::process::Output {
    Command::new(conduct_bin())
        .arg("manifest-hash")
        .arg(file)
        .output()
        .unwrap()
}

#[test]
fn manifest_hash_reproduces_the_erc8257_vectors_and_refuses_what_it_must_not_repair() {
    let vectors = Path::new(env!("CARGO_MANIFEST_DIR")).join("../core/tests/vectors/erc8257");
    for (file, hash) in [
        (
            "free-tool.json",
            "0x9a0f34405d7907b4c0ceebd23f293d9a1aa31c38e81d5c197e415cb8c16fed5f",
        ),
        (
            "paid-tool.json",
            "0xa71ef83ee66b702edb44f121510f8969e353df40b1e1587f8288fe6d352b448b",
        ),
    ] {
        let out = manifest_hash(&vectors.join(file));
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{file}: {err}");
        assert_eq!(String::from_utf8_lossy(&out.stdout), format!("{hash}\n"));
    }

    let dir = tempfile::tempdir().unwrap();
    let free = std::fs::read(vectors.join("free-tool.json")).unwrap();
    let bom = dir.path().join("bom.json");
    std::fs::write(&bom, [&[0xEF, 0xBB, 0xBF][..], &free].concat()).unwrap();
    let out = manifest_hash(&bom);
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("byte-order mark"), "{err}");

    let mut upper: Value = serde_json::from_slice(&free).unwrap();
    upper["creatorAddress"] = "0xABCDEFabcdef1234567890abcdefabcdef123456".into();
    let f = dir.path().join("upper.json");
    std::fs::write(&f, serde_json::to_vec(&upper).unwrap()).unwrap();
    let out = manifest_hash(&f);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("/creatorAddress"), "{err}");

    let out = manifest_hash(&dir.path().join("missing.json"));
    assert_eq!(out.status.code(), Some(2));
}

fn quest_cmd(data: &Path, args: &[&str]) -> std::process::Output {
    Command::new(conduct_tests::conduct_bin())
        .arg("quest")
        .arg("--data")
        .arg(data)
        .args(args)
        .env_remove("CONDUCT_CONFIG")
        .output()
        .unwrap()
}

#[test]
fn conduct_quest_edits_the_board_files_and_never_rewrites_a_broken_one() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let add = |id: &str| {
        quest_cmd(
            &data,
            &[
                "add",
                "--id",
                id,
                "--title",
                "Fix it",
                "--rung",
                "r1",
                "--what",
                "w",
                "--deliverable",
                "a pull request",
                "--check",
                "machine",
            ],
        )
    };
    assert!(add("first").status.success());
    assert!(add("second").status.success());
    let again = add("first");
    assert!(!again.status.success());
    assert!(String::from_utf8_lossy(&again.stderr).contains("already has a quest"));
    let bad = add("Not An Id");
    assert!(!bad.status.success(), "a bad id was added");
    assert!(quest_cmd(&data, &["retire", "second"]).status.success());
    assert!(!quest_cmd(&data, &["retire", "nope"]).status.success());
    let quests = std::fs::read(data.join("quests.json")).unwrap();
    let parsed = conduct_core::munus::parse_quests(&quests);
    assert!(parsed.errors.is_empty(), "{:?}", parsed.errors);
    let ids: Vec<(&str, bool)> = parsed
        .items
        .iter()
        .map(|q| (q.id.as_str(), q.retired))
        .collect();
    assert_eq!(ids, [("first", false), ("second", true)]);
    let pay = |tx: &str| {
        quest_cmd(
            &data,
            &[
                "pay",
                "--quest",
                "first",
                "--to",
                "0x70997970c51812dc3a010c7d01b50e0d17dc79c8",
                "--amount",
                "1000000",
                "--token",
                "0x5FbDB2315678afecb367f032d93F642f64180aa3",
                "--tx",
                tx,
            ],
        )
    };
    let tx = format!("0x{}", "ab".repeat(32));
    assert!(pay(&tx).status.success());
    assert!(!pay(&tx).status.success(), "a transaction pays one row");
    assert!(
        !pay("0x12").status.success(),
        "a malformed hash was recorded"
    );
    let paid = conduct_core::munus::parse_paid(&std::fs::read(data.join("paid.json")).unwrap());
    assert_eq!((paid.items.len(), paid.errors.len()), (1, 0));
    // A file the operator broke by hand is never rewritten (nothing of it is lost).
    std::fs::write(data.join("quests.json"), b"{\"quests\": [ oops").unwrap();
    let out = add("third");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("fix it by hand"));
    assert_eq!(
        std::fs::read(data.join("quests.json")).unwrap(),
        b"{\"quests\": [ oops"
    );
}

/// A clone of the repository on its own passes: no test or script reads the project's
/// `shared/` folder beside the checkout (vectors the tests use are committed inside). The one
/// exception compares the committed meter vectors with the published ones when present.
#[test]
fn no_test_or_script_reads_outside_the_repository() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut offenders = Vec::new();
    // Spelled in parts, so this file is not one of its own finds.
    let needles = [
        ["..", "shared"].join("/"),
        ["", "work", "shared"].join("/"),
        ["shared", "vectors"].join("/"),
    ];
    let mut stack = vec![root.clone()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let entry = entry.unwrap();
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            if entry.file_type().unwrap().is_dir() {
                if !matches!(
                    name.as_str(),
                    ".git" | "target" | "node_modules" | ".tools" | "artifacts"
                ) {
                    stack.push(path);
                }
                continue;
            }
            let code = [".rs", ".sh", ".py", ".mjs", ".js", ".toml"]
                .iter()
                .any(|ext| name.ends_with(ext))
                || name == "run";
            if !code {
                continue;
            }
            let Ok(text) = std::fs::read_to_string(&path) else {
                continue;
            };
            for needle in &needles {
                if text.contains(needle) {
                    offenders.push(format!("{}: {needle}", path.display()));
                }
            }
        }
    }
    assert!(offenders.is_empty(), "{offenders:#?}");
}

/// Architecture invariant (ARCHITECTURE.md, "Invariants"): no import circle between the
/// modules of a crate, as `tests/tools/circles.py` finds them.
#[test]
fn no_import_circle_between_the_modules_of_a_crate() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let out = Command::new("python3")
        .arg(root.join("tests/tools/circles.py"))
        .arg(&root)
        .args(["core", "indexer", "renderer", "api", "verify"])
        .output()
        .expect("python3 runs tests/tools/circles.py");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.trim_end().ends_with("total circles: 0"),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
