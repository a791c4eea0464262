//! The suites with tiny sizes and times: shape and internal consistency of tables and JSON.

use std::process::Command;

use serde_json::Value;

fn iolens() -> Command {
    Command::new(env!("CARGO_BIN_EXE_iolens"))
}

fn scratch() -> tempfile::TempDir {
    tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap()
}

fn run_json(args: &[&str], dir: &tempfile::TempDir) -> (Value, String) {
    let json = dir.path().join("out.json");
    let out = iolens().args(args).arg("--json").arg(&json).arg("-q").output().unwrap();
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    let v = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    (v, String::from_utf8_lossy(&out.stdout).into_owned())
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap()
}

#[test]
fn sweep_points_are_consistent_and_marked() {
    let dir = scratch();
    let data = dir.path().join("d");
    std::fs::create_dir(&data).unwrap();
    let (v, table) = run_json(
        &[
            "sweep",
            data.to_str().unwrap(),
            "--threads",
            "1,2",
            "--time",
            "150ms",
            "--size",
            "8m",
            "--min-bs",
            "4k",
            "--max-bs",
            "64k",
        ],
        &dir,
    );
    let curves = v["curves"].as_array().unwrap();
    assert_eq!(curves.len(), 2);
    for c in curves {
        let points = c["points"].as_array().unwrap();
        let sizes: Vec<u64> = points.iter().map(|p| p["bs_bytes"].as_u64().unwrap()).collect();
        assert_eq!(sizes, vec![4096, 8192, 16384, 32768, 65536]);
        for p in points {
            assert_eq!(
                p["bytes"].as_u64().unwrap(),
                p["ops"].as_u64().unwrap() * p["bs_bytes"].as_u64().unwrap()
            );
            assert!(
                f(&p["bw_bytes_s"]) > 0.0
                    && p["lat_ns"]["p99"].as_u64().unwrap() >= p["lat_ns"]["p50"].as_u64().unwrap()
            );
        }
        // The knee: the largest size at or after the IOPS peak still within 90% of it. It exists
        // for every curve with a positive peak, whatever its shape.
        let iops: Vec<f64> = points.iter().map(|p| f(&p["iops"])).collect();
        let peak = iops.iter().copied().fold(0.0, f64::max);
        assert!(peak > 0.0, "{c}");
        let peak_at = iops.iter().position(|x| *x == peak).unwrap();
        let knee = c["knee_bs_bytes"].as_u64().expect("a curve with a positive peak has a knee");
        let knee_at = sizes.iter().position(|s| *s == knee).unwrap();
        assert!(knee_at >= peak_at, "the knee is at or after the peak: {c}");
        assert!(iops[knee_at] >= 0.9 * peak, "{c}");
        assert!(
            iops[knee_at + 1..].iter().all(|x| *x < 0.9 * peak),
            "the knee is the last size within 90%: {c}"
        );
        assert_eq!(c["knee_note"].is_string(), knee_at == sizes.len() - 1, "{c}");
        assert!(sizes.contains(&c["bw90_bs_bytes"].as_u64().unwrap()));
    }
    assert!(table.contains("<- knee"), "{table}");
    assert_eq!(std::fs::read_dir(&data).unwrap().count(), 0, "the sweep removes its file");
}

#[test]
fn saturate_finds_a_point_on_its_curve() {
    let dir = scratch();
    let (v, table) = run_json(
        &[
            "saturate",
            dir.path().to_str().unwrap(),
            "--time",
            "150ms",
            "--size",
            "8m",
            "--max-concurrency",
            "8",
            "--rw",
            "randread",
        ],
        &dir,
    );
    let c = &v["curves"][0];
    let points = c["points"].as_array().unwrap();
    let conc: Vec<u64> = points.iter().map(|p| p["concurrency"].as_u64().unwrap()).collect();
    assert_eq!(&conc[..2], &[1, 2], "doubling from 1");
    let sat = c["saturation_concurrency"].as_u64().unwrap();
    let at = points.iter().find(|p| p["concurrency"].as_u64() == Some(sat)).unwrap();
    assert!(f(&at["iops"]) >= 0.9 * f(&c["peak_iops"]));
    assert!(table.contains("saturation:"));
}

