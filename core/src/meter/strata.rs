//! The permutation test within strata (`meter/2`, library/METER.md section 10): the plug-in
//! MI of a pooled 2 x K table, with a null that permutes C only inside each stratum (the
//! turns that share a declared purpose Y), so each stratum keeps its own C margin and column
//! margins. A paired or matched evaluation (the same Y run with C = 0 and C = 1) gets the
//! power of an exact conditional test (McNemar for pairs, the exact version of
//! Cochran-Mantel-Haenszel for strata) instead of a test that ignores the pairing.
//!
//! `meter/2` runs every p-value through this one test: its unstratified `p` is the test with
//! one stratum (every turn used), and `stratified.p` is the test with the strata of Y, so
//! with a single Y the two are the same computation and equal bit for bit.
//!
//! - **Exact** when the pooled table has at most [`EXACT_MAX_TABLES`] tables with its margins
//!   and the convolution's work bound is at most [`EXACT_MAX_WORK`]: a dynamic program over
//!   the strata, in canonical order, of the distribution of the pooled C=1 row. With one
//!   stratum it is the exact test of `meter/1` ([`super::p_exact_with`]), bit for bit.
//! - **Monte Carlo** otherwise: [`MC_SAMPLES`] null tables, each the sum of one draw per
//!   stratum, from a ChaCha8 stream of 32-bit uniforms (one uniform for a stratum with at
//!   most [`ROW_TABLE_MAX`] rows, else one per column that is not forced).
//!
//! Every number is a deterministic function of the stratum margins, the pooled table and
//! the seed, computed with `libm` and a fixed order of operations.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hash, Hasher};

use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};
use serde::ser::{SerializeSeq, Serializer};
use serde::Serialize;

use super::estimators::{mi_bits_with, min_cell_term, LogTables, Margins};
use super::permutation::{
    cell_parts, count_capped, hypergeometric_pmf, p_exact_with, tie_threshold, ColumnSampler,
    EXACT_MAX_TABLES, MC_SAMPLES,
};
use super::PMethod;

/// The exact test is used only when its work bound `W` is at most this (and the pooled
/// table has at most [`EXACT_MAX_TABLES`] tables with its margins); see [`work_bound`].
pub const EXACT_MAX_WORK: u64 = 200_000;

/// A stratum with at most this many C=1 rows is drawn with one uniform, by inversion over
/// its rows in lexicographic order; a larger one column by column.
pub const ROW_TABLE_MAX: u64 = 256;

/// The margins of one stratum over the quantity's columns: `n` turns, `c1` of them with
/// C = 1, column sums `b` (zeros allowed). The derived order `(n, c1, b)` is the canonical
/// order of strata.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct StratumMargins {
    /// Turns in the stratum.
    pub n: u64,
    /// Turns with C = 1.
    pub c1: u64,
    /// Column sums, aligned with the quantity's columns.
    pub b: Vec<u64>,
}

impl StratumMargins {
    /// The margins of a stratum's 2 x K table.
    pub fn of(table: &[Vec<u64>; 2]) -> StratumMargins {
        let mg = Margins::of(table);
        StratumMargins {
            n: mg.n,
            c1: mg.a[1],
            b: mg.b,
        }
    }

    fn margins(&self) -> Margins {
        Margins {
            n: self.n,
            a: [self.n - self.c1, self.c1],
            b: self.b.clone(),
        }
    }
}

/// `count` strata with the same margins, as published: `[count, c1, [[j, b_j], ...]]` with
/// only the columns `j` (0-based, in the quantity's column order) where `b_j > 0`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Group {
    /// How many strata have these margins.
    pub count: u64,
    /// Their margins.
    pub margins: StratumMargins,
}

impl Serialize for Group {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        struct Sparse<'a>(&'a [u64]);
        impl Serialize for Sparse<'_> {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                let mut seq = s.serialize_seq(None)?;
                for (j, &b) in self.0.iter().enumerate().filter(|(_, &b)| b > 0) {
                    seq.serialize_element(&[j as u64, b])?;
                }
                seq.end()
            }
        }
        let mut seq = s.serialize_seq(Some(3))?;
        seq.serialize_element(&self.count)?;
        seq.serialize_element(&self.margins.c1)?;
        seq.serialize_element(&Sparse(&self.margins.b))?;
        seq.end()
    }
}

