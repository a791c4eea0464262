//! `iolens compare`: figure by figure, ratios, significance from repetitions, and the CI exit
//! status, on hand-made result files and on one real pair of tiny runs.

use std::path::PathBuf;

use serde_json::{json, Value};

use crate::util::Env;

/// The exit status of a comparison that found a throughput drop beyond `--fail-if-slower`.
const EXIT_SLOWER: i32 = 4;

fn write(env: &Env, name: &str, value: &Value) -> PathBuf {
    let path = env.path(name);
    std::fs::write(&path, serde_json::to_vec_pretty(value).unwrap()).unwrap();
    path
}

/// The JSON of a single `iolens run`, reduced to what a comparison reads.
fn run(iops: f64, arpt_s: f64) -> Value {
    json!({
        "schema_version": 1, "command": "run", "error": null, "interrupted": false,
        "aggregate": {
            "iops": iops, "bw_bytes_s": iops * 4096.0, "bps": iops * 8.0, "arpt_s": arpt_s,
            "busy_s": 1.0, "wall_s": 1.0, "io_wait_fraction": 1.0,
            "lat_ns": { "p50": arpt_s * 1e9, "p99": arpt_s * 2e9 },
            "cpu": { "per_op_ns": 500.0 }
        }
    })
}

/// The JSON of `iolens run --repeat N`, reduced to its per-metric repetitions.
fn repeated(iops: &[f64]) -> Value {
    json!({
        "schema_version": 1, "command": "run", "repeat": iops.len(), "error": null, "interrupted": false,
        "summary": [
            { "name": "iops", "values": iops },
            { "name": "arpt_s", "values": iops.iter().map(|v| 1.0 / v).collect::<Vec<_>>() }
        ],
        "runs": []
    })
}

fn compare(env: &Env, args: &[&str]) -> (i32, Value, String) {
    let json = env.path("compare.json");
    let _ = std::fs::remove_file(&json);
    let out = env.iolens().arg("compare").args(args).arg("--json").arg(&json).output().unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    let report: Value = serde_json::from_slice(&std::fs::read(&json).unwrap())
        .unwrap_or_else(|e| panic!("compare wrote invalid JSON ({e}); output:\n{text}"));
    (out.status.code().unwrap(), report, text)
}

fn figure<'a>(report: &'a Value, figure: &str, metric: &str) -> &'a Value {
    report["comparisons"][0]["figures"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["figure"] == figure && f["metric"] == metric)
        .unwrap_or_else(|| panic!("no {figure} {metric} in {report:#}"))
}

#[test]
fn single_runs_give_ratios_and_directions() {
    let env = Env::new();
    let a = write(&env, "a.json", &run(1000.0, 0.001));
    let b = write(&env, "b.json", &run(900.0, 0.0008));
    let (code, report, text) = compare(&env, &[a.to_str().unwrap(), b.to_str().unwrap()]);
    assert_eq!(code, 0, "{text}");
    let iops = figure(&report, "aggregate", "iops");
    assert!((iops["ratio"].as_f64().unwrap() - 0.9).abs() < 1e-12, "{iops}");
    assert_eq!(iops["verdict"], "worse");
    assert_eq!(iops["significant"], Value::Null, "one run per side cannot be tested: {iops}");
    let arpt = figure(&report, "aggregate", "arpt_s");
    assert_eq!(arpt["better"], "lower");
    assert_eq!(arpt["verdict"], "better", "a shorter response time is better: {arpt}");
    assert!(text.contains("iops") && text.contains("0.900"), "{text}");
}

#[test]
fn fail_if_slower_sets_the_exit_status() {
    let env = Env::new();
    let a = write(&env, "a.json", &run(1000.0, 0.001));
    let b = write(&env, "b.json", &run(900.0, 0.001));
    let (a, b) = (a.to_str().unwrap(), b.to_str().unwrap());
    let (code, report, text) = compare(&env, &[a, b, "--fail-if-slower", "5%"]);
    assert_eq!(code, EXIT_SLOWER, "{text}");
    assert_eq!(report["failed"], true);
    assert!(report["slower"].as_array().unwrap().iter().any(|s| s["metric"] == "iops"), "{report:#}");
    let (code, report, text) = compare(&env, &[a, b, "--fail-if-slower", "20%"]);
    assert_eq!(code, 0, "{text}");
    assert_eq!(report["failed"], false);
    // Faster is never a failure.
    let (code, _, text) = compare(&env, &[b, a, "--fail-if-slower", "1%"]);
    assert_eq!(code, 0, "{text}");
}

