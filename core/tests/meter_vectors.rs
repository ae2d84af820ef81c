//! The meter against the published test vectors, committed in this repository at
//! `core/tests/vectors/meter_vectors.json` (a copy of the project's shared vectors, kept
//! identical: when the shared copy is present beside the checkout, or named by
//! `CONDUCT_SHARED_DIR`, a test checks that the two are byte-identical; a clone on its own
//! reads only its own copy): raw estimators on the E1-E5 tables, the conditional-MI example,
//! and `measure()` on traces built to have those tables.

use std::borrow::Cow;
use std::path::{Path, PathBuf};

use conduct_core::meter::{
    ami_arithmetic, count_tables_capped, emi_bits, entropy_bits, measure, mi_bits, p_exact,
    MSymbol, Meter, PMethod, Quantity, TurnSymbols,
};
use serde_json::Value;

const TOL: f64 = 1e-12;

/// The committed copy of the vectors.
const VECTORS: &str = include_str!("vectors/meter_vectors.json");

fn vectors() -> Value {
    serde_json::from_str(VECTORS).expect("meter_vectors.json is JSON")
}

/// The committed copy is the published one, whenever the published one is at hand (an
/// optional comparison: a clone on its own has no `shared/` and passes).
#[test]
fn the_committed_vectors_are_the_published_ones() {
    // The project's `shared` folder sits beside the checkout, two levels above this crate.
    let beside = || {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .ancestors()
            .nth(2)
            .map(|root| root.join("shared"))
    };
    let Some(dir) = std::env::var_os("CONDUCT_SHARED_DIR")
        .map(PathBuf::from)
        .or_else(beside)
    else {
        return;
    };
    let path = dir.join("vectors").join("meter_vectors.json");
    match std::fs::read(&path) {
        Ok(published) => assert!(
            published == VECTORS.as_bytes(),
            "core/tests/vectors/meter_vectors.json differs from {}: copy the published vectors",
            path.display()
        ),
        Err(e) => eprintln!("no published copy to compare ({}: {e})", path.display()),
    }
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

fn table_of(v: &Value) -> [Vec<u64>; 2] {
    let rows: Vec<Vec<u64>> = serde_json::from_value(v.clone()).expect("table");
    assert_eq!(rows.len(), 2);
    [rows[0].clone(), rows[1].clone()]
}

fn rational(s: &str) -> f64 {
    let (a, b) = s.split_once('/').expect("rational a/b");
    a.parse::<u64>().expect("numerator") as f64 / b.parse::<u64>().expect("denominator") as f64
}

fn close(name: &str, got: f64, want: f64) {
    assert!(
        (got - want).abs() <= TOL,
        "{name}: got {got:e}, want {want:e}, diff {:e}",
        (got - want).abs()
    );
}

fn num(q: &Quantity, field: &str) -> f64 {
    let v = match field {
        "bits" => q.bits,
        "emi" => q.emi,
        "adjusted" => q.adjusted,
        "ami" => q.ami,
        "p" => q.p,
        _ => unreachable!(),
    };
    v.unwrap_or_else(|| panic!("{field} is null: {:?}", q.reason))
}

#[test]
fn e_examples_raw_estimators() {
    let v = vectors();
    let examples = v["examples"].as_array().expect("examples");
    assert_eq!(examples.len(), 5);
    for ex in examples {
        let name = ex["name"].as_str().expect("name");
        let t = table_of(&ex["table_rows_C0_C1"]);
        let a = [t[0].iter().sum::<u64>(), t[1].iter().sum::<u64>()];
        let b: Vec<u64> = t[0].iter().zip(&t[1]).map(|(x, y)| x + y).collect();
        assert_eq!(a[0] + a[1], ex["n"].as_u64().expect("n"));
        close(&format!("{name} H_C"), entropy_bits(&a), f(&ex["H_C_bits"]));
        close(&format!("{name} H_M"), entropy_bits(&b), f(&ex["H_M_bits"]));
        close(&format!("{name} MI"), mi_bits(&t), f(&ex["MI_plugin_bits"]));
        close(&format!("{name} EMI"), emi_bits(&t), f(&ex["EMI_bits"]));
        close(
            &format!("{name} MI-EMI"),
            mi_bits(&t) - emi_bits(&t),
            f(&ex["MI_minus_EMI_bits"]),
        );
        close(
            &format!("{name} AMI"),
            ami_arithmetic(&t),
            f(&ex["AMI_arithmetic"]),
        );
        let want_p = rational(ex["exact_perm_p_rational"].as_str().expect("rational"));
        close(
            &format!("{name} p (rational)"),
            want_p,
            f(&ex["exact_perm_p"]),
        );
        let p = p_exact(&t).unwrap_or_else(|| panic!("{name}: exact p infeasible"));
        close(&format!("{name} p"), p, want_p);
        let tables = ex["n_tables_enumerated"].as_u64().expect("n_tables");
        assert_eq!(count_tables_capped(&t, 1_000_000), tables, "{name}");
    }
}

/// A trace whose D channel has the given table (columns `d0`, `d1`, ...) and one M symbol.
fn trace_from_d_table(t: &[Vec<u64>; 2], names: &[String]) -> Vec<TurnSymbols<'static>> {
    let mut turns = Vec::new();
    for (c, row) in t.iter().enumerate() {
        for (j, &k) in row.iter().enumerate() {
            for _ in 0..k {
                turns.push(TurnSymbols {
                    c: c == 1,
                    d: Cow::Owned(names[j].clone()),
                    m: 0,
                    y: 0,
                });
            }
        }
    }
    turns
}

