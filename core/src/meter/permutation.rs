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

use super::estimators::{ln_choose, mi_bits_with, min_cell_term, padded_rows, LogTables, Margins};

/// Exact enumeration is used when the number of 2 x K tables with the observed margins is
/// at most this; otherwise the p-value is estimated by Monte Carlo.
pub const EXACT_MAX_TABLES: u64 = 20_000;

/// Number of null tables B drawn by the Monte Carlo test.
pub const MC_SAMPLES: u64 = 1_000;

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
    match count_by_exclusion(&mg.b, d as u64) {
        Some(t) => t.min(u128::from(cap)) as u64,
        None => count_by_program(&mg.b, d, cap),
    }
}

/// [`count_capped`]'s dynamic program over columns, counts saturating at `cap`: the rows
/// summing to `d`.
fn count_by_program(b: &[u64], d: usize, cap: u64) -> u64 {
    let k = b.len();
    // suffix[j] = sum of b over columns j.. (to keep only completable partial sums).
    let mut suffix = vec![0u64; k + 1];
    for j in (0..k).rev() {
        suffix[j] = suffix[j + 1] + b[j];
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
        let bj = usize::try_from(b[j]).unwrap_or(usize::MAX);
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

/// The number of rows `(x_1..x_K)` with `sum x_j = d` and `0 <= x_j <= b_j`, by
/// inclusion-exclusion over the columns that can bind (`b_j < d`):
/// `sum over S of (-1)^|S| C(d - sum_S (b_j + 1) + K' - 1, K' - 1)`, `K'` the columns with
/// `b_j > 0`. `None` when more than [`EXCLUSION_MAX`] columns bind or a term overflows
/// (the dynamic program of [`count_capped`] then counts); exact integers, so either way the
/// count is the same.
fn count_by_exclusion(b: &[u64], d: u64) -> Option<u128> {
    let k = b.iter().filter(|&&v| v > 0).count();
    if k == 0 {
        return Some(u128::from(d == 0));
    }
    let total: u64 = b.iter().sum();
    if total < d {
        return Some(0);
    }
    let binding: Vec<u64> = b.iter().copied().filter(|&v| v > 0 && v < d).collect();
    if binding.len() > EXCLUSION_MAX {
        return None;
    }
    let r = (k - 1) as u64;
    // C(m + r, r), exactly.
    let stars = |m: u64| -> Option<i128> {
        let mut c: u128 = 1;
        for i in 1..=r {
            c = c.checked_mul(u128::from(m + i))? / u128::from(i);
        }
        i128::try_from(c).ok()
    };
    let mut sum: i128 = 0;
    for set in 0u32..(1u32 << binding.len()) {
        let mut cut = 0u64;
        for (j, &v) in binding.iter().enumerate() {
            if set & (1 << j) != 0 {
                cut += v + 1;
            }
        }
        if cut > d {
            continue;
        }
        let term = stars(d - cut)?;
        sum = if set.count_ones() % 2 == 0 {
            sum.checked_add(term)?
        } else {
            sum.checked_sub(term)?
        };
    }
    u128::try_from(sum).ok()
}

/// The most binding columns [`count_by_exclusion`] takes (2^this subsets).
const EXCLUSION_MAX: usize = 10;

/// Exact permutation p-value of the plug-in MI, or `None` when the table has more than
/// [`EXACT_MAX_TABLES`] tables with its margins.
///
/// Enumerates every C=1 row `(x_1..x_K)` with `sum x_j = a1`, `0 <= x_j <= b_j`, in
/// lexicographic order, and sums (in that order, from 0) the hypergeometric weights
/// `prod_j C(b_j, x_j) / C(n, a1)` of the rows whose MI* meets the tie rule; the sum is
/// capped at 1. See [`p_exact_with`] for the exact floating-point evaluation.
pub fn p_exact(table: &[Vec<u64>; 2]) -> Option<f64> {
    let rows = padded_rows(table);
    let mg = Margins::of(&rows);
    let lt = LogTables::new(mg.n);
    p_exact_with(&rows, &mg, &lt, EXACT_MAX_TABLES)
}

/// [`p_exact`] with shared log tables and an explicit table limit.
///
/// The weight of a row is evaluated as the product of sequential conditional
/// probabilities, `P(x) = prod_j P(x_j | x_1..x_{j-1})`, where `x_j` given the earlier
/// columns is Hypergeometric(population `b_j + ... + b_K`, successes `b_j`, draws
/// `rem_j = a1 - x_1 - ... - x_{j-1}`) on `[lo, hi] = [max(0, rem_j - (b_{j+1} + ... +
/// b_K)), min(b_j, rem_j)]` (exactly the feasible range of the enumeration). Each such
/// distribution is computed once, without factorials, by [`hypergeometric_pmf`]. The
/// product is taken in column order, `((P_1 * P_2) * ...) * P_K` (the last factor is 1).
/// The statistic of a row is the plug-in MI computed from
/// `S = (...(0 + (x ln x(b_1 - x_1) + x ln x(x_1))) + ...)`, exactly as for the observed
/// table.
pub fn p_exact_with(
    rows: &[Vec<u64>; 2],
    mg: &Margins,
    lt: &LogTables,
    max_tables: u64,
) -> Option<f64> {
    if count_capped(mg, max_tables) > max_tables {
        return None;
    }
    let k = mg.b.len();
    if k == 0 {
        return Some(1.0);
    }
    let (n, a1) = (mg.n, mg.a[1]);
    let mi = mi_bits_with(rows, mg, lt);
    // A table meets the tie rule exactly when its cell term is at least this.
    let s_min = min_cell_term(mg.margin_term(lt), n, tie_threshold(mi));
    let parts = cell_parts(mg, lt);

    // suffix[j] = b_j + ... + b_K (0-based j).
    let mut suffix = vec![0u64; k + 1];
    for j in (0..k).rev() {
        suffix[j] = suffix[j + 1] + mg.b[j];
    }
    let range = |j: usize, rem: u64| -> (u64, u64) {
        (rem.saturating_sub(suffix[j + 1]), mg.b[j].min(rem))
    };
    if k == 1 {
        // One table: the column holds every C=1 turn.
        let s_leaf = 0.0 + parts[0][a1 as usize];
        return Some(if s_leaf >= s_min { 1.0 } else { 0.0 });
    }
    let mut dist = Conditionals::new(mg, &suffix);

    // Iterative depth-first walk in lexicographic order down to the second-to-last column,
    // whose values (each with the forced last column) are the leaves, summed in order.
    let inner = k - 2;
    let mut p = 0.0;
    let mut x = vec![0u64; k];
    let mut top = vec![0u64; k];
    let mut rem = vec![0u64; k];
    let mut s = vec![0.0f64; k];
    let mut w = vec![0.0f64; k];
    rem[0] = a1;
    w[0] = 1.0;
    let mut j = 0usize;
    (x[0], top[0]) = range(0, a1);
    loop {
        if j == inner {
            let r = rem[j];
            let (lo, hi) = range(j, r);
            let (sj, wj) = (s[j], w[j]);
            let (part, last) = (&parts[j], &parts[j + 1]);
            let d = dist.of(j, r);
            for xj in lo..=hi {
                let s_leaf = (sj + part[xj as usize]) + last[(r - xj) as usize];
                // The cell sum is convex in xj, so the leaves that count are runs at the
                // ends: a predictable branch, and only they wait on the running sum.
                if s_leaf >= s_min {
                    p += wj * d[(xj - lo) as usize];
                }
            }
            // Backtrack to the deepest column that can still advance.
            loop {
                if j == 0 {
                    return Some(if p > 1.0 { 1.0 } else { p });
                }
                j -= 1;
                if x[j] < top[j] {
                    x[j] += 1;
                    break;
                }
            }
        } else {
            let xj = x[j];
            s[j + 1] = s[j] + parts[j][xj as usize];
            let lo = rem[j].saturating_sub(suffix[j + 1]);
            w[j + 1] = w[j] * dist.of(j, rem[j])[(xj - lo) as usize];
            rem[j + 1] = rem[j] - xj;
            j += 1;
            (x[j], top[j]) = range(j, rem[j]);
        }
    }
}

/// The conditional distributions of the exact test's columns, each computed once:
/// column j's C=1 cell given `rem` C=1 turns left for columns j.. is
/// Hypergeometric(`b_j + ... + b_K`, `b_j`, `rem`) ([`hypergeometric_pmf`]).
pub(crate) struct Conditionals<'m> {
    b: &'m [u64],
    suffix: &'m [u64],
    rem_min: Vec<u64>,
    memo: Vec<Vec<Option<Vec<f64>>>>,
}

impl<'m> Conditionals<'m> {
    pub(crate) fn new(mg: &'m Margins, suffix: &'m [u64]) -> Conditionals<'m> {
        let (n, a1) = (mg.n, mg.a[1]);
        let rem_min: Vec<u64> = (0..mg.b.len())
            .map(|j| a1.saturating_sub(n - suffix[j]))
            .collect();
        let memo = (0..mg.b.len())
            .map(|j| {
                let rem_max = a1.min(suffix[j]);
                vec![None; (rem_max + 1).saturating_sub(rem_min[j]) as usize]
            })
            .collect();
        Conditionals {
            b: &mg.b,
            suffix,
            rem_min,
            memo,
        }
    }

    /// `[P(lo), ..., P(hi)]` of column j given `rem`.
    pub(crate) fn of(&mut self, j: usize, rem: u64) -> &[f64] {
        let (b, suffix) = (self.b, self.suffix);
        self.memo[j][(rem - self.rem_min[j]) as usize]
            .get_or_insert_with(|| hypergeometric_pmf(suffix[j], b[j], rem).1)
    }
}

