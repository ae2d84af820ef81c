//! Marks: a small deterministic SVG for a vow (`/vow/<id>/mark.svg`, from its vow id) and for
//! the service (`/hive/mark.svg`, from its key id; the picture of its Nostr profile).
//!
//! A mark is a 5x5 grid mirrored left to right (an identicon), on a 7x7 canvas with a
//! one-cell margin: the 15 cells of the left three columns are the first 15 bits of
//! `sha256(seed)`, the colour's hue is its bytes 2-3 (saturation and lightness from bytes 4 and
//! 5 within a readable range), the background a very light tint of the opposite hue. A grid
//! with no cell on gets its centre cell. The seed never appears in the file: no user text
//! reaches a mark, and the same seed always gives the same bytes.

use sha2::{Digest, Sha256};

/// Side of the canvas in cells (the 5x5 grid and a one-cell margin).
const CANVAS: u32 = 7;

/// `#rrggbb` of a colour given as hue (degrees), saturation and lightness (percent).
fn hsl(h: u32, s: u32, l: u32) -> String {
    let (h, s, l) = (
        f64::from(h % 360),
        f64::from(s) / 100.0,
        f64::from(l) / 100.0,
    );
    let c = (1.0 - (2.0 * l - 1.0).abs()) * s;
    let x = c * (1.0 - ((h / 60.0) % 2.0 - 1.0).abs());
    let m = l - c / 2.0;
    let (r, g, b) = match (h / 60.0) as u32 {
        0 => (c, x, 0.0),
        1 => (x, c, 0.0),
        2 => (0.0, c, x),
        3 => (0.0, x, c),
        4 => (x, 0.0, c),
        _ => (c, 0.0, x),
    };
    let byte = |v: f64| ((v + m) * 255.0).round().clamp(0.0, 255.0) as u8;
    format!("#{:02x}{:02x}{:02x}", byte(r), byte(g), byte(b))
}

/// Which cells of the 5x5 grid are on, row by row (mirrored: column `c` equals `4 - c`).
pub fn cells(seed: &str) -> [[bool; 5]; 5] {
    let h = Sha256::digest(seed.as_bytes());
    let bits = u32::from(h[0]) << 8 | u32::from(h[1]);
    let mut grid = [[false; 5]; 5];
    let mut any = false;
    for (row, line) in grid.iter_mut().enumerate() {
        for col in 0..3 {
            let on = bits >> (row * 3 + col) & 1 == 1;
            line[col] = on;
            line[4 - col] = on;
            any |= on;
        }
    }
    if !any {
        grid[2][2] = true;
    }
    grid
}

/// The mark of `seed` (a vow id, or the service's key id) as SVG bytes.
pub fn mark_svg(seed: &str) -> String {
    let h = Sha256::digest(seed.as_bytes());
    let hue = (u32::from(h[2]) << 8 | u32::from(h[3])) % 360;
    let fg = hsl(hue, 45 + u32::from(h[4]) % 30, 35 + u32::from(h[5]) % 15);
    let bg = hsl(hue + 180, 40, 95);
    let mut path = String::new();
    for (row, line) in cells(seed).iter().enumerate() {
        for (col, on) in line.iter().enumerate() {
            if *on {
                path.push_str(&format!("M{} {}h1v1h-1z", col + 1, row + 1));
            }
        }
    }
    format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {CANVAS} {CANVAS}\" \
         width=\"70\" height=\"70\" shape-rendering=\"crispEdges\" role=\"img\" \
         aria-label=\"mark\"><rect width=\"{CANVAS}\" height=\"{CANVAS}\" fill=\"{bg}\"/>\
         <path fill=\"{fg}\" d=\"{path}\"/></svg>\n"
    )
}

/// Path of a vow's mark in the tree.
pub fn vow_mark_path(vow_id: &str) -> String {
    format!("vow/{vow_id}/mark.svg")
}

/// The public path of a vow's mark (`/vow/<id>/mark.svg`).
pub fn vow_mark_url(vow_id: &str) -> String {
    format!("/vow/{vow_id}/mark.svg")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marks_are_deterministic_symmetric_and_carry_no_seed() {
        let a = mark_svg("0123456789abcdef");
        assert_eq!(a, mark_svg("0123456789abcdef"));
        assert_ne!(a, mark_svg("0123456789abcdee"));
        assert!(!a.contains("0123456789abcdef"));
        assert!(a.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
        for seed in ["a", "b", "", "<script>", "0123456789abcdef"] {
            let g = cells(seed);
            assert!(g.iter().flatten().any(|c| *c));
            for row in g {
                assert_eq!(row[0], row[4]);
                assert_eq!(row[1], row[3]);
            }
            assert!(!mark_svg(seed).contains("script"));
        }
        assert_eq!(hsl(0, 100, 50), "#ff0000");
        assert_eq!(hsl(120, 100, 50), "#00ff00");
        assert_eq!(hsl(240, 100, 50), "#0000ff");
    }
}
