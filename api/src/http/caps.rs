//! Free-tier per-IP daily caps (UTC day), and the client address they count ([`client_ip`]).
//! IPv6 clients are counted per /64, since one host usually holds a whole /64.
//!
//! A call counts only when it is served: [`DailyCap::take`] reserves one call and the
//! [`Ticket`] gives it back unless [`Ticket::keep`] is called, so a refused request (bad input,
//! a 429) spends nothing (library/ERRORS.md). Counters live in memory and are written to the
//! store by [`Caps::flush`] (every second, and at shutdown), and read back at start, so a
//! restart does not reset them; at most the last second of counts is lost to a crash.

use std::collections::{HashMap, HashSet};
use std::net::{IpAddr, SocketAddr};
use std::sync::Mutex;

use conduct_core::time::utc_day;
use conduct_indexer::state::tables::Tables;
use conduct_indexer::store::StoreError;
use warp::http::{header, HeaderMap, StatusCode};
use warp::reply::Response as WarpResponse;

use crate::config::Config;
use crate::http::reply::Problem;

/// A per-IP counter for one free endpoint.
#[derive(Debug)]
pub struct DailyCap {
    name: &'static str,
    cap: Option<u32>,
    state: Mutex<CapState>,
}

#[derive(Debug, Default)]
struct CapState {
    day: u64,
    used: HashMap<IpAddr, u32>,
    dirty: HashSet<IpAddr>,
}

/// The outcome of a take.
#[derive(Debug)]
pub enum Take<'a> {
    /// Allowed; this many calls remain today. The ticket gives the call back unless kept.
    Allowed(Option<u32>, Ticket<'a>),
    /// Refused; retry after this many seconds (the next UTC midnight).
    Refused(u64),
}

/// One reserved call: given back when dropped, unless [`Ticket::keep`] was called.
#[derive(Debug)]
pub struct Ticket<'a> {
    cap: Option<&'a DailyCap>,
    bucket: IpAddr,
    day: u64,
}

impl Ticket<'_> {
    /// The call was served: it counts.
    pub fn keep(mut self) {
        self.cap = None;
    }
}

impl Drop for Ticket<'_> {
    fn drop(&mut self) {
        if let Some(cap) = self.cap {
            let mut g = cap.lock();
            if g.day == self.day {
                if let Some(n) = g.used.get_mut(&self.bucket) {
                    *n = n.saturating_sub(1);
                    g.dirty.insert(self.bucket);
                }
            }
        }
    }
}

/// The counting unit of an address: itself (IPv4, or an IPv4-mapped IPv6), or its /64.
pub fn bucket(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(_) => ip,
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => {
                let s = v6.segments();
                IpAddr::V6(std::net::Ipv6Addr::new(s[0], s[1], s[2], s[3], 0, 0, 0, 0))
            }
        },
    }
}