/// `parts[j][x] = x ln x(b_j - x) + x ln x(x)`: column j's share of a table's cell term
/// when its C=1 cell is x, evaluated as the observed table's.
pub(crate) fn cell_parts(mg: &Margins, lt: &LogTables) -> Vec<Vec<f64>> {
    mg.b.iter()
        .map(|&b| (0..=b).map(|x| lt.xlnx(b - x) + lt.xlnx(x)).collect())
        .collect()
}

/// The probabilities of Hypergeometric(population `pop`, `succ` successes, `draws`
/// draws) over its whole support `lo..=hi`, `lo = max(0, draws - (pop - succ))`,
/// `hi = min(succ, draws)`; returns `(lo, [P(lo), ..., P(hi)])`.
///
/// Without factorials: the mode `m = floor((draws+1)(succ+1)/(pop+2))` clamped to
/// `[lo, hi]` gets weight `q(m) = 1`; `q(x+1) = q(x) * (((succ-x)(draws-x)) /
/// ((x+1)(pop-succ-draws+x+1)))` upward and `q(x-1) = q(x) * ((x (pop-succ-draws+x)) /
/// ((succ-x+1)(draws-x+1)))` downward (integer products as f64, divided, then
/// multiplied); `Z = q(lo) + ... + q(hi)` in ascending order; `P(x) = q(x) / Z`.
pub fn hypergeometric_pmf(pop: u64, succ: u64, draws: u64) -> (u64, Vec<f64>) {
    let fail = pop - succ;
    let lo = draws.saturating_sub(fail);
    let hi = succ.min(draws);
    let m = (((draws + 1) * (succ + 1)) / (pop + 2)).clamp(lo, hi);
    let mut q = vec![0.0f64; (hi - lo + 1) as usize];
    q[(m - lo) as usize] = 1.0;
    for x in m..hi {
        let i = (x - lo) as usize;
        let num = ((succ - x) * (draws - x)) as f64;
        let den = ((x + 1) * (fail + x + 1 - draws)) as f64;
        q[i + 1] = q[i] * (num / den);
    }
    for x in (lo + 1..=m).rev() {
        let i = (x - lo) as usize;
        let num = (x * (fail + x - draws)) as f64;
        let den = ((succ - x + 1) * (draws - x + 1)) as f64;
        q[i - 1] = q[i] * (num / den);
    }
    let mut z = 0.0;
    for &v in &q {
        z += v;
    }
    for v in &mut q {
        *v /= z;
    }
    (lo, q)
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
/// The stream is `ChaCha20Rng::from_seed(seed)` (rand_chacha 0.3). Null table `t`
/// (t = 1..B) takes the next K - 1 uniforms `u_1..u_{K-1}` ([`uniform`]) and draws its
/// C=1 row column by column: `x_j = hypergeometric_inversion(u_j, b_j + ... + b_K, b_j,
/// a1 - x_1 - ... - x_{j-1})` for j < K, and `x_K = a1 - x_1 - ... - x_{K-1}`. A uniform
/// is consumed even when the support is a single value.
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
    // A table meets the tie rule exactly when its cell term is at least this.
    let s_min = min_cell_term(mg.margin_term(lt), mg.n, tie_threshold(mi));
    let k = mg.b.len();
    let a1 = mg.a[1];
    let mut samplers: Vec<ColumnSampler> = Vec::with_capacity(k);
    let mut pop = mg.n;
    let mut before = 0u64; // b_1 + ... + b_{j-1}
    for &b in &mg.b {
        samplers.push(ColumnSampler::new(
            pop,
            b,
            a1.saturating_sub(before),
            a1.min(pop),
        ));
        pop -= b;
        before += b;
    }
    let parts = cell_parts(mg, lt);
    // Samples are generated LANES at a time, column by column, for instruction-level
    // parallelism; each sample's K - 1 uniforms are taken from the stream in sample order
    // first, so the result is the same as one sample after the other.
    const LANES: usize = 8;
    let per = k.saturating_sub(1);
    let mut us = vec![0.0f64; LANES * per];
    let mut hits = 0u64;
    let mut done = 0u64;
    while done < resamples {
        let lanes = (resamples - done).min(LANES as u64) as usize;
        for u in &mut us[..lanes * per] {
            *u = uniform(&mut rng);
        }
        let mut rem = [a1; LANES];
        let mut s = [0.0f64; LANES];
        for (j, (sampler, part)) in samplers.iter_mut().zip(&parts).enumerate() {
            for l in 0..lanes {
                let x = if j < per {
                    sampler.draw_with(rem[l], us[l * per + j], lt)
                } else {
                    rem[l]
                };
                s[l] += part[x as usize];
                rem[l] -= x;
            }
        }
        hits += s[..lanes].iter().filter(|&&sl| sl >= s_min).count() as u64;
        done += lanes as u64;
    }
    (1 + hits) as f64 / (resamples + 1) as f64
}

