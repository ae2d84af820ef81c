//! The Monte Carlo null draws of `meter/2` (library/METER.md section 10.4): the uniform stream,
//! one draw of a stratum's C=1 row (by its rows when they are few, else column by column),
//! and the two null tables a measurement draws: the joint (D, M) table of all turns, whose
//! margins also give the D and M tables, and the M table of the D-clean turns.
//!
//! Everything here is a deterministic function of the margins and the seed; the memo tables
//! only avoid repeating work and never change a draw.

use rand_chacha::ChaCha20Rng;
use rand_core::{RngCore, SeedableRng};

use super::estimators::LogTables;
use super::permutation::{count_capped, hypergeometric_pmf, ColumnSampler};
use super::Margins;

/// A stratum with at most this many C=1 rows is drawn with one uniform, by inversion over
/// its rows in lexicographic order; a larger one column by column.
pub const ROW_TABLE_MAX: u64 = 256;

/// The uniforms of `meter/2`: the stream of `meter/1` (`ChaCha20Rng::from_seed(seed)`,
/// rand_chacha 0.3) read as 32-bit little-endian words `w`, each giving `u = w * 2^-32`.
pub struct Uniforms {
    rng: ChaCha20Rng,
    buf: [u8; 1024],
    at: usize,
}

impl Uniforms {
    /// The stream of `seed`.
    pub fn new(seed: [u8; 32]) -> Uniforms {
        Uniforms {
            rng: ChaCha20Rng::from_seed(seed),
            buf: [0; 1024],
            at: 1024,
        }
    }

    /// The next 32-bit word of the stream.
    #[inline]
    pub fn next_word(&mut self) -> u32 {
        if self.at == self.buf.len() {
            // The keystream in order, as `next_u32` would give it word by word.
            self.rng.fill_bytes(&mut self.buf);
            self.at = 0;
        }
        let w = u32::from_le_bytes([
            self.buf[self.at],
            self.buf[self.at + 1],
            self.buf[self.at + 2],
            self.buf[self.at + 3],
        ]);
        self.at += 4;
        w
    }

    /// The next uniform in `[0, 1)`: `word * 2^-32`.
    #[inline]
    pub fn next_uniform(&mut self) -> f64 {
        f64::from(self.next_word()) * (1.0 / 4_294_967_296.0)
    }
}

/// A distribution over `lo..=hi`: `(lo, [P(lo), ..., P(hi)])`.
type Pmf = (u64, Box<[f64]>);

/// The conditional distributions of sequential draws over margins `b` (all `> 0`): column
/// `i`'s C=1 cell given `rem` C=1 turns left for columns `i..` is
/// Hypergeometric(`b_i + ... + b_K`, `b_i`, `rem`) ([`hypergeometric_pmf`]), each computed
/// once.
pub(crate) struct Conditionals {
    b: Box<[u64]>,
    /// `pops[i] = b_i + ... + b_K`.
    pops: Box<[u64]>,
    /// `memo[i][rem]`: `(lo, [P(lo), ..., P(hi)])`.
    memo: Vec<Vec<Option<Pmf>>>,
}

impl Conditionals {
    pub(crate) fn new(b: &[u64]) -> Conditionals {
        let mut pops = vec![0u64; b.len()];
        let mut pop = 0;
        for i in (0..b.len()).rev() {
            pop += b[i];
            pops[i] = pop;
        }
        Conditionals {
            b: b.into(),
            memo: pops.iter().map(|&p| vec![None; p as usize + 1]).collect(),
            pops: pops.into_boxed_slice(),
        }
    }

    #[inline]
    fn of(&mut self, i: usize, rem: u64) -> (u64, &[f64]) {
        let (pop, succ) = (self.pops[i], self.b[i]);
        let (lo, pmf) = self.memo[i][rem as usize].get_or_insert_with(|| {
            let (lo, p) = hypergeometric_pmf(pop, succ, rem);
            (lo, p.into_boxed_slice())
        });
        (*lo, pmf)
    }

