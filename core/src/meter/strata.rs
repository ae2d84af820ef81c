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
//!   stratum, from a ChaCha20 stream of 32-bit uniforms (one uniform for a stratum with at
//!   most [`ROW_TABLE_MAX`] rows, else one per column that is not forced).
//!
//! Every number is a deterministic function of the stratum margins, the pooled table and
//! the seed, computed with `libm` and a fixed order of operations.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hash, Hasher};

use serde::ser::{SerializeSeq, Serializer};
use serde::Serialize;

use super::draws::{rows_of, JointDraws, RowDraws, Uniforms};
use super::estimators::{mi_bits_with, min_cell_term, LogTables, Margins};
use super::permutation::{
    cell_parts, count_capped, p_exact_with, tie_threshold, EXACT_MAX_TABLES, MC_SAMPLES,
};
use super::PMethod;

/// The exact test is used only when its work bound `W` is at most this (and the pooled
/// table has at most [`EXACT_MAX_TABLES`] tables with its margins); see [`work_bound`].
pub const EXACT_MAX_WORK: u64 = 200_000;

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
            self.0 = (self.0.rotate_left(5) ^ u64::from(b)).wrapping_mul(0x517c_c1b7_2722_0a95);
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
        let rows: Vec<(K, f64)> = rows_of(&g.margins.b, g.margins.c1)
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

/// What the within-strata tests of one stream answer: a p-value and its method for each
/// quantity that asked for one.
pub type Answers<const N: usize> = [Option<(f64, PMethod)>; N];

/// The tests of the three quantities over all turns, `i_c_d`, `i_c_m` and `i_c_dm`, within
/// `strata` (each a 2 x K table over the joint (D, M) columns; joint column `j` is D column
/// `dm_cols[j].0` and M column `dm_cols[j].1`). `need[q]` says which quantities want a
/// p-value (D, M, joint). Each is exact when feasible; the others read the same Monte Carlo
/// null tables: [`MC_SAMPLES`] draws of every stratum's joint C=1 row, in the canonical order
/// of the joint margins, whose sums over M and over D are the D and M null rows.
pub fn p_all_turns(
    strata: &[[Vec<u64>; 2]],
    dm_cols: &[(usize, usize)],
    widths: (usize, usize),
    need: [bool; 3],
    lt: &LogTables,
    seed: [u8; 32],
) -> Answers<3> {
    let mut answers: Answers<3> = [None; 3];
    let mut scorers: [Option<Scorer>; 3] = [None, None, None];
    for q in 0..3 {
        if !need[q] {
            continue;
        }
        let tables: Vec<[Vec<u64>; 2]> = strata
            .iter()
            .map(|t| project(t, q, dm_cols, widths))
            .collect();
        let (g, pooled) = pooled_groups(&tables);
        match exact(&g, &pooled, lt) {
            Some(p) => answers[q] = Some((p, PMethod::Exact)),
            None => scorers[q] = Some(Scorer::new(&pooled, lt)),
        }
    }
    if scorers.iter().any(Option::is_some) {
        let hits = hits_all_turns(strata, dm_cols, widths, &scorers, lt, seed, MC_SAMPLES);
        for q in 0..3 {
            if scorers[q].is_some() {
                answers[q] = Some((mc_p(hits[q], MC_SAMPLES), PMethod::MonteCarlo));
            }
        }
    }
    answers
}

/// A joint (D, M) table projected onto quantity `q`'s columns: 0 the D columns, 1 the M
/// columns, 2 the joint columns themselves.
pub(crate) fn project(
    t: &[Vec<u64>; 2],
    q: usize,
    dm_cols: &[(usize, usize)],
    (k_d, k_m): (usize, usize),
) -> [Vec<u64>; 2] {
    let k = [k_d, k_m, dm_cols.len()][q];
    let mut out = [vec![0u64; k], vec![0u64; k]];
    for (j, &(d, m)) in dm_cols.iter().enumerate() {
        let col = [d, m, j][q];
        for c in 0..2 {
            out[c][col] += t[c][j];
        }
    }
    out
}

