use super::*;
use crate::ledger::{Ledger, Sequencer};
use crate::store::Store;
use crate::vows::VowReader;
use conduct_core::witness::{normalize_limits, LimitInput};

fn sworn(store: &Store, id: &str, sandbox: bool, wallet: &str) {
    let index = 1000 + u64::from_str_radix(id, 16).unwrap();
    crate::store::vows::put_test_vow(store, id, index, sandbox, wallet);
}

const W: &str = "0xAbAbAbAbAbAbAbAbAbAbAbAbAbAbAbAbAbAbAbAb";

fn rec(vow: &str, sig: &str, bal: &str, at: u64) -> Pledge {
    Pledge {
        origin: "https://conduct.example".into(),
        vow_id: vow.into(),
        wallet: W.into(),
        limits: normalize_limits(
            &[LimitInput {
                asset: "0x5FbDB2315678afecb367f032d93F642f64180aa3".into(),
                max_balance: Some(bal.into()),
                max_outflow_per_day: None,
            }],
            "/limits",
        )
        .unwrap(),
        wallet_signature: sig.into(),
        at,
    }
}

#[test]
fn pledges_append_once_and_the_latest_wins() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let key = ServiceKey::from_seed(&[5; 32], "example.org/log");
    sworn(&store, "000000000000000a", false, &W.to_ascii_lowercase());
    sworn(&store, "00000000000000cc", true, &W.to_ascii_lowercase());
    sworn(
        &store,
        "000000000000000d",
        false,
        "0xcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcd",
    );
    let ledger = Ledger::open(&store, key.clone(), &dir.path().join("log")).unwrap();
    let seq = Sequencer::spawn(ledger, 8).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let submit = |p: Pledge| rt.block_on(seq.submit_job(pledge_job(key.clone(), p)));
    let reader = VowReader::open(&store).unwrap();
    assert!(reader.pledge("000000000000000a").unwrap().is_none());
    submit(rec("000000000000000a", "0x01", "1", 10)).unwrap();
    let e = submit(rec("000000000000000a", "0x01", "2", 10)).unwrap_err();
    assert!(e.to_string().contains("witness-pledge-replayed"), "{e}");
    let e = submit(rec("00000000000000cc", "0x02", "1", 10)).unwrap_err();
    assert!(e.to_string().contains("witness-sandbox-vow"), "{e}");
    let e = submit(rec("000000000000000d", "0x03", "1", 10)).unwrap_err();
    assert!(e.to_string().contains("witness-wrong-wallet"), "{e}");
    let e = submit(rec("00000000000000ff", "0x04", "1", 10)).unwrap_err();
    assert!(e.to_string().contains("not found"), "{e}");
    let second = submit(rec("000000000000000a", "0x05", "7", 20)).unwrap();
    let row = reader.pledge("000000000000000a").unwrap().unwrap();
    assert_eq!(row.log_index, second.index);
    assert_eq!(row.pledge.limits[0].max_balance.as_deref(), Some("7"));
    assert_eq!(Some(row.leaf), second.leaf);
    for i in 0..MAX_PLEDGES_PER_DAY - 2 {
        submit(rec("000000000000000a", &format!("0x1{i}"), "1", 30)).unwrap();
    }
    let e = submit(rec("000000000000000a", "0x99", "1", 40)).unwrap_err();
    assert!(e.to_string().contains("witness-pledge-daily-limit"), "{e}");
    submit(rec("000000000000000a", "0x98", "1", 86_400)).unwrap();
}
