//! Closed-form estimators on a 2 x K contingency table (rows C=0, C=1): entropy,
//! plug-in mutual information, the exact expected mutual information under the
//! permutation (hypergeometric) null of Vinh, Epps & Bailey (2010), and the adjusted
//! mutual information with arithmetic averaging.
//!
//! Every logarithm, exponential and log-gamma goes through the pure-Rust `libm` crate and
//! every sum has a fixed order, so the results are identical bit for bit on every
//! platform. All public functions return unrounded values in bits.

use core::f64::consts::LN_2;
use std::cell::RefCell;

/// `k * ln k` with `0 ln 0 = 0`, as evaluated everywhere in the meter.
#[inline]
pub fn xlnx(k: u64) -> f64 {
    if k == 0 {
        0.0
    } else {
        k as f64 * libm::log(k as f64)
    }
}

/// `ln k!`, as `libm::lgamma(k + 1)`.
#[inline]
pub fn ln_factorial(k: u64) -> f64 {
    libm::lgamma(k as f64 + 1.0)
}

/// `ln C(n, k) = (ln n! - ln k!) - ln (n-k)!`, for `k <= n` (see [`ln_factorial`]).
#[inline]
pub fn ln_choose(n: u64, k: u64) -> f64 {
    (ln_factorial(n) - ln_factorial(k)) - ln_factorial(n - k)
}

/// Precomputed `ln k` for `k = 0..=n` (`libm::log`; `ln 0` is stored as 0 and never used),
/// and memoized `ln k!` ([`ln_factorial`], filled on first use), shared by the four
/// quantities of one measurement.
#[derive(Debug, Clone)]
pub struct LogTables {
    ln: Vec<f64>,
    lnf: RefCell<Vec<f64>>,
}

impl LogTables {
    /// Tables for `k = 0..=n`.
    pub fn new(n: u64) -> LogTables {
        let mut ln = Vec::with_capacity(n as usize + 1);
        ln.push(0.0);
        for k in 1..=n {
            ln.push(libm::log(k as f64));
        }
        LogTables {
            ln,
            lnf: RefCell::new(Vec::new()),
        }
    }

    /// The largest `k` covered.
    pub fn max(&self) -> u64 {
        self.ln.len() as u64 - 1
    }

    /// `ln k`.
    #[inline]
    pub fn ln(&self, k: u64) -> f64 {
        self.ln[k as usize]
    }

    /// `k ln k` (0 for k = 0); equal to [`xlnx`]`(k)` bit for bit.
    #[inline]
    pub fn xlnx(&self, k: u64) -> f64 {
        if k == 0 {
            0.0
        } else {
            k as f64 * self.ln[k as usize]
        }
    }

    /// `ln k!`, memoized; equal to [`ln_factorial`]`(k)` bit for bit.
    pub fn lnf(&self, k: u64) -> f64 {
        let i = k as usize;
        if i >= self.ln.len() {
            return ln_factorial(k);
        }
        let mut memo = self.lnf.borrow_mut();
        if memo.is_empty() {
            memo.resize(self.ln.len(), f64::NAN);
        }
        let v = memo[i];
        if v.is_nan() {
            let v = ln_factorial(k);
            memo[i] = v;
            v
        } else {
            v
        }
    }

    /// `ln C(n, k)` as [`ln_choose`], from the memoized `ln k!`.
    #[inline]
    pub fn ln_choose(&self, n: u64, k: u64) -> f64 {
        (self.lnf(n) - self.lnf(k)) - self.lnf(n - k)
    }
}

/// The margins of a 2 x K table: `n`, row sums `a = [a0, a1]`, column sums `b`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Margins {
    /// Total count.
    pub n: u64,
    /// Row sums: `a[0]` (C=0), `a[1]` (C=1).
    pub a: [u64; 2],
    /// Column sums, in column order.
    pub b: Vec<u64>,
}

impl Margins {
    /// Margins of a table. Rows of unequal length are read with missing cells as 0.
    pub fn of(table: &[Vec<u64>; 2]) -> Margins {
        let k = table[0].len().max(table[1].len());
        let cell = |i: usize, j: usize| table[i].get(j).copied().unwrap_or(0);
        let b: Vec<u64> = (0..k).map(|j| cell(0, j) + cell(1, j)).collect();
        let a = [table[0].iter().sum(), table[1].iter().sum()];
        Margins {
            n: a[0] + a[1],
            a,
            b,
        }
    }