/// The strata in canonical order, equal margins grouped: sorted by `(n, c1, b)`.
pub fn groups(mut strata: Vec<StratumMargins>) -> Vec<Group> {
    strata.sort_unstable();
    let mut out: Vec<Group> = Vec::new();
    for s in strata {
        match out.last_mut() {
            Some(g) if g.margins == s => g.count += 1,
            _ => out.push(Group {
                count: 1,
                margins: s,
            }),
        }
    }
    out
}

/// The within-strata permutation p-value of the plug-in MI of `pooled` (the sum of the
/// strata's tables, aligned with their margins), and how it was obtained.
///
/// `groups` are the strata in canonical order ([`groups`]); `lt` covers the pooled `n`; the
/// seed feeds the Monte Carlo stream.
pub fn p_within(
    groups: &[Group],
    pooled: &[Vec<u64>; 2],
    lt: &LogTables,
    seed: [u8; 32],
) -> (f64, PMethod) {
    let mg = Margins::of(pooled);
    if let [one] = groups {
        if one.count == 1 {
            if let Some(p) = p_exact_with(pooled, &mg, lt, EXACT_MAX_TABLES) {
                return (p, PMethod::Exact);
            }
        }
    }
    match p_exact_within(groups, pooled, &mg, lt) {
        Some(p) => (p, PMethod::Exact),
        None => (
            p_monte_carlo_within(groups, pooled, &mg, lt, seed, MC_SAMPLES),
            PMethod::MonteCarlo,
        ),
    }
}

/// The work bound of the exact test: with `T_s` the number of C=1 rows of stratum `s`
/// (canonical order, counting each stratum of a group), `s1` the first stratum with
/// `T_s >= 2` and `T` the number of tables with the pooled margins,
/// `W = T_s1 + T * (sum of T_s over the later strata with T_s >= 2)`; 0 when no stratum
/// has two rows. Counts saturate past [`EXACT_MAX_WORK`].
pub fn work_bound(groups: &[Group], pooled_tables: u64) -> u64 {
    let mut first: Option<u64> = None;
    let mut rest: u64 = 0;
    for g in groups {
        let t = count_capped(&g.margins.margins(), EXACT_MAX_WORK);
        if t < 2 {
            continue;
        }
        let mut count = g.count;
        if first.is_none() {
            first = Some(t);
            count -= 1;
        }
        rest = rest.saturating_add(t.saturating_mul(count));
    }
    match first {
        None => 0,
        Some(t1) => t1.saturating_add(pooled_tables.saturating_mul(rest)),
    }
}

/// A pooled C=1 row over the first K-1 columns (the last is forced by the row sum), as a
/// key whose order is the lexicographic order of rows and whose sum is the rows' sum.
trait RowKey: Clone + Ord + Hash + Eq {
    fn plus(&self, other: &Self) -> Self;
}

/// Mixed radix (radix `B_j + 1`, first column most significant); used when it fits.
impl RowKey for u128 {
    #[inline]
    fn plus(&self, other: &Self) -> Self {
        self + other
    }
}

impl RowKey for Vec<u64> {
    fn plus(&self, other: &Self) -> Self {
        self.iter().zip(other).map(|(a, b)| a + b).collect()
    }
}

/// A multiplicative hasher for row keys (the map's order never reaches a result).
#[derive(Default)]
struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(5) ^ u64::from(b)).wrapping_mul(0x51_7cc1_b727_220a_95);
        }
    }
    fn write_u128(&mut self, i: u128) {
        self.0 = ((i as u64) ^ ((i >> 64) as u64).rotate_left(29))
            .wrapping_mul(0x9e37_79b9_7f4a_7c15)
            .rotate_left(31);
    }
    fn write_u64(&mut self, i: u64) {
        self.0 = (self.0 ^ i)
            .wrapping_mul(0x9e37_79b9_7f4a_7c15)
            .rotate_left(31);
    }
}

type KeyMap<K> = HashMap<K, usize, BuildHasherDefault<KeyHasher>>;