#[test]
fn repetitions_decide_significance_with_welch() {
    let env = Env::new();
    let base = write(&env, "base.json", &repeated(&[1000.0, 1010.0, 990.0, 1005.0]));
    let tight_drop = write(&env, "tight.json", &repeated(&[900.0, 905.0, 895.0, 910.0]));
    let noisy_drop = write(&env, "noisy.json", &repeated(&[600.0, 1300.0, 700.0, 1100.0]));
    let base = base.to_str().unwrap();

    let (code, report, text) = compare(&env, &[base, tight_drop.to_str().unwrap(), "--fail-if-slower", "5%"]);
    assert_eq!(code, EXIT_SLOWER, "{text}");
    let iops = figure(&report, "aggregate", "iops");
    assert_eq!(iops["significant"], true, "{iops}");
    assert_eq!(iops["test"]["method"], "welch");
    assert!(iops["test"]["p_value"].as_f64().unwrap() < 0.001, "{iops}");
    assert_eq!(iops["before"]["n"], 4);

    // A 7.5% lower mean, but within the noise of the repetitions: not a failure.
    let (code, report, text) = compare(&env, &[base, noisy_drop.to_str().unwrap(), "--fail-if-slower", "5%"]);
    assert_eq!(code, 0, "{text}");
    let iops = figure(&report, "aggregate", "iops");
    assert_eq!(iops["significant"], false, "{iops}");
    assert_eq!(iops["verdict"], "same");
}

#[test]
fn one_side_repeated_uses_its_confidence_interval() {
    let env = Env::new();
    let base = write(&env, "base.json", &repeated(&[1000.0, 1010.0, 990.0, 1005.0]));
    let inside = write(&env, "inside.json", &run(1001.0, 0.001));
    let outside = write(&env, "outside.json", &run(800.0, 0.001));
    let base = base.to_str().unwrap();
    let (_, report, _) = compare(&env, &[base, inside.to_str().unwrap()]);
    let iops = figure(&report, "aggregate", "iops");
    assert_eq!(iops["significant"], false, "{iops}");
    assert_eq!(iops["test"]["method"], "ci95");
    let (_, report, _) = compare(&env, &[base, outside.to_str().unwrap()]);
    assert_eq!(figure(&report, "aggregate", "iops")["significant"], true);
}

fn sweep(points: &[(u32, u64, f64)]) -> Value {
    let mut curves: Vec<Value> = Vec::new();
    for &(threads, bs, iops) in points {
        let point = json!({ "threads": threads, "bs_bytes": bs, "iops": iops, "bw_bytes_s": iops * bs as f64,
                            "bps": iops * bs as f64 / 512.0, "lat_ns": {"p50": 1000, "p99": 5000} });
        match curves.iter_mut().find(|c| c["threads"] == threads) {
            Some(c) => c["points"].as_array_mut().unwrap().push(point),
            None => curves.push(json!({ "threads": threads, "points": [point] })),
        }
    }
    json!({ "schema_version": 1, "suite": "sweep", "curves": curves, "interrupted": false })
}

#[test]
fn sweeps_pair_by_threads_and_block_size() {
    let env = Env::new();
    let a = write(&env, "a.json", &sweep(&[(1, 4096, 1000.0), (1, 65536, 500.0), (4, 4096, 3000.0)]));
    let b = write(&env, "b.json", &sweep(&[(1, 4096, 2000.0), (1, 65536, 400.0), (8, 4096, 5000.0)]));
    let (code, report, text) =
        compare(&env, &[a.to_str().unwrap(), b.to_str().unwrap(), "--fail-if-slower", "10%"]);
    assert_eq!(code, EXIT_SLOWER, "the 64 KiB point lost 20%: {text}");
    assert!((figure(&report, "threads=1 bs=4KiB", "iops")["ratio"].as_f64().unwrap() - 2.0).abs() < 1e-12);
    assert!((figure(&report, "threads=1 bs=64KiB", "iops")["ratio"].as_f64().unwrap() - 0.8).abs() < 1e-12);
    let unmatched = report["comparisons"][0]["unmatched"].as_array().unwrap();
    assert!(unmatched.iter().any(|u| u == "threads=4 bs=4KiB"), "{unmatched:?}");
    assert!(unmatched.iter().any(|u| u == "threads=8 bs=4KiB"), "{unmatched:?}");
}

