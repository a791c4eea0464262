//! Run metrics: what agents accumulate while they run, how those pieces merge (across agents,
//! and across processes or ranks), the derived figures a report shows, and warnings.
//!
//! Every accumulator here is mergeable: latency histograms add, counters add, busy time comes
//! from the union of in-flight intervals (see `iolens_record::busy`), device counters are deltas
//! of `/proc/diskstats`. Derived figures ([`Figures`]) are computed once, from merged raw data,
//! never averaged from other derived figures.

pub mod catalogue;
mod device;
mod figures;
mod histogram;
pub mod monitor;
pub mod number;
mod series;
mod verify;
mod warnings;

pub use device::{DeviceReport, DeviceSample, IostatRow};
pub use figures::{
    AgentInfo, AgentRaw, AgentResult, CpuFigures, CpuTime, DirectionFigures, DirectionLatency, Figures,
    LatencyFigures, OpCounters, RunResult, TargetReport,
};
pub use histogram::{LatencyBin, LatencyHistogram, LatencySummary, BIN_EDGES_NS};
pub use series::{
    AgentSeries, IntervalFigures, IntervalLatency, IntervalRaw, IntervalRecorder, RunSeries, SeriesRaw,
};
pub use verify::{BlockFields, VerifyFailure, VerifyReport};
pub use warnings::{
    evaluate_warnings, RateCheck, RunFacts, Warning, WarningCode, MIN_TRUSTED_OPS, MIN_TRUSTED_WALL_S,
};