    /// The fixed-margin part of `n * MI` in nats:
    /// `((n ln n - a0 ln a0) - a1 ln a1) - b_1 ln b_1 - ... - b_K ln b_K`, left to right.
    pub(crate) fn margin_term(&self, lt: &LogTables) -> f64 {
        self.margin_term_by(|k| lt.xlnx(k))
    }

    fn margin_term_by(&self, xl: impl Fn(u64) -> f64) -> f64 {
        let mut m = xl(self.n) - xl(self.a[0]) - xl(self.a[1]);
        for &bj in &self.b {
            m -= xl(bj);
        }
        m
    }
}

/// The cell part of `n * MI` in nats, accumulated column by column:
/// `S = (...((0 + (x ln x(n_01) + x ln x(n_11))) + (x ln x(n_02) + x ln x(n_12))) ...)`.
#[inline]
fn cell_term_by(row0: &[u64], row1: &[u64], xl: impl Fn(u64) -> f64) -> f64 {
    let mut s = 0.0;
    for (&c0, &c1) in row0.iter().zip(row1) {
        s += xl(c0) + xl(c1);
    }
    s
}

/// Plug-in MI in bits from the cell term `s` and the margin term `m`:
/// `max(0, ((s + m) / n) / ln 2)`. The same function scores observed and null tables.
#[inline]
pub(crate) fn mi_from_terms(s: f64, m: f64, n: u64) -> f64 {
    if n == 0 {
        return 0.0;
    }
    let bits = ((s + m) / n as f64) / LN_2;
    if bits < 0.0 {
        0.0
    } else {
        bits
    }
}

/// The smallest cell term `s` whose MI meets `threshold`, i.e. with
/// `mi_from_terms(s, m, n) >= threshold`; `-inf` when every `s` does, `+inf` when none does.
///
/// Each floating-point step of [`mi_from_terms`] is monotone, so the MI is a non-decreasing
/// function of `s` and the tables that meet the threshold are exactly those whose `s` is at
/// or above this value: the permutation tests compare `s` with it instead of dividing twice
/// per table, with the same outcome for every table. Found by bisection over the doubles
/// in their order.
pub(crate) fn min_cell_term(m: f64, n: u64, threshold: f64) -> f64 {
    let meets = |s: f64| mi_from_terms(s, m, n) >= threshold;
    // Doubles (NaN aside) in their order, as integers.
    let key = |f: f64| {
        let b = f.to_bits() as i64;
        i128::from(if b < 0 { b ^ i64::MAX } else { b })
    };
    let double = |k: i128| {
        let k = k as i64;
        f64::from_bits((if k < 0 { k ^ i64::MAX } else { k }) as u64)
    };
    if meets(f64::NEG_INFINITY) {
        return f64::NEG_INFINITY;
    }
    if !meets(f64::INFINITY) {
        return f64::INFINITY;
    }
    let (mut lo, mut hi) = (key(f64::NEG_INFINITY), key(f64::INFINITY));
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if meets(double(mid)) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    double(hi)
}

/// Rows padded to the same length (missing cells are 0).
pub(crate) fn padded_rows(table: &[Vec<u64>; 2]) -> [Vec<u64>; 2] {
    let k = table[0].len().max(table[1].len());
    let pad = |r: &Vec<u64>| {
        let mut v = r.clone();
        v.resize(k, 0);
        v
    };
    [pad(&table[0]), pad(&table[1])]
}

/// Shannon entropy in bits of a vector of counts:
/// `max(0, ((n ln n - sum_j c_j ln c_j) / n) / ln 2)`, sum left to right; 0 when n = 0.
pub fn entropy_bits(counts: &[u64]) -> f64 {
    let n: u64 = counts.iter().sum();
    if n == 0 {
        return 0.0;
    }
    let mut s = xlnx(n);
    for &c in counts {
        s -= xlnx(c);
    }
    let h = (s / n as f64) / LN_2;
    if h < 0.0 {
        0.0
    } else {
        h
    }
}

/// Plug-in mutual information I(C;X) in bits of a 2 x K table:
/// `max(0, ((S + M) / n) / ln 2)` with `S = sum n_ij ln n_ij` (column by column, C=0 cell
/// then C=1 cell) and `M = n ln n - sum_i a_i ln a_i - sum_j b_j ln b_j`.
pub fn mi_bits(table: &[Vec<u64>; 2]) -> f64 {
    let rows = padded_rows(table);
    let mg = Margins::of(&rows);
    // `xlnx` and `LogTables::xlnx` agree bit for bit; no table is needed here.
    mi_from_terms(
        cell_term_by(&rows[0], &rows[1], xlnx),
        mg.margin_term_by(xlnx),
        mg.n,
    )
}

