//! The quest board's pages through the live source (`conduct_renderer::live::munus`): over a
//! real store whose board records were appended through the sequencer, the list `/munus` is
//! signed and carries every field library/MUNUS.md lists, a claimed quest shows its claim, each paid row's
//! flag (true, false, null) is shown as it is in JSON and in words in HTML, a malformed quest
//! file is named in `claims_file_error` while the good quests stay listed, user text is escaped,
//! a retired quest is off the board and its page says retired, and a claim lapses at exactly
//! claim + 14 days: that quest's key falls due then and its page flips to `open`.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;

use conduct_core::munus::record::{BoardRecord, Claim, Payment};
use conduct_core::munus::{parse_quests, Quest, LAPSE_SECONDS};
use conduct_core::signing::{verify_object, PinnedKey, ServiceKey};
use conduct_core::time::rfc3339;
use conduct_core::vow::record::checksum_address;
use conduct_indexer::ledger::{Ledger, Sequencer};
use conduct_indexer::munus::{board_job, Flags, MunusReader, PaymentFlags};
use conduct_indexer::store::Store;
use conduct_indexer::tree::Dir;
use conduct_indexer::vows::{vow_job, NewVow};
use conduct_renderer::live::munus::{quest_key, MunusSource};
use conduct_renderer::live::Source;
use conduct_renderer::vows::Files;
use serde_json::{json, Value};

const ORIGIN: &str = "localhost:8402/log";
const T0: u64 = 1_795_262_400; // noon UTC
const PUBLIC_URL: &str = "https://conduct.example";
const SCRIPT: &str = "<script>alert(1)</script>";

fn key() -> ServiceKey {
    ServiceKey::from_seed(&[7; 32], ORIGIN)
}

fn tx(n: u8) -> String {
    format!("0x{}", hex::encode([n; 32]))
}

/// The operator's quest file: five good quests, one retired, one with markup in its text, and
/// one bad entry.
fn quests_file() -> Value {
    let q = |id: &str| json!({"id": id, "title": format!("Quest {id}"), "rung": "rung 2", "what": "improve the service", "deliverable": "a pull request", "check": "review"});
    let mut retired = q("old");
    retired["retired"] = json!(true);
    let mut xss = q("xss");
    xss["title"] = json!(format!("Title {SCRIPT}"));
    xss["what"] = json!(format!("What {SCRIPT}"));
    json!({"quests": [q("alpha"), q("beta"), q("gamma"), q("delta"), retired, xss,
        {"id": "Bad Id", "title": "t", "rung": "r", "what": "w", "deliverable": "d", "check": "review"}]})
}

fn vow(seq: &Sequencer, n: u8) -> String {
    let leaf = seq
        .submit_job_blocking(vow_job(
            key(),
            NewVow {
                origin: ORIGIN.into(),
                agent: format!("worker-{n}"),
                text: "improve the service".into(),
                cadence_hours: 24.0,
                cadence_seconds: 86_400,
                wallet: Some([n; 20]),
                wallet_signature: Some(format!("0xsig{n}")),
                signed_message_sha256: Some(format!("m{n}")),
                sealed: false,
                sandbox_reason: None,
                at: 1_000,
            },
        ))
        .unwrap()
        .leaf
        .unwrap();
    serde_json::from_slice::<Value>(&leaf).unwrap()["vow_id"]
        .as_str()
        .unwrap()
        .to_owned()
}

fn payment(quest: &str, n: u8) -> BoardRecord {
    BoardRecord::Payment(Payment {
        quest_id: quest.into(),
        claim: None,
        to: checksum_address(&[n; 20]),
        amount_scry: "1000000".into(),
        token: format!("0x{}", "cd".repeat(20)),
        chain_id: 31337,
        tx: tx(n),
        at: T0 + 10,
    })
}

struct Fixture {
    _tmp: tempfile::TempDir,
    source: MunusSource,
    vow: String,
    data: std::path::PathBuf,
    reader: Arc<MunusReader>,
}

