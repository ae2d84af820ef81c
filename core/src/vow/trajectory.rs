//! Trajectory stats of a vow (library/VOWS.md): the coupling series, `y_consistency`, the window
//! state, and the result of verifying the vow's chain locally.
//!
//! [`Track`] is built incrementally: it takes the vow record, then each entry once, keeping
//! the chain checker's head, running sums and every entry's published lines as pre-rendered
//! RFC 8785 bytes. Rendering a vow after a report-in is then one new record's work plus
//! copying bytes, whatever the chain's length. Pure: the render instant is an input, so the
//! same records and instant give the same bytes.

use std::borrow::Cow;
use std::collections::VecDeque;

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use super::consistency;
use super::interpret::{
    from_parts, visible_ys, EntryView, InterpretationInput, LinkCounts, MAX_ENTRIES,
};
use super::links::{Fields, Head, Leaf, LinkChecker, LinkError};
use super::record::{record_hash, ENTRY_TYPE};
use super::windows::{windows_of, Hits, Windows};
use crate::canonical::{jcs, jcs_map_with_raw, CanonicalError};
use crate::signing::PinnedKey;
use crate::time::parse_rfc3339;

/// What the coupling series says it measures.
const SERIES_MEASURE: &str = "adjusted bits (mutual information minus its expectation under \
independence); p from the meter's permutation test";

/// What a verified chain was checked for.
const CHECKED: &str = "canonical bytes, service signature, log_index, seq, prev links, at order";

#[derive(Debug, Default, Deserialize)]
struct Quantity {
    adjusted: Option<f64>,
    p: Option<f64>,
}

#[derive(Debug, Default, Deserialize)]
struct ProfileView {
    #[serde(default)]
    i_c_d: Quantity,
    #[serde(default)]
    i_c_m: Quantity,
    #[serde(default)]
    i_c_m_given_d_clean: Quantity,
    #[serde(default)]
    i_c_dm: Quantity,
}

#[derive(Debug, Default, Deserialize)]
struct MeterView<'a> {
    #[serde(borrow, default)]
    version: Option<Cow<'a, str>>,
}

#[derive(Debug, Deserialize)]
struct DeclaredView<'a> {
    #[serde(borrow)]
    y: Cow<'a, str>,
}

/// The members of a record the trajectory reads, borrowed from its leaf where possible.
#[derive(Debug, Deserialize)]
struct RecordView<'a> {
    #[serde(rename = "type", borrow)]
    ty: Cow<'a, str>,
    #[serde(borrow, default)]
    vow_id: Option<Cow<'a, str>>,
    log_index: Option<u64>,
    #[serde(borrow, default)]
    at: Option<Cow<'a, str>>,
    seq: Option<u64>,
    #[serde(borrow, default)]
    prev: Option<Cow<'a, str>>,
    attested: Option<bool>,
    trace_donated: Option<bool>,
    #[serde(borrow, default)]
    trace_sha256: Option<Cow<'a, str>>,
    n_turns: Option<u64>,
    #[serde(borrow, default)]
    note: Option<Cow<'a, str>>,
    y_consistency: Option<f64>,
    #[serde(default)]
    profile: ProfileView,
    #[serde(borrow, default)]
    meter: MeterView<'a>,
    #[serde(borrow, default)]
    declared_y: Option<Vec<DeclaredView<'a>>>,
    #[serde(borrow, default)]
    agent: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    text: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    text_sha256: Option<Cow<'a, str>>,
}

impl RecordView<'_> {
    fn fields(&self) -> Fields<'_> {
        Fields {
            ty: &self.ty,
            vow_id: self.vow_id.as_deref(),
            log_index: self.log_index,
            at: self.at.as_deref(),
            seq: self.seq,
            prev: self.prev.as_deref(),
            attested: self.attested,
            trace_donated: self.trace_donated,
            agent: self.agent.as_deref(),
            text: self.text.as_deref(),
            text_sha256: self.text_sha256.as_deref(),
        }
    }
}

/// Most recent entries whose coupling-series point and chain-listing line a vow's pages
/// carry (every entry's numbers stay in its chain; counts, means and windows cover them all).
/// It keeps each render's work and each page's size bounded however long a chain grows.
pub const SERIES_LIMIT: usize = 256;

/// Push `item` (RFC 8785 bytes) onto a list that keeps the last [`SERIES_LIMIT`] items.
fn push_item(list: &mut VecDeque<Box<[u8]>>, item: Vec<u8>) {
    if list.len() == SERIES_LIMIT {
        list.pop_front();
    }
    list.push_back(item.into_boxed_slice());
}

