//! The permutation test of independence on a 2 x K table with the plug-in MI as statistic:
//! exact enumeration of every table with the observed margins when there are at most
//! [`EXACT_MAX_TABLES`] of them, otherwise Monte Carlo with [`MC_SAMPLES`] null tables
//! drawn from a ChaCha20 stream by sequential hypergeometric inversion.
//!
//! Both are deterministic functions of the table (and, for Monte Carlo, of the 32-byte
//! seed), computed with `libm` and a fixed order of operations.

use rand_chacha::ChaCha20Rng;
use rand_core::{RngCore, SeedableRng};
use sha2::{Digest, Sha256};

use super::estimators::{
    mi_bits_with, mi_from_terms, padded_rows, LogTables, Margins, LOG_UNDERFLOW,
};

/// Exact enumeration is used when the number of 2 x K tables with the observed margins is
/// at most this; otherwise the p-value is estimated by Monte Carlo.
pub const EXACT_MAX_TABLES: u64 = 20_000;

/// Number of null tables B drawn by the Monte Carlo test.
pub const MC_SAMPLES: u64 = 2_000;

/// Relative slack of the tie rule: a null table counts when
/// `MI* >= MI * (1 - TIE_REL) - TIE_ABS`.
pub const TIE_REL: f64 = 1e-9;
/// Absolute slack of the tie rule (bits).
pub const TIE_ABS: f64 = 1e-15;

/// The tie threshold for an observed MI (bits): `mi * (1 - 1e-9) - 1e-15`.
#[inline]
pub fn tie_threshold(mi: f64) -> f64 {
    mi * (1.0 - TIE_REL) - TIE_ABS
}

/// The number of 2 x K tables with the margins of `table`, or `limit + 1` if there are
/// more than `limit`.
///
/// Counts the C=1 rows `(x_1..x_K)` with `sum x_j = a1` and `0 <= x_j <= b_j` by a
/// dynamic program over columns whose counts saturate at `limit + 1`.
pub fn count_tables_capped(table: &[Vec<u64>; 2], limit: u64) -> u64 {
    count_capped(&Margins::of(table), limit)
}

pub(crate) fn count_capped(mg: &Margins, limit: u64) -> u64 {
    let cap = limit.saturating_add(1);
    // Count rows of the smaller group (the number of tables is the same).
    let d = mg.a[0].min(mg.a[1]) as usize;
    let k = mg.b.len();
    // suffix[j] = sum of b over columns j.. (to keep only completable partial sums).
    let mut suffix = vec![0u64; k + 1];
    for j in (0..k).rev() {
        suffix[j] = suffix[j + 1] + mg.b[j];
    }
    if suffix[0] < d as u64 {
        return 0;
    }
    // cnt[s] = number of (capped at `cap`) ways for the columns so far to sum to s.
    let mut cnt = vec![0u64; d + 1];
    let mut next = vec![0u64; d + 1];
    let mut prefix = vec![0u128; d + 2];
    cnt[0] = 1;
    let mut reach = 0usize;
    for j in 0..k {
        let bj = usize::try_from(mg.b[j]).unwrap_or(usize::MAX);
        for s in 0..=d {
            prefix[s + 1] = prefix[s] + u128::from(cnt[s]);
        }
        reach = reach.saturating_add(bj).min(d);
        let lo_needed = (d as u64).saturating_sub(suffix[j + 1]) as usize;
        let mut saturated = false;
        for (s, slot) in next.iter_mut().enumerate() {
            *slot = if s > reach || s < lo_needed {
                0
            } else {
                let from = s.saturating_sub(bj);
                let w = prefix[s + 1] - prefix[from];
                u64::try_from(w).unwrap_or(u64::MAX).min(cap)
            };
            // Every kept partial sum can be completed, so one saturated entry
            // saturates the final count.
            saturated |= *slot >= cap;
        }
        if saturated {
            return cap;
        }
        std::mem::swap(&mut cnt, &mut next);
    }
    cnt[d].min(cap)
}

/// Exact permutation p-value of the plug-in MI, or `None` when the table has more than
/// [`EXACT_MAX_TABLES`] tables with its margins.
///
/// Enumerates every C=1 row `(x_1..x_K)` with `sum x_j = a1`, `0 <= x_j <= b_j`, in
/// lexicographic order, with weight `exp(sum_j ln C(b_j, x_j) - ln C(n, a1))`, and sums
/// the weights of the rows whose MI* meets the tie rule; the sum is capped at 1.
pub fn p_exact(table: &[Vec<u64>; 2]) -> Option<f64> {
    let rows = padded_rows(table);
    let mg = Margins::of(&rows);
    let lt = LogTables::new(mg.n);
    p_exact_with(&rows, &mg, &lt, EXACT_MAX_TABLES)
}