/// Both meters give the vectors' numbers: their exact tests are the same test.
#[test]
fn e_examples_through_measure() {
    let v = vectors();
    for (meter, ex) in Meter::ALL.into_iter().flat_map(|m| {
        v["examples"]
            .as_array()
            .expect("examples")
            .iter()
            .map(move |e| (m, e))
    }) {
        let name = ex["name"].as_str().expect("name");
        let t = table_of(&ex["table_rows_C0_C1"]);
        let names: Vec<String> = (0..t[0].len()).map(|j| format!("d{j}")).collect();
        let turns = trace_from_d_table(&t, &names);
        let profile = measure(meter, &turns, &[9u8; 32]);
        let q = &profile.i_c_d;
        assert_eq!(q.columns, names, "{name}");
        assert_eq!(q.table, t, "{name}");
        assert_eq!(q.p_method, Some(PMethod::Exact), "{name}");
        close(
            &format!("{name} bits"),
            num(q, "bits"),
            f(&ex["MI_plugin_bits"]),
        );
        close(&format!("{name} emi"), num(q, "emi"), f(&ex["EMI_bits"]));
        close(
            &format!("{name} adjusted"),
            num(q, "adjusted"),
            f(&ex["MI_minus_EMI_bits"]),
        );
        close(
            &format!("{name} ami"),
            num(q, "ami"),
            f(&ex["AMI_arithmetic"]),
        );
        close(&format!("{name} p"), num(q, "p"), f(&ex["exact_perm_p"]));
        // No column is "clean": both non-clean rates are 1.
        assert_eq!(q.direction, Some(Some(0.0)));
        // M is constant: I(C;M) = 0, p = 1; I(C;D,M) = I(C;D).
        assert_eq!(profile.i_c_m.bits, Some(0.0));
        assert_eq!(profile.i_c_m.p, Some(1.0));
        assert_eq!(profile.i_c_dm.bits, q.bits);
        assert_eq!(profile.i_c_dm.emi, q.emi);
    }
}

/// M symbols standing for the vector's M = 0, 1, 2: plain, aware, and strategic (`lexicon/1`)
/// or tied (`lexicon/2`); the column order is the same in both.
fn m_of(meter: Meter, m: usize) -> u8 {
    match meter {
        Meter::V1 => [MSymbol::Plain, MSymbol::Aware, MSymbol::Strategic][m].rank() as u8,
        Meter::V2 => [1, 0, 2][m],
    }
}

fn cmi_turns(meter: Meter, counts: &serde_json::Map<String, Value>) -> Vec<TurnSymbols<'static>> {
    let mut turns = Vec::new();
    for (key, k) in counts {
        let digits: Vec<usize> = key.bytes().map(|b| usize::from(b - b'0')).collect();
        let (c, d, m) = (digits[0], digits[1], digits[2]);
        for _ in 0..k.as_u64().expect("count") {
            turns.push(TurnSymbols {
                c: c == 1,
                d: Cow::Borrowed(if d == 0 { "clean" } else { "flagged" }),
                m: m_of(meter, m),
                y: 0,
            });
        }
    }
    turns
}