#[test]
fn more_files_compare_each_with_the_first() {
    let env = Env::new();
    let a = write(&env, "a.json", &run(1000.0, 0.001));
    let b = write(&env, "b.json", &run(1100.0, 0.001));
    let c = write(&env, "c.json", &run(1200.0, 0.001));
    let (code, report, text) =
        compare(&env, &[a.to_str().unwrap(), b.to_str().unwrap(), c.to_str().unwrap()]);
    assert_eq!(code, 0, "{text}");
    let comparisons = report["comparisons"].as_array().unwrap();
    assert_eq!(comparisons.len(), 2);
    assert!(comparisons[1]["after"]["file"].as_str().unwrap().ends_with("c.json"));
}

#[test]
fn bad_inputs_are_clear_errors_with_valid_json() {
    let env = Env::new();
    let good = write(&env, "good.json", &run(1000.0, 0.001));
    let good = good.to_str().unwrap();
    let broken = env.path("broken.json");
    std::fs::write(&broken, "{\n  \"aggregate\": {\n    \"iops\": 12,,\n").unwrap();
    let foreign = write(&env, "foreign.json", &json!({ "hello": "world" }));
    let failed = write(&env, "failed.json", &json!({ "schema_version": 1, "error": "disk on fire" }));
    let swept = write(&env, "sweep.json", &sweep(&[(1, 4096, 1.0)]));
    let wrong_type = write(&env, "wrong.json", &json!({ "aggregate": { "iops": "fast" } }));

    let cases: Vec<(Vec<String>, i32, &str)> = vec![
        (vec![good.into(), broken.display().to_string()], 2, "broken.json: line 3"),
        (vec![good.into(), foreign.display().to_string()], 2, "foreign.json"),
        (vec![good.into(), failed.display().to_string()], 2, "disk on fire"),
        (vec![good.into(), swept.display().to_string()], 2, "cannot be compared"),
        (vec![good.into(), wrong_type.display().to_string()], 2, "aggregate.iops"),
        (vec![good.into(), env.path("missing.json").display().to_string()], 2, "missing.json"),
        (vec![good.into(), good.into(), "--fail-if-slower".into(), "fast".into()], 2, "--fail-if-slower"),
        (vec![good.into(), good.into(), "--fail-if-slower".into(), "150%".into()], 2, "--fail-if-slower"),
    ];
    for (args, expected, needle) in cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (code, report, text) = compare(&env, &args);
        assert_eq!(code, expected, "{args:?}: {text}");
        assert!(text.contains(needle), "{args:?}: expected {needle:?} in:\n{text}");
        assert!(report["error"]["message"].as_str().unwrap().contains(needle), "{report:#}");
    }
}

#[test]
fn a_real_pair_of_tiny_runs() {
    let env = Env::new();
    let dir = env.mkdir("data");
    let mut results = Vec::new();
    for name in ["one.json", "two.json"] {
        let json = env.path(name);
        let out = env
            .iolens()
            .args(["run", "--engine", "null", "--size", "1m", "--time", "100ms", "-q", "--target"])
            .arg(&dir)
            .arg("--json")
            .arg(&json)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        results.push(json);
    }
    let (code, report, text) = compare(&env, &[results[0].to_str().unwrap(), results[1].to_str().unwrap()]);
    assert_eq!(code, 0, "{text}");
    for metric in ["iops", "bw_bytes_s", "bps", "arpt_s", "lat_p99_ns"] {
        let f = figure(&report, "aggregate", metric);
        assert!(f["ratio"].as_f64().is_some_and(|r| r.is_finite() && r > 0.0), "{f}");
    }
}