    /// Every C=1 row with `a` C=1 turns, in lexicographic order, each passed to `emit` with its
    /// weight: the product, in column order from 1.0, of the conditional probabilities of all
    /// columns but the last (which is forced).
    pub(crate) fn rows(&mut self, a: u64, mut emit: impl FnMut(&[u64], f64)) {
        let k = self.b.len();
        if k == 0 {
            emit(&[], 1.0);
            return;
        }
        let mut row = vec![0u64; k];
        let mut rem = vec![0u64; k];
        let mut w = vec![0.0f64; k];
        let mut top = vec![0u64; k];
        rem[0] = a;
        w[0] = 1.0;
        let mut i = 0usize;
        let range = |c: &mut Conditionals, i: usize, rem: u64| -> (u64, u64) {
            let (lo, p) = c.of(i, rem);
            (lo, lo + p.len() as u64 - 1)
        };
        if k > 1 {
            (row[0], top[0]) = range(self, 0, a);
        }
        loop {
            if i + 1 == k {
                row[i] = rem[i];
                emit(&row, w[i]);
                // Backtrack to the deepest column that can still advance.
                loop {
                    if i == 0 {
                        return;
                    }
                    i -= 1;
                    if row[i] < top[i] {
                        row[i] += 1;
                        break;
                    }
                }
            }
            let (lo, p) = self.of(i, rem[i]);
            w[i + 1] = w[i] * p[(row[i] - lo) as usize];
            rem[i + 1] = rem[i] - row[i];
            i += 1;
            if i + 1 < k {
                (row[i], top[i]) = range(self, i, rem[i]);
            }
        }
    }
}

/// Every C=1 row of margins `b` (column sums, zeros allowed) with `a` C=1 turns, in
/// lexicographic order, with its weight under the permutation null: the product, in column
/// order from 1.0, of the sequential conditional probabilities `P(x_j | x_1..x_{j-1})`, each
/// from Hypergeometric(`b_j + ... + b_K`, `b_j`, `rem_j`) ([`hypergeometric_pmf`]); columns
/// with `b_j = 0` and the last column with `b_j > 0` are forced and add no factor.
pub(crate) fn rows_of(b: &[u64], a: u64) -> Vec<(Vec<u64>, f64)> {
    let cols: Vec<usize> = (0..b.len()).filter(|&j| b[j] > 0).collect();
    let sub: Vec<u64> = cols.iter().map(|&j| b[j]).collect();
    let mut out = Vec::new();
    Conditionals::new(&sub).rows(a, |r, w| {
        let mut row = vec![0u64; b.len()];
        for (&j, &v) in cols.iter().zip(r) {
            row[j] = v;
        }
        out.push((row, w));
    });
    out
}

/// Rows of a draw: their values over the drawn columns, their cumulative weights, and a
/// guide (Chen and Asau 1974) that starts the search for a uniform near its row.
struct RowTable {
    /// `cols` values a row, row after row.
    rows: Box<[u32]>,
    cum: Box<[f64]>,
    /// `guide[g]` = the first row whose cumulative weight exceeds `g / 2^bits`.
    guide: Box<[u16]>,
    shift: u32,
}

impl RowTable {
    fn new(c: &mut Conditionals, a: u64, count: usize) -> RowTable {
        let mut rows = Vec::with_capacity(count * c.b.len());
        let mut cum = Vec::with_capacity(count);
        let mut f = 0.0;
        c.rows(a, |row, w| {
            rows.extend(row.iter().map(|&v| v as u32));
            f += w;
            cum.push(f);
        });
        // About two buckets a row.
        let bits = (usize::BITS - (2 * cum.len()).leading_zeros()).min(12);
        let buckets = 1usize << bits;
        let mut guide = Vec::with_capacity(buckets);
        let mut i = 0usize;
        for g in 0..buckets {
            let edge = g as f64 / buckets as f64;
            while i < cum.len() && cum[i] <= edge {
                i += 1;
            }
            guide.push(i as u16);
        }
        RowTable {
            rows: rows.into_boxed_slice(),
            cum: cum.into_boxed_slice(),
            guide: guide.into_boxed_slice(),
            shift: 32 - bits,
        }
    }

    /// The row of the uniform `word * 2^-32`: the first whose cumulative weight exceeds it, or
    /// the last row if none does.
    #[inline]
    fn row(&self, word: u32, width: usize) -> &[u32] {
        let u = f64::from(word) * (1.0 / 4_294_967_296.0);
        // Every row before the guide's has a cumulative weight at most g / 2^bits <= u.
        let mut i = usize::from(self.guide[(word >> self.shift) as usize]);
        let last = self.cum.len() - 1;
        while i < last && self.cum[i] <= u {
            i += 1;
        }
        &self.rows[i * width..(i + 1) * width]
    }
}

/// How one set of margins is drawn for one number of C=1 turns.
#[allow(clippy::large_enum_variant)]
enum Draw {
    /// Not built yet.
    Unbuilt,
    /// One row only (no uniform).
    Fixed(Box<[u32]>),
    /// At most [`ROW_TABLE_MAX`] rows: one uniform.
    Rows(RowTable),
    /// Column by column: one uniform for each column but the last whose support has two
    /// values or more.
    Columns,
}

