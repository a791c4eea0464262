#![no_main]
//! `iolens correlate` input: a CSV whose first column is the execution time and whose other
//! columns are metrics, each correlated with the time, through the command's own
//! `correlate_table` (every column named, and the columns it picks itself).

use iolens_stats::csv::parse_csv;
use iolens_stats::study::correlate_table;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(table) = parse_csv(text, "c.csv") else { return };
    for row in &table.rows {
        assert_eq!(row.fields.len(), table.header.len());
    }
    let Some(time_name) = table.header.first() else { return };
    let named: Vec<String> = table.header[1..].to_vec();
    // A direction expected of the first metric, so `--expect` is read too.
    let expect: Vec<String> = named.first().map(|m| format!("{m}:neg")).into_iter().collect();
    for (metrics, expect) in [(&named[..], &expect[..]), (&[][..], &[][..])] {
        if let Ok(report) = correlate_table(&table, time_name, metrics, expect) {
            for row in &report.metrics {
                assert!(row.cc.is_finite() || row.cc.is_nan());
            }
        }
    }
});
