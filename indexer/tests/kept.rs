//! The State seam's side tables (`conduct_indexer::state::kept`) on the state
//! `CONDUCT_TEST_STATE` names (tests/run.sh runs SQLite and PostgreSQL): a donated trace kept
//! once however often it is donated, resume points kept per renderer and replaced; all kept
//! across a reopen.

use conduct_indexer::state::kept::ResumePoint;

mod common;

fn point(records: u64, state: &[u8]) -> ResumePoint {
    ResumePoint {
        records,
        state: state.to_vec(),
    }
}

#[test]
fn a_donated_trace_is_kept_once_and_across_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let donated = common::state(dir.path()).donated().unwrap();
    assert_eq!(donated.count().unwrap(), 0);
    donated.put("v1", "aa", b"{\"turns\":[]}", 10).unwrap();
    donated.put("v1", "aa", b"{\"turns\":[]}", 11).unwrap();
    donated.put("v1", "bb", b"{}", 12).unwrap();
    donated.put("v2", "aa", b"{\"turns\":[]}", 13).unwrap();
    assert_eq!(donated.count().unwrap(), 3);
    drop(donated);
    let again = common::state(dir.path()).donated().unwrap();
    assert_eq!(again.count().unwrap(), 3);
}

#[test]
fn resume_points_are_kept_per_renderer_replaced_and_across_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let points = common::state(dir.path()).resume_points().unwrap();
    assert_eq!(points.get("v1", "r").unwrap(), None);
    points.put_many("r", &[]).unwrap();
    points
        .put_many(
            "r",
            &[
                ("v1".into(), point(32, b"a")),
                ("v2".into(), point(64, b"b")),
            ],
        )
        .unwrap();
    assert_eq!(points.get("v1", "r").unwrap(), Some(point(32, b"a")));
    assert_eq!(points.get("v2", "r").unwrap(), Some(point(64, b"b")));
    // Another renderer's point is not taken.
    assert_eq!(points.get("v1", "other").unwrap(), None);
    points
        .put_many("r", &[("v1".into(), point(64, b"c"))])
        .unwrap();
    // A point another renderer writes replaces the vow's point.
    points
        .put_many("s", &[("v2".into(), point(96, b"d"))])
        .unwrap();
    drop(points);
    let points = common::state(dir.path()).resume_points().unwrap();
    assert_eq!(points.get("v1", "r").unwrap(), Some(point(64, b"c")));
    assert_eq!(points.get("v2", "r").unwrap(), None);
    assert_eq!(points.get("v2", "s").unwrap(), Some(point(96, b"d")));
}
