//! The matcher of `lexicon/2`: which families match in each canonical sentence of a text, in
//! one pass over its bytes. It gives exactly the answer of the definition (each family's
//! patterns searched as regular expressions in the canonical sentence; a property test
//! checks it against the `regex` crate), only faster:
//!
//! - the patterns are compiled into one Thompson automaton over the canonical sentence's
//!   bytes (letters, digits and the single spaces between tokens);
//! - a token's effect on it depends only on which vocabulary word it is and which pattern
//!   prefixes (`pretend[a-z0-9]*`) it starts with, so a trie gives each token its class;
//! - a lazily built automaton over (state, token class) remembers each step the first
//!   time it is taken, one per thread, so a text costs a table lookup per byte and per
//!   token.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::LazyLock;

use super::families::FAMILIES;

/// A parsed pattern of the canonical dialect: lowercase letters, digits and spaces; `(?:…)`,
/// `|`, `?`, `*`, `+`, `{m,n}`; the token class `[a-z0-9]`; `^` and `$`.
#[derive(Debug, Clone)]
enum Node {
    Char(u8),
    Class,
    Bol,
    Eol,
    Seq(Vec<Node>),
    Alt(Vec<Node>),
    Rep(Box<Node>, u32, Option<u32>),
}

struct Parser<'p> {
    s: &'p [u8],
    i: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    fn alt(&mut self) -> Result<Node, String> {
        let mut branches = vec![self.seq()?];
        while self.peek() == Some(b'|') {
            self.i += 1;
            branches.push(self.seq()?);
        }
        Ok(Node::Alt(branches))
    }

    fn seq(&mut self) -> Result<Node, String> {
        let mut items = Vec::new();
        while !matches!(self.peek(), None | Some(b'|') | Some(b')')) {
            items.push(self.item()?);
        }
        Ok(Node::Seq(items))
    }

    fn item(&mut self) -> Result<Node, String> {
        let atom = self.atom()?;
        let rep = |n: Node, lo, hi| Node::Rep(Box::new(n), lo, hi);
        Ok(match self.peek() {
            Some(b'?') => {
                self.i += 1;
                rep(atom, 0, Some(1))
            }
            Some(b'*') => {
                self.i += 1;
                rep(atom, 0, None)
            }
            Some(b'+') => {
                self.i += 1;
                rep(atom, 1, None)
            }
            Some(b'{') => {
                let close = self.s[self.i..]
                    .iter()
                    .position(|&c| c == b'}')
                    .ok_or("unclosed {")?;
                let body = std::str::from_utf8(&self.s[self.i + 1..self.i + close])
                    .map_err(|e| e.to_string())?;
                let (lo, hi) = body.split_once(',').ok_or("bad {m,n}")?;
                self.i += close + 1;
                let lo: u32 = lo.parse().map_err(|_| "bad {m,n}")?;
                let hi: u32 = hi.parse().map_err(|_| "bad {m,n}")?;
                rep(atom, lo, Some(hi))
            }
            _ => atom,
        })
    }

    fn atom(&mut self) -> Result<Node, String> {
        let rest = &self.s[self.i..];
        if rest.starts_with(b"(?:") {
            self.i += 3;
            let inner = self.alt()?;
            if self.peek() != Some(b')') {
                return Err("unclosed group".into());
            }
            self.i += 1;
            return Ok(inner);
        }
        if rest.starts_with(b"[a-z0-9]") {
            self.i += 8;
            return Ok(Node::Class);
        }
        let c = self.peek().ok_or("unexpected end")?;
        self.i += 1;
        match c {
            b'^' => Ok(Node::Bol),
            b'$' => Ok(Node::Eol),
            b'a'..=b'z' | b'0'..=b'9' | b' ' => Ok(Node::Char(c)),
            _ => Err(format!("{:?} is not in the dialect", c as char)),
        }
    }
}