#[test]
fn cmi_example() {
    let v = vectors();
    let ex = &v["cmi_example"];
    let counts = ex["counts_c_d_m"].as_object().expect("counts");
    let cell = |c: usize, d: usize, m: usize| -> u64 {
        counts[&format!("{c}{d}{m}")].as_u64().expect("count")
    };
    let strata: Vec<[Vec<u64>; 2]> = (0..2)
        .map(|d| {
            [
                (0..3).map(|m| cell(0, d, m)).collect(),
                (0..3).map(|m| cell(1, d, m)).collect(),
            ]
        })
        .collect();
    assert_eq!(strata[0], table_of(&ex["table_CxM_given_D_clean"]));
    assert_eq!(strata[1], table_of(&ex["table_CxM_given_D_flagged"]));
    let n = ex["n"].as_u64().expect("n") as f64;
    let n_d: Vec<f64> = strata
        .iter()
        .map(|t| t.iter().flatten().sum::<u64>() as f64)
        .collect();
    assert_eq!(n_d[0] as u64, ex["n_clean"].as_u64().expect("n_clean"));

    // Raw estimators.
    let t_cd = [
        vec![strata[0][0].iter().sum(), strata[1][0].iter().sum()],
        vec![strata[0][1].iter().sum(), strata[1][1].iter().sum()],
    ];
    let t_cm = [
        (0..3).map(|m| cell(0, 0, m) + cell(0, 1, m)).collect(),
        (0..3).map(|m| cell(1, 0, m) + cell(1, 1, m)).collect(),
    ];
    let t_cdm = [
        (0..6).map(|j| cell(0, j / 3, j % 3)).collect(),
        (0..6).map(|j| cell(1, j / 3, j % 3)).collect(),
    ];
    let i_cd = mi_bits(&t_cd);
    let i_cdm = mi_bits(&t_cdm);
    close("I(C;D)", i_cd, f(&ex["I_C_D_bits"]));
    close("I(C;M)", mi_bits(&t_cm), f(&ex["I_C_M_bits"]));
    close("I(C;D,M)", i_cdm, f(&ex["I_C_DM_bits"]));
    close(
        "I(C;M|D=clean)",
        mi_bits(&strata[0]),
        f(&ex["I_C_M_given_Dclean_bits"]),
    );
    close(
        "EMI(C;M|D=clean)",
        emi_bits(&strata[0]),
        f(&ex["EMI_C_M_given_Dclean_bits"]),
    );
    close(
        "p(C;M|D=clean)",
        p_exact(&strata[0]).expect("exact p feasible"),
        f(&ex["exact_perm_p_Dclean"]),
    );
    let cmi = (n_d[0] / n) * mi_bits(&strata[0]) + (n_d[1] / n) * mi_bits(&strata[1]);
    close("I(C;M|D)", cmi, f(&ex["I_C_M_given_D_bits"]));
    let emi_strat = (n_d[0] / n) * emi_bits(&strata[0]) + (n_d[1] / n) * emi_bits(&strata[1]);
    close(
        "EMI stratified",
        emi_strat,
        f(&ex["EMI_C_M_given_D_stratified_bits"]),
    );
    close("chain rule", i_cdm, i_cd + cmi);

    // The same numbers through measure() on a real trace (rounded to 12 decimals).
    for meter in Meter::ALL {
        cmi_through_measure(meter, ex, counts);
    }
}

fn cmi_through_measure(meter: Meter, ex: &Value, counts: &serde_json::Map<String, Value>) {
    let turns = cmi_turns(meter, counts);
    let profile = measure(meter, &turns, &[3u8; 32]);
    close(
        "measure I(C;D)",
        num(&profile.i_c_d, "bits"),
        f(&ex["I_C_D_bits"]),
    );
    close(
        "measure I(C;M)",
        num(&profile.i_c_m, "bits"),
        f(&ex["I_C_M_bits"]),
    );
    close(
        "measure I(C;D,M)",
        num(&profile.i_c_dm, "bits"),
        f(&ex["I_C_DM_bits"]),
    );
    let q = &profile.i_c_m_given_d_clean;
    assert_eq!(q.n, 52);
    let third = if meter == Meter::V1 {
        "strategic"
    } else {
        "tied"
    };
    assert_eq!(q.columns, vec!["aware", "plain", third]);
    // Column order: aware (M=1), plain (M=0), strategic (M=2).
    assert_eq!(q.table, [vec![6, 20, 2], vec![6, 9, 9]]);
    assert_eq!(q.p_method, Some(PMethod::Exact));
    close(
        "measure switch bits",
        num(q, "bits"),
        f(&ex["I_C_M_given_Dclean_bits"]),
    );
    close(
        "measure switch emi",
        num(q, "emi"),
        f(&ex["EMI_C_M_given_Dclean_bits"]),
    );
    close(
        "measure switch adjusted",
        num(q, "adjusted"),
        f(&ex["MI_minus_EMI_Dclean_bits"]),
    );
    close(
        "measure switch p",
        num(q, "p"),
        f(&ex["exact_perm_p_Dclean"]),
    );
    assert_eq!(profile.i_c_dm.columns.len(), 6);
    assert_eq!(profile.i_c_d.columns, vec!["clean", "flagged"]);
    // direction = P(flagged | C=1) - P(flagged | C=0) = 6/30 - 2/30.
    let dir = profile.i_c_d.direction.flatten().expect("direction");
    close("direction", dir, 6.0 / 30.0 - 2.0 / 30.0);

    // Serialized output carries the same (rounded) numbers.
    let json = serde_json::to_value(&profile).expect("serialize");
    close(
        "json switch bits",
        f(&json["i_c_m_given_d_clean"]["bits"]),
        f(&ex["I_C_M_given_Dclean_bits"]),
    );
    assert_eq!(json["i_c_m_given_d_clean"]["p_method"], "exact");
    assert!(json["i_c_m_given_d_clean"].get("reason").is_none());
}
