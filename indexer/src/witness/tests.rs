use super::*;
use crate::job_bench::JobBench;
use crate::vows::VowReader;
use conduct_core::witness::{normalize_limits, LimitInput};

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
    let lower = W.to_ascii_lowercase();
    let bench = JobBench::new(&[
        ("000000000000000a", false, &lower),
        ("00000000000000cc", true, &lower),
        (
            "000000000000000d",
            false,
            "0xcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcd",
        ),
    ]);
    let submit = |p: Pledge| bench.submit(pledge_job(bench.key.clone(), p));
    let reader = VowReader::open(&bench.store).unwrap();
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