/// [`p_exact`] with shared log tables and an explicit table limit.
pub fn p_exact_with(
    rows: &[Vec<u64>; 2],
    mg: &Margins,
    lt: &LogTables,
    max_tables: u64,
) -> Option<f64> {
    if count_capped(mg, max_tables) > max_tables {
        return None;
    }
    let mi = mi_bits_with(rows, mg, lt);
    let k = mg.b.len();
    let mut en = Enumerator {
        lt,
        b: &mg.b,
        suffix: {
            let mut s = vec![0u64; k + 1];
            for j in (0..k).rev() {
                s[j] = s[j + 1] + mg.b[j];
            }
            s
        },
        n: mg.n,
        margin: mg.margin_term(lt),
        ln_total: lt.ln_choose(mg.n, mg.a[1]),
        threshold: tie_threshold(mi),
        p: 0.0,
    };
    if k == 0 {
        return Some(1.0);
    }
    en.walk(0, mg.a[1], 0.0, 0.0);
    Some(en.p.min(1.0))
}

struct Enumerator<'a> {
    lt: &'a LogTables,
    b: &'a [u64],
    suffix: Vec<u64>,
    n: u64,
    margin: f64,
    ln_total: f64,
    threshold: f64,
    p: f64,
}

impl Enumerator<'_> {
    /// Column `j` with `rem` C=1 turns left to place; `s` the cell term and `lw` the log
    /// weight accumulated over columns `0..j`.
    fn walk(&mut self, j: usize, rem: u64, s: f64, lw: f64) {
        let bj = self.b[j];
        let last = j + 1 == self.b.len();
        let lo = rem.saturating_sub(self.suffix[j + 1]);
        let hi = bj.min(rem);
        for x in lo..=hi {
            let s2 = s + (self.lt.xlnx(bj - x) + self.lt.xlnx(x));
            let lw2 = lw + self.lt.ln_choose(bj, x);
            if last {
                let mi = mi_from_terms(s2, self.margin, self.n);
                if mi >= self.threshold {
                    let g = lw2 - self.ln_total;
                    if g >= LOG_UNDERFLOW {
                        self.p += libm::exp(g);
                    }
                }
            } else {
                self.walk(j + 1, rem - x, s2, lw2);
            }
        }
    }
}

/// The Monte Carlo seed of one quantity: `SHA-256(trace_sha256 || key)`, the key as UTF-8.
pub fn mc_seed(trace_sha256: &[u8; 32], key: &str) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(trace_sha256);
    h.update(key.as_bytes());
    h.finalize().into()
}

/// Monte Carlo permutation p-value of the plug-in MI with [`MC_SAMPLES`] null tables:
/// `p = (1 + #{MI* meets the tie rule}) / (B + 1)`.
///
/// The stream is `ChaCha20Rng::from_seed(seed)` (rand_chacha 0.3). Each null table's C=1
/// row is drawn column by column with [`hypergeometric_inversion`]:
/// `x_j ~ Hypergeometric(population = b_j + ... + b_K, successes = b_j, draws = a1 -
/// x_1 - ... - x_{j-1})`.
pub fn p_monte_carlo(table: &[Vec<u64>; 2], seed: [u8; 32]) -> f64 {
    let rows = padded_rows(table);
    let mg = Margins::of(&rows);
    let lt = LogTables::new(mg.n);
    p_monte_carlo_with(&rows, &mg, &lt, seed, MC_SAMPLES)
}

/// [`p_monte_carlo`] with shared log tables and an explicit B.
pub fn p_monte_carlo_with(
    rows: &[Vec<u64>; 2],
    mg: &Margins,
    lt: &LogTables,
    seed: [u8; 32],
    resamples: u64,
) -> f64 {
    let mut rng = ChaCha20Rng::from_seed(seed);
    let mi = mi_bits_with(rows, mg, lt);
    let threshold = tie_threshold(mi);
    let margin = mg.margin_term(lt);
    let k = mg.b.len();
    let mut pop = vec![0u64; k + 1];
    for j in (0..k).rev() {
        pop[j] = pop[j + 1] + mg.b[j];
    }
    let mut hits = 0u64;
    for _ in 0..resamples {
        let mut rem = mg.a[1];
        let mut s = 0.0;
        for j in 0..k {
            let bj = mg.b[j];
            let x = hypergeometric_inversion(&mut rng, lt, pop[j], bj, rem);
            s += lt.xlnx(bj - x) + lt.xlnx(x);
            rem -= x;
        }
        if mi_from_terms(s, margin, mg.n) >= threshold {
            hits += 1;
        }
    }
    (1 + hits) as f64 / (resamples + 1) as f64
}

/// A uniform in `[0, 1)` from the next 64-bit output: `(u >> 11) as f64 * 2^-53`.
#[inline]
pub fn uniform(rng: &mut ChaCha20Rng) -> f64 {
    (rng.next_u64() >> 11) as f64 * (1.0 / 9_007_199_254_740_992.0)
}