/// Parse one pattern of the dialect.
fn parse(pattern: &str) -> Result<Node, String> {
    let mut p = Parser {
        s: pattern.as_bytes(),
        i: 0,
    };
    let node = p.alt()?;
    if p.i != p.s.len() {
        return Err(format!("unexpected {:?}", p.s[p.i] as char));
    }
    Ok(node)
}

/// A state of the Thompson automaton.
#[derive(Debug, Clone, Copy)]
enum St {
    /// Read this byte.
    Char(u8, u32),
    /// Read a letter or a digit.
    Class(u32),
    /// Either way, without reading.
    Split(u32, u32),
    /// Only at the start of the sentence.
    Bol(u32),
    /// Only at its end.
    Eol(u32),
    /// A pattern of this family matched.
    Match(u8),
}

/// The automaton of every family's patterns.
pub(super) struct Nfa {
    states: Vec<St>,
    /// The entry of every pattern.
    starts: Vec<u32>,
}

const HOLE: u32 = u32::MAX;

impl Nfa {
    fn push(&mut self, s: St) -> u32 {
        self.states.push(s);
        (self.states.len() - 1) as u32
    }

    /// Compile `node` to continue into `out`; returns its entry.
    fn build(&mut self, node: &Node, out: u32) -> u32 {
        match node {
            Node::Char(c) => self.push(St::Char(*c, out)),
            Node::Class => self.push(St::Class(out)),
            Node::Bol => self.push(St::Bol(out)),
            Node::Eol => self.push(St::Eol(out)),
            Node::Seq(items) => items
                .iter()
                .rev()
                .fold(out, |next, item| self.build(item, next)),
            Node::Alt(branches) => {
                let entries: Vec<u32> = branches.iter().map(|b| self.build(b, out)).collect();
                entries
                    .into_iter()
                    .reduce(|a, b| self.push(St::Split(a, b)))
                    .unwrap_or(out)
            }
            Node::Rep(inner, lo, None) => {
                let split = self.push(St::Split(HOLE, out));
                let body = self.build(inner, split);
                self.states[split as usize] = St::Split(body, out);
                (0..*lo).fold(split, |next, _| self.build(inner, next))
            }
            Node::Rep(inner, lo, Some(hi)) => {
                let mut next = out;
                for _ in *lo..*hi {
                    let body = self.build(inner, next);
                    next = self.push(St::Split(body, next));
                }
                (0..*lo).fold(next, |next, _| self.build(inner, next))
            }
        }
    }

    /// Every family's patterns.
    pub(super) fn of_families() -> Result<Nfa, String> {
        let mut nfa = Nfa {
            states: Vec::new(),
            starts: Vec::new(),
        };
        for (f, family) in FAMILIES.iter().enumerate() {
            let m = nfa.push(St::Match(f as u8));
            for (pattern, _) in family.patterns {
                let node =
                    parse(pattern).map_err(|e| format!("{}: {e}: {pattern}", family.name))?;
                let entry = nfa.build(&node, m);
                nfa.starts.push(entry);
            }
        }
        Ok(nfa)
    }
}

/// Sets of automaton states, with a reusable mark array.
struct Sets {
    mark: Vec<u32>,
    stamp: u32,
    stack: Vec<u32>,
}

impl Sets {
    fn new(n: usize) -> Sets {
        Sets {
            mark: vec![0; n],
            stamp: 0,
            stack: Vec::new(),
        }
    }

