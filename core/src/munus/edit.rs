//! Edits of the operator's files for `conduct quest add|retire|pay`: each takes the file's
//! bytes (or none when it does not exist yet), adds or changes one entry, and returns the new
//! bytes, or why not. The new entry must pass the same checks the board's parsers apply, and a
//! file that does not parse is never rewritten (the operator fixes it by hand first, so
//! nothing they wrote is lost). Pure: the caller reads and writes the file.

use serde_json::{json, Value};

use super::{parse_paid, parse_quests, PAID_FILE, QUESTS_FILE};

/// Why an operator's file was not changed (the text names the file and the entry).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EditError {
    /// The file is not JSON.
    #[error("{file} is not JSON ({reason}); fix it by hand first")]
    NotJson {
        /// The file.
        file: &'static str,
        /// The parser's reason.
        reason: String,
    },
    /// The file does not hold its list.
    #[error("{file} is not an object with an array `{key}`; fix it by hand first")]
    NoList {
        /// The file.
        file: &'static str,
        /// Its list's member.
        key: &'static str,
    },
    /// The new entry fails the board's parser (its refusal).
    #[error("{0}")]
    Entry(String),
    /// The quest file has a quest with this id already.
    #[error("{QUESTS_FILE} already has a quest {id:?}")]
    QuestExists {
        /// The quest's id.
        id: String,
    },
    /// The quest file has no quest with this id.
    #[error("{QUESTS_FILE} has no quest {id:?}")]
    NoQuest {
        /// The id asked for.
        id: String,
    },
    /// The payment file has a row for this transaction already.
    #[error("{PAID_FILE} already has a row for transaction {tx}")]
    PaidExists {
        /// The transaction, lowercase.
        tx: String,
    },
}

/// The file as a JSON object holding the array `key` (an empty one when `bytes` is `None`).
fn open(file: &'static str, bytes: Option<&[u8]>, key: &'static str) -> Result<Value, EditError> {
    let Some(b) = bytes else {
        return Ok(json!({ key: [] }));
    };
    let v: Value = serde_json::from_slice(b).map_err(|e| EditError::NotJson {
        file,
        reason: e.to_string(),
    })?;
    if !v.get(key).is_some_and(Value::is_array) {
        return Err(EditError::NoList { file, key });
    }
    Ok(v)
}

fn bytes_of(v: &Value) -> Vec<u8> {
    let mut out = serde_json::to_vec_pretty(v).unwrap_or_default();
    out.push(b'\n');
    out
}

/// Add `quest` (an object with the fields of a quest) to the quest file.
pub fn add_quest(bytes: Option<&[u8]>, quest: Value) -> Result<Vec<u8>, EditError> {
    let mut v = open(QUESTS_FILE, bytes, "quests")?;
    let id = quest["id"].as_str().unwrap_or_default().to_owned();
    let single = parse_quests(&bytes_of(&json!({ "quests": [quest.clone()] })));
    if let Some(e) = single.error() {
        return Err(EditError::Entry(e));
    }
    let no_list = || EditError::NoList {
        file: QUESTS_FILE,
        key: "quests",
    };
    let list = v["quests"].as_array_mut().ok_or_else(no_list)?;
    if list.iter().any(|q| q["id"] == id.as_str()) {
        return Err(EditError::QuestExists { id });
    }
    list.push(quest);
    Ok(bytes_of(&v))
}

/// Mark quest `id` retired (it takes no claim and leaves the board; its records stay).
pub fn retire_quest(bytes: Option<&[u8]>, id: &str) -> Result<Vec<u8>, EditError> {
    let mut v = open(QUESTS_FILE, bytes, "quests")?;
    let list = v["quests"].as_array_mut().ok_or(EditError::NoList {
        file: QUESTS_FILE,
        key: "quests",
    })?;
    let q = list
        .iter_mut()
        .find(|q| q["id"] == id)
        .ok_or_else(|| EditError::NoQuest { id: id.to_owned() })?;
    q["retired"] = json!(true);
    Ok(bytes_of(&v))
}

/// Add a payment row (an object with the fields of a paid row) to the payment file.
pub fn add_paid(bytes: Option<&[u8]>, row: Value) -> Result<Vec<u8>, EditError> {
    let mut v = open(PAID_FILE, bytes, "paid")?;
    let single = parse_paid(&bytes_of(&json!({ "paid": [row.clone()] })));
    if let Some(e) = single.error() {
        return Err(EditError::Entry(e));
    }
    let tx = row["tx"].as_str().unwrap_or_default().to_ascii_lowercase();
    let list = v["paid"].as_array_mut().ok_or(EditError::NoList {
        file: PAID_FILE,
        key: "paid",
    })?;
    if list
        .iter()
        .any(|r| r["tx"].as_str().map(str::to_ascii_lowercase) == Some(tx.clone()))
    {
        return Err(EditError::PaidExists { tx });
    }
    list.push(row);
    Ok(bytes_of(&v))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn quest(id: &str) -> Value {
        json!({"id": id, "title": "T", "rung": "R", "what": "W", "deliverable": "D", "check": "review"})
    }

    #[test]
    fn add_retire_pay_and_refusals() {
        let b = add_quest(None, quest("a")).unwrap();
        let b = add_quest(Some(&b), quest("b")).unwrap();
        assert_eq!(parse_quests(&b).items.len(), 2);
        assert!(add_quest(Some(&b), quest("a"))
            .unwrap_err()
            .to_string()
            .contains("already"));
        assert!(add_quest(Some(&b), quest("Bad Id")).is_err());
        let r = retire_quest(Some(&b), "a").unwrap();
        let parsed = parse_quests(&r);
        assert!(parsed.items.iter().any(|q| q.id == "a" && q.retired));
        assert!(retire_quest(Some(&b), "zz").is_err());
        // A file that does not parse is never rewritten.
        assert!(add_quest(Some(b"{oops"), quest("c"))
            .unwrap_err()
            .to_string()
            .contains("by hand"));
        let row = json!({"quest": "a", "to": format!("0x{}", "1".repeat(40)),
            "amount_scry": "5", "token": format!("0x{}", "2".repeat(40)),
            "tx": format!("0x{}", "ab".repeat(32))});
        let p = add_paid(None, row.clone()).unwrap();
        assert_eq!(parse_paid(&p).items.len(), 1);
        assert!(add_paid(Some(&p), row)
            .unwrap_err()
            .to_string()
            .contains("already"));
        let bad =
            json!({"quest": "a", "to": "0x1", "amount_scry": "5", "token": "0x2", "tx": "0x3"});
        assert!(add_paid(Some(&p), bad).is_err());
    }
}