/// The items as one RFC 8785 array.
fn array(list: &VecDeque<Box<[u8]>>) -> Vec<u8> {
    let mut out = Vec::with_capacity(list.iter().map(|i| i.len() + 1).sum::<usize>() + 2);
    out.push(b'[');
    for (k, item) in list.iter().enumerate() {
        if k > 0 {
            out.push(b',');
        }
        out.extend_from_slice(item);
    }
    out.push(b']');
    out
}

/// One entry as the human-readable pages show it (the last [`SERIES_LIMIT`] are kept).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Point {
    /// Chain position.
    pub seq: u64,
    /// Report-in instant, unix seconds.
    pub at: u64,
    /// Its log index.
    pub log_index: u64,
    /// Paid (true) or free tier.
    pub attested: bool,
    /// Adjusted bits of I(C;D), I(C;M), I(C;M|D clean), I(C;D,M).
    pub bits: [Option<f64>; 4],
    /// Its `y_consistency`.
    pub y: Option<f64>,
    /// The public note.
    pub note: Option<String>,
    /// Hex SHA-256 of its record.
    pub record_sha256: String,
    /// The meter that measured its numbers.
    #[serde(default = "super::view::first_meter")]
    pub meter: String,
}

/// Most meter changes a vow's pages list (the count covers them all).
pub const METER_CHANGES_LIMIT: usize = 32;

/// Where a vow's chain changed meters: the entry after which the next entry's numbers come
/// from another meter.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Meters {
    /// The meter of the latest entry.
    pub latest: Option<String>,
    /// The last [`METER_CHANGES_LIMIT`] changes: `(seq of the first entry of the new meter,
    /// from, to)`.
    pub changes: VecDeque<(u64, String, String)>,
    /// Every change so far.
    pub count: u64,
}

impl Meters {
    fn take(&mut self, seq: u64, meter: &str) {
        match &self.latest {
            Some(m) if m == meter => {}
            Some(m) => {
                if self.changes.len() == METER_CHANGES_LIMIT {
                    self.changes.pop_front();
                }
                self.changes.push_back((seq, m.clone(), meter.to_owned()));
                self.count += 1;
                self.latest = Some(meter.to_owned());
            }
            None => self.latest = Some(meter.to_owned()),
        }
    }

    /// As the stats publish it.
    fn to_value(&self) -> Value {
        json!({
            "latest": self.latest,
            "changes": self.changes.iter().map(|(seq, from, to)| json!({"seq": seq, "from": from, "to": to})).collect::<Vec<_>>(),
            "changes_total": self.count,
            "note": "numbers of different meters are not comparable; each entry names its meter",
        })
    }
}

/// One vow's chain, read so far, with everything its pages publish about it.
#[derive(Debug)]
pub struct Track {
    checker: LinkChecker,
    vow: Value,
    sealed: bool,
    start: u64,
    cadence: u64,
    records: usize,
    verified: usize,
    failure: Option<String>,
    head_hash: String,
    /// The windows its report-ins fell in.
    hits: Hits,
    /// The last [`SERIES_LIMIT`] coupling-series points, RFC 8785.
    series: VecDeque<Box<[u8]>>,
    /// The last [`SERIES_LIMIT`] chain-listing lines, RFC 8785.
    brief: VecDeque<Box<[u8]>>,
    entries: u64,
    attested: u64,
    y_sum: f64,
    y_count: u64,
    y_last: Option<f64>,
    recent: VecDeque<EntryView>,
    points: VecDeque<Point>,
    meters: Meters,
}

impl Track {
    /// Start from the vow record at log index `index` (leaf bytes `leaf`). With `trusted` (a
    /// record this process verified before) its signature is not checked again. Fails only
    /// when the leaf is not a readable vow record.
    pub fn new(
        pinned: &PinnedKey,
        origin: &str,
        index: u64,
        leaf: &[u8],
        trusted: bool,
    ) -> Result<Track, LinkError> {
        let vow: Value = serde_json::from_slice(leaf)
            .map_err(|e| LinkError(format!("vow record {index}: {e}")))?;
        let start = vow["at"]
            .as_str()
            .and_then(parse_rfc3339)
            .ok_or_else(|| LinkError(format!("vow record {index}: no `at`")))?;
        let hours = vow["cadence_hours"]
            .as_f64()
            .ok_or_else(|| LinkError(format!("vow record {index}: no cadence")))?;
        let mut checker = LinkChecker::new(pinned.clone(), Some(origin.to_owned()));
        let checked = checker
            .record(index, leaf, &vow, trusted)
            .and_then(|l| match l {
                Leaf::Vow(_) => Ok(()),
                _ => Err(LinkError(format!("leaf {index}: not a vow record"))),
            });
        let failure = checked.err().map(|e| e.0);
        Ok(Track {
            checker,
            sealed: vow["sealed"].as_bool().unwrap_or(false),
            start,
            cadence: (hours * 3600.0) as u64,
            records: 1,
            verified: usize::from(failure.is_none()),
            failure,
            head_hash: record_hash(leaf),
            vow,
            hits: Hits::default(),
            series: VecDeque::new(),
            brief: VecDeque::new(),
            entries: 0,
            attested: 0,
            y_sum: 0.0,
            y_count: 0,
            y_last: None,
            recent: VecDeque::new(),
            points: VecDeque::new(),
            meters: Meters::default(),
        })
    }

