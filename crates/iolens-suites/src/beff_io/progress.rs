//! What a progress display is told while b_eff_io runs: the partition and the pattern that
//! starts.

use iolens_engine::RunObserver;
use iolens_workload::format_bytes;

use super::Method;

/// Where a partition is, for a progress display: rank 0 tells it as each pattern starts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PatternStep {
    pub method: Method,
    pub pattern_type: u8,
    /// The pattern's chunk (0 for the fill-up pattern of types 3 and 4, whose size is decided
    /// then).
    pub chunk: u64,
    /// The share of the partition's patterns (over all methods) started before this one, 0 to
    /// 1: the schedule's time shares are estimates, and small T overruns them.
    pub done_fraction: f64,
}

/// Where a whole b_eff_io run is: the partition and its current pattern.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BeffIoStep {
    /// Index of the partition in `BeffIoConfig::ranks`, and how many there are.
    pub partition: usize,
    pub partitions: usize,
    pub ranks: usize,
    pub pattern: PatternStep,
}

impl BeffIoStep {
    /// The share of the whole run gone, 0 to 1: partitions are scheduled alike (T each).
    pub fn fraction(&self) -> f64 {
        ((self.partition as f64 + self.pattern.done_fraction.clamp(0.0, 1.0)) / self.partitions.max(1) as f64)
            .clamp(0.0, 1.0)
    }

    /// Shows the step on a progress display: the share done and what runs now.
    pub fn show(&self, observer: &dyn RunObserver) {
        observer.step(self.fraction(), &self.describe());
    }

    /// "write, type 2, chunk 1 MiB, 4 ranks".
    pub fn describe(&self) -> String {
        let chunk =
            if self.pattern.chunk == 0 { "fill-up".to_string() } else { format_bytes(self.pattern.chunk) };
        format!(
            "{}, type {}, chunk {chunk}, {} rank{}",
            self.pattern.method.name(),
            self.pattern.pattern_type,
            self.ranks,
            if self.ranks == 1 { "" } else { "s" }
        )
    }
}
