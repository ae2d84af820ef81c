//! BIP-340 Schnorr verification over secp256k1 in plain arithmetic (`num-bigint`), with no
//! elliptic-curve crate: what `conduct-verify` (built without the `wallet` feature, so without
//! k256) uses to check Nostr signatures offline. It follows the BIP's `Verify` step by step:
//!
//! 1. `P = lift_x(pk)` (fail when `pk >= p` or not an x coordinate of the curve);
//! 2. `r = sig[0..32]` (fail when `r >= p`), `s = sig[32..64]` (fail when `s >= n`);
//! 3. `e = int(hash_BIP0340/challenge(r || pk || m)) mod n`;
//! 4. `R = s·G - e·P`; fail when `R` is infinite, its `y` is odd or its `x` is not `r`.
//!
//! Only public data is handled (no secret, so no constant-time concern). It is checked against
//! the BIP's official test vectors and, under the `wallet` feature, against k256 on random
//! keys and messages (`super::tests`). The service itself signs and verifies with k256
//! ([`super::sign_prehash`], [`super::verify_prehash`]).

use num_bigint::BigUint;
use sha2::{Digest, Sha256};

/// The field prime p = 2^256 - 2^32 - 977.
const P_HEX: &[u8] = b"FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEFFFFFC2F";
/// The group order n.
const N_HEX: &[u8] = b"FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD0364141";
/// The generator's coordinates.
const GX_HEX: &[u8] = b"79BE667EF9DCBBAC55A06295CE870B07029BFCDB2DCE28D959F2815B16F81798";
const GY_HEX: &[u8] = b"483ADA7726A3C4655DA4FBFC0E1108A8FD17B448A68554199C47D08FFB10D4B8";

fn big(hex: &[u8]) -> BigUint {
    // The constants above are well-formed hex.
    BigUint::parse_bytes(hex, 16).unwrap_or_default()
}

/// The curve's constants, built once per verification (cheap next to the scalar products).
struct Curve {
    p: BigUint,
    n: BigUint,
    g: Jacobian,
}

/// A point in Jacobian coordinates (x = X/Z², y = Y/Z³); `None` is the point at infinity.
type Jacobian = Option<(BigUint, BigUint, BigUint)>;

impl Curve {
    fn new() -> Curve {
        Curve {
            p: big(P_HEX),
            n: big(N_HEX),
            g: Some((big(GX_HEX), big(GY_HEX), BigUint::from(1u8))),
        }
    }

    fn mul(&self, a: &BigUint, b: &BigUint) -> BigUint {
        (a * b) % &self.p
    }

    fn sub(&self, a: &BigUint, b: &BigUint) -> BigUint {
        ((a + &self.p) - (b % &self.p)) % &self.p
    }

    fn double(&self, pt: &Jacobian) -> Jacobian {
        let (x, y, z) = pt.as_ref()?;
        if y == &BigUint::default() {
            return None;
        }
        let y2 = self.mul(y, y);
        let s = self.mul(&(x * 4u8), &y2);
        let m = self.mul(&(x * 3u8), x);
        let x3 = self.sub(&self.mul(&m, &m), &((&s * 2u8) % &self.p));
        let y4 = self.mul(&y2, &y2);
        let y3 = self.sub(&self.mul(&m, &self.sub(&s, &x3)), &((y4 * 8u8) % &self.p));
        let z3 = self.mul(&(y * 2u8), z);
        Some((x3, y3, z3))
    }

    fn add(&self, a: &Jacobian, b: &Jacobian) -> Jacobian {
        let Some((x1, y1, z1)) = a else {
            return b.clone();
        };
        let Some((x2, y2, z2)) = b else {
            return a.clone();
        };
        let z1z1 = self.mul(z1, z1);
        let z2z2 = self.mul(z2, z2);
        let u1 = self.mul(x1, &z2z2);
        let u2 = self.mul(x2, &z1z1);
        let s1 = self.mul(&self.mul(y1, z2), &z2z2);
        let s2 = self.mul(&self.mul(y2, z1), &z1z1);
        if u1 == u2 {
            return if s1 == s2 { self.double(a) } else { None };
        }
        let h = self.sub(&u2, &u1);
        let r = self.sub(&s2, &s1);
        let hh = self.mul(&h, &h);
        let hhh = self.mul(&hh, &h);
        let u1hh = self.mul(&u1, &hh);
        let x3 = self.sub(
            &self.sub(&self.mul(&r, &r), &hhh),
            &((&u1hh * 2u8) % &self.p),
        );
        let y3 = self.sub(&self.mul(&r, &self.sub(&u1hh, &x3)), &self.mul(&s1, &hhh));
        let z3 = self.mul(&self.mul(&h, z1), z2);
        Some((x3, y3, z3))
    }