/// Every C=1 row of a stratum (over all K columns) in lexicographic order, with its weight
/// under the permutation null: the product, in column order from 1.0, of the sequential
/// conditional probabilities `P(x_j | x_1..x_{j-1})`, each from
/// Hypergeometric(`b_j + ... + b_K`, `b_j`, `rem_j`) ([`hypergeometric_pmf`]); columns with
/// `b_j = 0` and the last column with `b_j > 0` are forced and add no factor.
fn stratum_rows(m: &StratumMargins) -> Vec<(Vec<u64>, f64)> {
    let cols: Vec<usize> = (0..m.b.len()).filter(|&j| m.b[j] > 0).collect();
    let mut out = Vec::new();
    let k = m.b.len();
    if cols.is_empty() {
        out.push((vec![0; k], 1.0));
        return out;
    }
    // suffix[i] = sum of b over cols[i..].
    let mut suffix = vec![0u64; cols.len() + 1];
    for i in (0..cols.len()).rev() {
        suffix[i] = suffix[i + 1] + m.b[cols[i]];
    }
    let mut memo: HashMap<(usize, u64), (u64, Vec<f64>)> = HashMap::new();
    let mut row = vec![0u64; k];
    fn walk(
        i: usize,
        rem: u64,
        w: f64,
        cols: &[usize],
        suffix: &[u64],
        b: &[u64],
        row: &mut Vec<u64>,
        memo: &mut HashMap<(usize, u64), (u64, Vec<f64>)>,
        out: &mut Vec<(Vec<u64>, f64)>,
    ) {
        let j = cols[i];
        if i + 1 == cols.len() {
            row[j] = rem;
            out.push((row.clone(), w));
            row[j] = 0;
            return;
        }
        let (lo, pmf) = memo
            .entry((i, rem))
            .or_insert_with(|| hypergeometric_pmf(suffix[i], b[j], rem))
            .clone();
        for (t, &pr) in pmf.iter().enumerate() {
            let x = lo + t as u64;
            row[j] = x;
            walk(i + 1, rem - x, w * pr, cols, suffix, b, row, memo, out);
        }
        row[j] = 0;
    }
    walk(
        0, m.c1, 1.0, &cols, &suffix, &m.b, &mut row, &mut memo, &mut out,
    );
    out
}

/// The exact within-strata p-value, or `None` when the test is not feasible (more than
/// [`EXACT_MAX_TABLES`] pooled tables, or a work bound over [`EXACT_MAX_WORK`]).
///
/// The distribution of the pooled C=1 row is built stratum by stratum in canonical order:
/// starting from the zero row with probability 1, stratum `s` maps it to
/// `P_s(z) = sum over its rows y in lexicographic order of P_{s-1}(z - y) * w(y)` (rows
/// `y` for which `z - y` is not a state skipped; the sum from its first term). The p-value
/// is the sum, over the final rows in lexicographic order, of the probabilities of those
/// whose cell term meets the tie rule (as in `meter/1`), capped at 1.
fn p_exact_within(
    groups: &[Group],
    pooled: &[Vec<u64>; 2],
    mg: &Margins,
    lt: &LogTables,
) -> Option<f64> {
    let t_pooled = count_capped(mg, EXACT_MAX_TABLES);
    if t_pooled > EXACT_MAX_TABLES {
        return None;
    }
    if work_bound(groups, t_pooled) > EXACT_MAX_WORK {
        return None;
    }
    let k = mg.b.len();
    if k == 0 {
        return Some(1.0);
    }
    let free = k - 1;
    // Mixed-radix place values for the u128 key, when they fit.
    let mut place = vec![0u128; free];
    let mut fits = true;
    let mut acc: u128 = 1;
    for j in (0..free).rev() {
        place[j] = acc;
        match acc.checked_mul(u128::from(mg.b[j]) + 1) {
            Some(v) => acc = v,
            None => fits = false,
        }
    }
    let mi = mi_bits_with(pooled, mg, lt);
    let s_min = min_cell_term(mg.margin_term(lt), mg.n, tie_threshold(mi));
    let parts = cell_parts(mg, lt);
    let score = |row: &[u64]| -> f64 {
        let mut s = 0.0;
        for (part, &x) in parts.iter().zip(row) {
            s += part[x as usize];
        }
        s
    };
    let finals: Vec<(Vec<u64>, f64)> = if fits {
        let enc = |row: &[u64]| -> u128 {
            row[..free]
                .iter()
                .zip(&place)
                .map(|(&x, &p)| u128::from(x) * p)
                .sum()
        };
        let states = convolve(groups, &enc)?;
        states
            .into_iter()
            .map(|(key, p)| {
                let mut row = vec![0u64; k];
                let mut rest = key;
                for j in 0..free {
                    row[j] = (rest / place[j]) as u64;
                    rest %= place[j];
                }
                (row, p)
            })
            .collect()
    } else {
        convolve(groups, &|row: &[u64]| row[..free].to_vec())?
    };
    let a1 = mg.a[1];
    let mut p = 0.0;
    for (mut row, prob) in finals {
        let used: u64 = row[..free].iter().sum();
        row[free] = a1 - used;
        if score(&row) >= s_min {
            p += prob;
        }
    }
    Some(if p > 1.0 { 1.0 } else { p })
}

