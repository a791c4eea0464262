//! Suites under mpirun: sweep, saturate, write-modes and quick run every point on all ranks,
//! each rank on files of its own.

use super::*;

/// The files in `dir` other than the results the test asked for: what a suite left behind.
fn left_behind(dir: &Path, results: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !results.contains(&n.as_str()))
        .collect();
    v.sort();
    v
}

/// One point of a suite under MPI: a part per rank, in rank order, whose bytes add up to the
/// point's aggregate, each rank on files of its own. Returns each rank's first file.
fn check_ranks_of_point(point: &Value) -> Vec<String> {
    let per_rank = point["per_rank"].as_array().unwrap_or_else(|| panic!("no per_rank in {point}"));
    assert_eq!(per_rank.len(), RANKS, "{point}");
    for (r, share) in per_rank.iter().enumerate() {
        assert_eq!(u(&share["rank"]), r as u64);
        assert!(u(&share["bytes"]) > 0, "rank {r} moved nothing: {point}");
    }
    let sum: u64 = per_rank.iter().map(|r| u(&r["bytes"])).sum();
    assert_eq!(sum, u(&point["bytes"]), "{point}");
    let files: Vec<String> = per_rank.iter().map(|r| r["files"][0].as_str().unwrap().to_string()).collect();
    let distinct: std::collections::BTreeSet<&String> = files.iter().collect();
    assert_eq!(distinct.len(), RANKS, "{files:?}");
    files
}

fn one_table(out: &Output) {
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(stdout.matches("ranks: 4 on").count(), 1, "one table, from rank 0:\n{stdout}");
}

#[test]
fn sweep_runs_every_point_on_all_ranks_each_on_its_own_file() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("sweep.json");
    let out = mpirun(&[
        "sweep",
        dir.path().to_str().unwrap(),
        "--buffered",
        "--threads",
        "1",
        "--min-bs",
        "4k",
        "--max-bs",
        "16k",
        "--size",
        "1m",
        "--time",
        "200ms",
        "-q",
        "--json",
        json.to_str().unwrap(),
    ]);
    one_table(&out);
    let d = read_json(&json);
    assert_eq!(u(&d["ranks"]), RANKS as u64);
    assert!(!d["hosts"].as_array().unwrap().is_empty());
    let points = d["curves"][0]["points"].as_array().unwrap();
    assert_eq!(points.iter().map(|p| u(&p["bs_bytes"])).collect::<Vec<_>>(), vec![4096, 8192, 16384]);
    for p in points {
        let files = check_ranks_of_point(p);
        for (r, f) in files.iter().enumerate() {
            assert!(f.ends_with(&format!("iolens-sweep-r{r}.dat")), "{files:?}");
        }
    }
    assert_eq!(left_behind(dir.path(), &["sweep.json"]), Vec::<String>::new());
}

#[test]
fn saturate_grows_ranks_times_requests_and_counts_the_nodes_that_saturate() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("saturate.json");
    let out = mpirun(&[
        "saturate",
        dir.path().to_str().unwrap(),
        "--buffered",
        "--rw",
        "randread",
        "--max-concurrency",
        "8",
        "--cores-per-node",
        "3",
        "--size",
        "1m",
        "--time",
        "200ms",
        "-q",
        "--json",
        json.to_str().unwrap(),
    ]);
    one_table(&out);
    assert!(String::from_utf8_lossy(&out.stdout).contains("nodes to saturate: "));
    let d = read_json(&json);
    assert_eq!(u(&d["ranks"]), RANKS as u64);
    assert_eq!(u(&d["cores_per_node"]), 3);
    let curve = &d["curves"][0];
    let points = curve["points"].as_array().unwrap();
    let total: Vec<u64> = points.iter().map(|p| u(&p["concurrency"])).collect();
    let each: Vec<u64> = points.iter().map(|p| u(&p["per_rank_concurrency"])).collect();
    assert_eq!((total, each), (vec![4, 8], vec![1, 2]), "ranks × requests per rank, capped at 8 in all");
    for p in points {
        check_ranks_of_point(p);
    }
    let saturation = u(&curve["saturation_concurrency"]);
    assert_eq!(u(&curve["nodes_to_saturate"]), saturation.div_ceil(3));
    assert_eq!(left_behind(dir.path(), &["saturate.json"]), Vec::<String>::new());
}

#[test]
fn write_modes_write_every_ranks_bytes_in_files_of_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("modes.json");
    let out = mpirun(&[
        "write-modes",
        dir.path().to_str().unwrap(),
        "--bytes",
        "256k",
        "-q",
        "--json",
        json.to_str().unwrap(),
    ]);
    one_table(&out);
    let d = read_json(&json);
    assert_eq!(u(&d["ranks"]), RANKS as u64);
    assert_eq!(u(&d["bytes_per_rank"]), 256 << 10);
    assert_eq!(u(&d["bytes_per_mode"]), RANKS as u64 * (256 << 10));
    let modes = d["modes"].as_array().unwrap();
    assert_eq!(modes.len(), 3);
    for m in modes {
        assert_eq!(u(&m["bytes"]), RANKS as u64 * (256 << 10), "{m}");
        check_ranks_of_point(m);
    }
    assert_eq!(left_behind(dir.path(), &["modes.json"]), Vec::<String>::new());
}

#[test]
fn quick_runs_its_parts_across_ranks_and_rank_0_writes_one_page() {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let results = dir.path().join("results");
    let json = dir.path().join("quick.json");
    let out = mpirun(&[
        "quick",
        work.to_str().unwrap(),
        "--time",
        "200ms",
        "--size",
        "64k",
        "--results",
        results.to_str().unwrap(),
        "-q",
        "--json",
        json.to_str().unwrap(),
    ]);
    one_table(&out);
    let d = read_json(&json);
    assert_eq!(u(&d["ranks"]), RANKS as u64);
    let parts = d["parts"].as_array().unwrap();
    for name in ["sweep", "saturate", "write-modes"] {
        let p = parts.iter().find(|p| p["part"] == name).unwrap();
        assert!(p["error"].is_null(), "{p}");
        let part = read_json(&results.join(p["json"].as_str().unwrap()));
        assert_eq!(u(&part["ranks"]), RANKS as u64, "{name}");
    }
    // b_eff_io over MPI-IO, one partition of all ranks.
    let beff = parts.iter().find(|p| p["part"] == "beff-io").unwrap();
    assert!(beff["error"].is_null() && beff["skipped"].is_null(), "{beff}");
    let b = read_json(&results.join(beff["json"].as_str().unwrap()));
    assert_eq!(b["ranks_are"], "MPI processes", "{b}");
    assert_eq!(b["partitions"].as_array().unwrap().len(), 1);
    let sweep = read_json(&results.join("sweep.json"));
    for p in sweep["curves"][0]["points"].as_array().unwrap() {
        check_ranks_of_point(p);
    }
    let saturate = read_json(&results.join("saturate.json"));
    assert_eq!(u(&saturate["curves"][0]["points"][0]["concurrency"]), RANKS as u64);
    assert_eq!(left_behind(&work, &[]), Vec::<String>::new(), "every rank's scratch directory is gone");
}