/// A store with one signed vow claiming `alpha` at `T0` and three payments (beta: the chain
/// confirms it; gamma: it does not match; delta: never answered), the operator's files in the
/// data directory (`paid.json` malformed), and the source over them.
fn fixture() -> Fixture {
    let tmp = tempfile::tempdir().unwrap();
    let store = Store::open(tmp.path()).unwrap();
    let ledger = Ledger::open(&store, key(), Dir::shared(tmp.path()).unwrap()).unwrap();
    let seq = Sequencer::spawn(ledger, 64).unwrap();
    let bytes = serde_json::to_vec(&quests_file()).unwrap();
    std::fs::write(tmp.path().join("quests.json"), &bytes).unwrap();
    std::fs::write(tmp.path().join("paid.json"), b"{\"paid\": [").unwrap();
    let quests: Vec<Quest> = parse_quests(&bytes).items;
    let v = vow(&seq, 1);
    let job = |r: BoardRecord| board_job(key(), r, quests.clone(), Flags::new());
    seq.submit_job_blocking(job(BoardRecord::Claim(Claim {
        quest_id: "alpha".into(),
        vow_id: v.clone(),
        wallet: checksum_address(&[1; 20]),
        wallet_signature: "0xc1".into(),
        at: T0,
    })))
    .unwrap();
    for (q, n) in [("beta", 2), ("gamma", 3), ("delta", 4)] {
        seq.submit_job_blocking(job(payment(q, n))).unwrap();
    }
    let flags = PaymentFlags::default();
    flags.set(&tx(2), Some(true));
    flags.set(&tx(3), Some(false));
    let reader = Arc::new(MunusReader::open(&store).unwrap());
    let source = MunusSource::new(
        key(),
        PUBLIC_URL,
        tmp.path(),
        reader.clone(),
        Arc::new(flags),
    );
    Fixture {
        data: tmp.path().to_owned(),
        _tmp: tmp,
        source,
        vow: v,
        reader,
    }
}

fn keys(ks: &[&str]) -> BTreeSet<String> {
    ks.iter().map(|k| (*k).to_owned()).collect()
}

fn file<'a>(files: &'a Files, path: &str) -> &'a [u8] {
    &files
        .iter()
        .find(|(p, _)| p == path)
        .unwrap_or_else(|| panic!("no {path} in {:?}", paths(files)))
        .1
}

fn paths(files: &Files) -> Vec<&str> {
    files.iter().map(|(p, _)| p.as_str()).collect()
}

fn signed_json(files: &Files, path: &str) -> Value {
    let v: Value = serde_json::from_slice(file(files, path)).unwrap();
    verify_object(&v, &PinnedKey::parse(&key().vkey()).unwrap()).unwrap();
    v
}

fn html(files: &Files, path: &str) -> String {
    String::from_utf8(file(files, path).to_vec()).unwrap()
}

fn render(source: &mut MunusSource, ks: &[&str], now: u64) -> Files {
    let none = |_: &str| None;
    source.render(&keys(ks), false, now, &none).unwrap()
}

/// The `<tr>` of `html` that holds `needle`.
fn row_of<'a>(html: &'a str, needle: &str) -> &'a str {
    let at = html
        .find(needle)
        .unwrap_or_else(|| panic!("{needle} not in {html}"));
    let start = html[..at].rfind("<tr>").unwrap();
    let end = at + html[at..].find("</tr>").unwrap();
    &html[start..end]
}