/// The convolution of the strata's row distributions: the final states (keys in ascending
/// order) with their probabilities.
fn convolve<K: RowKey>(groups: &[Group], enc: &dyn Fn(&[u64]) -> K) -> Option<Vec<(K, f64)>> {
    let zero = enc(&vec![0; groups.first().map_or(0, |g| g.margins.b.len())]);
    let mut states: Vec<(K, f64)> = vec![(zero, 1.0)];
    for g in groups {
        let rows: Vec<(K, f64)> = stratum_rows(&g.margins)
            .iter()
            .map(|(r, w)| (enc(r), *w))
            .collect();
        for _ in 0..g.count {
            if let [(shift, _)] = rows.as_slice() {
                // A forced stratum shifts every state; the order is kept.
                for (key, _) in &mut states {
                    *key = key.plus(shift);
                }
                continue;
            }
            let mut index: KeyMap<K> = KeyMap::default();
            let mut next: Vec<(K, f64)> = Vec::with_capacity(states.len() + rows.len());
            for (ky, wy) in &rows {
                for (kx, px) in &states {
                    let z = kx.plus(ky);
                    let v = px * wy;
                    match index.get(&z) {
                        Some(&i) => next[i].1 += v,
                        None => {
                            index.insert(z.clone(), next.len());
                            next.push((z, v));
                        }
                    }
                }
            }
            next.sort_unstable_by(|a, b| a.0.cmp(&b.0));
            states = next;
        }
    }
    Some(states)
}

/// One stratum's Monte Carlo sampler: a table of its rows when it has at most
/// [`ROW_TABLE_MAX`], else one column sampler per column with `b_j > 0`.
enum Sampler {
    /// Forced: the one row.
    Fixed(Vec<(usize, u64)>),
    /// Rows over `cols` (flattened, `cols.len()` values a row) and their cumulative weights.
    Rows {
        cols: Vec<usize>,
        rows: Vec<u32>,
        cum: Vec<f64>,
    },
    /// Column by column, `samplers[i]` for `cols[i]` (the last column forced).
    Columns {
        cols: Vec<usize>,
        pops: Vec<u64>,
        succs: Vec<u64>,
        c1: u64,
        samplers: Vec<ColumnSampler>,
    },
}

impl Sampler {
    fn new(m: &StratumMargins) -> Sampler {
        let cols: Vec<usize> = (0..m.b.len()).filter(|&j| m.b[j] > 0).collect();
        let t = count_capped(&m.margins(), ROW_TABLE_MAX);
        if t <= 1 {
            let rows = stratum_rows(m);
            let row = rows.first().map(|(r, _)| r.clone()).unwrap_or_default();
            return Sampler::Fixed(cols.iter().map(|&j| (j, row[j])).collect());
        }
        if t <= ROW_TABLE_MAX {
            let mut flat = Vec::new();
            let mut cum = Vec::new();
            let mut f = 0.0;
            for (row, w) in stratum_rows(m) {
                flat.extend(cols.iter().map(|&j| row[j] as u32));
                f += w;
                cum.push(f);
            }
            return Sampler::Rows {
                cols,
                rows: flat,
                cum,
            };
        }
        let mut pops = Vec::with_capacity(cols.len());
        let mut succs = Vec::with_capacity(cols.len());
        let mut samplers = Vec::with_capacity(cols.len());
        let mut pop = m.n;
        for &j in &cols {
            let d_min = m.c1.saturating_sub(m.n - pop);
            samplers.push(ColumnSampler::new(pop, m.b[j], d_min, m.c1.min(pop)));
            pops.push(pop);
            succs.push(m.b[j]);
            pop -= m.b[j];
        }
        Sampler::Columns {
            cols,
            pops,
            succs,
            c1: m.c1,
            samplers,
        }
    }

