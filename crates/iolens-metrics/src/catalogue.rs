//! The one catalogue of the figures iolens compares across results: each metric's name (its
//! key in the JSON results), its unit, which way is better, and whether it is a rate of work
//! done. `compare` pairs figures by it and judges them by its direction; `validate` derives the
//! sign a metric's correlation with execution time should have from the same direction, so
//! that what "better" means is written down once.

/// Whether a larger value of a metric is better, worse, or neither (a duration of the run).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Better {
    Higher,
    Lower,
    Neither,
}

impl Better {
    /// The word the JSON results use (`compare`'s `better`).
    pub fn name(self) -> &'static str {
        match self {
            Better::Higher => "higher",
            Better::Lower => "lower",
            Better::Neither => "neither",
        }
    }
}

/// One metric of the catalogue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Metric {
    /// Its key in the results (`aggregate.iops`, `summary[].name`).
    pub name: &'static str,
    /// The unit of its values: `1/s`, `B/s`, `blocks/s`, `s`, `ns`, or `fraction`.
    pub unit: &'static str,
    pub better: Better,
    /// A rate of work done (`compare --fail-if-slower` watches these).
    pub throughput: bool,
}

const fn entry(name: &'static str, unit: &'static str, better: Better, throughput: bool) -> Metric {
    Metric { name, unit, better, throughput }
}

/// Every metric that results are compared by.
pub const CATALOGUE: &[Metric] = &[
    entry("iops", "1/s", Better::Higher, true),
    entry("bw_bytes_s", "B/s", Better::Higher, true),
    entry("bps", "blocks/s", Better::Higher, true),
    entry("arpt_s", "s", Better::Lower, false),
    entry("lat_p50_ns", "ns", Better::Lower, false),
    entry("lat_p99_ns", "ns", Better::Lower, false),
    entry("cpu_per_op_ns", "ns", Better::Lower, false),
    entry("busy_s", "s", Better::Neither, false),
    entry("wall_s", "s", Better::Neither, false),
    entry("io_wait_fraction", "fraction", Better::Neither, false),
];

const fn same(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// The metric named `name`; in a constant, a name the catalogue lacks fails the build.
pub const fn metric(name: &str) -> Metric {
    let mut i = 0;
    while i < CATALOGUE.len() {
        if same(CATALOGUE[i].name, name) {
            return CATALOGUE[i];
        }
        i += 1;
    }
    panic!("a metric not in the catalogue")
}

/// The metric named `name`, if the catalogue has it.
pub fn lookup(name: &str) -> Option<Metric> {
    CATALOGUE.iter().find(|m| m.name == name).copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_is_listed_once_and_found() {
        for m in CATALOGUE {
            assert_eq!(CATALOGUE.iter().filter(|o| o.name == m.name).count(), 1, "{}", m.name);
            assert_eq!(lookup(m.name), Some(*m));
            assert_eq!(metric(m.name), *m);
        }
        assert_eq!(lookup("nonsense"), None);
    }

    #[test]
    fn only_rates_of_work_are_throughput_and_they_are_better_higher() {
        for m in CATALOGUE.iter().filter(|m| m.throughput) {
            assert_eq!(m.better, Better::Higher, "{}", m.name);
        }
    }
}