    /// The epsilon closure of `from` (assertions satisfied as `bol` and `eol` say), sorted.
    fn closure(&mut self, nfa: &Nfa, from: &[u32], bol: bool, eol: bool) -> Vec<u32> {
        self.stamp += 1;
        if self.stamp == u32::MAX {
            self.mark.iter_mut().for_each(|m| *m = 0);
            self.stamp = 1;
        }
        let mut out = Vec::new();
        self.stack.clear();
        for &s in from {
            if self.mark[s as usize] != self.stamp {
                self.mark[s as usize] = self.stamp;
                self.stack.push(s);
            }
        }
        while let Some(s) = self.stack.pop() {
            out.push(s);
            let next: [u32; 2] = match nfa.states[s as usize] {
                St::Split(a, b) => [a, b],
                St::Bol(a) if bol => [a, HOLE],
                St::Eol(a) if eol => [a, HOLE],
                _ => [HOLE, HOLE],
            };
            for n in next.into_iter().filter(|&n| n != HOLE) {
                if self.mark[n as usize] != self.stamp {
                    self.mark[n as usize] = self.stamp;
                    self.stack.push(n);
                }
            }
        }
        out.sort_unstable();
        out
    }
}

/// The states after reading byte `c` from `set`.
fn step(nfa: &Nfa, set: &[u32], c: u8) -> Vec<u32> {
    let word = c.is_ascii_lowercase() || c.is_ascii_digit();
    set.iter()
        .filter_map(|&s| match nfa.states[s as usize] {
            St::Char(b, n) if b == c => Some(n),
            St::Class(n) if word => Some(n),
            _ => None,
        })
        .collect()
}

/// The families of the match states of a set.
fn matches(nfa: &Nfa, set: &[u32]) -> u16 {
    set.iter()
        .fold(0u16, |bits, &s| match nfa.states[s as usize] {
            St::Match(f) => bits | (1 << f),
            _ => bits,
        })
}

/// Column of a byte in the trie: a lowercase letter (upper case folded), a digit, or none.
fn column(b: u8) -> Option<usize> {
    match b {
        b'a'..=b'z' => Some(usize::from(b - b'a')),
        b'A'..=b'Z' => Some(usize::from(b - b'A')),
        b'0'..=b'9' => Some(26 + usize::from(b - b'0')),
        _ => None,
    }
}

const COLUMNS: usize = 36;

/// The trie of the vocabulary: every literal token of the patterns, and every literal
/// prefix that a pattern continues with `[a-z0-9]*`. Its node at a token's end names the
/// token's class.
pub(super) struct Trie {
    /// `next[node * COLUMNS + column]`, premultiplied: the next node times `COLUMNS`.
    next: Vec<u32>,
    /// The class of a token ending at each node.
    class: Vec<u16>,
    /// The number of classes (class 0: no word of the vocabulary, no prefix).
    pub(super) classes: usize,
}