pub(crate) fn mi_bits_with(rows: &[Vec<u64>; 2], mg: &Margins, lt: &LogTables) -> f64 {
    mi_from_terms(
        cell_term_by(&rows[0], &rows[1], |k| lt.xlnx(k)),
        mg.margin_term(lt),
        mg.n,
    )
}

/// Expected plug-in MI in bits under the permutation null (margins fixed, hypergeometric
/// cells), after Vinh, Epps & Bailey (2010): the sum of scikit-learn's
/// `expected_mutual_information`, evaluated as described at [`emi_bits_with`].
pub fn emi_bits(table: &[Vec<u64>; 2]) -> f64 {
    let mg = Margins::of(table);
    let lt = LogTables::new(mg.n);
    emi_bits_with(&mg, &lt)
}

/// A cell's hypergeometric weights are followed outward from the mode until they fall
/// below this fraction of the mode's weight.
pub const EMI_TAIL: f64 = 1e-30;

/// [`emi_bits`] from the margins and shared log tables (`lt.max() >= mg.n`).
///
/// `EMI = (sum over cells (i, j) of T_ij) / n / ln 2`, cells in the order row C=0 then
/// C=1, columns in order, each `T_ij` added to a running sum starting at 0. For a cell
/// with row sum `a`, column sum `b` (both > 0), `lo = max(1, a + b - n)`,
/// `hi = min(a, b)` (no term if `lo > hi`) and `c = (ln n - ln a) - ln b`, the cell count
/// k is hypergeometric, `P(k) = C(b,k) C(n-b,a-k) / C(n,a)`. Its weights relative to the
/// mode are computed without factorials:
///
/// - mode `m = floor((a+1)(b+1)/(n+2))` clamped to `[lo, hi]`, `q(m) = 1`;
/// - downward `q(k-1) = q(k) * ((k (n-a-b+k)) / ((b-k+1)(a-k+1)))`, upward
///   `q(k+1) = q(k) * (((b-k)(a-k)) / ((k+1)(n-a-b+k+1)))` (integer products as f64,
///   divided, then multiplied), each direction stopping at the first `q < EMI_TAIL`;
/// - visiting `k = m, m-1, ..., then m+1, m+2, ...`, accumulate `Z += q(k)` and
///   `U += k * ((ln k + c) * q(k))` (both from 0);
/// - `T = U / Z`.
///
/// Normalizing by `Z` (the sum of the weights over the full support `max(0, a+b-n)..=hi`,
/// where the k = 0 term contributes nothing to `U`) makes the result independent of
/// factorials; the omitted tails are below 1e-28 of the cell's mass.
pub fn emi_bits_with(mg: &Margins, lt: &LogTables) -> f64 {
    let n = mg.n;
    if n == 0 {
        return 0.0;
    }
    let ln_n = lt.ln(n);
    let mut sum = 0.0;
    for &a in &mg.a {
        if a == 0 {
            continue;
        }
        for &b in &mg.b {
            if b == 0 {
                continue;
            }
            let lo0 = (a + b).saturating_sub(n);
            let hi = a.min(b);
            if lo0.max(1) > hi {
                continue;
            }
            let c = (ln_n - lt.ln(a)) - lt.ln(b);
            let m = (((a + 1) * (b + 1)) / (n + 2)).clamp(lo0, hi);
            let term = |k: u64, q: f64| {
                if k == 0 {
                    0.0
                } else {
                    k as f64 * ((lt.ln(k) + c) * q)
                }
            };
            let mut z = 1.0;
            let mut u = term(m, 1.0);
            let (mut k, mut q) = (m, 1.0f64);
            while k > lo0 {
                let num = (k * (n + k - a - b)) as f64;
                let den = ((b - k + 1) * (a - k + 1)) as f64;
                q *= num / den;
                k -= 1;
                if q < EMI_TAIL {
                    break;
                }
                z += q;
                u += term(k, q);
            }
            let (mut k, mut q) = (m, 1.0f64);
            while k < hi {
                let num = ((b - k) * (a - k)) as f64;
                let den = ((k + 1) * (n + k + 1 - a - b)) as f64;
                q *= num / den;
                k += 1;
                if q < EMI_TAIL {
                    break;
                }
                z += q;
                u += term(k, q);
            }
            sum += u / z;
        }
    }
    (sum / n as f64) / LN_2
}