/// A uniform in `[0, 1)` from the next 64-bit output: `(u >> 11) as f64 * 2^-53`.
#[inline]
pub fn uniform(rng: &mut ChaCha20Rng) -> f64 {
    (rng.next_u64() >> 11) as f64 * (1.0 / 9_007_199_254_740_992.0)
}

/// The inverse distribution function of Hypergeometric(population `pop`, `succ`
/// successes, `draws` draws) at the uniform `u`, by mode-centred chop-down inversion.
///
/// Support `lo = max(0, draws - (pop - succ))` to `hi = min(succ, draws)`; if `lo == hi`
/// the result is `lo`. Otherwise the mode is `m = floor((draws + 1)(succ + 1) / (pop + 2))`
/// clamped to `[lo, hi]`, with probability
/// `f(m) = exp((ln C(succ, m) + ln C(pop - succ, draws - m)) - ln C(pop, draws))`
/// ([`ln_choose`]). The support is visited in the order `m, m-1, m+1, m-2, m+2, ...`
/// (skipping values outside `[lo, hi]`), with probabilities by the recurrences
/// `f(k-1) = f(k) * ((k (pop - succ - draws + k)) / ((succ - k + 1)(draws - k + 1)))` and
/// `f(k+1) = f(k) * (((succ - k)(draws - k)) / ((k + 1)(pop - succ - draws + k + 1)))`
/// (integer products converted to f64, then divided, then multiplied), accumulated in
/// visiting order into `F` starting from `F = f(m)` (`F = F + f`). The result is the first
/// visited value with `u < F`, or the last visited value if there is none.
///
/// This is the reference implementation; the Monte Carlo test uses a memoized version
/// that returns identical values.
pub fn hypergeometric_inversion(u: f64, pop: u64, succ: u64, draws: u64) -> u64 {
    let walk = Chop::new(pop, succ, draws, ln_choose);
    if walk.lo >= walk.hi {
        return walk.lo;
    }
    let (mut cum, mut last) = (walk.fm, walk.m);
    if u < cum {
        return last;
    }
    for (k, f) in walk {
        cum += f;
        last = k;
        if u < cum {
            return k;
        }
    }
    last
}