impl DailyCap {
    /// A counter named `name` (its key in the store) allowing `cap` calls per IP per UTC day;
    /// `None` never refuses.
    pub fn new(name: &'static str, cap: Option<u32>) -> Self {
        DailyCap {
            name,
            cap,
            state: Mutex::new(CapState::default()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, CapState> {
        conduct_core::sync::lock(&self.state)
    }

    /// Calls allowed per IP per UTC day (its configured limit); `None` never refuses.
    pub fn limit(&self) -> Option<u32> {
        self.cap
    }

    /// Reserve one call from `ip` at unix time `now`.
    pub fn take(&self, ip: IpAddr, now: u64) -> Take<'_> {
        let b = bucket(ip);
        let day = utc_day(now);
        let Some(cap) = self.cap else {
            return Take::Allowed(
                None,
                Ticket {
                    cap: None,
                    bucket: b,
                    day,
                },
            );
        };
        let mut g = self.lock();
        if g.day != day {
            g.day = day;
            g.used.clear();
            g.dirty.clear();
        }
        let used = g.used.entry(b).or_insert(0);
        if *used >= cap {
            return Take::Refused((day + 1) * 86_400 - now);
        }
        *used += 1;
        let left = cap - *used;
        g.dirty.insert(b);
        Take::Allowed(
            Some(left),
            Ticket {
                cap: Some(self),
                bucket: b,
                day,
            },
        )
    }

    /// Load stored counts of `day` (a restart).
    fn restore(&self, day: u64, rows: &[(String, String, u32)]) {
        let mut g = self.lock();
        g.day = day;
        for (counter, bucket, used) in rows {
            if counter == self.name {
                if let Ok(ip) = bucket.parse::<IpAddr>() {
                    g.used.insert(ip, *used);
                }
            }
        }
    }

    /// The changed counts since the last call, with their day.
    fn drain_dirty(&self) -> (u64, Vec<(String, String, u32)>) {
        let mut g = self.lock();
        let dirty: Vec<IpAddr> = g.dirty.drain().collect();
        let rows = dirty
            .into_iter()
            .map(|ip| {
                let n = g.used.get(&ip).copied().unwrap_or(0);
                (self.name.to_owned(), ip.to_string(), n)
            })
            .collect();
        (g.day, rows)
    }
}

/// Every free counter of a running service, persisted in the store.
#[derive(Debug)]
pub struct Caps {
    /// `POST /demo/profile`.
    pub demo: DailyCap,
    /// `POST /vow`.
    pub vow: DailyCap,
    /// `POST /vow/report/demo`.
    pub report_demo: DailyCap,
    /// `POST /oracle/ask`.
    pub oracle: DailyCap,
    /// Owner-signed writes: quest claims and deliveries, npub bindings, witness pledges.
    pub owner: DailyCap,
    /// Live chain reads: prepared calldata, ticket prepares and entitlements, reputation
    /// lookups.
    pub lookup: DailyCap,
}

impl Caps {
    /// The counters with these limits (`None` lifts one).
    pub fn new(
        demo: Option<u32>,
        vow: Option<u32>,
        report_demo: Option<u32>,
        oracle: Option<u32>,
        owner: Option<u32>,
        lookup: Option<u32>,
    ) -> Caps {
        Caps {
            demo: DailyCap::new("demo_profile", demo),
            vow: DailyCap::new("vow", vow),
            report_demo: DailyCap::new("report_demo", report_demo),
            oracle: DailyCap::new("oracle", oracle),
            owner: DailyCap::new("owner", owner),
            lookup: DailyCap::new("lookup", lookup),
        }
    }

    /// The counter `c`.
    pub fn counter(&self, c: Counter) -> &DailyCap {
        match c {
            Counter::Demo => &self.demo,
            Counter::Vow => &self.vow,
            Counter::ReportDemo => &self.report_demo,
            Counter::Oracle => &self.oracle,
            Counter::Owner => &self.owner,
            Counter::Lookup => &self.lookup,
        }
    }

    fn all(&self) -> [&DailyCap; 6] {
        [
            &self.demo,
            &self.vow,
            &self.report_demo,
            &self.oracle,
            &self.owner,
            &self.lookup,
        ]
    }

    /// Read today's stored counts (at start).
    pub fn restore(&self, store: &dyn Tables, now: u64) -> Result<(), StoreError> {
        let day = utc_day(now);
        let rows = store.free_caps(day)?;
        for c in self.all() {
            c.restore(day, &rows);
        }
        Ok(())
    }

    /// Write the counts changed since the last flush (and drop past days' rows). On failure
    /// the changes are kept for the next flush.
    pub fn flush(&self, store: &dyn Tables, now: u64) -> Result<(), StoreError> {
        let today = utc_day(now);
        let mut rows = Vec::new();
        let mut pending = Vec::new();
        for c in self.all() {
            let (day, r) = c.drain_dirty();
            if day == today {
                rows.extend(r.iter().cloned());
                pending.push((c, r));
            }
        }
        if rows.is_empty() {
            return Ok(());
        }
        let written = store.put_free_caps(today, &rows);
        if written.is_err() {
            for (c, r) in pending {
                let mut g = c.lock();
                for (_, b, _) in r {
                    if let Ok(ip) = b.parse() {
                        g.dirty.insert(ip);
                    }
                }
            }
        }
        written
    }
}

/// Which free counter of [`Caps`] a route takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Counter {
    /// `demo_daily_cap`.
    Demo,
    /// `vow_daily_cap`.
    Vow,
    /// `report_demo_daily_cap`.
    ReportDemo,
    /// `oracle_daily_cap`.
    Oracle,
    /// `owner_daily_cap`: owner-signed writes, shared.
    Owner,
    /// `lookup_daily_cap`: live chain reads, shared.
    Lookup,
}

/// A route's free-cap policy, as its row of the route table states it: the counter it takes
/// (whose configured limit applies), how the refusal names the route, and what it suggests
/// instead.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FreeCap {
    /// The counter taken.
    pub counter: Counter,
    /// The route as the refusal names it (`POST /vow`, `/demo/profile`, ...).
    pub what: &'static str,
    /// Appended to the refusal's detail: the paid route to use instead (`, or pay for ...`).
    pub instead: &'static str,
}