    /// Take the chain's next record. With `trusted` its canonical form and signature are not
    /// checked again (its links always are). A record that does not verify is still shown; the
    /// first failure is kept and later records are no longer counted as verified.
    pub fn push(&mut self, index: u64, leaf: &[u8], trusted: bool) -> Result<(), CanonicalError> {
        let position = self.records;
        self.records += 1;
        self.head_hash = record_hash(leaf);
        let view: RecordView<'_> = match serde_json::from_slice(leaf) {
            Ok(v) => v,
            Err(e) => {
                self.fail(format!("leaf {index}: {e}"));
                return Ok(());
            }
        };
        if self.failure.is_none() {
            let checked = self.check(index, leaf, &view, trusted, position);
            match checked {
                Ok(()) => self.verified += 1,
                Err(e) => self.fail(e),
            }
        }
        if view.ty != ENTRY_TYPE {
            return Ok(());
        }
        self.add_entry(&view)
    }

    fn check(
        &mut self,
        index: u64,
        leaf: &[u8],
        view: &RecordView<'_>,
        trusted: bool,
        position: usize,
    ) -> Result<(), String> {
        if !trusted && view.fields().is_linked_record() {
            let v: Value =
                serde_json::from_slice(leaf).map_err(|e| format!("leaf {index}: {e}"))?;
            self.checker.authentic(index, leaf, &v).map_err(|e| e.0)?;
        }
        match self
            .checker
            .link(index, leaf, &view.fields())
            .map_err(|e| e.0)?
        {
            Leaf::Entry(..) => Ok(()),
            _ => Err(format!(
                "leaf {index}: not the record expected at position {position}"
            )),
        }
    }

    fn fail(&mut self, e: String) {
        if self.failure.is_none() {
            self.failure = Some(e);
        }
    }

    fn add_entry(&mut self, e: &RecordView<'_>) -> Result<(), CanonicalError> {
        let at = e.at.as_deref();
        if let Some(t) = at.and_then(parse_rfc3339) {
            self.hits.add(self.start, self.cadence, t);
        }
        let q = &e.profile;
        let meter = e
            .meter
            .version
            .as_deref()
            .map_or_else(super::view::first_meter, str::to_owned);
        self.meters.take(e.seq.unwrap_or(0), &meter);
        let point = json!({
            "seq": e.seq, "at": at, "log_index": e.log_index, "meter": meter,
            "n_turns": e.n_turns, "attested": e.attested,
            "i_c_d": q.i_c_d.adjusted, "i_c_m": q.i_c_m.adjusted,
            "i_c_m_given_d_clean": q.i_c_m_given_d_clean.adjusted, "i_c_dm": q.i_c_dm.adjusted,
            "p": {"i_c_d": q.i_c_d.p, "i_c_m": q.i_c_m.p,
                  "i_c_m_given_d_clean": q.i_c_m_given_d_clean.p, "i_c_dm": q.i_c_dm.p},
            "y_consistency": e.y_consistency,
            "has_note": e.note.is_some(),
        });
        push_item(&mut self.series, jcs(&point)?);
        let line = json!({
            "seq": e.seq, "at": at, "log_index": e.log_index,
            "record_sha256": self.head_hash, "prev": e.prev,
            "attested": e.attested, "trace_donated": e.trace_donated,
            "trace_sha256": e.trace_sha256, "note": e.note, "meter": meter,
        });
        push_item(&mut self.brief, jcs(&line)?);
        self.entries += 1;
        if e.attested == Some(true) {
            self.attested += 1;
        }
        if let Some(y) = e.y_consistency {
            self.y_sum += y;
            self.y_count += 1;
        }
        self.y_last = e.y_consistency;
        if self.points.len() == SERIES_LIMIT {
            self.points.pop_front();
        }
        self.points.push_back(Point {
            seq: e.seq.unwrap_or(0),
            at: at.and_then(parse_rfc3339).unwrap_or(0),
            log_index: e.log_index.unwrap_or(0),
            attested: e.attested.unwrap_or(false),
            bits: [
                q.i_c_d.adjusted,
                q.i_c_m.adjusted,
                q.i_c_m_given_d_clean.adjusted,
                q.i_c_dm.adjusted,
            ],
            y: e.y_consistency,
            note: e.note.as_deref().map(str::to_owned),
            record_sha256: self.head_hash.clone(),
            meter: meter.clone(),
        });
        let ys = e.declared_y.iter().flatten().map(|d| d.y.as_ref());
        self.recent.push_back(EntryView {
            seq: e.seq.unwrap_or(0),
            at: at.unwrap_or_default().to_owned(),
            attested: e.attested.unwrap_or(false),
            i_c_d: q.i_c_d.adjusted,
            i_c_m: q.i_c_m.adjusted,
            i_c_m_given_d_clean: q.i_c_m_given_d_clean.adjusted,
            i_c_dm: q.i_c_dm.adjusted,
            p_i_c_d: q.i_c_d.p,
            p_i_c_m: q.i_c_m.p,
            y_consistency: e.y_consistency,
            declared_y: visible_ys(ys, self.sealed),
            note: e.note.as_deref().map(str::to_owned),
            meter,
        });
        if self.recent.len() > MAX_ENTRIES {
            self.recent.pop_front();
        }
        Ok(())
    }

    /// The vow record.
    pub fn vow(&self) -> &Value {
        &self.vow
    }

    /// Records taken (the vow record and every entry).
    pub fn records(&self) -> usize {
        self.records
    }

    /// Entries taken.
    pub fn entries(&self) -> u64 {
        self.entries
    }

    /// Leading records that verified (all of them when the chain verified).
    pub fn verified(&self) -> usize {
        self.verified
    }

    /// Hex SHA-256 of the last record's leaf.
    pub fn head_sha256(&self) -> &str {
        &self.head_hash
    }

    /// The window state at `now`.
    pub fn windows(&self, now: u64) -> Windows {
        windows_of(self.start, self.cadence, &self.hits, now)
    }

    /// The last [`SERIES_LIMIT`] entries, oldest first.
    pub fn points(&self) -> &VecDeque<Point> {
        &self.points
    }

    /// Mean `y_consistency` over every entry that has one.
    pub fn y_consistency_mean(&self) -> Option<f64> {
        self.y_mean()
    }

    /// Entries that were paid for.
    pub fn attested_entries(&self) -> u64 {
        self.attested
    }

    /// The chain verified locally (`None`), or its first failure.
    pub fn failure(&self) -> Option<&str> {
        self.failure.as_deref()
    }

    /// The chain-listing lines of the last [`SERIES_LIMIT`] entries, as an RFC 8785 array.
    pub fn brief(&self) -> Vec<u8> {
        array(&self.brief)
    }

    fn y_mean(&self) -> Option<f64> {
        (self.y_count > 0).then(|| crate::meter::round12(self.y_sum / self.y_count as f64))
    }

    /// The stats object published in `/vow/<id>` and the reading, as RFC 8785 bytes, at `now`
    /// with window state `w` (from [`Self::windows`]).
    pub fn stats(&self, w: &Windows) -> Result<Vec<u8>, CanonicalError> {
        let verification = match &self.failure {
            None => json!({"ok": true, "records": self.records, "checked": CHECKED}),
            Some(e) => json!({"ok": false, "records": self.records, "error": e}),
        };
        let mut m = Map::new();
        m.insert("entries".into(), json!(self.entries));
        m.insert("attested_entries".into(), json!(self.attested));
        m.insert("coupling_series_measure".into(), json!(SERIES_MEASURE));
        m.insert(
            "coupling_series_covers".into(),
            json!({
                "entries": self.series.len(),
                "of": self.entries,
                "limit": SERIES_LIMIT,
                "earlier": "every entry's numbers are in its record in /vow/<id>/chain",
            }),
        );
        m.insert(
            "y_consistency".into(),
            json!({"mean": self.y_mean(), "last": self.y_last, "method": consistency::METHOD}),
        );
        m.insert("windows".into(), w.to_value());
        m.insert("overdue".into(), json!(w.overdue));
        m.insert("chain_verification".into(), verification);
        m.insert("meters".into(), self.meters.to_value());
        jcs_map_with_raw(&m, &[("coupling_series", &array(&self.series))])
    }

    /// What an interpreter sees of this vow with window state `w`.
    pub fn interpretation_input(&self, w: &Windows) -> InterpretationInput {
        let counts = LinkCounts {
            overdue: w.overdue,
            missed_windows: w.missed(),
            closed_windows: w.closed,
            y_consistency_mean: self.y_mean(),
            links_ok: self.failure.is_none(),
        };
        from_parts(&self.vow, self.recent.iter().cloned().collect(), counts)
    }

    /// Bytes held for this vow (what a cache of tracks counts).
    pub fn weight(&self) -> usize {
        self.series
            .iter()
            .chain(&self.brief)
            .map(|i| i.len() + 16)
            .sum::<usize>()
            + self.hits.weight()
            + self.recent.len() * 256
            + self
                .points
                .iter()
                .map(|p| 160 + p.note.as_ref().map_or(0, String::len))
                .sum::<usize>()
            + 1024
    }
}