/// The chop-down walk of [`hypergeometric_inversion`] after the mode: yields
/// `(k, f(k))` in visiting order.
#[derive(Debug, Clone)]
struct Chop {
    pop: u64,
    succ: u64,
    draws: u64,
    lo: u64,
    hi: u64,
    m: u64,
    fm: f64,
    left_k: u64,
    left_f: f64,
    right_k: u64,
    right_f: f64,
    left_next: bool,
}

impl Chop {
    fn new(pop: u64, succ: u64, draws: u64, ln_choose: impl Fn(u64, u64) -> f64) -> Chop {
        let fail = pop - succ;
        let lo = draws.saturating_sub(fail);
        let hi = succ.min(draws);
        if lo >= hi {
            return Chop {
                pop,
                succ,
                draws,
                lo,
                hi,
                m: lo,
                fm: 1.0,
                left_k: lo,
                left_f: 1.0,
                right_k: hi,
                right_f: 1.0,
                left_next: true,
            };
        }
        let m = (((draws + 1) * (succ + 1)) / (pop + 2)).clamp(lo, hi);
        let fm =
            libm::exp((ln_choose(succ, m) + ln_choose(fail, draws - m)) - ln_choose(pop, draws));
        Chop {
            pop,
            succ,
            draws,
            lo,
            hi,
            m,
            fm,
            left_k: m,
            left_f: fm,
            right_k: m,
            right_f: fm,
            left_next: true,
        }
    }
}