#[test]
fn write_modes_break_the_phase_down() {
    let dir = scratch();
    let target = dir.path().join("d");
    std::fs::create_dir(&target).unwrap();
    let (v, table) =
        run_json(&["write-modes", target.to_str().unwrap(), "--bytes", "8m", "--threads", "2"], &dir);
    let modes = v["modes"].as_array().unwrap();
    let names: Vec<&str> = modes.iter().map(|m| m["mode"].as_str().unwrap()).collect();
    assert_eq!(names, ["naive", "fsync", "direct"]);
    // Size-driven: every mode writes exactly what was asked, each 4 KiB block once (a random
    // permutation per thread), on fresh files.
    assert_eq!(v["bytes_per_mode"].as_u64(), Some(8 << 20));
    assert_eq!(v["threads"].as_u64(), Some(2));
    assert_eq!(v["region_per_thread_bytes"].as_u64(), Some(4 << 20));
    assert_eq!(v["random_map"].as_bool(), Some(true));
    assert_eq!(v["fresh_files"].as_bool(), Some(true));
    assert!(v["sizing"]["reason"].as_str().unwrap().contains("--bytes"), "{}", v["sizing"]);
    assert!(v["sizing"]["dirty_limit_bytes"].as_u64().unwrap() > 0, "the dirty limit is reported");
    for m in modes {
        assert_eq!(m["bytes"].as_u64(), Some(8 << 20), "{}", m["mode"]);
        assert_eq!(m["ops"].as_u64(), Some(2048));
        assert_eq!(m["capped_by_time"].as_bool(), Some(false));
        let parts = f(&m["write_s"]) + f(&m["fsync_s"]) + f(&m["close_s"]);
        assert!(parts <= f(&m["phase_s"]) * 2.0 + 1e-6, "the parts fit in the threads' phases");
        assert!(f(&m["effective_iops"]) <= f(&m["apparent_iops"]) + 1e-6);
    }
    assert_eq!(modes[0]["fsync_s"].as_f64(), Some(0.0));
    assert!(f(&modes[1]["fsync_s"]) > 0.0, "the fsync mode times its fsync");
    assert!(table.contains("apparent"));
    assert!(table.contains("8MiB per mode"), "{table}");
    assert_eq!(std::fs::read_dir(&target).unwrap().count(), 0, "each mode's files are removed");
}

#[test]
fn write_modes_default_size_follows_the_dirty_limit() {
    // Without --bytes the size comes from the dirty-page limit; a time cap keeps the test short
    // and is reported as such.
    let dir = scratch();
    let target = dir.path().join("d");
    std::fs::create_dir(&target).unwrap();
    let (v, table) =
        run_json(&["write-modes", target.to_str().unwrap(), "--time", "200ms", "--size", "16m"], &dir);
    let sizing = &v["sizing"];
    let limit = sizing["dirty_limit_bytes"].as_u64().unwrap();
    let want = sizing["multiple"].as_u64().unwrap() * limit;
    let bytes = v["bytes_per_mode"].as_u64().unwrap();
    let free = sizing["free_bytes"].as_u64();
    assert!(bytes == want - want % 4096 || free.is_some_and(|fr| bytes < fr), "{sizing}");
    assert!(sizing["reason"].as_str().unwrap().contains("dirty"), "{sizing}");
    assert!(v["modes"].as_array().unwrap().iter().all(|m| m["capped_by_time"].as_bool() == Some(true)));
    assert!(table.contains("stopped by --time"), "{table}");
}