/// Draws of the C=1 row of fixed margins (the columns with `b_j > 0`) for any number of C=1
/// turns, memoized by that number.
pub(crate) struct RowDraws {
    /// Where the count of each column with `b_j > 0` (in order) is added in the output row:
    /// its own index, unless mapped.
    out: Box<[usize]>,
    /// `b` over `cols`.
    b: Box<[u64]>,
    /// `pops[i] = b over cols[i..]`.
    pops: Box<[u64]>,
    /// By the number of C=1 turns, `0..=n`.
    by_draws: Vec<Draw>,
    /// The column samplers of [`Draw::Columns`], made on first use.
    samplers: Vec<ColumnSampler>,
    conditionals: Conditionals,
}

impl RowDraws {
    /// Draws of the margins `b` (zeros allowed; only the columns with `b_j > 0` are drawn).
    pub(crate) fn new(b: &[u64]) -> RowDraws {
        Self::mapped(b, &(0..b.len()).collect::<Vec<_>>())
    }

    /// Draws of the margins `b` whose column `j` is added to the output row at `map[j]`.
    pub(crate) fn mapped(b: &[u64], map: &[usize]) -> RowDraws {
        let cols: Vec<usize> = (0..b.len()).filter(|&j| b[j] > 0).collect();
        let sub: Vec<u64> = cols.iter().map(|&j| b[j]).collect();
        let mut pops = vec![0u64; cols.len()];
        let mut pop = 0;
        for i in (0..cols.len()).rev() {
            pop += sub[i];
            pops[i] = pop;
        }
        let n = pops.first().copied().unwrap_or(0);
        RowDraws {
            conditionals: Conditionals::new(&sub),
            out: cols.iter().map(|&j| map[j]).collect(),
            b: sub.into_boxed_slice(),
            pops: pops.into_boxed_slice(),
            by_draws: (0..=n).map(|_| Draw::Unbuilt).collect(),
            samplers: Vec::new(),
        }
    }

    /// Whether there is anything to draw (a column with turns).
    pub(crate) fn is_empty(&self) -> bool {
        self.out.is_empty()
    }

    fn build(&mut self, a: u64) -> Draw {
        let n = self.pops.first().copied().unwrap_or(0);
        let mg = Margins {
            n,
            a: [n - a, a],
            b: self.b.to_vec(),
        };
        let t = count_capped(&mg, ROW_TABLE_MAX);
        if t > ROW_TABLE_MAX {
            if self.samplers.is_empty() {
                self.samplers = self
                    .b
                    .iter()
                    .zip(self.pops.iter())
                    .map(|(&b, &p)| ColumnSampler::new(p, b, 0, p))
                    .collect();
            }
            return Draw::Columns;
        }
        if t == 1 {
            let mut fixed = Vec::new();
            self.conditionals
                .rows(a, |row, _| fixed.extend(row.iter().map(|&v| v as u32)));
            return Draw::Fixed(fixed.into_boxed_slice());
        }
        Draw::Rows(RowTable::new(&mut self.conditionals, a, t as usize))
    }

    /// Add one draw of the row with `a` C=1 turns to `x` (at the output columns).
    #[inline]
    pub(crate) fn draw(&mut self, a: u64, u: &mut Uniforms, lt: &LogTables, x: &mut [u64]) {
        let slot = a as usize;
        if let Some(Draw::Rows(table)) = self.by_draws.get(slot) {
            let row = table.row(u.next_word(), self.out.len());
            for (&j, &v) in self.out.iter().zip(row) {
                x[j] += u64::from(v);
            }
            return;
        }
        if matches!(self.by_draws[slot], Draw::Unbuilt) {
            self.by_draws[slot] = self.build(a);
        }
        let out = &self.out;
        match &self.by_draws[slot] {
            Draw::Fixed(row) => {
                for (&j, &v) in out.iter().zip(row.iter()) {
                    x[j] += u64::from(v);
                }
            }
            Draw::Rows(table) => {
                let row = table.row(u.next_word(), out.len());
                for (&j, &v) in out.iter().zip(row) {
                    x[j] += u64::from(v);
                }
            }
            Draw::Columns => {
                let last = out.len() - 1;
                let mut rem = a;
                for i in 0..last {
                    let (pop, succ) = (self.pops[i], self.b[i]);
                    let lo = rem.saturating_sub(pop - succ);
                    let hi = succ.min(rem);
                    let v = if lo >= hi {
                        lo
                    } else {
                        self.samplers[i].draw_with(rem, u.next_uniform(), lt)
                    };
                    x[out[i]] += v;
                    rem -= v;
                }
                x[out[last]] += rem;
            }
            Draw::Unbuilt => {}
        }
    }
}

/// The null draws of one stratum of the joint (D, M) table: its C=1 row over the D columns,
/// then, for each D column in order, its C=1 turns' split over the M columns.
pub(crate) struct JointDraws {
    c1: u64,
    d_level: RowDraws,
    /// For each D column: the draws of its split over the M columns, added straight into
    /// the joint columns.
    m_level: Vec<RowDraws>,
    /// The D-level row of the current draw.
    d_row: Vec<u64>,
}