/// How many of `samples` joint null tables meet each scorer's tie rule (D, M, joint).
fn hits_all_turns(
    strata: &[[Vec<u64>; 2]],
    dm_cols: &[(usize, usize)],
    (k_d, k_m): (usize, usize),
    scorers: &[Option<Scorer>; 3],
    lt: &LogTables,
    seed: [u8; 32],
    samples: u64,
) -> [u64; 3] {
    let mut order: Vec<StratumMargins> = strata.iter().map(StratumMargins::of).collect();
    order.sort_unstable();
    // Strata with equal margins share their draws' memo tables.
    let mut draws: Vec<JointDraws> = Vec::new();
    let mut plan: Vec<usize> = Vec::with_capacity(order.len());
    for (i, m) in order.iter().enumerate() {
        if i > 0 && order[i - 1] == *m {
            plan.push(draws.len() - 1);
        } else {
            draws.push(JointDraws::new(m.c1, &m.b, dm_cols, k_d, k_m));
            plan.push(draws.len() - 1);
        }
    }
    let mut u = Uniforms::new(seed);
    let mut x_dm = vec![0u64; dm_cols.len()];
    let (mut x_d, mut x_m) = (vec![0u64; k_d], vec![0u64; k_m]);
    let mut hits = [0u64; 3];
    for _ in 0..samples {
        x_dm.iter_mut().for_each(|v| *v = 0);
        for &at in &plan {
            draws[at].draw(&mut u, lt, &mut x_dm);
        }
        x_d.iter_mut().for_each(|v| *v = 0);
        x_m.iter_mut().for_each(|v| *v = 0);
        for (j, &(d, m)) in dm_cols.iter().enumerate() {
            x_d[d] += x_dm[j];
            x_m[m] += x_dm[j];
        }
        for (q, x) in [&x_d, &x_m, &x_dm].into_iter().enumerate() {
            if let Some(s) = &scorers[q] {
                hits[q] += u64::from(s.meets(x));
            }
        }
    }
    hits
}

#[cfg(test)]
fn all_turns_mc(
    strata: &[[Vec<u64>; 2]],
    dm_cols: &[(usize, usize)],
    widths: (usize, usize),
    lt: &LogTables,
    seed: [u8; 32],
    samples: u64,
) -> [f64; 3] {
    let scorers = [0, 1, 2].map(|q| {
        let tables: Vec<[Vec<u64>; 2]> = strata
            .iter()
            .map(|t| project(t, q, dm_cols, widths))
            .collect();
        Some(Scorer::new(&pooled_groups(&tables).1, lt))
    });
    hits_all_turns(strata, dm_cols, widths, &scorers, lt, seed, samples).map(|h| mc_p(h, samples))
}

/// The test of one quantity within `strata` (each a 2 x K table over its columns), drawing
/// every stratum's C=1 row directly ([`RowDraws`]) when the exact test is not feasible: the
/// test of `i_c_m_given_d_clean`.
pub fn p_flat(strata: &[[Vec<u64>; 2]], lt: &LogTables, seed: [u8; 32]) -> (f64, PMethod) {
    let (g, pooled) = pooled_groups(strata);
    match exact(&g, &pooled, lt) {
        Some(p) => (p, PMethod::Exact),
        None => (
            mc_p(hits_flat(&g, &pooled, lt, seed, MC_SAMPLES), MC_SAMPLES),
            PMethod::MonteCarlo,
        ),
    }
}

/// How many of `samples` Monte Carlo null tables of [`p_flat`] meet the tie rule.
fn hits_flat(
    g: &[Group],
    pooled: &[Vec<u64>; 2],
    lt: &LogTables,
    seed: [u8; 32],
    samples: u64,
) -> u64 {
    let scorer = Scorer::new(pooled, lt);
    let mut draws: Vec<(u64, u64, RowDraws)> = g
        .iter()
        .map(|g| (g.count, g.margins.c1, RowDraws::new(&g.margins.b)))
        .collect();
    let mut u = Uniforms::new(seed);
    let mut x = vec![0u64; pooled[0].len()];
    let mut hits = 0u64;
    for _ in 0..samples {
        x.iter_mut().for_each(|v| *v = 0);
        for (count, c1, d) in &mut draws {
            for _ in 0..*count {
                d.draw(*c1, &mut u, lt, &mut x);
            }
        }
        hits += u64::from(scorer.meets(&x));
    }
    hits
}

