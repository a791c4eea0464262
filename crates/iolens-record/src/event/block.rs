//! What compact events are coded against, on the writing and the reading side alike: the
//! block's clock segment ([`TickLine`]) and the values of its previous event ([`Predictor`]).

use super::UNKNOWN_OFFSET;

/// A block's clock segment: ticks to nanoseconds along the line through two calibration points,
/// `(tick, ns)`, taken when the block's writer started and ended it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TickLine {
    tick0: u64,
    ns0: u64,
    /// `None`: ticks are nanoseconds already (tick and ns distances equal), mapped exactly.
    ns_per_tick: Option<f64>,
}

impl TickLine {
    /// The segment from `(tick0, ns0)` to `(tick1, ns1)`.
    pub fn between((tick0, ns0): (u64, u64), (tick1, ns1): (u64, u64)) -> TickLine {
        let ticks = tick1.wrapping_sub(tick0);
        let ns = ns1.wrapping_sub(ns0);
        let ns_per_tick = (ticks != ns).then(|| ns1.saturating_sub(ns0) as f64 / ticks.max(1) as f64);
        TickLine { tick0, ns0, ns_per_tick }
    }

    /// Nanoseconds at `tick` (on the line's extension outside the segment).
    #[inline]
    pub fn ns(&self, tick: u64) -> u64 {
        let since = tick.wrapping_sub(self.tick0);
        match self.ns_per_tick {
            None => self.ns0.wrapping_add(since),
            Some(slope) => self.ns0.wrapping_add(((since as i64) as f64 * slope) as i64 as u64),
        }
    }
}

/// What compact events are coded against: values of the block's previous event. Writer and
/// reader keep one each, in step, starting anew at each block header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Predictor {
    pub(super) file: u32,
    pub(super) requested: u64,
    pub(super) next_offset: u64,
    pub(super) last_end: u64,
}

impl Predictor {
    /// The state at the start of a block whose segment starts at `tick0`.
    pub const fn new(tick0: u64) -> Predictor {
        Predictor { file: 0, requested: 0, next_offset: UNKNOWN_OFFSET, last_end: tick0 }
    }

    #[inline(always)]
    pub(super) fn advance(&mut self, file: u32, offset: u64, requested: u64, result: i64, end: u64) {
        self.file = file;
        self.requested = requested;
        self.next_offset =
            if offset == UNKNOWN_OFFSET { UNKNOWN_OFFSET } else { offset.wrapping_add(result.max(0) as u64) };
        self.last_end = end;
    }
}