#[test]
fn beff_io_value_is_recomputed_from_its_protocol() {
    let dir = scratch();
    let target = dir.path().to_str().unwrap().to_string();
    let (v, table) = run_json(
        &["beff-io", &target, "--time", "3s", "--mpart", "2m", "--ranks", "1,2", "--memory", "64m"],
        &dir,
    );
    assert!(table.contains("b_eff_io ="), "{table}");
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * b.abs().max(1.0);
    let method_weights: Vec<f64> = v["method_weights"].as_array().unwrap().iter().map(|p| f(&p[1])).collect();
    let type_weights: Vec<f64> = v["type_weights"].as_array().unwrap().iter().map(f).collect();
    assert!(close(method_weights.iter().sum(), 1.0) && close(type_weights.iter().sum(), 1.0));
    assert_eq!(type_weights[0], 2.0 * type_weights[1], "type 0 counts twice");
    let partitions = v["partitions"].as_array().unwrap();
    assert_eq!(partitions.len(), 2);
    let mut best: f64 = 0.0;
    for p in partitions {
        let ranks = p["ranks"].as_u64().unwrap();
        let patterns = p["patterns"].as_array().unwrap();
        assert_eq!(patterns.len(), 3 * 43, "every pattern of Table 2, three access methods");
        let mut partition = 0.0;
        for (m, method) in ["write", "rewrite", "read"].iter().enumerate() {
            let mut value = 0.0;
            for ty in 0..5u64 {
                let t = p["types"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|t| t["method"] == *method && t["pattern_type"].as_u64() == Some(ty))
                    .unwrap();
                let of_type: Vec<&Value> = patterns
                    .iter()
                    .filter(|x| x["method"] == *method && x["pattern_type"].as_u64() == Some(ty))
                    .collect();
                let bytes: u64 = of_type.iter().map(|x| x["bytes"].as_u64().unwrap()).sum();
                assert_eq!(
                    t["bytes"].as_u64().unwrap(),
                    bytes,
                    "{method} type {ty}: bytes are the patterns'"
                );
                let pattern_time: f64 = of_type.iter().map(|x| f(&x["time_s"])).sum();
                assert!(f(&t["time_s"]) >= pattern_time * 0.999, "open-to-close covers the patterns");
                assert!(close(f(&t["bw_mb_s"]), bytes as f64 / f(&t["time_s"]) / 1e6));
                let call = if *method == "read" { "pread" } else { "pwrite" };
                assert!(t["call"].as_str().unwrap().starts_with(call), "{method} type {ty}: {}", t["call"]);
                if ty >= 3 {
                    assert_eq!(
                        bytes,
                        ranks * p["segment_bytes"].as_u64().unwrap(),
                        "segments filled exactly"
                    );
                }
                value += type_weights[ty as usize] * f(&t["bw_mb_s"]);
            }
            let mv = &p["methods"][m];
            assert_eq!(mv["method"], *method);
            assert!(close(f(&mv["bw_mb_s"]), value), "{method}: {} vs {value}", mv["bw_mb_s"]);
            partition += method_weights[m] * value;
        }
        // Rewrite and read never go past what the initial write laid down.
        for x in patterns.iter().filter(|x| x["method"] != "write") {
            let w = patterns.iter().find(|w| w["method"] == "write" && w["number"] == x["number"]).unwrap();
            assert!(x["calls"].as_u64() <= w["calls"].as_u64());
        }
        assert!(close(f(&p["b_eff_io_mb_s"]), partition));
        best = best.max(partition);
    }
    assert!(close(f(&v["b_eff_io_mb_s"]), best), "the system value is the best partition");
    assert!(f(&v["b_eff_io_mb_s"]) > 0.0);
    let codes: Vec<&str> =
        v["warnings"].as_array().unwrap().iter().map(|w| w["code"].as_str().unwrap()).collect();
    assert!(codes.contains(&"short_run"), "{codes:?}");
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|n| n != "out.json")
        .collect();
    assert!(leftovers.is_empty(), "b_eff_io removes its files: {leftovers:?}");
}