impl Trie {
    /// The trie of the words and prefixes; a token leaving the trie falls into the sink of
    /// the prefixes it has matched so far.
    fn new(words: &[Vec<u8>], prefixes: &[Vec<u8>]) -> Trie {
        // Nodes: a node per distinct prefix of a word or prefix, plus sinks by prefix set.
        #[derive(Clone)]
        struct N {
            kids: [u32; COLUMNS],
            word: Option<u32>,
            /// Prefix words matched along the path (a sorted list of ids).
            pre: Vec<u32>,
        }
        let blank = |pre: Vec<u32>| N {
            kids: [HOLE; COLUMNS],
            word: None,
            pre,
        };
        let mut nodes = vec![blank(Vec::new())];
        let insert = |s: &[u8], nodes: &mut Vec<N>| -> usize {
            let mut at = 0usize;
            for &b in s {
                let c = column(b).unwrap_or(0);
                if nodes[at].kids[c] == HOLE {
                    let pre = nodes[at].pre.clone();
                    nodes.push(blank(pre));
                    nodes[at].kids[c] = (nodes.len() - 1) as u32;
                }
                at = nodes[at].kids[c] as usize;
            }
            at
        };
        for (i, w) in words.iter().enumerate() {
            let at = insert(w, &mut nodes);
            nodes[at].word = Some(i as u32);
        }
        let mut prefix_nodes = Vec::new();
        for (i, p) in prefixes.iter().enumerate() {
            let at = insert(p, &mut nodes);
            prefix_nodes.push((at, i as u32));
        }
        // Propagate each prefix to its subtree.
        for (at, id) in prefix_nodes {
            let mut stack = vec![at];
            while let Some(n) = stack.pop() {
                if !nodes[n].pre.contains(&id) {
                    nodes[n].pre.push(id);
                    nodes[n].pre.sort_unstable();
                }
                stack.extend(
                    nodes[n]
                        .kids
                        .iter()
                        .filter(|&&k| k != HOLE)
                        .map(|&k| k as usize),
                );
            }
        }
        // Sinks: one per distinct prefix set, looping on every column.
        let mut sink_of: HashMap<Vec<u32>, u32> = HashMap::new();
        let real = nodes.len();
        for n in 0..real {
            for c in 0..COLUMNS {
                if nodes[n].kids[c] == HOLE {
                    let pre = nodes[n].pre.clone();
                    let sink = match sink_of.get(&pre) {
                        Some(&s) => s,
                        None => {
                            let mut s = blank(pre.clone());
                            let id = nodes.len() as u32;
                            s.kids = [id; COLUMNS];
                            nodes.push(s);
                            sink_of.insert(pre, id);
                            id
                        }
                    };
                    nodes[n].kids[c] = sink;
                }
            }
        }
        // Classes: (word, prefix set), interned; class 0 is (none, {}).
        let mut class_of: HashMap<(Option<u32>, Vec<u32>), u16> = HashMap::new();
        class_of.insert((None, Vec::new()), 0);
        let mut class = Vec::with_capacity(nodes.len());
        for n in &nodes {
            let key = (n.word, n.pre.clone());
            let next = class_of.len() as u16;
            class.push(*class_of.entry(key).or_insert(next));
        }
        let mut next = Vec::with_capacity(nodes.len() * COLUMNS);
        for n in &nodes {
            next.extend(n.kids.iter().map(|&k| k * COLUMNS as u32));
        }
        Trie {
            next,
            class,
            classes: class_of.len(),
        }
    }

    /// The class of a token (its bytes: letters and digits).
    #[cfg(test)]
    fn class_of(&self, token: &[u8]) -> u16 {
        let mut at = 0usize;
        for &b in token {
            at = self.next[at + column(b).unwrap_or(0)] as usize;
        }
        self.class[at / COLUMNS]
    }
}

/// Literal token strings (a word or a prefix, lower-case ASCII).
type Literals = Vec<Vec<u8>>;

/// The words and prefixes of the vocabulary: the literal token strings that lead from a
/// state after a space to a space, and the literal strings that continue into a `[a-z0-9]`
/// loop (a prefix).
fn vocabulary(nfa: &Nfa) -> Result<(Literals, Literals), String> {
    let mut sets = Sets::new(nfa.states.len());
    // States right after a space, and every pattern entry.
    let mut heads: Vec<u32> = nfa
        .states
        .iter()
        .filter_map(|s| match *s {
            St::Char(b' ', n) => Some(n),
            _ => None,
        })
        .collect();
    heads.extend(&nfa.starts);
    heads.sort_unstable();
    heads.dedup();
    let mut words: Vec<Vec<u8>> = Vec::new();
    let mut prefixes: Vec<Vec<u8>> = Vec::new();
    for &h in &heads {
        // Depth-first over literal paths from h.
        let mut stack: Vec<(Vec<u32>, Vec<u8>)> =
            vec![(sets.closure(nfa, &[h], true, false), Vec::new())];
        while let Some((set, s)) = stack.pop() {
            if s.len() > 64 {
                return Err("a literal token longer than 64 bytes".into());
            }
            let mut by_char: HashMap<u8, Vec<u32>> = HashMap::new();
            for &st in &set {
                match nfa.states[st as usize] {
                    St::Char(b' ', _) if !s.is_empty() => words.push(s.clone()),
                    St::Char(c, n) if c != b' ' => by_char.entry(c).or_default().push(n),
                    St::Class(_) if !s.is_empty() => prefixes.push(s.clone()),
                    _ => {}
                }
            }
            for (c, next) in by_char {
                let mut t = s.clone();
                t.push(c);
                stack.push((sets.closure(nfa, &next, false, false), t));
            }
        }
    }
    for v in [&mut words, &mut prefixes] {
        v.sort_unstable();
        v.dedup();
    }
    Ok((words, prefixes))
}

