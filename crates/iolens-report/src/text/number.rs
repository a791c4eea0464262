//! The number formats of the terminal text: the one family, defined beside the metrics it
//! formats ([`iolens_metrics::number`]) so that results which state a figure as text (quick's
//! headlines) read the same as the tables.

pub use iolens_metrics::number::{fmt_mib, fmt_ns, fmt_rate, short};