impl Iterator for Chop {
    type Item = (u64, f64);

    fn next(&mut self) -> Option<(u64, f64)> {
        let (succ, draws, fail) = (self.succ, self.draws, self.pop - self.succ);
        loop {
            if self.left_k == self.lo && self.right_k == self.hi {
                return None;
            }
            if self.left_next {
                self.left_next = false;
                if self.left_k > self.lo {
                    let k = self.left_k;
                    let num = (k * (fail + k - draws)) as f64;
                    let den = ((succ - k + 1) * (draws - k + 1)) as f64;
                    self.left_f *= num / den;
                    self.left_k = k - 1;
                    return Some((self.left_k, self.left_f));
                }
            } else {
                self.left_next = true;
                if self.right_k < self.hi {
                    let k = self.right_k;
                    let num = ((succ - k) * (draws - k)) as f64;
                    let den = ((k + 1) * (fail + k + 1 - draws)) as f64;
                    self.right_f *= num / den;
                    self.right_k = k + 1;
                    return Some((self.right_k, self.right_f));
                }
            }
        }
    }
}

/// Memoized [`hypergeometric_inversion`] for one column of the sequential sampler: the
/// population and successes are fixed, the number of draws varies. For each number of
/// draws seen, the cumulative sums `F` in visiting order are kept and extended on demand,
/// so a draw is a short scan; the results are identical to the reference.
pub(crate) struct ColumnSampler {
    pop: u64,
    succ: u64,
    d_min: u64,
    /// Index by `draws - d_min`: [`UNBUILT`], an index into `small`, or [`LARGE`] plus an
    /// index into `tables`.
    index: Vec<u32>,
    /// Whole walks of at most [`SMALL`] values, searched from the mode outwards.
    small: Vec<SmallTable>,
    /// Longer walks, extended on demand.
    tables: Vec<CumTable>,
}