impl FreeCap {
    /// The policy of a route named `what` taking `counter`.
    pub const fn new(counter: Counter, what: &'static str) -> Self {
        FreeCap {
            counter,
            what,
            instead: "",
        }
    }

    /// The same, suggesting the paid route `instead` once the cap is used up.
    pub const fn or_pay(self, instead: &'static str) -> Self {
        FreeCap { instead, ..self }
    }
}

/// Reserve one call of `cap` for `ip` at `now`, or refuse with 429 and `Retry-After` (the next
/// UTC midnight). The call counts only if the ticket is kept ([`counted`]).
pub fn take<'c>(
    caps: &'c Caps,
    cap: &FreeCap,
    ip: IpAddr,
    now: u64,
) -> Result<Ticket<'c>, Problem> {
    let counter = caps.counter(cap.counter);
    match counter.take(ip, now) {
        Take::Allowed(_, ticket) => Ok(ticket),
        Take::Refused(retry) => Err(Problem::new(
            StatusCode::TOO_MANY_REQUESTS,
            "rate-limited",
            "Free daily cap reached",
            format!(
                "the free {} cap of {} calls per IP per UTC day is used up; it resets at \
                 UTC midnight{}",
                cap.what,
                counter.limit().unwrap_or(0),
                cap.instead
            ),
        )
        .with_header(header::RETRY_AFTER, retry.to_string())),
    }
}

/// Count a capped call only when it was served (a 2xx answer).
pub fn counted(
    ticket: Ticket<'_>,
    r: Result<WarpResponse, Problem>,
) -> Result<WarpResponse, Problem> {
    if r.as_ref().is_ok_and(|resp| resp.status().is_success()) {
        ticket.keep();
    }
    r
}

/// The client address a free cap counts: the TCP peer, or behind `trusted_proxies` proxies
/// of our own (`trust_forwarded_for`), the `X-Forwarded-For` entry that many places from the
/// right (each proxy appends the address it saw; entries further left are the client's own
/// claims and cannot be trusted).
pub fn client_ip(cfg: &Config, headers: &HeaderMap, remote: Option<SocketAddr>) -> IpAddr {
    let peer = remote
        .map(|r| r.ip())
        .unwrap_or(IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED));
    if !cfg.trust_forwarded_for {
        return peer;
    }
    forwarded_client(headers, cfg.trusted_proxies).unwrap_or(peer)
}