/// Type of a kept [`Track`] ([`Track::state`]).
pub const TRACK_STATE_TYPE: &str = "conduct.track_state/1";

/// A [`Track`] as kept between runs ([`Track::state`]): everything but the key, serialized
/// with serde (JSON of type [`TRACK_STATE_TYPE`]). Its size is bounded by [`SERIES_LIMIT`] and
/// the vow's missed runs, never by its chain's length.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrackState {
    #[serde(rename = "type")]
    ty: String,
    heads: Vec<(String, Head)>,
    checked: [u64; 3],
    vow: Value,
    sealed: bool,
    start: u64,
    cadence: u64,
    records: usize,
    verified: usize,
    failure: Option<String>,
    head_hash: String,
    hits: Hits,
    series: Vec<String>,
    brief: Vec<String>,
    entries: u64,
    attested: u64,
    y_sum: f64,
    y_count: u64,
    y_last: Option<f64>,
    recent: Vec<EntryView>,
    points: Vec<Point>,
    #[serde(default)]
    meters: Meters,
}

/// RFC 8785 lines as kept (they are UTF-8 JSON).
fn lines_kept(list: &VecDeque<Box<[u8]>>) -> Vec<String> {
    list.iter()
        .map(|l| String::from_utf8_lossy(l).into_owned())
        .collect()
}