#[test]
fn the_board_lists_every_field_claims_flags_and_file_errors() {
    let mut f = fixture();
    let now = T0 + 3600;
    let files = render(
        &mut f.source,
        &["", "quest:alpha", "quest:beta", "quest:old", "quest:xss"],
        now,
    );
    let list = signed_json(&files, "munus.json");
    assert_eq!(list["type"], "conduct.munus/v1");
    assert_eq!(list["at"], rfc3339(now));
    for k in [
        "quests",
        "open",
        "claimed",
        "claims_file_error",
        "delivered_in_house",
        "delivered_by_a_worker",
        "done_is_not_settled",
        "paid",
        "settled_to_a_worker",
        "unverified",
        "uncheckable_right_now",
        "paid_file_error",
        "how_verified",
        "walls",
        "scope",
        "docs",
        "why_this_is_the_quest",
    ] {
        assert!(list.get(k).is_some(), "missing {k}");
    }
    // The good quests are listed in file order; the retired and the bad entry are not.
    let ids: Vec<&str> = list["quests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|q| q["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["alpha", "beta", "gamma", "delta", "xss"]);
    let error = list["claims_file_error"].as_str().unwrap();
    assert!(
        error.contains("quests[6]") && error.contains("Bad Id"),
        "{error}"
    );
    assert!(list["paid_file_error"]
        .as_str()
        .unwrap()
        .starts_with("paid.json: not JSON"));
    for k in [
        "id",
        "title",
        "rung",
        "what",
        "deliverable",
        "check",
        "status",
    ] {
        assert!(list["quests"][0][k].is_string(), "{k}");
    }
    // The claim.
    let alpha = &list["quests"][0];
    assert_eq!(alpha["status"], "open");
    assert_eq!(alpha["claim"]["vow_id"], f.vow.as_str());
    assert_eq!(alpha["claim"]["wallet"], checksum_address(&[1; 20]));
    assert_eq!(alpha["claim"]["at"], rfc3339(T0));
    assert_eq!(alpha["claim"]["lapses_at"], rfc3339(T0 + LAPSE_SECONDS));
    assert_eq!(alpha["claim"]["delivery"], Value::Null);
    // The flags: true settles beta, false and null change nothing; null stays null.
    assert_eq!(list["quests"][1]["status"], "done");
    assert!(list["quests"][1]["settled_by"]["payment_log_index"].is_u64());
    let flag = |t: &str| {
        let p = list["paid"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["tx"] == t)
            .unwrap();
        p.as_object().unwrap().get("verified").cloned()
    };
    assert_eq!(flag(&tx(2)), Some(json!(true)));
    assert_eq!(flag(&tx(3)), Some(json!(false)));
    assert_eq!(flag(&tx(4)), Some(Value::Null));
    for (k, n) in [
        ("open", 3),
        ("claimed", 1),
        ("delivered_in_house", 0),
        ("delivered_by_a_worker", 0),
        ("settled_to_a_worker", 1),
        ("unverified", 1),
        ("uncheckable_right_now", 1),
    ] {
        assert_eq!(list[k], n, "{k}");
    }

    // The HTML board says the same, in words, with user text escaped and no script.
    let page = html(&files, "munus.html");
    assert!(!page.contains("<script"), "{page}");
    assert!(page.contains("Title &#60;script&#62;") || page.contains("Title &lt;script&gt;"));
    assert!(row_of(&page, &tx(2)).contains("<code>true</code>: confirmed on chain"));
    assert!(row_of(&page, &tx(3)).contains("<code>false</code>: does not match"));
    assert!(row_of(&page, &tx(4)).contains("<code>null</code>: the chain did not answer; unknown"));
    assert!(page.contains(&format!("href=\"/vow/{}\"", f.vow)));
    assert!(page.contains(&rfc3339(T0 + LAPSE_SECONDS)));
    for k in [
        "open",
        "claimed",
        "delivered_in_house",
        "delivered_by_a_worker",
        "settled_to_a_worker",
        "unverified",
        "uncheckable_right_now",
        "claims_file_error",
        "paid_file_error",
        "done_is_not_settled",
        "labor_never_a_reading",
        "merge_is_a_human_act",
        "no_shell_here",
        "no_yield_language",
    ] {
        assert!(page.contains(&format!("<code>{k}</code>")), "{k}");
    }
    assert!(page.contains("href=\"/library/MUNUS.md\""));
    assert!(page.contains("GET /play/message?action=claim&amp;quest=&lt;id&gt;&amp;vow_id="));
    assert!(page.contains("POST /munus/&lt;id&gt;/claim"));
    assert!(page.contains("POST /munus/&lt;id&gt;/submit"));
    assert!(
        !page.contains(">Quest old<"),
        "a retired quest is on the board"
    );

    // A quest's page: signed, its entry as the list has it, how to claim it.
    let a = signed_json(&files, "munus/alpha.json");
    assert_eq!(a["type"], "conduct.munus-quest/v1");
    assert_eq!(a["quest"], *alpha);
    assert_eq!(a["walls"], list["walls"]);
    assert!(a["how_to_claim"]["claim"][2]
        .as_str()
        .unwrap()
        .starts_with("POST /munus/alpha/claim"));
    let ah = html(&files, "munus/alpha.html");
    assert!(ah.contains(&format!("href=\"/vow/{}\"", f.vow)));
    assert!(ah.contains(&checksum_address(&[1; 20])));
    let b = signed_json(&files, "munus/beta.json");
    assert_eq!(b["paid"][0]["verified"], true);
    assert!(html(&files, "munus/beta.html").contains("confirmed on chain"));
    // The retired quest's page is a tombstone.
    let old = signed_json(&files, "munus/old.json");
    assert_eq!(old["quest"]["status"], "retired");
    assert!(html(&files, "munus/old.html").contains("Quest old: retired"));
    let xh = html(&files, "munus/xss.html");
    assert!(!xh.contains("<script"), "{xh}");

    // The restart backlog: the list, then every quest (retired included).
    let backlog = f.source.backlog(None).unwrap();
    assert_eq!(backlog[0], "");
    for id in ["alpha", "beta", "gamma", "delta", "old", "xss"] {
        assert!(backlog.contains(&quest_key(id)), "{id}: {backlog:?}");
    }
}