const UNBUILT: u32 = u32::MAX;
/// Marks an index into `tables` (the others index `small`).
const LARGE: u32 = 1 << 31;
/// The longest support kept as a [`SmallTable`].
const SMALL: usize = 8;

/// A walk whose support has at most [`SMALL`] values, computed whole at once: the same sums
/// in the same order as [`CumTable`], so the same results, with no indirection.
#[derive(Clone, Copy)]
struct SmallTable {
    /// `F` in visiting order.
    cum: [f64; SMALL],
    /// The visited values, aligned with `cum`.
    ks: [u32; SMALL],
    len: u32,
}

impl SmallTable {
    fn new(pop: u64, succ: u64, draws: u64, lt: &LogTables) -> SmallTable {
        let walk = Chop::new(pop, succ, draws, |n, k| lt.ln_choose(n, k));
        let mut t = SmallTable {
            cum: [0.0; SMALL],
            ks: [0; SMALL],
            len: 1,
        };
        let mut cum = walk.fm;
        t.cum[0] = cum;
        t.ks[0] = walk.m as u32;
        for (k, f) in walk {
            cum += f;
            let i = t.len as usize;
            t.cum[i] = cum;
            t.ks[i] = k as u32;
            t.len += 1;
        }
        t
    }

    /// The first visited value with `u < F`, or the last visited value.
    #[inline]
    fn invert(&self, u: f64) -> u64 {
        let len = self.len as usize;
        for i in 0..len - 1 {
            if u < self.cum[i] {
                return u64::from(self.ks[i]);
            }
        }
        u64::from(self.ks[len - 1])
    }
}

struct CumTable {
    walk: Chop,
    /// `F` in visiting order, starting with `f(m)`.
    cum: Vec<f64>,
    /// The visited values, aligned with `cum`.
    ks: Vec<u64>,
    done: bool,
}

impl CumTable {
    fn new(pop: u64, succ: u64, draws: u64, lt: &LogTables) -> CumTable {
        let walk = Chop::new(pop, succ, draws, |n, k| lt.ln_choose(n, k));
        let (fm, m) = (walk.fm, walk.m);
        let mut cum = Vec::with_capacity(32);
        let mut ks = Vec::with_capacity(32);
        cum.push(fm);
        ks.push(m);
        CumTable {
            walk,
            cum,
            ks,
            done: false,
        }
    }

    /// The first visited value with `u < F`, extending the walk as needed.
    #[inline]
    fn invert(&mut self, u: f64) -> u64 {
        // `cum` is non-decreasing.
        let i = self.cum.partition_point(|&c| c <= u);
        if let Some(&k) = self.ks.get(i) {
            return k;
        }
        self.extend(u)
    }

    #[cold]
    fn extend(&mut self, u: f64) -> u64 {
        let last = self.cum.len() - 1;
        let (mut cum, mut k_last) = (self.cum[last], self.ks[last]);
        if !self.done {
            for (k, f) in self.walk.by_ref() {
                cum += f;
                k_last = k;
                self.cum.push(cum);
                self.ks.push(k);
                if u < cum {
                    return k;
                }
            }
            self.done = true;
        }
        k_last
    }
}