/// One draw from Hypergeometric(population `pop`, `succ` successes, `draws` draws) by
/// mode-centred chop-down inversion.
///
/// Support `lo = max(0, draws - (pop - succ))` to `hi = min(succ, draws)`. If `lo == hi`
/// the draw is `lo` and no random number is consumed. Otherwise one uniform `u` is taken
/// ([`uniform`]); the mode is `m = floor((draws + 1)(succ + 1) / (pop + 2))` clamped to
/// `[lo, hi]`, with probability
/// `f(m) = exp((ln C(succ, m) + ln C(pop - succ, draws - m)) - ln C(pop, draws))`.
/// The support is visited in the order `m, m-1, m+1, m-2, m+2, ...` (skipping values
/// outside `[lo, hi]`), with probabilities by the recurrences
/// `f(k-1) = f(k) * ((k (pop - succ - draws + k)) / ((succ - k + 1)(draws - k + 1)))` and
/// `f(k+1) = f(k) * (((succ - k)(draws - k)) / ((k + 1)(pop - succ - draws + k + 1)))`
/// (integer products converted to f64, then divided, then multiplied), accumulated in
/// visiting order into `F` starting from `F = f(m)`. The draw is the first visited value
/// with `u < F`, or the last visited value if there is none.
pub fn hypergeometric_inversion(
    rng: &mut ChaCha20Rng,
    lt: &LogTables,
    pop: u64,
    succ: u64,
    draws: u64,
) -> u64 {
    let fail = pop - succ;
    let lo = draws.saturating_sub(fail);
    let hi = succ.min(draws);
    if lo >= hi {
        return lo;
    }
    let u = uniform(rng);
    let m = (((draws + 1) * (succ + 1)) / (pop + 2)).clamp(lo, hi);
    let fm = libm::exp(
        (lt.ln_choose(succ, m) + lt.ln_choose(fail, draws - m)) - lt.ln_choose(pop, draws),
    );
    let mut cum = fm;
    if u < cum {
        return m;
    }
    let mut left_k = m; // last value visited on the left
    let mut left_f = fm;
    let mut right_k = m;
    let mut right_f = fm;
    let mut last = m;
    loop {
        let mut moved = false;
        if left_k > lo {
            let k = left_k;
            let num = (k * (fail + k - draws)) as f64;
            let den = ((succ - k + 1) * (draws - k + 1)) as f64;
            left_f *= num / den;
            left_k = k - 1;
            cum += left_f;
            last = left_k;
            moved = true;
            if u < cum {
                return left_k;
            }
        }
        if right_k < hi {
            let k = right_k;
            let num = ((succ - k) * (draws - k)) as f64;
            let den = ((k + 1) * (fail + k + 1 - draws)) as f64;
            right_f *= num / den;
            right_k = k + 1;
            cum += right_f;
            last = right_k;
            moved = true;
            if u < cum {
                return right_k;
            }
        }
        if !moved {
            return last;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn brute_count(b: &[u64], a1: u64) -> u64 {
        fn rec(b: &[u64], rem: u64) -> u64 {
            match b.split_first() {
                None => u64::from(rem == 0),
                Some((&first, rest)) => (0..=first.min(rem)).map(|x| rec(rest, rem - x)).sum(),
            }
        }
        rec(b, a1)
    }

    #[test]
    fn counting_matches_brute_force() {
        let cases: &[(&[u64], u64)] = &[
            (&[5, 5], 5),
            (&[4, 3, 2], 5),
            (&[1, 1, 1, 1, 1, 1, 1, 1], 4),
            (&[22, 17, 11, 10], 30),
            (&[3, 0, 4], 2),
            (&[7], 3),
        ];
        for &(b, a1) in cases {
            let n: u64 = b.iter().sum();
            let mg = Margins {
                n,
                a: [n - a1, a1],
                b: b.to_vec(),
            };
            let truth = brute_count(b, a1);
            assert_eq!(count_capped(&mg, 1_000_000), truth, "{b:?} {a1}");
            assert_eq!(count_capped(&mg, truth), truth);
            if truth > 1 {
                assert_eq!(count_capped(&mg, truth - 1), truth);
                assert_eq!(count_capped(&mg, 1), 2);
            }
        }
    }

    #[test]
    fn hypergeometric_sampler_mean() {
        let lt = LogTables::new(100);
        let mut rng = ChaCha20Rng::from_seed([7; 32]);
        let draws = 20_000;
        let mut sum = 0u64;
        for _ in 0..draws {
            let x = hypergeometric_inversion(&mut rng, &lt, 100, 30, 40);
            assert!(x <= 30);
            sum += x;
        }
        let mean = sum as f64 / draws as f64;
        // E = 40 * 30 / 100 = 12; sd of the mean ~ 0.015.
        assert!((mean - 12.0).abs() < 0.1, "{mean}");
    }

    #[test]
    fn degenerate_draw_consumes_nothing() {
        let lt = LogTables::new(10);
        let mut a = ChaCha20Rng::from_seed([1; 32]);
        let b = ChaCha20Rng::from_seed([1; 32]);
        assert_eq!(hypergeometric_inversion(&mut a, &lt, 10, 4, 10), 4);
        assert_eq!(hypergeometric_inversion(&mut a, &lt, 10, 0, 3), 0);
        assert_eq!(a, b);
    }

    #[test]
    fn single_column_p_is_one() {
        assert_eq!(p_exact(&[vec![3], vec![4]]), Some(1.0));
        assert_eq!(p_monte_carlo(&[vec![3], vec![4]], [0; 32]), 1.0);
    }
}
