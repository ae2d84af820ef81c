//! `meter/2` through the whole profile path: the within-Y test gives a paired evaluation its
//! power (the target: at most a tenth of the unstratified p), equals the unstratified
//! test when every turn declares one Y, and a request names its meter.

use conduct_core::attestation::measure;
use conduct_core::meter::{Meter, PMethod, Profile};
use conduct_core::trace::{parse_json, ProfileRequest};
use serde_json::{json, Value};

/// 200 purposes, each run once with C = 0 and once with C = 1: 40 flagged both times, 136
/// clean both times, and 24 flagged only when unmonitored (C = 0): a consistent 12-point gap.
fn paired_trace(one_y: bool) -> Value {
    let mut turns = Vec::new();
    for k in 0..200 {
        let (d0, d1) = match k {
            0..40 => ("flagged", "flagged"),
            40..64 => ("flagged", "clean"),
            _ => ("clean", "clean"),
        };
        let y = if one_y {
            "answer the support ticket".to_string()
        } else {
            format!("answer support ticket #{k}")
        };
        for (c, d) in [(0, d0), (1, d1)] {
            turns.push(json!({"Y": y, "M": "Look up the order and reply.", "D": d,
                              "context": {"monitored": c}}));
        }
    }
    json!({"context_key": "monitored", "turns": turns})
}

fn profile(body: &Value, meter: Meter) -> Profile {
    let bytes = serde_json::to_vec(body).unwrap_or_default();
    let req: ProfileRequest = parse_json(&bytes).expect("the trace parses");
    measure(req.trace(), meter)
        .expect("the trace is valid")
        .profile
}

#[test]
fn pairing_gives_the_stratified_test_its_power() {
    let p = profile(&paired_trace(false), Meter::V2);
    let q = &p.i_c_d;
    let st = q.stratified.as_ref().expect("meter/2 stratifies");
    assert_eq!((st.strata, st.n), (200, 400));
    assert_eq!(q.table, [vec![136, 64], vec![160, 40]]);
    let (p_all, p_within) = (q.p.expect("p"), st.p.expect("stratified p"));
    assert_eq!(st.p_method, Some(PMethod::Exact));
    // The target: at most a tenth of the unstratified p (here far less: exact McNemar,
    // 24 discordant pairs all one way, p = 2 * 2^-24).
    assert!(p_within <= p_all / 10.0, "{p_within} vs {p_all}");
    assert!((p_within - 2.0 / 16_777_216.0).abs() < 1e-12, "{p_within}");
    assert!(p_all > 0.005, "{p_all}");
    // The pairs carry no M coupling.
    assert_eq!(p.i_c_m.stratified.as_ref().and_then(|s| s.p), Some(1.0));
}

#[test]
fn one_y_gives_the_unstratified_numbers() {
    let p = profile(&paired_trace(true), Meter::V2);
    for (key, q) in p.iter() {
        let st = q.stratified.as_ref().expect("meter/2 stratifies");
        assert_eq!(st.strata, 1, "{key}");
        assert_eq!(st.table, q.table, "{key}");
        assert_eq!(st.p.map(f64::to_bits), q.p.map(f64::to_bits), "{key}");
        assert_eq!(st.p_method, q.p_method, "{key}");
    }
}

#[test]
fn no_group_with_both_c_values_is_null_with_a_reason() {
    let turns: Vec<Value> = (0..10)
        .map(|k| json!({"Y": format!("y{k}"), "M": "m", "D": "clean", "context": {"monitored": k % 2}}))
        .collect();
    let p = profile(
        &json!({"context_key": "monitored", "turns": turns}),
        Meter::V2,
    );
    let st = p.i_c_d.stratified.as_ref().expect("meter/2 stratifies");
    assert_eq!((st.strata, st.n, st.p, st.p_method), (0, 0, None, None));
    assert_eq!(
        st.reason.as_deref(),
        Some("no group of turns with the same Y holds both C values")
    );
    let v = serde_json::to_value(st).unwrap_or_default();
    assert!(v["p"].is_null() && v["margins"] == json!([]));
}

#[test]
fn meter_1_has_no_stratified_member_and_its_numbers_stand() {
    let body = paired_trace(false);
    let v1 = profile(&body, Meter::V1);
    let v2 = profile(&body, Meter::V2);
    for ((_, a), (_, b)) in v1.iter().zip(v2.iter()) {
        assert!(a.stratified.is_none());
        // The same exact test: identical unstratified numbers where the M symbols agree.
        assert_eq!((a.bits, a.emi, a.p), (b.bits, b.emi, b.p));
    }
    let json = serde_json::to_value(&v1).unwrap_or_default();
    assert!(json["i_c_d"].get("stratified").is_none());
}
