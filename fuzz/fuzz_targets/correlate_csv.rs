#![no_main]
//! `iolens correlate` input: a CSV whose first column is the execution time and whose other
//! columns are metrics, each correlated with the time.

use iolens_stats::csv::parse_csv;
use iolens_stats::{pearson_test, Direction, NormalizedCc};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(table) = parse_csv(text, "c.csv") else { return };
    for row in &table.rows {
        assert_eq!(row.fields.len(), table.header.len());
    }
    let Some(time_name) = table.header.first() else { return };
    let Ok(time) = table.numbers("--time", time_name) else { return };
    for m in &table.header[1..] {
        let Ok(values) = table.numbers("--metrics", m) else { continue };
        if let Ok(test) = pearson_test(&values, &time) {
            let n = NormalizedCc::new(test.r, Direction::Negative);
            assert!(n.cc.is_finite() || n.cc.is_nan());
        }
    }
});