/// `(1 + hits) / (samples + 1)`.
fn mc_p(hits: u64, samples: u64) -> f64 {
    (1 + hits) as f64 / (samples + 1) as f64
}

/// The strata's canonical groups and their pooled table.
fn pooled_groups(strata: &[[Vec<u64>; 2]]) -> (Vec<Group>, [Vec<u64>; 2]) {
    let k = strata.first().map_or(0, |t| t[0].len());
    let mut pooled = [vec![0u64; k], vec![0u64; k]];
    for t in strata {
        for c in 0..2 {
            for (p, v) in pooled[c].iter_mut().zip(&t[c]) {
                *p += v;
            }
        }
    }
    (
        groups(strata.iter().map(StratumMargins::of).collect()),
        pooled,
    )
}

/// The exact test of a pooled table within its strata, if feasible: with one stratum the
/// exact test of `meter/1` ([`p_exact_with`]), else [`p_exact_within`].
fn exact(groups: &[Group], pooled: &[Vec<u64>; 2], lt: &LogTables) -> Option<f64> {
    let mg = Margins::of(pooled);
    if let [one] = groups {
        if one.count == 1 {
            return p_exact_with(pooled, &mg, lt, EXACT_MAX_TABLES);
        }
    }
    p_exact_within(groups, pooled, &mg, lt)
}

/// Whether a null C=1 row meets the tie rule of an observed table: its cell term
/// `S = (...(0 + part_1[x_1]) + ...) + part_K[x_K]` against the smallest that does.
struct Scorer {
    parts: Vec<Vec<f64>>,
    s_min: f64,
}

impl Scorer {
    fn new(observed: &[Vec<u64>; 2], lt: &LogTables) -> Scorer {
        let mg = Margins::of(observed);
        let mi = mi_bits_with(observed, &mg, lt);
        Scorer {
            parts: cell_parts(&mg, lt),
            s_min: min_cell_term(mg.margin_term(lt), mg.n, tie_threshold(mi)),
        }
    }

    #[inline]
    fn meets(&self, x: &[u64]) -> bool {
        let mut s = 0.0;
        for (part, &v) in self.parts.iter().zip(x) {
            s += part[v as usize];
        }
        s >= self.s_min
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::meter::permutation::p_exact;

    fn strata_of(tables: &[[Vec<u64>; 2]]) -> (Vec<Group>, [Vec<u64>; 2]) {
        pooled_groups(tables)
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
            let (p, method) = p_flat(std::slice::from_ref(&t), &lt, [0; 32]);
            assert_eq!((p.to_bits(), method), (v1.to_bits(), PMethod::Exact));
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
        let (_, pooled) = strata_of(&tables);
        let lt = LogTables::new(80);
        let (p, method) = p_flat(&tables, &lt, [0; 32]);
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
        let exact = p_exact_within(&g, &pooled, &mg, &lt).expect("an exact test");
        let b = 20_000;
        let mc = mc_p(hits_flat(&g, &pooled, &lt, [9; 32], b), b);
        assert!((exact - mc).abs() < 0.02, "{exact} vs {mc}");
    }

    /// The joint stream's D and M null rows are the sums of its joint rows: each of the
    /// three p-values agrees with its own exact test.
    #[test]
    fn the_joint_stream_tests_d_m_and_dm() {
        // Joint columns (d, m): (0,0) (0,1) (1,0) (1,1) (2,1).
        let dm_cols = [(0, 0), (0, 1), (1, 0), (1, 1), (2, 1)];
        let mut strata = Vec::new();
        for i in 0..3u64 {
            strata.push([vec![2 + i % 2, 1, 1, i % 2, 1], vec![1, 1 + i, 1, 1, i % 2]]);
        }
        let lt = LogTables::new(200);
        let exact = p_all_turns(&strata, &dm_cols, (3, 2), [true; 3], &lt, [4; 32]);
        assert!(exact.iter().all(|a| matches!(a, Some((_, PMethod::Exact)))));
        let mc = all_turns_mc(&strata, &dm_cols, (3, 2), &lt, [4; 32], 20_000);
        for q in 0..3 {
            let (e, _) = exact[q].expect("answer");
            assert!((e - mc[q]).abs() < 0.02, "quantity {q}: {e} vs {}", mc[q]);
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
}