impl ColumnSampler {
    pub(crate) fn new(pop: u64, succ: u64, d_min: u64, d_max: u64) -> ColumnSampler {
        let len = (d_max + 1).saturating_sub(d_min) as usize;
        ColumnSampler {
            pop,
            succ,
            d_min,
            index: vec![UNBUILT; len],
            small: Vec::new(),
            tables: Vec::new(),
        }
    }

    /// The draw for `draws` with the uniform `u` (unused when the support is one value).
    #[inline]
    pub(crate) fn draw_with(&mut self, draws: u64, u: f64, lt: &LogTables) -> u64 {
        let lo = draws.saturating_sub(self.pop - self.succ);
        let hi = self.succ.min(draws);
        if lo >= hi {
            return lo;
        }
        let slot = (draws - self.d_min) as usize;
        let mut id = self.index[slot];
        if id == UNBUILT {
            id = self.build(draws, hi - lo + 1, lt);
            self.index[slot] = id;
        }
        if id < LARGE {
            self.small[id as usize].invert(u)
        } else {
            self.tables[(id - LARGE) as usize].invert(u)
        }
    }

    #[cold]
    fn build(&mut self, draws: u64, support: u64, lt: &LogTables) -> u32 {
        if support as usize <= SMALL {
            self.small
                .push(SmallTable::new(self.pop, self.succ, draws, lt));
            (self.small.len() - 1) as u32
        } else {
            self.tables
                .push(CumTable::new(self.pop, self.succ, draws, lt));
            LARGE + (self.tables.len() - 1) as u32
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

    /// Inclusion-exclusion and the dynamic program give the same (capped) counts.
    #[test]
    fn both_counts_agree() {
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = move |m: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % m
        };
        for _ in 0..3_000 {
            let k = 1 + next(9) as usize;
            let b: Vec<u64> = (0..k)
                .map(|_| if next(5) == 0 { 0 } else { next(400) })
                .collect();
            let n: u64 = b.iter().sum();
            let d = if n == 0 { 0 } else { next(n / 2 + 1) };
            let cap = [2u64, 257, 20_001, 200_001, u64::MAX][next(5) as usize];
            let by_program = count_by_program(&b, d as usize, cap);
            match count_by_exclusion(&b, d) {
                Some(t) => assert_eq!(t.min(u128::from(cap)) as u64, by_program, "{b:?} {d}"),
                None => assert!(b.iter().filter(|&&v| v > 0 && v < d).count() > EXCLUSION_MAX),
            }
        }
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
        let mut rng = ChaCha20Rng::from_seed([7; 32]);
        let draws = 20_000;
        let mut sum = 0u64;
        for _ in 0..draws {
            let x = hypergeometric_inversion(uniform(&mut rng), 100, 30, 40);
            assert!(x <= 30);
            sum += x;
        }
        let mean = sum as f64 / draws as f64;
        // E = 40 * 30 / 100 = 12; sd of the mean ~ 0.015.
        assert!((mean - 12.0).abs() < 0.1, "{mean}");
    }

    #[test]
    fn inversion_edges() {
        // Degenerate supports.
        assert_eq!(hypergeometric_inversion(0.3, 10, 4, 10), 4);
        assert_eq!(hypergeometric_inversion(0.3, 10, 0, 3), 0);
        // u = 0 gives the mode; u just below 1 gives an extreme of the support.
        assert_eq!(hypergeometric_inversion(0.0, 100, 30, 40), 12);
        let top = hypergeometric_inversion(1.0 - 1.0 / 9_007_199_254_740_992.0, 100, 30, 40);
        assert!(top <= 2 || top >= 25, "{top}");
        // The uniform uses the top 53 bits.
        let mut rng = ChaCha20Rng::from_seed([0; 32]);
        let mut copy = rng.clone();
        let u = uniform(&mut rng);
        assert_eq!(u, (copy.next_u64() >> 11) as f64 / 9_007_199_254_740_992.0);
    }

    #[test]
    fn memoized_sampler_matches_reference() {
        for &(pop, succ, d_min, d_max) in &[
            (100u64, 30u64, 0u64, 100u64),
            (1000, 400, 300, 700),
            (7, 3, 0, 7),
        ] {
            let mut col = ColumnSampler::new(pop, succ, d_min, d_max);
            let lt = LogTables::new(pop);
            let mut a = ChaCha20Rng::from_seed([3; 32]);
            let mut pick = ChaCha20Rng::from_seed([4; 32]);
            for _ in 0..5_000 {
                let draws = d_min + pick.next_u64() % (d_max - d_min + 1);
                let u = uniform(&mut a);
                let x = col.draw_with(draws, u, &lt);
                let y = hypergeometric_inversion(u, pop, succ, draws);
                assert_eq!(x, y, "pop {pop} succ {succ} draws {draws}");
            }
        }
    }

    #[test]
    fn exact_weights_sum_to_one() {
        // With MI = 0 observed (threshold <= 0) every table counts: p = total weight.
        for t in [
            [vec![5, 5], vec![5, 5]],
            [vec![4, 4, 4], vec![4, 4, 4]],
            [vec![3, 5, 7, 2], vec![3, 5, 7, 2]],
            [vec![100, 100], vec![100, 100]],
        ] {
            let p = p_exact(&t).expect("feasible");
            assert!((p - 1.0).abs() < 1e-13, "{p}");
        }
    }

    #[test]
    fn exact_p_matches_log_space_reference() {
        // Brute force with log-space weights for a few small tables.
        for t in [
            [vec![3, 1, 0], vec![0, 2, 3]],
            [vec![12, 8, 5, 5], vec![10, 9, 6, 5]],
            [vec![0, 7, 1], vec![4, 0, 2]],
        ] {
            let mg = Margins::of(&t);
            let lt = LogTables::new(mg.n);
            let mi = mi_bits_with(&t, &mg, &lt);
            let thr = tie_threshold(mi);
            let mut p = 0.0;
            let k = mg.b.len();
            let mut x = vec![0u64; k];
            fn rec(
                j: usize,
                rem: u64,
                x: &mut Vec<u64>,
                mg: &Margins,
                lt: &LogTables,
                thr: f64,
                p: &mut f64,
            ) {
                if j == mg.b.len() {
                    if rem == 0 {
                        let r0: Vec<u64> = mg.b.iter().zip(x.iter()).map(|(b, x)| b - x).collect();
                        let t = [r0, x.clone()];
                        if mi_bits_with(&t, mg, lt) >= thr {
                            let lw: f64 =
                                mg.b.iter()
                                    .zip(x.iter())
                                    .map(|(&b, &x)| ln_choose(b, x))
                                    .sum::<f64>()
                                    - ln_choose(mg.n, mg.a[1]);
                            *p += libm::exp(lw);
                        }
                    }
                    return;
                }
                for v in 0..=mg.b[j].min(rem) {
                    x[j] = v;
                    rec(j + 1, rem - v, x, mg, lt, thr, p);
                }
            }
            rec(0, mg.a[1], &mut x, &mg, &lt, thr, &mut p);
            let got = p_exact(&t).expect("feasible");
            assert!((got - p.min(1.0)).abs() < 1e-13, "{t:?}: {got} vs {p}");
        }
    }

    /// The stream is the ChaCha20 keystream (key = seed, nonce 0, counter from 0) read as
    /// little-endian u64 words: RFC 7539 section 2.3.2 style zero-key block 0 begins
    /// 76 b8 e0 ad a0 f1 3d 90.
    #[test]
    fn chacha20_stream_layout() {
        let mut rng = ChaCha20Rng::from_seed([0; 32]);
        assert_eq!(rng.next_u64(), 0x903d_f1a0_ade0_b876);
    }

    #[test]
    fn single_column_p_is_one() {
        assert_eq!(p_exact(&[vec![3], vec![4]]), Some(1.0));
        assert_eq!(p_monte_carlo(&[vec![3], vec![4]], [0; 32]), 1.0);
    }
}