impl JointDraws {
    /// The draws of a stratum with `c1` C=1 turns and joint column sums `b_dm`, where joint
    /// column `j` is (D column `dm_cols[j].0`, M column `dm_cols[j].1`).
    pub(crate) fn new(
        c1: u64,
        b_dm: &[u64],
        dm_cols: &[(usize, usize)],
        k_d: usize,
        k_m: usize,
    ) -> JointDraws {
        let mut b_d = vec![0u64; k_d];
        let mut per_d: Vec<(Vec<u64>, Vec<usize>)> = (0..k_d)
            .map(|_| (vec![0; k_m], vec![usize::MAX; k_m]))
            .collect();
        for (j, &b) in b_dm.iter().enumerate() {
            let (d, m) = dm_cols[j];
            b_d[d] += b;
            per_d[d].0[m] += b;
            per_d[d].1[m] = j;
        }
        JointDraws {
            c1,
            d_level: RowDraws::new(&b_d),
            m_level: per_d
                .into_iter()
                .map(|(b_m, joint)| RowDraws::mapped(&b_m, &joint))
                .collect(),
            d_row: vec![0; k_d],
        }
    }

    /// Add one null draw of the stratum's C=1 row to the pooled joint row `x_dm`.
    pub(crate) fn draw(&mut self, u: &mut Uniforms, lt: &LogTables, x_dm: &mut [u64]) {
        self.d_row.iter_mut().for_each(|v| *v = 0);
        self.d_level.draw(self.c1, u, lt, &mut self.d_row);
        for (draws, &y) in self.m_level.iter_mut().zip(&self.d_row) {
            if y > 0 && !draws.is_empty() {
                draws.draw(y, u, lt, x_dm);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stream_is_meter_1s_read_as_32_bit_words() {
        let mut a = Uniforms::new([5; 32]);
        let mut b = ChaCha20Rng::from_seed([5; 32]);
        for _ in 0..700 {
            let want = f64::from(b.next_u32()) / 4_294_967_296.0;
            assert_eq!(a.next_uniform().to_bits(), want.to_bits());
        }
    }

    #[test]
    fn row_draws_keep_the_margins_and_match_the_weights() {
        let lt = LogTables::new(60);
        let mut u = Uniforms::new([2; 32]);
        for b in [vec![10u64, 0, 20, 10], vec![3, 4, 5], vec![30, 30]] {
            let n: u64 = b.iter().sum();
            let mut draws = RowDraws::new(&b);
            for a in [0, 1, n / 3, n / 2, n] {
                let mut mean = vec![0.0; b.len()];
                let reps = 4_000;
                for _ in 0..reps {
                    let mut x = vec![0u64; b.len()];
                    draws.draw(a, &mut u, &lt, &mut x);
                    assert_eq!(x.iter().sum::<u64>(), a);
                    assert!(x.iter().zip(&b).all(|(v, b)| v <= b));
                    for (m, &v) in mean.iter_mut().zip(&x) {
                        *m += v as f64 / reps as f64;
                    }
                }
                // E[x_j] = a b_j / n.
                for (j, m) in mean.iter().enumerate() {
                    let want = a as f64 * b[j] as f64 / n as f64;
                    assert!(
                        (m - want).abs() < 0.1 + 0.05 * want,
                        "{b:?} {a}: {m} vs {want}"
                    );
                }
            }
        }
    }

    #[test]
    fn rows_sum_to_one() {
        for (b, a) in [
            (vec![5u64, 5], 5),
            (vec![4, 0, 3, 2], 5),
            (vec![1, 1, 1, 1], 2),
        ] {
            let rows = rows_of(&b, a);
            let total: f64 = rows.iter().map(|(_, w)| w).sum();
            assert!((total - 1.0).abs() < 1e-14);
            assert!(rows.windows(2).all(|w| w[0].0 < w[1].0));
        }
    }

    #[test]
    fn joint_draws_split_each_d_column_over_m() {
        // Joint columns: (d0,m0) (d0,m1) (d1,m1).
        let dm_cols = [(0, 0), (0, 1), (1, 1)];
        let b_dm = [3u64, 4, 5];
        let mut j = JointDraws::new(6, &b_dm, &dm_cols, 2, 2);
        let lt = LogTables::new(12);
        let mut u = Uniforms::new([8; 32]);
        for _ in 0..500 {
            let mut x = [0u64; 3];
            j.draw(&mut u, &lt, &mut x);
            assert_eq!(x.iter().sum::<u64>(), 6);
            assert!(x.iter().zip(&b_dm).all(|(v, b)| v <= b));
        }
    }
}