/// What is fixed once: the automaton, the trie, and the fresh starts.
pub(super) struct Compiled {
    nfa: Nfa,
    pub(super) trie: Trie,
    /// The pattern entries' closure at the first boundary (`^` holds) and at the others.
    fresh_first: Vec<u32>,
    fresh: Vec<u32>,
    /// A representative token of each class.
    sample: Vec<Vec<u8>>,
}

impl Compiled {
    fn new() -> Result<Compiled, String> {
        let nfa = Nfa::of_families()?;
        let (words, prefixes) = vocabulary(&nfa)?;
        let trie = Trie::new(&words, &prefixes);
        let mut sets = Sets::new(nfa.states.len());
        let fresh_first = sets.closure(&nfa, &nfa.starts, true, false);
        let fresh = sets.closure(&nfa, &nfa.starts, false, false);
        // A token of each class: each word; each prefix (and the class of the prefix
        // followed by a letter that leaves the vocabulary); and a token of class 0.
        let mut sample: Vec<Option<Vec<u8>>> = vec![None; trie.classes];
        let offer = |t: Vec<u8>, sample: &mut Vec<Option<Vec<u8>>>| {
            let mut at = 0usize;
            for &b in &t {
                at = trie.next[at + column(b).unwrap_or(0)] as usize;
            }
            let c = usize::from(trie.class[at / COLUMNS]);
            if sample[c].is_none() {
                sample[c] = Some(t);
            }
        };
        for w in &words {
            offer(w.clone(), &mut sample);
        }
        for p in &prefixes {
            offer(p.clone(), &mut sample);
            for tail in [b'q', b'x', b'z', b'0', b'9'] {
                let mut t = p.clone();
                t.extend_from_slice(&[tail, tail, tail, tail]);
                offer(t, &mut sample);
            }
        }
        offer(b"0qx0qx0qx0".to_vec(), &mut sample);
        let sample = sample
            .into_iter()
            .enumerate()
            .map(|(c, s)| s.ok_or(format!("no token of class {c}")))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Compiled {
            nfa,
            trie,
            fresh_first,
            fresh,
            sample,
        })
    }
}

/// The compiled lexicon (an error here is a bug of the published patterns: a unit test
/// compiles them).
pub(super) static COMPILED: LazyLock<Result<Compiled, String>> = LazyLock::new(Compiled::new);

/// One state of the lazy automaton: the automaton states waiting before a space.
struct State {
    /// After the space: the states that read the next token.
    after_space: Vec<u32>,
    /// Families matched right after the space (before the next token).
    bits: u16,
    /// Families matched when the space is the sentence's last byte.
    end_bits: u16,
}

/// The lazily built automaton over (state, token class): its states, their index, and the
/// transitions taken so far.
pub(super) struct Lazy {
    states: Vec<State>,
    index: HashMap<(Vec<u32>, bool), u32>,
    /// `(state << 16) | class` to the next state; open addressing, `u64::MAX` empty.
    keys: Vec<u64>,
    values: Vec<u32>,
    used: usize,
    sets: Sets,
}

/// A thread's lazy automaton is cleared when it holds more states than this.
const MAX_STATES: usize = 1 << 17;

impl Lazy {
    fn new(c: &Compiled) -> Lazy {
        let mut lazy = Lazy {
            states: Vec::new(),
            index: HashMap::new(),
            keys: vec![u64::MAX; 1 << 12],
            values: vec![0; 1 << 12],
            used: 0,
            sets: Sets::new(c.nfa.states.len()),
        };
        lazy.state(c, Vec::new(), true);
        lazy
    }