#[test]
fn beff_io_holds_its_scheduled_time_or_says_why() {
    let dir = scratch();
    let target = dir.path().to_str().unwrap().to_string();
    // A small T with small chunks. Checked on the protocol's own clock: the suite's adherence to
    // its schedule, not the storage's speed.
    let (v, table) = run_json(
        &["beff-io", &target, "--time", "3s", "--mpart", "2m", "--ranks", "2", "--memory", "64m"],
        &dir,
    );
    let t = 3.0;
    for p in v["partitions"].as_array().unwrap() {
        assert_eq!(f(&p["scheduled_s"]), t);
        let patterns = p["patterns"].as_array().unwrap();
        let shares: f64 = patterns.iter().map(|x| f(&x["scheduled_s"])).sum();
        assert!((shares - t).abs() < 1e-6, "the patterns' shares add up to T: {shares}");
        // What the scheduler decides: how many calls past the first a time-driven pattern makes.
        // Those must end within what the running schedule left (the closing sync aside).
        let overshoot: f64 = patterns
            .iter()
            .filter(|x| !x["budget_s"].is_null() && x["calls"].as_u64().unwrap() > 1)
            .map(|x| (f(&x["time_s"]) - f(&x["sync_s"]) - f(&x["budget_s"])).max(0.0))
            .sum();
        assert!(overshoot <= 0.1 * t, "time-driven patterns ran {overshoot:.3} s past their budgets");
        let elapsed = f(&p["elapsed_s"]);
        let held = p["schedule_held"].as_bool().unwrap();
        assert_eq!(held, (0.9 * t..=1.1 * t).contains(&elapsed), "{elapsed}");
        if elapsed > 1.1 * t {
            // Only the minimum work (one call and one sync per pattern, the size-driven types)
            // may overrun, and the protocol says which pattern and why.
            let note = p["schedule_note"].as_str().unwrap();
            assert!(note.contains("took longer"), "{note}");
            let late =
                patterns.iter().filter(|x| x["note"].as_str().is_some_and(|n| !n.contains("stopped at")));
            assert!(late.count() > 0);
            let codes: Vec<&str> =
                v["warnings"].as_array().unwrap().iter().map(|w| w["code"].as_str().unwrap()).collect();
            assert!(codes.contains(&"schedule_overrun"), "{codes:?}");
        } else if elapsed < 0.9 * t {
            // Rewrite and read repeat the write's calls: faster than the write, they end early.
            let note = p["schedule_note"].as_str().unwrap();
            assert!(note.contains("finished early"), "{note}");
            assert!(table.contains("T not held: ended early"), "{table}");
        } else {
            assert!(p["schedule_note"].is_null());
        }
        assert!(table.contains("T held") || table.contains("T not held"), "{table}");
    }
    // Chunks too large for T: one call per pattern is the minimum, and the protocol says so.
    let (v, table) = run_json(
        &["beff-io", &target, "--time", "200ms", "--mpart", "32m", "--ranks", "1", "--memory", "64m"],
        &dir,
    );
    let p = &v["partitions"][0];
    if p["schedule_held"].as_bool() == Some(false) {
        let noted: Vec<&Value> =
            p["patterns"].as_array().unwrap().iter().filter(|x| !x["note"].is_null()).collect();
        assert!(noted.iter().any(|x| x["note"].as_str().unwrap().contains("one call")), "{noted:?}");
        assert!(table.contains("T not held"), "{table}");
    } else {
        assert!(f(&p["elapsed_s"]) <= 0.22);
    }
}