/// The `X-Forwarded-For` entry `hops` places from the right (the leftmost when there are
/// fewer), over every such header in order; `None` when absent or not an address.
fn forwarded_client(headers: &HeaderMap, hops: u32) -> Option<IpAddr> {
    let entries: Vec<&str> = headers
        .get_all("x-forwarded-for")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect();
    let hops = usize::try_from(hops.max(1)).unwrap_or(1);
    let at = entries.len().saturating_sub(hops);
    entries.get(at)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn allowed(t: Take<'_>) -> Option<u32> {
        match t {
            Take::Allowed(left, ticket) => {
                ticket.keep();
                left
            }
            Take::Refused(_) => panic!("refused"),
        }
    }

    #[test]
    fn caps_per_ip_and_resets_at_midnight() {
        let c = DailyCap::new("t", Some(2));
        let ip: IpAddr = "10.0.0.1".parse().unwrap();
        let t = 86_400 * 100 + 50;
        assert_eq!(allowed(c.take(ip, t)), Some(1));
        assert_eq!(allowed(c.take(ip, t)), Some(0));
        assert!(matches!(c.take(ip, t), Take::Refused(r) if r == 86_400 - 50));
        assert_eq!(allowed(c.take("10.0.0.2".parse().unwrap(), t)), Some(1));
        assert_eq!(allowed(c.take(ip, t + 86_400)), Some(1));
    }

    #[test]
    fn a_refused_call_spends_nothing() {
        let c = DailyCap::new("t", Some(1));
        let ip: IpAddr = "10.0.0.1".parse().unwrap();
        for _ in 0..5 {
            // Reserved, then the request was refused: the ticket is dropped, not kept.
            assert!(matches!(c.take(ip, 0), Take::Allowed(Some(0), _)));
        }
        assert_eq!(allowed(c.take(ip, 0)), Some(0));
        assert!(matches!(c.take(ip, 0), Take::Refused(_)));
    }

    #[test]
    fn ipv6_counts_per_64() {
        let c = DailyCap::new("t", Some(1));
        allowed(c.take("2001:db8::1".parse().unwrap(), 0));
        assert!(matches!(
            c.take("2001:db8::2".parse().unwrap(), 0),
            Take::Refused(_)
        ));
    }

    #[test]
    fn counts_survive_a_restart() {
        let dir = tempfile::tempdir().unwrap();
        let store = conduct_indexer::store::Store::open(dir.path()).unwrap();
        let now = 86_400 * 200 + 7;
        let caps = Caps::new(Some(2), None, None, None, None, None);
        allowed(caps.demo.take("10.0.0.9".parse().unwrap(), now));
        allowed(caps.demo.take("2001:db8::5".parse().unwrap(), now));
        caps.flush(&store, now).unwrap();
        let again = Caps::new(Some(2), None, None, None, None, None);
        again.restore(&store, now + 60).unwrap();
        allowed(again.demo.take("10.0.0.9".parse().unwrap(), now + 60));
        assert!(matches!(
            again.demo.take("10.0.0.9".parse().unwrap(), now + 60),
            Take::Refused(_)
        ));
        // The next day starts afresh.
        assert_eq!(
            allowed(again.demo.take("10.0.0.9".parse().unwrap(), now + 86_400)),
            Some(1)
        );
    }

    #[test]
    fn a_used_up_cap_is_refused_naming_the_route_and_what_to_do_instead() {
        let caps = Caps::new(Some(1), Some(2), None, None, None, None);
        let ip: IpAddr = "10.0.0.1".parse().unwrap();
        let now = 86_400 * 300 + 100;
        let demo =
            FreeCap::new(Counter::Demo, "/demo/profile").or_pay(", or pay for POST /profile");
        counted(
            take(&caps, &demo, ip, now).unwrap(),
            Ok(WarpResponse::new(Vec::new().into())),
        )
        .unwrap();
        let p = take(&caps, &demo, ip, now).unwrap_err();
        assert_eq!(
            (p.status, p.kind),
            (StatusCode::TOO_MANY_REQUESTS, "rate-limited")
        );
        assert_eq!(
            p.detail,
            "the free /demo/profile cap of 1 calls per IP per UTC day is used up; it resets at \
             UTC midnight, or pay for POST /profile"
        );
        // A refused call is not counted: the ticket goes back.
        let vow = FreeCap::new(Counter::Vow, "POST /vow");
        for _ in 0..3 {
            let refused = Err(Problem::invalid(Vec::new()));
            assert!(counted(take(&caps, &vow, ip, now).unwrap(), refused).is_err());
        }
        let served = || Ok(WarpResponse::new(Vec::new().into()));
        counted(take(&caps, &vow, ip, now).unwrap(), served()).unwrap();
        counted(take(&caps, &vow, ip, now).unwrap(), served()).unwrap();
        let p = take(&caps, &vow, ip, now).unwrap_err();
        assert!(p.detail.starts_with("the free POST /vow cap of 2 calls"));
        // Lifted (0 in the configuration): never refused.
        let oracle = FreeCap::new(Counter::Oracle, "/oracle/ask");
        for _ in 0..5 {
            counted(take(&caps, &oracle, ip, now).unwrap(), served()).unwrap();
        }
    }

    fn xff(values: &[&str]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for v in values {
            h.append("x-forwarded-for", v.parse().unwrap());
        }
        h
    }

    #[test]
    fn forwarded_client_is_taken_from_the_right_by_trusted_hops() {
        let h = xff(&["6.6.6.6, 1.2.3.4"]);
        assert_eq!(forwarded_client(&h, 1), Some("1.2.3.4".parse().unwrap()));
        let h = xff(&["6.6.6.6", "1.2.3.4, 10.0.0.1"]);
        assert_eq!(forwarded_client(&h, 2), Some("1.2.3.4".parse().unwrap()));
        assert_eq!(forwarded_client(&h, 9), Some("6.6.6.6".parse().unwrap()));
        assert_eq!(forwarded_client(&xff(&["junk"]), 1), None);
        assert_eq!(forwarded_client(&HeaderMap::new(), 1), None);
    }
}