#[test]
fn a_claim_lapses_at_its_instant_and_the_page_flips_by_itself() {
    let mut f = fixture();
    assert_eq!(f.source.next_due(), None);
    render(&mut f.source, &["quest:alpha"], T0 + 60);
    let due = T0 + LAPSE_SECONDS;
    assert_eq!(f.source.next_due(), Some(due));
    assert!(f.source.take_due(due - 1, 10).is_empty());
    assert_eq!(f.source.take_due(due, 10), vec![quest_key("alpha")]);
    // Taken: it does not fall due again until a render says so.
    assert!(f.source.take_due(due, 10).is_empty());
    assert_eq!(f.source.next_due(), None);

    let files = render(&mut f.source, &["quest:alpha"], due);
    let a = signed_json(&files, "munus/alpha.json");
    assert_eq!(a["quest"]["status"], "open");
    assert_eq!(a["quest"]["claim"], Value::Null);
    let list = signed_json(&files, "munus.json");
    assert_eq!(list["claimed"], 0);
    assert_eq!(list["open"], 4);
    assert_eq!(list["quests"][0]["claim"], Value::Null);
    assert!(!html(&files, "munus/alpha.html").contains(&f.vow));
    assert_eq!(f.source.next_due(), None);
}

#[test]
fn missing_files_are_an_empty_board_and_a_gone_quest_keeps_its_page_only() {
    let f = fixture();
    // No operator files at all: no quests, no file error; the log's payments stay listed.
    let empty = f.data.join("nothing-here");
    let mut source = MunusSource::new(
        key(),
        PUBLIC_URL,
        Path::new(&empty),
        f.reader.clone(),
        Arc::new(PaymentFlags::default()),
    );
    let files = render(&mut source, &["", "quest:alpha", "quest:Bad"], T0 + 60);
    let list = signed_json(&files, "munus.json");
    assert_eq!(list["quests"], json!([]));
    assert_eq!(list["claims_file_error"], Value::Null);
    assert_eq!(list["paid_file_error"], Value::Null);
    assert_eq!(list["paid"].as_array().unwrap().len(), 3);
    assert_eq!(list["uncheckable_right_now"], 3);
    // alpha left the file: no page unless one was published (then a tombstone).
    assert_eq!(paths(&files), ["munus.json", "munus.html"]);
    let published = |p: &str| (p == "munus/alpha.json").then(|| "00".to_owned());
    let files = source
        .render(&keys(&["quest:alpha"]), false, T0 + 60, &published)
        .unwrap();
    let a = signed_json(&files, "munus/alpha.json");
    assert_eq!(a["quest"]["status"], "absent");
}