    /// The id of the state waiting on `set` (`first`: at the sentence's first boundary).
    fn state(&mut self, c: &Compiled, set: Vec<u32>, first: bool) -> u32 {
        if let Some(&id) = self.index.get(&(set.clone(), first)) {
            return id;
        }
        let mut with_fresh = set.clone();
        with_fresh.extend_from_slice(if first { &c.fresh_first } else { &c.fresh });
        let before = self.sets.closure(&c.nfa, &with_fresh, first, false);
        let spaced = step(&c.nfa, &before, b' ');
        let after_space = self.sets.closure(&c.nfa, &spaced, false, false);
        let at_end = self.sets.closure(&c.nfa, &spaced, false, true);
        let id = self.states.len() as u32;
        self.states.push(State {
            bits: matches(&c.nfa, &after_space),
            end_bits: matches(&c.nfa, &at_end),
            after_space,
        });
        self.index.insert((set, first), id);
        id
    }

    /// The state after token class `class` from state `from`.
    #[inline]
    fn next(&mut self, c: &Compiled, from: u32, class: u16) -> u32 {
        let key = (u64::from(from) << 16) | u64::from(class);
        let mask = self.keys.len() - 1;
        let mut slot = (key.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 40) as usize & mask;
        loop {
            let k = self.keys[slot];
            if k == key {
                return self.values[slot];
            }
            if k == u64::MAX {
                break;
            }
            slot = (slot + 1) & mask;
        }
        let to = self.compute(c, from, class);
        self.insert(key, to);
        to
    }

    #[cold]
    fn compute(&mut self, c: &Compiled, from: u32, class: u16) -> u32 {
        let mut set = self.states[from as usize].after_space.clone();
        for &b in &c.sample[usize::from(class)] {
            let stepped = step(&c.nfa, &set, b);
            set = self.sets.closure(&c.nfa, &stepped, false, false);
        }
        // Keep only the states that read (the closure before the next space adds the rest).
        set.retain(|&s| matches!(c.nfa.states[s as usize], St::Char(..) | St::Class(_)));
        self.state(c, set, false)
    }

    fn insert(&mut self, key: u64, value: u32) {
        if (self.used + 1) * 2 > self.keys.len() {
            let grown = vec![u64::MAX; self.keys.len() * 2];
            let old_keys = std::mem::replace(&mut self.keys, grown);
            let old_values = std::mem::take(&mut self.values);
            self.values = vec![0; self.keys.len()];
            self.used = 0;
            for (k, v) in old_keys.into_iter().zip(old_values) {
                if k != u64::MAX {
                    self.insert(k, v);
                }
            }
        }
        let mask = self.keys.len() - 1;
        let mut slot = (key.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 40) as usize & mask;
        while self.keys[slot] != u64::MAX {
            slot = (slot + 1) & mask;
        }
        self.keys[slot] = key;
        self.values[slot] = value;
        self.used += 1;
    }
}

thread_local! {
    static LAZY: RefCell<Option<Lazy>> = const { RefCell::new(None) };
}

/// Sizes, for benchmarks: (trie nodes, classes, this thread's states, transitions).
#[doc(hidden)]
pub fn sizes() -> (usize, usize, usize, usize) {
    let Ok(c) = COMPILED.as_ref() else {
        return (0, 0, 0, 0);
    };
    let (s, t) = LAZY.with(|l| {
        l.borrow()
            .as_ref()
            .map_or((0, 0), |l| (l.states.len(), l.used))
    });
    (c.trie.class.len(), c.trie.classes, s, t)
}

