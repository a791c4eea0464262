//! Events of a small trace for the tests of the trace's text and its per-operation exports:
//! two processes, overlapping work, an idle gap, a sync, metadata calls that do not count.

use iolens_analyze::{AnalyzeOptions, Analyzer, TraceSummary};
use iolens_record::event::{IoEvent, IoOp, Layer, UNKNOWN_OFFSET};

pub(crate) fn ev(pid: u32, file: u32, op: IoOp, offset: u64, bytes: u64, start: u64, end: u64) -> IoEvent {
    IoEvent {
        pid,
        tid: pid,
        file,
        op,
        layer: Layer::Posix,
        flags: 0,
        offset,
        requested: bytes,
        result: bytes as i64,
        start_ns: start,
        end_ns: end,
    }
}

pub(crate) fn analyze(events: &[IoEvent], opts: AnalyzeOptions) -> TraceSummary {
    let mut a = Analyzer::new(opts).unwrap();
    a.path(0, "/a");
    a.path(1, "/b");
    for e in events {
        a.event(e);
    }
    a.finish().unwrap()
}

/// Two processes: overlapping work, an idle gap, a sync, metadata calls that do not count.
pub(crate) fn sample() -> Vec<IoEvent> {
    vec![
        ev(1, 0, IoOp::Open, UNKNOWN_OFFSET, 0, 0, 5),
        ev(1, 0, IoOp::Read, 0, 4096, 10, 110),
        ev(1, 0, IoOp::Read, 4096, 4096, 120, 220),
        ev(2, 1, IoOp::Write, 0, 65536, 50, 250),
        ev(2, 1, IoOp::Write, 1 << 20, 65536, 1000, 1100),
        ev(2, 1, IoOp::Fsync, UNKNOWN_OFFSET, 0, 1100, 1500),
        ev(1, 0, IoOp::Read, 8192, 4096, 2000, 2100),
        ev(1, 0, IoOp::Close, UNKNOWN_OFFSET, 0, 2100, 2105),
    ]
}
