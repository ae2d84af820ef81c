//! Free-tier per-IP daily caps (UTC day). IPv6 clients are counted per /64, since one host
//! usually holds a whole /64. Counters live in memory and reset at UTC midnight.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;

use conduct_core::time::utc_day;

/// A per-IP counter for one free endpoint.
#[derive(Debug)]
pub struct DailyCap {
    cap: Option<u32>,
    state: Mutex<(u64, HashMap<IpAddr, u32>)>,
}

/// The outcome of a take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Take {
    /// Allowed; this many calls remain today.
    Allowed(Option<u32>),
    /// Refused; retry after this many seconds (the next UTC midnight).
    Refused(u64),
}

fn bucket(ip: IpAddr) -> IpAddr {
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
    /// A counter allowing `cap` calls per IP per UTC day; `None` never refuses.
    pub fn new(cap: Option<u32>) -> Self {
        DailyCap {
            cap,
            state: Mutex::new((0, HashMap::new())),
        }
    }

    /// Count one call from `ip` at unix time `now`.
    pub fn take(&self, ip: IpAddr, now: u64) -> Take {
        let Some(cap) = self.cap else {
            return Take::Allowed(None);
        };
        let day = utc_day(now);
        let mut guard = match self.state.lock() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        };
        if guard.0 != day {
            guard.0 = day;
            guard.1.clear();
        }
        let used = guard.1.entry(bucket(ip)).or_insert(0);
        if *used >= cap {
            Take::Refused((day + 1) * 86_400 - now)
        } else {
            *used += 1;
            Take::Allowed(Some(cap - *used))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caps_per_ip_and_resets_at_midnight() {
        let c = DailyCap::new(Some(2));
        let ip: IpAddr = "10.0.0.1".parse().unwrap();
        let t = 86_400 * 100 + 50;
        assert_eq!(c.take(ip, t), Take::Allowed(Some(1)));
        assert_eq!(c.take(ip, t), Take::Allowed(Some(0)));
        assert_eq!(c.take(ip, t), Take::Refused(86_400 - 50));
        assert_eq!(
            c.take("10.0.0.2".parse().unwrap(), t),
            Take::Allowed(Some(1))
        );
        assert_eq!(c.take(ip, t + 86_400), Take::Allowed(Some(1)));
    }

    #[test]
    fn ipv6_counts_per_64() {
        let c = DailyCap::new(Some(1));
        assert!(matches!(
            c.take("2001:db8::1".parse().unwrap(), 0),
            Take::Allowed(_)
        ));
        assert!(matches!(
            c.take("2001:db8::2".parse().unwrap(), 0),
            Take::Refused(_)
        ));
    }
}