/// Adjusted mutual information with arithmetic averaging:
/// `AMI = (MI - EMI) / ((H_C + H_X) / 2 - EMI)`.
///
/// Degenerate denominator: when `(H_C + H_X) / 2 - EMI <= 1e-15` (only possible when
/// some C group has fewer than 2 members, e.g. a single row, or a single row and column)
/// the AMI is defined as 0: there is no room for information beyond chance.
pub fn ami_arithmetic(table: &[Vec<u64>; 2]) -> f64 {
    let rows = padded_rows(table);
    let mg = Margins::of(&rows);
    let lt = LogTables::new(mg.n);
    let mi = mi_bits_with(&rows, &mg, &lt);
    let emi = emi_bits_with(&mg, &lt);
    ami_from(mi, emi, entropy_bits(&mg.a), entropy_bits(&mg.b))
}

/// AMI from its parts (see [`ami_arithmetic`]).
pub fn ami_from(mi: f64, emi: f64, h_c: f64, h_x: f64) -> f64 {
    let denom = (h_c + h_x) / 2.0 - emi;
    if denom <= AMI_MIN_DENOMINATOR {
        0.0
    } else {
        (mi - emi) / denom
    }
}

/// Below this denominator (bits) the AMI is defined as 0.
pub const AMI_MIN_DENOMINATOR: f64 = 1e-15;

#[cfg(test)]
mod tests {
    use super::*;

    /// Comparing a cell term with [`min_cell_term`] decides every table as the MI does:
    /// at the boundary, on both sides of it, far from it, and for thresholds every table
    /// or no table meets.
    #[test]
    fn the_cell_term_threshold_decides_as_the_mi_does() {
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for _ in 0..2_000 {
            let n = 1 + next() % 20_000;
            let m = -((next() % 1_000_000) as f64) * 1e-2 * (n as f64).ln().max(1.0);
            let t = match next() % 4 {
                0 => -1e-15,
                1 => 0.0,
                _ => (next() % 1_000_000) as f64 * 1e-7,
            };
            let bits = |s: f64| mi_from_terms(s, m, n);
            let s_min = min_cell_term(m, n, t);
            let mut probes = vec![0.0, -m, -m + 1e-9, f64::MAX, f64::MIN, -1e300, 1e300];
            if s_min.is_finite() {
                probes.extend([s_min, s_min.next_down(), s_min.next_up(), s_min * 2.0]);
                probes.extend([s_min.next_down().next_down(), s_min.next_up().next_up()]);
            }
            for _ in 0..16 {
                probes.push(-m + ((next() % 2_000_001) as f64 - 1e6) * 1e-3);
            }
            for s in probes {
                assert_eq!(
                    s >= s_min,
                    bits(s) >= t,
                    "m {m} n {n} t {t} s {s} s_min {s_min}"
                );
            }
        }
        assert_eq!(min_cell_term(-5.0, 10, 0.0), f64::NEG_INFINITY);
        assert_eq!(min_cell_term(-5.0, 10, f64::INFINITY), f64::INFINITY);
    }

    #[test]
    fn single_column() {
        let t = [vec![3], vec![4]];
        assert_eq!(mi_bits(&t), 0.0);
        assert_eq!(emi_bits(&t), 0.0);
        assert_eq!(ami_arithmetic(&t), 0.0);
    }

    #[test]
    fn single_row_and_column_degenerate() {
        let t = [vec![5], vec![0]];
        assert_eq!(ami_arithmetic(&t), 0.0);
        assert_eq!(entropy_bits(&[5, 0]), 0.0);
    }

    #[test]
    fn empty_table() {
        let t: [Vec<u64>; 2] = [vec![], vec![]];
        assert_eq!(mi_bits(&t), 0.0);
        assert_eq!(emi_bits(&t), 0.0);
        assert_eq!(entropy_bits(&[]), 0.0);
    }

    #[test]
    fn ragged_rows_pad_with_zero() {
        assert_eq!(
            mi_bits(&[vec![5, 0], vec![0, 5]]),
            mi_bits(&[vec![5], vec![0, 5]])
        );
    }

    #[test]
    fn perfect_2x2() {
        let t = [vec![5, 0], vec![0, 5]];
        assert!((mi_bits(&t) - 1.0).abs() < 1e-15);
        assert!((entropy_bits(&[5, 5]) - 1.0).abs() < 1e-15);
        assert!((emi_bits(&t) - 0.0861645887488022).abs() < 1e-14);
    }
}