    /// Add one draw of the stratum's C=1 row to `x`.
    #[inline]
    fn draw(&mut self, rng: &mut ChaCha8Rng, x: &mut [u64], lt: &LogTables) {
        match self {
            Sampler::Fixed(row) => {
                for &(j, v) in row.iter() {
                    x[j] += v;
                }
            }
            Sampler::Rows { cols, rows, cum } => {
                let u = uniform32(rng);
                let i = cum.partition_point(|&c| c <= u).min(cum.len() - 1);
                let w = cols.len();
                for (&j, &v) in cols.iter().zip(&rows[i * w..(i + 1) * w]) {
                    x[j] += u64::from(v);
                }
            }
            Sampler::Columns {
                cols,
                pops,
                succs,
                c1,
                samplers,
            } => {
                let mut rem = *c1;
                let last = cols.len() - 1;
                for i in 0..last {
                    let succ = succs[i];
                    let lo = rem.saturating_sub(pops[i] - succ);
                    let hi = succ.min(rem);
                    let v = if lo >= hi {
                        lo
                    } else {
                        samplers[i].draw_with(rem, uniform32(rng), lt)
                    };
                    x[cols[i]] += v;
                    rem -= v;
                }
                x[cols[last]] += rem;
            }
        }
    }
}

/// A uniform in `[0, 1)` from the next 32-bit word of the stream: `w * 2^-32`.
#[inline]
pub fn uniform32(rng: &mut ChaCha8Rng) -> f64 {
    f64::from(rng.next_u32()) * (1.0 / 4_294_967_296.0)
}