#[test]
fn discovery_points_at_the_board_once_it_is_routed() {
    use conduct_renderer::discovery::{discovery_files, lost_questions};
    use conduct_renderer::openapi::Contract;
    use conduct_renderer::{RouteInfo, SiteInput};
    let route = |method, path| RouteInfo {
        method,
        path,
        paid: false,
        description: "A route.",
        contract: Contract::UNDESCRIBED,
    };
    let base = vec![route("GET", "/lost"), route("GET", "/library/{NAME}.md")];
    let mut live = base.clone();
    live.extend([
        route("GET", "/munus"),
        route("GET", "/munus/{id}"),
        route("GET", "/play/message"),
        route("POST", "/munus/{id}/claim"),
        route("POST", "/munus/{id}/submit"),
    ]);
    let k = key();
    let input = |routes| SiteInput {
        key: &k,
        public_url: PUBLIC_URL,
        routes,
        accepts: &[],
        price_usd: "0.10",
        posted: &[],
        demo_daily_cap: Some(50),
        as_of: 1_700_000_000,
        manifest_ttl: 86_400,
    };
    let earn = |routes| {
        lost_questions(&input(routes))
            .into_iter()
            .find(|q| q.id == "can-i-earn")
            .unwrap()
    };
    let llms = |routes| {
        let files = discovery_files(&input(routes)).unwrap();
        String::from_utf8(file(&files, "llms.txt").to_vec()).unwrap()
    };

    let q = earn(&base);
    assert!(
        q.answer.starts_with("Not on this instance yet"),
        "{}",
        q.answer
    );
    assert!(!llms(&base).contains("Quest board"));

    let q = earn(&live);
    assert!(q.answer.starts_with("Yes"), "{}", q.answer);
    for s in [
        "/munus",
        "GET /play/message?action=claim&quest=<id>&vow_id=<vow id>",
        "POST /munus/{id}/claim",
        "POST /munus/{id}/submit",
        "/library/MUNUS.md",
    ] {
        assert!(q.answer.contains(s), "{s}: {}", q.answer);
    }
    let present: Vec<String> = q
        .endpoints
        .iter()
        .filter(|e| e.present)
        .map(|e| format!("{} {}", e.method, e.path))
        .collect();
    for s in [
        "GET /munus",
        "GET /munus/{id}",
        "POST /munus/{id}/claim",
        "POST /munus/{id}/submit",
        "GET /library/MUNUS.md",
    ] {
        assert!(present.contains(&s.to_owned()), "{s}: {present:?}");
    }
    assert!(present
        .iter()
        .any(|p| p.starts_with("GET /play/message?action=claim")));
    let t = llms(&live);
    for s in [
        "## Quest board (munus)",
        "(https://conduct.example/munus)",
        "`GET /play/message?action=claim&quest=<id>&vow_id=<vow id>`",
        "`POST /munus/{id}/claim` with `{\"vow_id\", \"signature\"}`",
        "`POST /munus/{id}/submit` with `{\"vow_id\", \"link\", \"signature\"}`",
        "(https://conduct.example/library/MUNUS.md)",
    ] {
        assert!(t.contains(s), "{s}: {t}");
    }
}
