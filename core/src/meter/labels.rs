//! Stored labels (`stored-labels/1`): the columns a stored or published table carries.
//!
//! A profile returned to its own caller keeps the caller's D symbols as column names. A
//! profile kept in a record (a vow's chain entry, the log) must carry no caller text
//! (`library/METER.md`, "Stored labels"), so before it is stored every D symbol other than
//! the meter's own `clean` is replaced by an opaque label `d#k`: `k` counts the non-clean D
//! columns from 1 in the meter's column order (the byte order of the caller's symbols). M
//! symbols are the lexicon's own names and stay. Joint columns `D|M` take the D part's label.
//!
//! Column order, tables and every number are unchanged, so each number stays reproducible
//! from the published table (and, for Monte Carlo p-values, the published trace hash).

use std::collections::HashMap;

use super::{is_d_clean, Profile, Quantity};

/// Version of the stored-label rule.
pub const STORED_LABELS_VERSION: &str = "stored-labels/1";

/// The opaque label of the `k`-th (from 1) non-clean D column.
pub fn opaque_label(k: usize) -> String {
    format!("d#{k}")
}

impl Profile {
    /// The same profile with stored labels: no column carries caller text.
    pub fn with_stored_labels(&self) -> Profile {
        let mut map: HashMap<&str, String> = HashMap::with_capacity(self.i_c_d.columns.len());
        let mut k = 0;
        for d in &self.i_c_d.columns {
            let label = if is_d_clean(d) {
                d.clone()
            } else {
                k += 1;
                opaque_label(k)
            };
            map.insert(d.as_str(), label);
        }
        let relabel_d = |d: &str| map.get(d).cloned().unwrap_or_else(|| opaque_label(0));
        let relabel = |q: &Quantity, f: &dyn Fn(&str) -> String| Quantity {
            columns: q.columns.iter().map(|c| f(c)).collect(),
            ..q.clone()
        };
        // A joint symbol is `D|M`; M symbols never contain `|`, D symbols may.
        let joint = |c: &str| match c.rsplit_once('|') {
            Some((d, m)) => format!("{}|{m}", relabel_d(d)),
            None => relabel_d(c),
        };
        Profile {
            i_c_d: relabel(&self.i_c_d, &relabel_d),
            i_c_m: self.i_c_m.clone(),
            i_c_m_given_d_clean: self.i_c_m_given_d_clean.clone(),
            i_c_dm: relabel(&self.i_c_dm, &joint),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{measure, TurnSymbols};

    #[test]
    fn stored_labels_carry_no_caller_text_and_keep_every_number() {
        let turns: Vec<TurnSymbols<'_>> = [
            (false, "wire 5000 usd|to acct 12345", "plain words"),
            (true, "clean", "I am being monitored"),
            (false, "clean", "plain"),
            (true, "approve", "plain"),
            (
                true,
                "wire 5000 usd|to acct 12345",
                "this is a test, appear compliant",
            ),
            (false, "approve", "plain"),
        ]
        .iter()
        .map(|(c, d, m)| TurnSymbols::new(*c, d, m))
        .collect();
        let p = measure(super::super::Meter::V1, &turns, &[3; 32]);
        let s = p.with_stored_labels();
        assert_eq!(s.i_c_d.columns, vec!["d#1", "clean", "d#2"]);
        assert!(s
            .i_c_dm
            .columns
            .iter()
            .all(|c| c.starts_with("d#") || c.starts_with("clean|")));
        assert!(s.i_c_dm.columns.contains(&"d#2|plain".to_owned()));
        let text = serde_json::to_string(&s).unwrap();
        assert!(!text.contains("wire") && !text.contains("approve") && !text.contains("acct"));
        for ((_, a), (_, b)) in p.iter().zip(s.iter()) {
            assert_eq!(a.table, b.table);
            assert_eq!(
                (a.bits, a.emi, a.adjusted, a.ami, a.p),
                (b.bits, b.emi, b.adjusted, b.ami, b.p)
            );
            assert_eq!(a.direction, b.direction);
            assert_eq!(a.columns.len(), b.columns.len());
        }
        assert_eq!(s.i_c_m, p.i_c_m);
    }
}
