#![no_main]
//! The study CSV two ways: as read on resume (against a fixed plan's header), and as read by
//! `doe analyze` (columns as factors, the last as the response) through the whole analysis.

use iolens_stats::csv::parse_csv;
use iolens_stats::{
    anova, level_means, recommend, reduce_model, residual_diagnostics, Dataset, Goal, ModelSpec, ResponseScale,
};
use iolens_suites::doe::parse_study_csv;
use libfuzzer_sys::fuzz_target;

const HEADER: &str = "run_id,replicate,bs,qd,bw_bytes_s,interrupted";

fuzz_target!(|data: &[u8]| {
    if let Ok(rows) = parse_study_csv(data, "d.csv", HEADER, 16) {
        assert!(rows.complete_len <= data.len());
        assert!(rows.done.iter().all(|id| *id < 16));
    }
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(table) = parse_csv(text, "d.csv") else { return };
    if table.header.len() < 2 {
        return;
    }
    let response_name = table.header.last().unwrap().clone();
    let Ok(response) = table.numbers("--response", &response_name) else { return };
    let factors: Vec<String> = table.header[..(table.header.len() - 1).min(3)].to_vec();
    let mut levels = vec![Vec::new(); table.rows.len()];
    for f in &factors {
        let Ok(column) = table.texts("--factors", f) else { return };
        for (value, row) in column.into_iter().zip(levels.iter_mut()) {
            row.push(value);
        }
    }
    let Ok(dataset) = Dataset::new(factors.clone(), levels, response) else { return };
    let spec = ModelSpec::up_to_order(&factors, 2);
    let scale = if data.len() % 2 == 0 { ResponseScale::Raw } else { ResponseScale::Log };
    let _ = anova(&dataset, &spec, scale);
    let Ok(reduced) = reduce_model(&dataset, &spec, scale, 0.05) else { return };
    let _ = residual_diagnostics(&dataset, &reduced.table, &factors);
    for f in &factors {
        let _ = level_means(&dataset, f);
    }
    let _ = recommend(&dataset, &reduced.table, Goal::Maximize, 0.05);
});
