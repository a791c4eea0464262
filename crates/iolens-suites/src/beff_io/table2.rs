//! Table 2 of the paper: the patterns (type, chunk on disk and in memory, time units U), the
//! access methods, and the weights that turn bandwidths into b_eff_io.

use std::time::Duration;

use serde::Serialize;

pub(super) const MIB: u64 = 1 << 20;
pub(super) const KIB: u64 = 1 << 10;

/// ΣU of Table 2.
pub const TOTAL_UNITS: u64 = 64;
/// The weights of the access methods in a partition's value.
pub const METHOD_WEIGHTS: [(Method, f64); 3] =
    [(Method::Write, 0.25), (Method::Rewrite, 0.25), (Method::Read, 0.5)];
/// The weights of pattern types 0–4 in an access method's value (type 0 counted twice).
pub const TYPE_WEIGHTS: [f64; 5] = [2.0 / 6.0, 1.0 / 6.0, 1.0 / 6.0, 1.0 / 6.0, 1.0 / 6.0];

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Method {
    Write,
    Rewrite,
    Read,
}

impl Method {
    pub fn name(self) -> &'static str {
        match self {
            Method::Write => "write",
            Method::Rewrite => "rewrite",
            Method::Read => "read",
        }
    }
}

/// One row of Table 2.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct PatternDef {
    /// The pattern number of Table 2 (0–41; 33 and 42 are the segment fill-ups).
    pub number: u32,
    pub pattern_type: u8,
    /// Contiguous chunk on disk, bytes.
    pub chunk: u64,
    /// Contiguous chunk in memory moved by one call, bytes (= chunk except for type 0).
    pub memory: u64,
    pub units: u64,
    /// The "fill up segments" call of types 3 and 4: its size comes from the segment size.
    pub fill: bool,
}

/// The eight chunk sizes types 1 and 2 use (and, through them, types 3 and 4), with their U in
/// type 1 and in type 2.
pub(super) fn listed_chunks(mpart: u64) -> [(u64, u64, u64); 8] {
    [
        (MIB, 0, 0),
        (mpart, 4, 2),
        (MIB, 2, 2),
        (32 * KIB, 1, 1),
        (KIB, 1, 1),
        (32 * KIB + 8, 1, 1),
        (KIB + 8, 1, 1),
        (MIB + 8, 2, 2),
    ]
}

/// Table 2, with MPART = max(2 MB, memory of a node / 128).
pub fn table2(mpart: u64) -> Vec<PatternDef> {
    let mut out = Vec::new();
    let type0 = [
        (MIB, MIB, 0),
        (mpart, mpart, 4),
        (MIB, 2 * MIB, 4),
        (MIB, MIB, 4),
        (32 * KIB, MIB, 2),
        (KIB, MIB, 2),
        (32 * KIB + 8, MIB + 256, 2),
        (KIB + 8, MIB + 8 * KIB, 2),
        (MIB + 8, MIB + 8, 2),
    ];
    let mut number = 0;
    let mut push = |pattern_type, chunk, memory, units, fill| {
        out.push(PatternDef { number, pattern_type, chunk, memory, units, fill });
        number += 1;
    };
    for (l, big_l, u) in type0 {
        push(0, l, big_l, u, false);
    }
    for (l, u1, _) in listed_chunks(mpart) {
        push(1, l, l, u1, false);
    }
    for pattern_type in 2..=4u8 {
        for (l, _, u2) in listed_chunks(mpart) {
            push(pattern_type, l, l, u2, false);
        }
        if pattern_type >= 3 {
            push(pattern_type, 0, 0, 0, true);
        }
    }
    out
}

/// A pattern's share of the scheduled time T: `T/3 · U/ΣU` (each access method gets a third).
/// Types 3 and 4 are size-driven, but their units are part of ΣU: their share is the time the
/// schedule expects them to take.
pub fn share(t: Duration, def: &PatternDef) -> Duration {
    t.mul_f64(def.units as f64 / TOTAL_UNITS as f64 / 3.0)
}

/// MPART for a node with `memory` bytes.
pub fn mpart_for(memory: u64) -> u64 {
    (2 * MIB).max(memory / 128)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table2_has_the_papers_units_and_sizes() {
        let t = table2(192 * MIB);
        assert_eq!(t.len(), 43, "patterns 0–42");
        assert_eq!(t.iter().map(|p| p.units).sum::<u64>(), TOTAL_UNITS);
        let units_of = |ty: u8| t.iter().filter(|p| p.pattern_type == ty).map(|p| p.units).sum::<u64>();
        assert_eq!([0, 1, 2, 3, 4].map(units_of), [22, 12, 10, 10, 10]);
        assert_eq!((t[6].chunk, t[6].memory), (32 * KIB + 8, MIB + 256));
        assert_eq!((t[7].chunk, t[7].memory), (KIB + 8, MIB + 8 * KIB));
        assert_eq!(t[10].chunk, 192 * MIB, "pattern 10 is MPART");
        assert!(t[33].fill && t[42].fill);
        for p in t.iter().filter(|p| !p.fill) {
            assert_eq!(p.memory % p.chunk, 0, "pattern {}: whole chunks per call", p.number);
        }
    }

    #[test]
    fn weights_sum_to_one() {
        assert!((TYPE_WEIGHTS.iter().sum::<f64>() - 1.0).abs() < 1e-12);
        assert!((METHOD_WEIGHTS.iter().map(|(_, w)| w).sum::<f64>() - 1.0).abs() < 1e-12);
        assert_eq!(TYPE_WEIGHTS[0], 2.0 * TYPE_WEIGHTS[1]);
    }

    #[test]
    fn mpart_rule() {
        assert_eq!(mpart_for(64 * MIB), 2 * MIB);
        assert_eq!(mpart_for(24 << 30), 192 * MIB);
    }
}