/// The Monte Carlo within-strata p-value with `resamples` null tables:
/// `(1 + #{null tables meeting the tie rule}) / (resamples + 1)`.
///
/// The stream is `ChaCha8Rng::from_seed(seed)` (rand_chacha 0.3), read as 32-bit words.
/// Each null table is the sum, over the strata in canonical order, of one draw of each
/// stratum's C=1 row: a forced stratum takes no uniform; a stratum with at most
/// [`ROW_TABLE_MAX`] rows takes one uniform `u` and its first row, in lexicographic order,
/// whose cumulative weight exceeds `u` (the last row if none does); a larger stratum draws
/// its columns with `b_j > 0` in order by the chop-down inversion of `meter/1`, one uniform
/// for each column but the last whose support has two values or more.
pub fn p_monte_carlo_within(
    groups: &[Group],
    pooled: &[Vec<u64>; 2],
    mg: &Margins,
    lt: &LogTables,
    seed: [u8; 32],
    resamples: u64,
) -> f64 {
    let mut rng = ChaCha8Rng::from_seed(seed);
    let mi = mi_bits_with(pooled, mg, lt);
    let s_min = min_cell_term(mg.margin_term(lt), mg.n, tie_threshold(mi));
    let parts = cell_parts(mg, lt);
    let mut samplers: Vec<(u64, Sampler)> = groups
        .iter()
        .map(|g| (g.count, Sampler::new(&g.margins)))
        .collect();
    let k = mg.b.len();
    let mut x = vec![0u64; k];
    let mut hits = 0u64;
    for _ in 0..resamples {
        x.iter_mut().for_each(|v| *v = 0);
        for (count, sampler) in &mut samplers {
            for _ in 0..*count {
                sampler.draw(&mut rng, &mut x, lt);
            }
        }
        let mut s = 0.0;
        for (part, &v) in parts.iter().zip(&x) {
            s += part[v as usize];
        }
        if s >= s_min {
            hits += 1;
        }
    }
    (1 + hits) as f64 / (resamples + 1) as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::meter::permutation::p_exact;

    fn strata_of(tables: &[[Vec<u64>; 2]]) -> (Vec<Group>, [Vec<u64>; 2]) {
        let k = tables[0][0].len();
        let mut pooled = [vec![0u64; k], vec![0u64; k]];
        for t in tables {
            for r in 0..2 {
                for j in 0..k {
                    pooled[r][j] += t[r][j];
                }
            }
        }
        (
            groups(tables.iter().map(StratumMargins::of).collect()),
            pooled,
        )
    }

    #[test]
    fn one_stratum_is_the_meter_1_exact_test_bit_for_bit() {
        for t in [
            [vec![3, 1, 0], vec![0, 2, 3]],
            [vec![12, 8, 5, 5], vec![10, 9, 6, 5]],
            [vec![99, 1], vec![86, 14]],
            [vec![0, 7, 1], vec![4, 0, 2]],
        ] {
            let (g, pooled) = strata_of(std::slice::from_ref(&t));
            let mg = Margins::of(&pooled);
            let lt = LogTables::new(mg.n);
            let dp = p_exact_within(&g, &pooled, &mg, &lt).expect("feasible");
            let v1 = p_exact(&t).expect("feasible");
            assert_eq!(dp.to_bits(), v1.to_bits(), "{t:?}");
            assert_eq!(
                p_within(&g, &pooled, &lt, [0; 32]).0.to_bits(),
                v1.to_bits()
            );
        }
    }

    /// Pairs with discordant outcomes: the within-pair test is the exact McNemar test.
    #[test]
    fn pairs_give_the_exact_mcnemar_p() {
        // 40 pairs: 20 concordant clean, 10 concordant flagged, 10 discordant (9 with C=1
        // flagged, 1 the reverse).
        let mut tables = Vec::new();
        for _ in 0..20 {
            tables.push([vec![1, 0], vec![1, 0]]);
        }
        for _ in 0..10 {
            tables.push([vec![0, 1], vec![0, 1]]);
        }
        for _ in 0..9 {
            tables.push([vec![1, 0], vec![0, 1]]);
        }
        tables.push([vec![0, 1], vec![1, 0]]);
        let (g, pooled) = strata_of(&tables);
        let mg = Margins::of(&pooled);
        let lt = LogTables::new(mg.n);
        let (p, method) = p_within(&g, &pooled, &lt, [0; 32]);
        assert_eq!(method, PMethod::Exact);
        // Two-sided exact McNemar: P(|B - 5| >= 4), B ~ Binomial(10, 1/2) = 22/1024.
        assert!((p - 22.0 / 1024.0).abs() < 1e-15, "{p}");
        // The pooled test that ignores the pairing is far weaker.
        assert!(p_exact(&pooled).expect("feasible") > 4.0 * p);
    }

    #[test]
    fn exact_and_monte_carlo_agree() {
        let mut tables = Vec::new();
        for i in 0..12u64 {
            tables.push([vec![3 + i % 3, 1, i % 2], vec![2, 1 + i % 4, 1]]);
        }
        let (g, pooled) = strata_of(&tables);
        let mg = Margins::of(&pooled);
        let lt = LogTables::new(mg.n);
        let exact = p_exact_within(&g, &pooled, &mg, &lt);
        let mc = p_monte_carlo_within(&g, &pooled, &mg, &lt, [9; 32], 20_000);
        match exact {
            Some(e) => assert!((e - mc).abs() < 0.02, "{e} vs {mc}"),
            None => panic!("expected an exact test"),
        }
    }

    #[test]
    fn groups_sort_and_collapse() {
        let g = groups(vec![
            StratumMargins {
                n: 2,
                c1: 1,
                b: vec![1, 1],
            },
            StratumMargins {
                n: 2,
                c1: 1,
                b: vec![0, 2],
            },
            StratumMargins {
                n: 2,
                c1: 1,
                b: vec![1, 1],
            },
        ]);
        assert_eq!(g.len(), 2);
        assert_eq!(g[0].margins.b, vec![0, 2]);
        assert_eq!(g[1].count, 2);
        let json = serde_json::to_string(&g).unwrap_or_default();
        assert_eq!(json, "[[1,1,[[1,2]]],[2,1,[[0,1],[1,1]]]]");
    }

    #[test]
    fn work_bound_rules() {
        let pair = StratumMargins {
            n: 2,
            c1: 1,
            b: vec![1, 1],
        };
        let forced = StratumMargins {
            n: 2,
            c1: 1,
            b: vec![2, 0],
        };
        let g = groups(vec![pair.clone(), pair.clone(), pair, forced]);
        // Three pairs: the first one's 2 rows, then 2 more pairs of 2 rows times 3 tables.
        assert_eq!(work_bound(&g, 3), 2 + 3 * 4);
        assert_eq!(work_bound(&groups(vec![]), 5), 0);
    }

    #[test]
    fn monte_carlo_draws_are_valid_rows() {
        // Many strata of one size: every null row keeps each stratum's margins.
        let m = StratumMargins {
            n: 40,
            c1: 17,
            b: vec![10, 0, 20, 10],
        };
        let mut s = Sampler::new(&m);
        let lt = LogTables::new(40);
        let mut rng = ChaCha8Rng::from_seed([1; 32]);
        for _ in 0..200 {
            let mut x = vec![0u64; 4];
            s.draw(&mut rng, &mut x, &lt);
            assert_eq!(x.iter().sum::<u64>(), 17);
            assert!(x.iter().zip(&m.b).all(|(v, b)| v <= b));
            assert_eq!(x[1], 0);
        }
    }
}