/// `--partitions` and `--hint` belong to the MPI-IO version: alone they are refused.
#[test]
fn beff_io_without_mpirun_refuses_partitions_and_hints() {
    let dir = scratch();
    for flags in [["--partitions", "1,2"], ["--hint", "cb_nodes=2"]] {
        let out = iolens()
            .args(["beff-io"])
            .arg(dir.path())
            .args(flags)
            .args(["--time", "1s", "-q"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{flags:?}");
        assert!(String::from_utf8_lossy(&out.stderr).contains("mpirun -np N iolens beff-io"), "{flags:?}");
    }
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "nothing written");
}

#[test]
fn beff_io_rejects_a_file_target() {
    let dir = scratch();
    let file = dir.path().join("f");
    std::fs::write(&file, b"keep me").unwrap();
    let out = iolens().args(["beff-io"]).arg(&file).args(["--time", "1s", "-q"]).output().unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a directory"));
    assert_eq!(std::fs::read(&file).unwrap(), b"keep me");
}

#[test]
fn quick_runs_every_part_and_saves_each_result() {
    let dir = scratch();
    let work = dir.path().join("work");
    let results = dir.path().join("results");
    std::fs::create_dir(&work).unwrap();
    let json = dir.path().join("quick.json");
    let out = iolens()
        .arg("quick")
        .arg(&work)
        .args(["--time", "200ms", "--size", "16m", "-q", "--results"])
        .arg(&results)
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let parts: Vec<&str> =
        v["parts"].as_array().unwrap().iter().map(|p| p["part"].as_str().unwrap()).collect();
    assert_eq!(parts, ["sweep", "saturate", "write-modes", "beff-io"]);
    for p in v["parts"].as_array().unwrap() {
        assert!(p["error"].is_null(), "{p}");
        let file = results.join(p["json"].as_str().unwrap());
        let part: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        assert!(part["schema_version"].as_u64().is_some(), "{}", file.display());
    }
    let beff: Value =
        serde_json::from_str(&std::fs::read_to_string(results.join("beff-io.json")).unwrap()).unwrap();
    assert_eq!(beff["time_s"].as_f64(), Some(6.0), "T scales with --time");
    let figures: Vec<&str> =
        v["headlines"].as_array().unwrap().iter().map(|h| h["figure"].as_str().unwrap()).collect();
    assert!(figures.contains(&"b_eff_io") && figures.contains(&"peak IOPS"), "{figures:?}");
    assert!(v["headlines"].as_array().unwrap().iter().all(|h| !h["measured"].as_str().unwrap().is_empty()));
    assert_eq!(
        std::fs::read_to_string(results.join("quick.json")).unwrap(),
        std::fs::read_to_string(&json).unwrap()
    );
    assert_eq!(std::fs::read_dir(&work).unwrap().count(), 0, "the scratch directory is removed");
    // The headline table fits a 100-column terminal: what was measured wraps in its column,
    // and every headline's first words start a row.
    let stdout = String::from_utf8_lossy(&out.stdout);
    let table: Vec<&str> = stdout
        .lines()
        .skip_while(|l| !l.starts_with("part "))
        .take_while(|l| !l.contains(" s, full result"))
        .collect();
    assert!(table.len() > figures.len(), "{stdout}");
    assert!(table.iter().all(|l| l.chars().count() <= 100), "{stdout}");
    for h in v["headlines"].as_array().unwrap() {
        let start = h["measured"].as_str().unwrap().split(' ').next().unwrap();
        assert!(table.iter().any(|l| l.starts_with(h["part"].as_str().unwrap()) && l.contains(start)), "{h}");
    }
}

/// A mistyped suite target is an error naming it, before anything runs: no file is created at
/// the path (nor anything else beside it), whichever suite, and the JSON result says why.
#[test]
fn a_suite_target_that_does_not_exist_is_refused_and_nothing_is_created() {
    let dir = scratch();
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    let missing = data.join("no-such-dir");
    let m = missing.to_str().unwrap();
    let d = data.to_str().unwrap();
    let small = ["--time", "100ms", "--size", "1m"];
    let cases: Vec<Vec<&str>> = vec![
        [&["sweep", m, "--threads", "1", "--min-bs", "4k", "--max-bs", "4k"][..], &small].concat(),
        [&["saturate", m, "--max-concurrency", "1"][..], &small].concat(),
        vec!["write-modes", m, "--bytes", "1m", "--time", "1s"],
        vec!["beff-io", m, "--ranks", "1", "--time", "1s"],
        vec!["validate", m],
        vec!["validate", d, "--target", m],
        vec!["quick", m],
    ];
    for args in &cases {
        let json = dir.path().join("out.json");
        let out = iolens().args(args).arg("--json").arg(&json).arg("-q").output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: bad input: {stderr}");
        assert!(stderr.contains(m) && stderr.contains("does not exist"), "{args:?}: {stderr}");
        let v: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        assert!(
            v["error"]["message"].as_str().is_some_and(|e| e.contains("does not exist")),
            "{args:?}: {v}"
        );
        let left: Vec<_> = std::fs::read_dir(&data).unwrap().map(|e| e.unwrap().path()).collect();
        assert!(left.is_empty(), "{args:?}: nothing created: {left:?}");
    }
}

/// The suites take their target as `run` does, `--target PATH`, as well as positionally; the
/// same point either way, and one of the two at a time.
#[test]
fn a_suite_takes_its_target_as_run_does() {
    let dir = scratch();
    let data = dir.path().join("d");
    std::fs::create_dir(&data).unwrap();
    let d = data.to_str().unwrap();
    let point = ["--threads", "1", "--time", "100ms", "--size", "1m", "--min-bs", "4k", "--max-bs", "4k"];
    let (positional, _) = run_json(&[&["sweep", d][..], &point].concat(), &dir);
    let (flagged, _) = run_json(&[&["sweep", "--target", d][..], &point].concat(), &dir);
    assert_eq!(positional["target"], flagged["target"], "{positional} vs {flagged}");
    assert_eq!(positional["curves"][0]["points"][0]["bs"], flagged["curves"][0]["points"][0]["bs"]);
    let (modes, _) = run_json(&["write-modes", "--target", d, "--bytes", "1m", "--time", "1s"], &dir);
    assert!(modes["modes"].as_array().is_some_and(|m| !m.is_empty()), "{modes}");
    for args in [vec!["sweep", d, "--target", d], vec!["saturate"], vec!["write-modes"]] {
        let out = iolens().args(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    }
}