    /// `a·A + b·B` (Shamir's trick: one pass over the bits of both scalars).
    fn lincomb(&self, a: &BigUint, pa: &Jacobian, b: &BigUint, pb: &Jacobian) -> Jacobian {
        let both = self.add(pa, pb);
        let bits = a.bits().max(b.bits());
        let mut acc: Jacobian = None;
        for i in (0..bits).rev() {
            acc = self.double(&acc);
            acc = match (a.bit(i), b.bit(i)) {
                (true, true) => self.add(&acc, &both),
                (true, false) => self.add(&acc, pa),
                (false, true) => self.add(&acc, pb),
                (false, false) => acc,
            };
        }
        acc
    }

    /// The affine coordinates of a finite point.
    fn affine(&self, pt: &Jacobian) -> Option<(BigUint, BigUint)> {
        let (x, y, z) = pt.as_ref()?;
        let zinv = z.modpow(&(&self.p - 2u8), &self.p);
        let zinv2 = self.mul(&zinv, &zinv);
        Some((self.mul(x, &zinv2), self.mul(&self.mul(y, &zinv2), &zinv)))
    }

    /// The point with x coordinate `x` and an even y (BIP-340 `lift_x`).
    fn lift_x(&self, x: &BigUint) -> Jacobian {
        if x >= &self.p {
            return None;
        }
        let c = (self.mul(&self.mul(x, x), x) + 7u8) % &self.p;
        let y = c.modpow(&((&self.p + 1u8) >> 2), &self.p);
        if self.mul(&y, &y) != c {
            return None;
        }
        let y = if y.bit(0) { &self.p - y } else { y };
        Some((x.clone(), y, BigUint::from(1u8)))
    }
}

/// BIP-340 tagged hash: `sha256(sha256(tag) || sha256(tag) || data...)`.
pub fn tagged_hash(tag: &str, parts: &[&[u8]]) -> [u8; 32] {
    let t = Sha256::digest(tag.as_bytes());
    let mut h = Sha256::new();
    h.update(t);
    h.update(t);
    for p in parts {
        h.update(p);
    }
    h.finalize().into()
}

/// Whether `pubkey` is the x coordinate of a point of the curve (BIP-340 `lift_x` succeeds).
pub fn lifts(pubkey: &[u8; 32]) -> bool {
    Curve::new()
        .lift_x(&BigUint::from_bytes_be(pubkey))
        .is_some()
}

/// Whether `sig` (64 bytes) is a valid BIP-340 signature of the 32-byte message `msg` under
/// the x-only public key `pubkey` (32 bytes).
pub fn verify(pubkey: &[u8; 32], msg: &[u8; 32], sig: &[u8; 64]) -> bool {
    let c = Curve::new();
    let pk = c.lift_x(&BigUint::from_bytes_be(pubkey));
    if pk.is_none() {
        return false;
    }
    let r = BigUint::from_bytes_be(&sig[..32]);
    let s = BigUint::from_bytes_be(&sig[32..]);
    if r >= c.p || s >= c.n {
        return false;
    }
    let e = BigUint::from_bytes_be(&tagged_hash(
        "BIP0340/challenge",
        &[&sig[..32], pubkey, msg],
    )) % &c.n;
    // R = s·G + (n - e)·P.
    let minus_e = (&c.n - e) % &c.n;
    let point = c.lincomb(&s, &c.g, &minus_e, &pk);
    match c.affine(&point) {
        Some((x, y)) => !y.bit(0) && x == r,
        None => false,
    }
}