/// The families of each canonical sentence of `text` (prepared: NFKC, lower case where it
/// matters), pushed to `out` in order.
pub(super) fn sentence_families(text: &[u8], out: &mut Vec<u16>) {
    out.clear();
    let Ok(c) = COMPILED.as_ref() else {
        return;
    };
    LAZY.with(|cell| {
        let mut cell = cell.borrow_mut();
        if cell.as_ref().is_none_or(|l| l.states.len() > MAX_STATES) {
            *cell = Some(Lazy::new(c));
        }
        let Some(lazy) = cell.as_mut() else {
            return;
        };
        scan(c, lazy, text, out);
    });
}

/// What a byte is to the scan: a trie column (`0..36`, ASCII case folded) or one of these.
const SEPARATOR: u8 = 36;
const DELIMITER: u8 = 37;
const APOSTROPHE: u8 = 38;
const LEAD_E2: u8 = 39;

static BYTE: [u8; 256] = {
    let mut t = [SEPARATOR; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        t[b] = match c {
            b'a'..=b'z' => c - b'a',
            b'A'..=b'Z' => c - b'A',
            b'0'..=b'9' => 26 + c - b'0',
            b'.' | b'!' | b'?' | b';' | b'\n' => DELIMITER,
            b'\'' => APOSTROPHE,
            0xE2 => LEAD_E2,
            _ => SEPARATOR,
        };
        b += 1;
    }
    t
};

/// The sentence scan: tokens are runs of letters and digits (ASCII case folded), the
/// apostrophes `'` and `’` are deleted, `.` `!` `?` `;` and line feed end a sentence, every
/// other byte separates tokens. A sentence without a token is not a sentence.
fn scan(c: &Compiled, lazy: &mut Lazy, text: &[u8], out: &mut Vec<u16>) {
    let trie = &c.trie;
    let (next, class) = (&trie.next[..], &trie.class[..]);
    let mut state = 0u32;
    let mut bits = 0u16;
    let mut tokens = 0usize;
    let mut node = 0usize;
    let mut in_token = false;
    let mut i = 0usize;
    let n = text.len();
    loop {
        // The bytes of a token.
        while i < n {
            let k = BYTE[usize::from(text[i])];
            if k >= SEPARATOR {
                break;
            }
            node = next[node + usize::from(k)] as usize;
            in_token = true;
            i += 1;
        }
        let k = if i < n {
            BYTE[usize::from(text[i])]
        } else {
            DELIMITER
        };
        if k == APOSTROPHE {
            i += 1;
            continue;
        }
        if k == LEAD_E2 && text.get(i + 1) == Some(&0x80) && text.get(i + 2) == Some(&0x99) {
            i += 3;
            continue;
        }
        if in_token {
            bits |= lazy.states[state as usize].bits;
            state = lazy.next(c, state, class[node / COLUMNS]);
            tokens += 1;
            node = 0;
            in_token = false;
        }
        if k == DELIMITER {
            if tokens > 0 {
                out.push(bits | lazy.states[state as usize].end_bits);
            }
            state = 0;
            bits = 0;
            tokens = 0;
            if i >= n {
                return;
            }
        }
        i += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_patterns_compile() {
        let c = COMPILED.as_ref().expect("the published patterns compile");
        assert!(c.trie.classes > 100);
        // A token outside the vocabulary is class 0; a vocabulary word is not.
        assert_eq!(c.trie.class_of(b"qqqqq"), 0);
        assert_ne!(c.trie.class_of(b"rlhf"), 0);
        assert_ne!(c.trie.class_of(b"pretending"), 0);
        assert_eq!(c.trie.class_of(b"RLHF"), c.trie.class_of(b"rlhf"));
    }

    #[test]
    fn every_pattern_is_in_the_dialect() {
        for f in FAMILIES {
            for (p, _) in f.patterns {
                assert!(parse(p).is_ok(), "{}: {p}", f.name);
                let starts = p.starts_with(' ') || p.starts_with("^ ");
                let ends = p.ends_with(' ') || p.ends_with(" $");
                assert!(starts && ends, "{}: {p}", f.name);
            }
        }
        assert!(parse("(?:a").is_err());
        assert!(parse("a.b").is_err());
    }
}