/// Lines kept, back as bytes; at most [`SERIES_LIMIT`] (a longer list is not a kept track).
fn lines_back(list: Vec<String>) -> Option<VecDeque<Box<[u8]>>> {
    (list.len() <= SERIES_LIMIT).then(|| {
        list.into_iter()
            .map(|l| l.into_bytes().into_boxed_slice())
            .collect()
    })
}

impl Track {
    /// This track as [`Track::resume`] takes it back: a vow's render after a restart resumes
    /// from it instead of reading its whole chain (ARCHITECTURE.md, "The write path of a
    /// report-in").
    pub fn state(&self) -> TrackState {
        TrackState {
            ty: TRACK_STATE_TYPE.into(),
            heads: self
                .checker
                .heads()
                .iter()
                .map(|(id, h)| (id.to_string(), h.clone()))
                .collect(),
            checked: [self.checker.vows, self.checker.entries, self.checker.other],
            vow: self.vow.clone(),
            sealed: self.sealed,
            start: self.start,
            cadence: self.cadence,
            records: self.records,
            verified: self.verified,
            failure: self.failure.clone(),
            head_hash: self.head_hash.clone(),
            hits: self.hits.clone(),
            series: lines_kept(&self.series),
            brief: lines_kept(&self.brief),
            entries: self.entries,
            attested: self.attested,
            y_sum: self.y_sum,
            y_count: self.y_count,
            y_last: self.y_last,
            recent: self.recent.iter().cloned().collect(),
            points: self.points.iter().cloned().collect(),
            meters: self.meters.clone(),
        }
    }

