//! End-to-end tests of `iolens run`: small jobs on temporary directories.

mod devices;
mod errors;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::util::{holds_written_data, iolens, read_json, require, require_some, run_ok, u, wait_for};

fn dir_entries(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    v.sort();
    v
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

/// A scratch directory on the real disk (not tmpfs), inside the build's target directory.
fn scratch() -> tempfile::TempDir {
    let base = Path::new(env!("CARGO_TARGET_TMPDIR"));
    tempfile::tempdir_in(base).unwrap()
}

#[test]
fn size_driven_random_reads_have_consistent_figures() {
    let dir = scratch();
    let json = dir.path().join("out").with_extension("json");
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    run_ok(&[
        "run",
        "--quiet",
        "--target",
        data.to_str().unwrap(),
        "--rw",
        "randread",
        "--bs",
        "4k",
        "--threads",
        "2",
        "--size",
        "4m",
        "--bytes",
        "2m",
        "--json",
        json.to_str().unwrap(),
    ]);
    let v = read_json(&json);
    assert_eq!(v["schema_version"], 2);
    assert_eq!(v["interrupted"], false);
    assert!(v["error"].is_null());
    let agg = &v["aggregate"];
    assert_eq!(u(&agg["ops"]), 2 * 512, "2 agents × 2 MiB / 4 KiB");
    assert_eq!(u(&agg["bytes"]), u(&agg["ops"]) * 4096);
    assert_eq!(u(&agg["read_ops"]), u(&agg["ops"]));
    let agents = v["agents"].as_array().unwrap();
    assert_eq!(agents.len(), 2);
    for a in agents {
        assert_eq!(u(&a["ops"]) * 4096, u(&a["bytes"]));
        assert_eq!(a["rw"], "randread");
        // An agent's busy time is its own union: at most its wall time.
        assert!(f(&a["busy_s"]) <= f(&a["wall_s"]) + 1e-9);
    }
    let busy = f(&agg["busy_s"]);
    let max_agent_busy = agents.iter().map(|a| f(&a["busy_s"])).fold(0.0, f64::max);
    let sum_agent_busy: f64 = agents.iter().map(|a| f(&a["busy_s"])).sum();
    assert!(busy >= max_agent_busy - 1e-9, "union covers each agent");
    assert!(busy <= sum_agent_busy + 1e-9, "overlaps counted once");
    assert!((f(&agg["bps"]) - u(&agg["bytes"]) as f64 / 512.0 / busy).abs() / f(&agg["bps"]) < 1e-9);
    assert!((f(&agg["io_wait_fraction"]) - busy / f(&agg["wall_s"])).abs() < 1e-9);
    let lat = &agg["lat_ns"];
    for k in ["min", "mean", "max", "p50", "p90", "p95", "p99", "p99_9", "p99_99"] {
        assert!(lat[k].is_number(), "lat_ns.{k}");
    }
    assert!(
        u(&lat["min"]) <= u(&lat["p50"])
            && u(&lat["p50"]) <= u(&lat["p99"])
            && u(&lat["p99"]) <= u(&lat["max"])
    );
    assert!(agg["cpu"]["per_op_ns"].is_number());
    assert_eq!(dir_entries(&data), Vec::<PathBuf>::new(), "created files are removed");
}

#[test]
fn sequential_write_lays_down_incompressible_data() {
    let dir = scratch();
    let json = dir.path().join("w.json");
    run_ok(&[
        "run",
        "--quiet",
        "--target",
        dir.path().to_str().unwrap(),
        "--rw",
        "write",
        "--bs",
        "64k",
        "--size",
        "1m",
        "--fsync",
        "end",
        "--keep",
        "--json",
        json.to_str().unwrap(),
    ]);
    let v = read_json(&json);
    assert_eq!(u(&v["aggregate"]["bytes"]), 1 << 20, "one pass over the region");
    assert_eq!(u(&v["aggregate"]["ops"]), 16);
    assert_eq!(u(&v["aggregate"]["fsyncs"]), 1);
    let file =
        dir_entries(dir.path()).into_iter().find(|p| p.extension().is_some_and(|e| e == "dat")).unwrap();
    let data = std::fs::read(&file).unwrap();
    assert_eq!(data.len(), 1 << 20);
    for block in data.chunks(4096) {
        let mut seen = [false; 256];
        block.iter().for_each(|b| seen[*b as usize] = true);
        assert!(seen.iter().filter(|s| **s).count() > 200, "every block holds random-looking data");
    }
}

#[test]
fn job_file_with_two_agents_runs_both() {
    let dir = scratch();
    let job = dir.path().join("two.toml");
    std::fs::write(
        &job,
        "name = \"two\"\nblock_unit = 4096\n[defaults]\ntarget = \".\"\nsize = \"2m\"\n\n\
         [[agent]]\nname = \"r\"\nrw = \"randread\"\nbs = \"4k:50,8k:50\"\nbytes = \"1m\"\n\n\
         [[agent]]\nname = \"w\"\nrw = \"write\"\nbs = \"128k\"\nfsync = 4\n",
    )
    .unwrap();
    let json = dir.path().join("two.json");
    let csv = dir.path().join("two.csv");
    run_ok(&[
        "run",
        "--quiet",
        "--job",
        job.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
        "--csv",
        csv.to_str().unwrap(),
    ]);
    let v = read_json(&json);
    let agents = v["agents"].as_array().unwrap();
    assert_eq!(agents.len(), 2);
    assert_eq!(agents[0]["name"], "r");
    assert_eq!(u(&agents[0]["bytes"]), 1 << 20);
    assert_eq!(agents[0]["bs_spec"], "4KiB:50,8KiB:50");
    assert_eq!(u(&agents[1]["bytes"]), 2 << 20, "one pass over a 2 MiB region");
    assert_eq!(u(&agents[1]["fsyncs"]), 4, "every 4 of 16 writes");
    assert_eq!(u(&v["aggregate"]["block_unit_bytes"]), 4096);
    let csv = std::fs::read_to_string(&csv).unwrap();
    assert_eq!(csv.lines().count(), 4, "header, two agents, aggregate");
    assert!(csv.lines().last().unwrap().starts_with("aggregate,two,"));
}

#[test]
fn null_engine_measures_only_the_tool() {
    let dir = scratch();
    let json = dir.path().join("n.json");
    run_ok(&[
        "run",
        "--quiet",
        "--target",
        dir.path().to_str().unwrap(),
        "--engine",
        "null",
        "--time",
        "300ms",
        "--json",
        json.to_str().unwrap(),
    ]);
    let v = read_json(&json);
    assert!(u(&v["aggregate"]["ops"]) > 10_000);
    assert!(v["device"].is_null());
    assert_eq!(dir_entries(dir.path()), vec![json.clone()], "the null engine creates no files");
}

#[test]
fn io_uring_direct_reads_and_trace_file() {
    let dir = scratch();
    let json = dir.path().join("u.json");
    let trace = dir.path().join("u.iolt");
    let data = dir.path().join("d");
    std::fs::create_dir(&data).unwrap();
    run_ok(&[
        "run",
        "--quiet",
        "--target",
        data.to_str().unwrap(),
        "--rw",
        "randread",
        "--bs",
        "4k",
        "--engine",
        "io_uring",
        "--qd",
        "8",
        "--direct",
        "--size",
        "8m",
        "--bytes",
        "4m",
        "--trace",
        trace.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
    ]);
    let v = read_json(&json);
    assert_eq!(u(&v["aggregate"]["ops"]), 1024);
    assert_eq!(v["agents"][0]["qd"], 8);
    assert_eq!(v["agents"][0]["direct"], true);
    let dev = &v["device"];
    if !dev.is_null() {
        // O_DIRECT reads cannot come from the page cache: the device saw at least most of them.
        assert!(u(&dev["read_bytes"]) >= 2 << 20, "device read {}", dev["read_bytes"]);
    }
    let reader = iolens_record::trace::TraceReader::open(&trace).unwrap();
    let recs: Vec<_> = reader.map(|r| r.unwrap()).collect();
    let reads: Vec<_> = recs.iter().filter(|r| r.kind == iolens_record::OpKind::Read).collect();
    assert_eq!(reads.len(), 1024);
    assert!(reads.iter().all(|r| r.bytes == 4096 && r.offset % 4096 == 0 && r.end_ns >= r.start_ns));
    assert_eq!(recs.len(), 1025, "and the close of the file, inside the phase");
    let mut ivs: Vec<_> = recs.iter().map(|r| iolens_record::Interval::new(r.start_ns, r.end_ns)).collect();
    let union = iolens_record::busy::union_of(&mut ivs);
    let busy_ns = (f(&v["aggregate"]["busy_s"]) * 1e9).round() as i64;
    assert!(
        (union.busy_ns as i64 - busy_ns).abs() <= 1000,
        "streaming union {busy_ns} = trace union {}",
        union.busy_ns
    );
}

#[test]
fn ctrl_c_keeps_results_and_removes_files() {
    let dir = scratch();
    let json = dir.path().join("i.json");
    let data = dir.path().join("d");
    std::fs::create_dir(&data).unwrap();
    let child = iolens()
        .args(["run", "--quiet", "--target", data.to_str().unwrap(), "--rw", "randwrite", "--size", "4m"])
        .args(["--time", "60s", "--json", json.to_str().unwrap()])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until the run is under way (it has written into its file), then interrupt it.
    wait_for("the run to write into its file", || dir_entries(&data).iter().any(|f| holds_written_data(f)));
    // SAFETY: sending a signal to our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130));
    let v = read_json(&json);
    assert_eq!(v["interrupted"], true);
    assert!(u(&v["aggregate"]["ops"]) > 0, "results so far are kept");
    // Not a speed limit: the run was asked for 60 s, and ending well before is what SIGINT did.
    assert!(f(&v["aggregate"]["wall_s"]) < 30.0, "stopped early");
    assert_eq!(dir_entries(&data), Vec::<PathBuf>::new(), "created files removed on Ctrl-C");
}

#[test]
fn rate_ramp_and_mix_shape_the_load() {
    let dir = scratch();
    let json = dir.path().join("r.json");
    // 200 ops/s for 1 s after a 300 ms ramp: the ramp's ops are not counted.
    run_ok(&[
        "run",
        "--quiet",
        "--target",
        dir.path().to_str().unwrap(),
        "--rw",
        "randrw",
        "--read-pct",
        "70",
        "--rate",
        "200",
        "--ramp",
        "300ms",
        "--time",
        "1s",
        "--size",
        "1m",
        "--json",
        json.to_str().unwrap(),
    ]);
    let v = read_json(&json);
    let agg = &v["aggregate"];
    let ops = u(&agg["ops"]);
    assert!((120..=240).contains(&ops), "about 200 ops in the measured second, got {ops}");
    let wall = f(&agg["wall_s"]);
    assert!((0.9..1.6).contains(&wall), "the window excludes the ramp: {wall}");
    assert!(f(&agg["io_wait_fraction"]) < 0.5, "a paced agent is mostly idle");
    assert_eq!(u(&agg["read_ops"]) + u(&agg["write_ops"]), ops);
    assert!(u(&agg["read_ops"]) > u(&agg["write_ops"]), "70% reads");
}

#[test]
fn patterns_and_distributions_run() {
    let dir = scratch();
    for extra in [
        &["--rw", "read", "--bs", "16k"][..],
        &["--rw", "randread", "--distribution", "zipf", "--zipf-theta", "1.1"],
        &["--rw", "randread", "--distribution", "normal", "--hot-spot", "0.3", "--spread", "0.05"],
        &["--rw", "randread", "--bs", "4k:50,16k:50"],
    ] {
        let json = dir.path().join("p.json");
        let mut args =
            vec!["run", "--quiet", "--target", dir.path().to_str().unwrap(), "--size", "2m", "--bytes", "1m"];
        args.extend_from_slice(extra);
        args.extend_from_slice(&["--json", json.to_str().unwrap()]);
        run_ok(&args);
        let v = read_json(&json);
        assert!(u(&v["aggregate"]["bytes"]) >= 1 << 20, "{extra:?}");
        assert!(u(&v["aggregate"]["bytes"]) < (1 << 20) + (16 << 10), "{extra:?}");
    }
}

#[test]
fn busy_time_of_concurrent_processes_merges_exactly() {
    // Two processes standing in for two ranks, running at the same time.
    let dir = scratch();
    let children: Vec<_> = (0..2)
        .map(|rank| {
            let d = dir.path().join(format!("rank{rank}"));
            std::fs::create_dir(&d).unwrap();
            iolens()
                .args(["run", "--quiet", "--target", d.to_str().unwrap(), "--rw", "randread", "--size", "4m"])
                .args(["--time", "300ms", "--rate", "2000"])
                .arg("--busy-log")
                .arg(dir.path().join(format!("rank{rank}.busy")))
                .arg("--trace")
                .arg(dir.path().join(format!("rank{rank}.iolt")))
                .stdout(std::process::Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    for mut c in children {
        assert!(c.wait().unwrap().success());
    }
    let logs = (0..2)
        .map(|r| iolens_record::busy::read_period_log(&dir.path().join(format!("rank{r}.busy"))).unwrap())
        .collect();
    let merged = iolens_record::busy::merge_sorted_streams(logs);
    let mut all = vec![];
    for r in 0..2 {
        let trace =
            iolens_record::trace::TraceReader::open(&dir.path().join(format!("rank{r}.iolt"))).unwrap();
        all.extend(
            trace.map(|rec| rec.unwrap()).map(|rec| iolens_record::Interval::new(rec.start_ns, rec.end_ns)),
        );
    }
    assert!(all.len() > 100);
    let reference = iolens_record::busy::union_of(&mut all);
    assert_eq!(merged.busy_ns, reference.busy_ns, "merged logs = union of every op of both processes");
}

#[test]
fn noncontiguous_reads_keep_application_bytes_while_sieving_moves_more() {
    let dir = scratch();
    let run = |sieve: bool, spacing: &str| -> Value {
        let json = dir.path().join(format!("nc-{sieve}-{spacing}.json"));
        let mut args = vec!["run", "--target", dir.path().to_str().unwrap(), "--rw", "read", "--pattern"];
        args.extend(["noncontig", "--regions", "32", "--region-size", "16", "--spacing", spacing]);
        args.extend(["--size", "8m", "--bytes", "64k", "-q", "--json", json.to_str().unwrap()]);
        if sieve {
            args.push("--sieve");
        }
        run_ok(&args);
        read_json(&json)["aggregate"].clone()
    };
    for spacing in ["64", "4k"] {
        let plain = run(false, spacing);
        let sieved = run(true, spacing);
        assert_eq!(u(&plain["bytes"]), 64 << 10, "application bytes are fixed");
        assert_eq!(u(&sieved["bytes"]), 64 << 10);
        assert_eq!(
            u(&plain["moved_bytes"]),
            u(&plain["bytes"]),
            "one call per region moves just the regions"
        );
        assert_eq!(u(&plain["ops"]), (64 << 10) / 16);
        let gap: u64 = if spacing == "64" { 64 } else { 4096 };
        // Each access of 32 regions is one sieved call covering its 31 holes.
        let accesses = (64 << 10) / (32 * 16);
        assert_eq!(u(&sieved["ops"]), accesses);
        assert_eq!(u(&sieved["moved_bytes"]), accesses * (32 * 16 + 31 * gap));
    }
}

#[test]
fn repeated_runs_keep_every_value_and_summarize_them() {
    let dir = scratch();
    let json = dir.path().join("r.json");
    let csv = dir.path().join("r.csv");
    run_ok(&[
        "run",
        "--target",
        dir.path().to_str().unwrap(),
        "--engine",
        "null",
        "--size",
        "1m",
        "--bytes",
        "4m",
        "--repeat",
        "3",
        "-q",
        "--json",
        json.to_str().unwrap(),
        "--csv",
        csv.to_str().unwrap(),
    ]);
    let v = read_json(&json);
    assert_eq!((u(&v["repeat"]), u(&v["completed"])), (3, 3));
    assert_eq!(v["runs"].as_array().unwrap().len(), 3);
    let iops = v["summary"].as_array().unwrap().iter().find(|m| m["name"] == "iops").unwrap();
    let values: Vec<f64> = iops["values"].as_array().unwrap().iter().map(f).collect();
    let per_run: Vec<f64> =
        v["runs"].as_array().unwrap().iter().map(|r| f(&r["aggregate"]["iops"])).collect();
    assert_eq!(values, per_run, "the values are the repetitions' own");
    let mean = values.iter().sum::<f64>() / 3.0;
    assert!((f(&iops["mean"]) - mean).abs() < 1e-9 * mean);
    assert!(f(&iops["ci95_low"]) <= mean && mean <= f(&iops["ci95_high"]));
    let text = std::fs::read_to_string(&csv).unwrap();
    assert_eq!(text.lines().count(), 4, "a header and one row per repetition:\n{text}");
    assert!(text.starts_with("repetition,"));
}

/// Started by mpirun (here: its environment) without MPI support built in, every rank refuses
/// before touching the target: alone, each would write the same file and the same JSON.
#[cfg(not(feature = "mpi"))]
#[test]
fn an_mpi_launch_is_refused_by_a_build_without_mpi() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    for rank in ["0", "1"] {
        let out = iolens()
            .args([
                "run",
                "--target",
                dir.path().to_str().unwrap(),
                "--rw",
                "write",
                "--size",
                "1m",
                "--bytes",
                "1m",
            ])
            .args(["--json", json.to_str().unwrap()])
            .env("OMPI_COMM_WORLD_SIZE", "2")
            .env("OMPI_COMM_WORLD_RANK", rank)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "rank {rank}: {err}");
        assert!(err.contains("rank") && err.contains("built without MPI support"), "{err}");
        assert!(err.contains("cargo build --release --features mpi"), "{err}");
        assert!(out.stdout.is_empty());
        assert!(
            dir_entries(dir.path()).is_empty(),
            "rank {rank} touched the target: {:?}",
            dir_entries(dir.path())
        );
    }
    // PMI (MPICH, Intel MPI) and an explicit --mpi are refused the same way.
    let out = iolens()
        .args(["run", "--target", dir.path().to_str().unwrap(), "--engine", "null", "--bytes", "1m"])
        .env("PMI_SIZE", "4")
        .env("PMI_RANK", "3")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let out = iolens()
        .args(["run", "--mpi", "--target", dir.path().to_str().unwrap(), "--engine", "null"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("without MPI support"));
    // A launcher's single process runs as today.
    let out = iolens()
        .args(["run", "--target", dir.path().to_str().unwrap(), "--engine", "null", "--bytes", "1m", "-q"])
        .env("OMPI_COMM_WORLD_SIZE", "1")
        .env("OMPI_COMM_WORLD_RANK", "0")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

fn warning_codes(v: &Value) -> Vec<String> {
    v["warnings"].as_array().unwrap().iter().map(|w| w["code"].as_str().unwrap().to_string()).collect()
}

#[test]
fn an_unreachable_rate_is_a_warning_and_a_reachable_one_is_not() {
    let dir = scratch();
    let json = dir.path().join("r.json");
    let run = |rate: &str, time: &str| {
        let target = dir.path().to_str().unwrap();
        run_ok(&[
            "run",
            "--quiet",
            "--target",
            target,
            "--engine",
            "null",
            "--rate",
            rate,
            "--time",
            time,
            "--json",
            json.to_str().unwrap(),
        ]);
        read_json(&json)
    };
    // A nanosecond between requests: no engine, not even the null one, keeps that pace.
    let v = run("1e9", "300ms");
    assert!(warning_codes(&v).contains(&"rate_not_reached".to_string()), "{}", v["warnings"]);
    let w = v["warnings"].as_array().unwrap().iter().find(|w| w["code"] == "rate_not_reached").unwrap();
    let msg = w["message"].as_str().unwrap();
    assert!(msg.contains("agent0") && msg.contains("1000000000"), "asked and achieved per agent: {msg}");
    assert_eq!(f(&v["agents"][0]["rate_iops"]), 1e9, "the asked rate is in the agent's record");
    // 50 ops/s for a second is within reach of anything (a late op is not caught up on, so a
    // stall of several gaps would be a real shortfall, and a warning).
    let v = run("50", "1s");
    assert!(!warning_codes(&v).contains(&"rate_not_reached".to_string()), "{}", v["warnings"]);
}

#[test]
fn random_writes_cover_every_block_once_by_default() {
    let dir = scratch();
    let trace = dir.path().join("t.bin");
    let json = dir.path().join("w.json");
    let target = dir.path().join("data");
    std::fs::create_dir(&target).unwrap();
    let args = |map: Option<&str>| {
        let mut a = vec![
            "run".to_string(),
            "--quiet".into(),
            "--target".into(),
            target.to_str().unwrap().into(),
            "--rw".into(),
            "randwrite".into(),
            "--size".into(),
            "1m".into(),
            "--trace".into(),
            trace.to_str().unwrap().into(),
            "--json".into(),
            json.to_str().unwrap().into(),
        ];
        if let Some(m) = map {
            a.extend(["--random-map".into(), m.into()]);
        }
        a
    };
    let offsets = |map: Option<&str>| -> Vec<u64> {
        let a = args(map);
        run_ok(&a.iter().map(String::as_str).collect::<Vec<_>>());
        assert_eq!(read_json(&json)["agents"][0]["random_map"].as_bool(), Some(map != Some("false")));
        let csv_path = dir.path().join("t.csv");
        let out = iolens().arg("analyze").arg(&trace).arg("--csv").arg(&csv_path).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let csv = std::fs::read_to_string(&csv_path).unwrap();
        let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
        let (op, offset) = (
            header.iter().position(|h| *h == "op").unwrap(),
            header.iter().position(|h| *h == "offset").unwrap(),
        );
        csv.lines()
            .skip(1)
            .map(|l| l.split(',').collect::<Vec<_>>())
            .filter(|cells| cells[op] == "write")
            .map(|cells| cells[offset].parse().unwrap())
            .collect()
    };
    let mut mapped = offsets(None);
    assert_eq!(mapped.len(), 256, "one pass over a 1 MiB region of 4 KiB blocks");
    mapped.sort_unstable();
    assert_eq!(mapped, (0..256).map(|b| b * 4096).collect::<Vec<u64>>(), "each block exactly once");
    let unmapped = offsets(Some("false"));
    let distinct: std::collections::BTreeSet<&u64> = unmapped.iter().collect();
    assert!(distinct.len() < 256, "with replacement some blocks repeat");
}

/// The run's text fits a 100-column terminal: targets below the table (a long path shortened
/// in the middle, its file name kept), the figures that do not fit in a second table, and long
/// notes wrapped; the numbers stay aligned in their columns.
#[test]
fn the_run_table_fits_100_columns() {
    let dir = scratch();
    let deep = dir.path().join("a-rather-long-directory-name/".repeat(5));
    std::fs::create_dir_all(&deep).unwrap();
    let mut args = vec!["run", "--target", deep.to_str().unwrap(), "--rw", "randrw", "--bs", "4k"];
    args.extend(["--size", "4m", "--time", "200ms", "--threads", "2", "--engine", "io_uring", "--qd", "8"]);
    let out = run_ok(&args);
    let text = String::from_utf8_lossy(&out.stdout);
    let wide: Vec<&str> = text.lines().filter(|l| l.chars().count() > 100).collect();
    assert!(wide.is_empty(), "lines over 100 columns: {wide:#?}\n{text}");
    for agent in ["agent0", "agent1"] {
        let target = text.lines().find(|l| l.starts_with(agent) && l.contains(" target ")).unwrap();
        assert!(target.contains('…') && target.ends_with(&format!("iolens-run-{agent}.dat")), "{target}");
    }
    // Every figure still shown: the headers of both tables together.
    for column in
        ["ops", "IOPS", "MiB/s", "BPS", "busy_s", "io_wait", "ARPT", "p50", "p99", "p99.9", "cpu/op"]
    {
        assert!(
            text.lines().any(|l| l.starts_with("agent ") && l.split_whitespace().any(|w| w == column)),
            "{column}"
        );
    }
}