    /// The track [`Track::state`] kept, checking records against `pinned` from here on (and
    /// vow ids against `origin`): it continues exactly as the track that was kept would have.
    /// Fails when `k` is not a kept track.
    pub fn resume(pinned: &PinnedKey, origin: &str, k: TrackState) -> Result<Track, LinkError> {
        let bad = |m: &str| LinkError(format!("kept track: {m}"));
        if k.ty != TRACK_STATE_TYPE {
            return Err(bad(&format!("type {:?}", k.ty)));
        }
        if k.recent.len() > MAX_ENTRIES || k.points.len() > SERIES_LIMIT {
            return Err(bad("more recent entries than a track keeps"));
        }
        let [vows, entries, other] = k.checked;
        let checker = LinkChecker::resume(
            pinned.clone(),
            Some(origin.to_owned()),
            k.heads.into_iter().map(|(id, h)| (id.into(), h)),
            (vows, entries, other),
        );
        Ok(Track {
            checker,
            vow: k.vow,
            sealed: k.sealed,
            start: k.start,
            cadence: k.cadence,
            records: k.records,
            verified: k.verified,
            failure: k.failure,
            head_hash: k.head_hash,
            hits: k.hits,
            series: lines_back(k.series).ok_or_else(|| bad("series"))?,
            brief: lines_back(k.brief).ok_or_else(|| bad("brief"))?,
            entries: k.entries,
            attested: k.attested,
            y_sum: k.y_sum,
            y_count: k.y_count,
            y_last: k.y_last,
            recent: k.recent.into(),
            points: k.points.into(),
            // A track kept before entries named meters had only `meter/1` entries.
            meters: match k.meters.latest {
                None if k.entries > 0 => Meters {
                    latest: Some(super::view::first_meter()),
                    ..k.meters
                },
                _ => k.meters,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixture::EXAMPLE_ORIGIN as ORIGIN;
    use super::super::record::*;
    use super::*;
    use crate::signing::ServiceKey;

    fn chain(key: &ServiceKey, n: u64, sealed: bool) -> Vec<Vec<u8>> {
        super::super::fixture::example_chain(key, n, sealed).1
    }

    fn track(key: &ServiceKey, leaves: &[Vec<u8>], trusted: usize) -> Track {
        let pinned = PinnedKey::parse(&key.vkey()).unwrap();
        let mut t = Track::new(&pinned, ORIGIN, 0, &leaves[0], trusted > 0).unwrap();
        for (i, l) in leaves.iter().enumerate().skip(1) {
            t.push(i as u64, l, i < trusted).unwrap();
        }
        t
    }

    #[test]
    fn a_chain_verifies_and_its_stats_add_up() {
        let key = ServiceKey::from_seed(&[3; 32], ORIGIN);
        let leaves = chain(&key, 6, false);
        let t = track(&key, &leaves, 0);
        assert_eq!((t.records(), t.entries(), t.verified()), (7, 6, 7));
        assert_eq!(t.head_sha256(), record_hash(&leaves[6]));
        let w = t.windows(1_000_000 + 10 * 3600);
        let stats: Value = serde_json::from_slice(&t.stats(&w).unwrap()).unwrap();
        assert_eq!(stats["chain_verification"]["ok"], true);
        assert_eq!(stats["entries"], 6);
        assert_eq!(stats["attested_entries"], 2);
        assert_eq!(stats["coupling_series"].as_array().unwrap().len(), 6);
        assert_eq!(stats["coupling_series"][1]["has_note"], true);
        assert_eq!(stats["windows"]["closed"], 10);
        assert_eq!(stats["y_consistency"]["last"], json!(6.0 / 7.0));
        let brief: Value = serde_json::from_slice(&t.brief()).unwrap();
        assert_eq!(brief[5]["record_sha256"], record_hash(&leaves[6]).as_str());
        assert_eq!(brief[1]["note"], "note \u{e9} 2 \"quoted\"");
        let input = t.interpretation_input(&w);
        assert!(input.links_ok);
        assert_eq!(input.entries.len(), 6);
        assert_eq!(input.entries[0].declared_y, ["billing questions", "other"]);
    }

    #[test]
    fn a_change_of_meter_is_published_and_read() {
        use crate::meter::{measure, Meter, TurnSymbols};
        let key = ServiceKey::from_seed(&[3; 32], ORIGIN);
        let turns: Vec<TurnSymbols<'_>> = (0..20)
            .map(|k| {
                TurnSymbols::new(
                    k % 2 == 0,
                    if k % 4 == 0 { "refused" } else { "clean" },
                    "m",
                )
            })
            .collect();
        let (v1, v2) = (
            measure(Meter::V1, &turns, &[1; 32]),
            measure(Meter::V2, &turns, &[1; 32]),
        );
        let entries = [(&v1, None), (&v2, None), (&v2, None)];
        let (_, leaves) = super::super::fixture::example_chain_of(&key, &entries, false);
        let t = track(&key, &leaves, 0);
        assert_eq!(t.verified(), 4);
        let stats: Value = serde_json::from_slice(&t.stats(&t.windows(0)).unwrap()).unwrap();
        assert_eq!(stats["meters"]["latest"], "meter/2");
        assert_eq!(
            stats["meters"]["changes"],
            json!([{"seq": 2, "from": "meter/1", "to": "meter/2"}])
        );
        assert_eq!(stats["coupling_series"][0]["meter"], "meter/1");
        assert_eq!(t.points()[2].meter, "meter/2");
        let reading = super::super::interpret::rule_based(&t.interpretation_input(&t.windows(0)));
        assert!(
            reading.contains("The meter changed after seq 1 (meter/1 to meter/2)"),
            "{reading}"
        );
        assert!(reading.contains("(seq 3, meter/2)"), "{reading}");
        // A track kept before entries named meters resumes knowing they were meter/1's.
        let mut state: Value = serde_json::to_value(track(&key, &leaves[..2], 0).state()).unwrap();
        state.as_object_mut().unwrap().remove("meters");
        let pinned = PinnedKey::parse(&key.vkey()).unwrap();
        let mut t = Track::resume(&pinned, ORIGIN, serde_json::from_value(state).unwrap()).unwrap();
        t.push(2, &leaves[2], false).unwrap();
        let stats: Value = serde_json::from_slice(&t.stats(&t.windows(0)).unwrap()).unwrap();
        assert_eq!(stats["meters"]["changes_total"], 1);
    }

    #[test]
    fn stats_bytes_are_canonical_and_trust_changes_nothing_published() {
        let key = ServiceKey::from_seed(&[3; 32], ORIGIN);
        let leaves = chain(&key, 5, false);
        let w_at = 1_000_000 + 9 * 3600;
        let a = track(&key, &leaves, 0);
        let b = track(&key, &leaves, 4);
        let (sa, sb) = (
            a.stats(&a.windows(w_at)).unwrap(),
            b.stats(&b.windows(w_at)).unwrap(),
        );
        assert_eq!(sa, sb);
        let v: Value = serde_json::from_slice(&sa).unwrap();
        assert_eq!(jcs(&v).unwrap(), sa);
        assert_eq!(a.brief(), b.brief());
    }

    #[test]
    fn a_broken_link_is_reported_and_stops_the_verified_count() {
        let key = ServiceKey::from_seed(&[3; 32], ORIGIN);
        let mut leaves = chain(&key, 5, false);
        leaves.swap(2, 3);
        let t = track(&key, &leaves, 0);
        assert_eq!(t.verified(), 2);
        assert_eq!(t.entries(), 5);
        let stats: Value = serde_json::from_slice(&t.stats(&t.windows(0)).unwrap()).unwrap();
        assert_eq!(stats["chain_verification"]["ok"], false);
        assert!(!t.interpretation_input(&t.windows(0)).links_ok);
    }

    #[test]
    fn another_key_fails_unless_trusted() {
        let key = ServiceKey::from_seed(&[3; 32], ORIGIN);
        let other = ServiceKey::from_seed(&[4; 32], ORIGIN);
        let leaves = chain(&other, 3, false);
        let pinned = PinnedKey::parse(&key.vkey()).unwrap();
        let mut t = Track::new(&pinned, ORIGIN, 0, &leaves[0], false).unwrap();
        assert_eq!(t.verified(), 0);
        t.push(1, &leaves[1], false).unwrap();
        let stats: Value = serde_json::from_slice(&t.stats(&t.windows(0)).unwrap()).unwrap();
        assert_eq!(stats["chain_verification"]["ok"], false);
    }

    #[test]
    fn a_sealed_vows_reading_sees_no_declared_purposes() {
        let key = ServiceKey::from_seed(&[3; 32], ORIGIN);
        let leaves = chain(&key, 3, true);
        let t = track(&key, &leaves, 0);
        let input = t.interpretation_input(&t.windows(0));
        assert!(input.sealed && input.text.is_none());
        assert!(input.entries.iter().all(|e| e.declared_y.is_empty()));
    }

    #[test]
    fn pages_carry_the_last_entries_while_counts_cover_all() {
        let key = ServiceKey::from_seed(&[3; 32], ORIGIN);
        let n = SERIES_LIMIT as u64 + 7;
        let leaves = chain(&key, n, false);
        let t = track(&key, &leaves, leaves.len());
        let w = t.windows(1_000_000 + (n + 2) * 3600);
        let stats: Value = serde_json::from_slice(&t.stats(&w).unwrap()).unwrap();
        let series = stats["coupling_series"].as_array().unwrap();
        assert_eq!(series.len(), SERIES_LIMIT);
        assert_eq!(series[0]["seq"], 8);
        assert_eq!(stats["entries"], n);
        assert_eq!(stats["coupling_series_covers"]["of"], n);
        assert_eq!(stats["windows"]["reported"], n);
        let brief: Value = serde_json::from_slice(&t.brief()).unwrap();
        assert_eq!(brief.as_array().unwrap().len(), SERIES_LIMIT);
        assert_eq!(brief[SERIES_LIMIT - 1]["seq"], n);
    }

    #[test]
    fn the_reading_keeps_only_the_recent_entries() {
        let key = ServiceKey::from_seed(&[3; 32], ORIGIN);
        let leaves = chain(&key, MAX_ENTRIES as u64 + 5, false);
        let t = track(&key, &leaves, 0);
        let input = t.interpretation_input(&t.windows(0));
        assert_eq!(input.entries.len(), MAX_ENTRIES);
        assert_eq!(input.entries[0].seq, 6);
    }

    /// A track's kept form, as bytes (equal bytes: equal tracks).
    fn kept(t: &Track) -> Vec<u8> {
        serde_json::to_vec(&t.state()).unwrap()
    }

    /// Take back a track kept as `bytes`.
    fn resume_bytes(pinned: &PinnedKey, bytes: &[u8]) -> Result<Track, String> {
        let state: TrackState = serde_json::from_slice(bytes).map_err(|e| e.to_string())?;
        Track::resume(pinned, ORIGIN, state).map_err(|e| e.0)
    }

    /// The track of `leaves[..split]`, kept and resumed, then given the rest.
    fn resumed(key: &ServiceKey, leaves: &[Vec<u8>], split: usize) -> Track {
        let pinned = PinnedKey::parse(&key.vkey()).unwrap();
        let mut t = resume_bytes(&pinned, &kept(&track(key, &leaves[..split], 0))).unwrap();
        for (i, l) in leaves.iter().enumerate().skip(split) {
            t.push(i as u64, l, false).unwrap();
        }
        t
    }

    #[test]
    fn a_kept_track_resumes_exactly_where_it_stopped() {
        let key = ServiceKey::from_seed(&[3; 32], ORIGIN);
        let n = SERIES_LIMIT as u64 + 9;
        let leaves = chain(&key, n, false);
        let whole = track(&key, &leaves, 0);
        let now = 1_000_000 + (n + 30) * 3600;
        for split in [1, 2, 7, MAX_ENTRIES + 1, SERIES_LIMIT, leaves.len()] {
            let t = resumed(&key, &leaves, split);
            // The kept form is all of a track: equal states are equal tracks.
            assert_eq!(kept(&t), kept(&whole), "split at {split}");
            assert_eq!(
                t.stats(&t.windows(now)).unwrap(),
                whole.stats(&whole.windows(now)).unwrap()
            );
            assert_eq!(t.brief(), whole.brief());
            assert_eq!(t.windows(now), whole.windows(now));
        }
        // A broken chain resumes broken, and a resumed checker still catches a break.
        let mut broken = leaves.clone();
        broken.swap(3, 4);
        let t = resumed(&key, &broken, 6);
        assert_eq!(kept(&t), kept(&track(&key, &broken, 0)));
        assert_eq!(t.verified(), 3);
        let mut late = leaves.clone();
        late.swap(20, 21);
        let t = resumed(&key, &late, 10);
        assert_eq!((t.verified(), t.failure().is_some()), (20, true));
        // Another key's records do not verify after a resume either.
        let pinned = PinnedKey::parse(&ServiceKey::from_seed(&[4; 32], ORIGIN).vkey()).unwrap();
        let mut t = resume_bytes(&pinned, &kept(&track(&key, &leaves[..5], 0))).unwrap();
        t.push(5, &leaves[5], false).unwrap();
        assert_eq!(t.verified(), 5);
    }

    #[test]
    fn what_is_not_a_kept_track_is_refused() {
        let key = ServiceKey::from_seed(&[3; 32], ORIGIN);
        let pinned = PinnedKey::parse(&key.vkey()).unwrap();
        let kept = kept(&track(&key, &chain(&key, 3, false), 0));
        let mut v: Value = serde_json::from_slice(&kept).unwrap();
        v["type"] = json!("conduct.track_state/0");
        for bad in [
            b"".to_vec(),
            b"{}".to_vec(),
            serde_json::to_vec(&v).unwrap(),
            kept[..kept.len() - 1].to_vec(),
        ] {
            assert!(resume_bytes(&pinned, &bad).is_err());
        }
    }
}
