//! `iolens run` across ranks: file per process and shared file, `--reorder-ranks` (IOR's `-C`)
//! and `--repeat`.

use super::*;

#[test]
fn file_per_process_one_table_one_json_aggregate_is_the_sum_of_ranks() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("result.json");
    let out = mpirun(&[
        "run",
        "--target",
        dir.path().to_str().unwrap(),
        "--rw",
        "write",
        "--bs",
        "64k",
        "--size",
        "4m",
        "--bytes",
        "4m",
        "--keep",
        "-q",
        "--json",
        json.to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(stdout.matches("ranks: 4 on").count(), 1, "one table, from rank 0:\n{stdout}");
    let files = data_files(dir.path());
    assert_eq!(files.len(), RANKS, "{files:?}");
    for r in 0..RANKS {
        assert!(files.iter().any(|f| f.to_string_lossy().ends_with(&format!("-r{r}.dat"))), "{files:?}");
    }
    let d = read_json(&json);
    assert_eq!(u(&d["ranks"]), RANKS as u64);
    assert_eq!(d["layout"], "file-per-process");
    assert!(!d["hosts"].as_array().unwrap().is_empty());
    let per_rank = d["per_rank"].as_array().unwrap();
    assert_eq!(per_rank.len(), RANKS);
    let sum: u64 = per_rank.iter().map(|r| u(&r["figures"]["bytes"])).sum();
    let ops: u64 = per_rank.iter().map(|r| u(&r["figures"]["ops"])).sum();
    assert_eq!(u(&d["aggregate"]["bytes"]), sum);
    assert_eq!(sum, RANKS as u64 * (4 << 20));
    assert_eq!(u(&d["aggregate"]["ops"]), ops);
    let distinct: std::collections::BTreeSet<&str> =
        per_rank.iter().map(|r| r["files"][0].as_str().unwrap()).collect();
    assert_eq!(distinct.len(), RANKS);
    // The global busy time is a union: no more than the wall, no less than any rank's own.
    let busy = d["aggregate"]["busy_s"].as_f64().unwrap();
    assert!(per_rank.iter().all(|r| r["figures"]["busy_s"].as_f64().unwrap() <= busy + 1e-9));
    assert!(busy <= d["aggregate"]["wall_s"].as_f64().unwrap() + 1e-3);
}

#[test]
fn shared_file_segmented_and_strided_use_one_file() {
    for layout in ["segmented", "strided"] {
        let dir = tempfile::tempdir().unwrap();
        let json = dir.path().join("result.json");
        let trace = dir.path().join("ops.trace");
        mpirun(&[
            "run",
            "--target",
            dir.path().to_str().unwrap(),
            "--rw",
            "write",
            "--bs",
            "64k",
            "--size",
            "2m",
            "--bytes",
            "2m",
            "--shared-file",
            "--layout",
            layout,
            "--keep",
            "-q",
            "--json",
            json.to_str().unwrap(),
            "--trace",
            trace.to_str().unwrap(),
        ]);
        // Every rank's operations land in its own share of the file, and the shares cover it.
        let (region, block) = (2u64 << 20, 64u64 << 10);
        let mut covered = std::collections::BTreeSet::new();
        for r in 0..RANKS as u64 {
            let mut reader = TraceReader::open(&dir.path().join(format!("ops.r{r}.trace"))).unwrap();
            while let Some(op) = reader.next_record().unwrap() {
                if op.kind != OpKind::Write {
                    continue;
                }
                let owner = match layout {
                    "segmented" => op.offset / region,
                    _ => op.offset / block % RANKS as u64,
                };
                assert_eq!(owner, r, "{layout}: rank {r} wrote at {}", op.offset);
                assert!(covered.insert(op.offset), "{layout}: offset {} written twice", op.offset);
            }
        }
        assert_eq!(covered.len() as u64, RANKS as u64 * region / block, "{layout}");
        let files = data_files(dir.path());
        assert_eq!(files.len(), 1, "{layout}: {files:?}");
        assert_eq!(std::fs::metadata(&files[0]).unwrap().len(), RANKS as u64 * (2 << 20), "{layout}");
        let d = read_json(&json);
        assert_eq!(d["layout"], format!("shared-{layout}"));
        assert_eq!(u(&d["aggregate"]["write_bytes"]), RANKS as u64 * (2 << 20), "{layout}");
    }
}

/// mpirun running SCRIPT per rank with its own ownership registry (`state`), not the user's.
fn mpirun_sh_in(state: &Path, script: &str) -> Output {
    let mut c = Command::new("mpirun");
    c.args(["--allow-run-as-root", "--oversubscribe", "-np", &RANKS.to_string(), "sh", "-c", script]);
    c.env("IOLENS_BIN", bin()).env("IOLENS_STATE_DIR", state);
    c.output().expect("mpirun (install openmpi-bin)")
}

/// IOR's `-C`: every rank writes its data stamped with a generation of its own (1000 + rank);
/// then with `--reorder-ranks 1` rank r reads, and verifies against generation 1000 + r + 1,
/// what rank r + 1 wrote — its file, or its segment of the shared file. Without the shift the
/// same expectation fails on every block (exit 3, the failures of all ranks summed).
#[test]
fn reorder_ranks_reads_what_the_next_rank_wrote() {
    for shared in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("state");
        let data = dir.path().join("data");
        std::fs::create_dir(&data).unwrap();
        let layout = if shared { "--shared-file" } else { "" };
        let common = format!("--target '{}' --bs 64k --size 1m --verify crc32c -q {layout}", data.display());
        let write = format!(
           "exec \"$IOLENS_BIN\" run {common} --rw write --keep --verify-generation $((1000 + OMPI_COMM_WORLD_RANK))"
       );
        let out = mpirun_sh_in(&state, &write);
        assert!(out.status.success(), "write: {}", stderr(&out));
        let json = dir.path().join("read.json");
        let read = |extra: &str| {
            format!(
                "exec \"$IOLENS_BIN\" run {common} --rw read --keep --json '{}' {extra} \
                --verify-generation $((1000 + (OMPI_COMM_WORLD_RANK + 1) % {RANKS}))",
                json.display()
            )
        };
        let out = mpirun_sh_in(&state, &read("--reorder-ranks 1"));
        assert!(out.status.success(), "shared {shared}: read: {}", stderr(&out));
        let d = read_json(&json);
        assert_eq!(u(&d["reorder_ranks"]), 1);
        let blocks = RANKS as u64 * 16;
        assert_eq!(u(&d["verify"]["blocks_checked"]), blocks, "shared {shared}: {}", d["verify"]);
        assert_eq!(u(&d["verify"]["failures_total"]), 0, "shared {shared}: {}", d["verify"]);
        for (r, entry) in d["per_rank"].as_array().unwrap().iter().enumerate() {
            let file = entry["files"][0].as_str().unwrap();
            if shared {
                assert!(file.ends_with("iolens-run-shared.dat"), "{file}");
            } else {
                assert!(file.ends_with(&format!("-r{}.dat", (r + 1) % RANKS)), "rank {r} read {file}");
            }
            assert_eq!(u(&entry["result"]["verify"]["blocks_checked"]), 16, "rank {r}");
        }
        if !shared {
            // A job file's reading agent moves the same way (its job and agent names are the
            // flags' ones, so it finds the files the write run kept).
            let job = dir.path().join("read.toml");
            std::fs::write(
               &job,
               format!(
                   "name = \"run\"\n[[agent]]\nname = \"agent0\"\ntarget = \"{}\"\nrw = \"read\"\nbs = \"64k\"\nsize = \"1m\"\n",
                   data.display()
               ),
           )
           .unwrap();
            let script = format!(
                "exec \"$IOLENS_BIN\" run --job '{}' --reorder-ranks 3 -q --json '{}'",
                job.display(),
                json.display()
            );
            let out = mpirun_sh_in(&state, &script);
            assert!(out.status.success(), "job file: {}", stderr(&out));
            let d = read_json(&json);
            for (r, entry) in d["per_rank"].as_array().unwrap().iter().enumerate() {
                let file = entry["files"][0].as_str().unwrap();
                assert!(
                    file.ends_with(&format!("-r{}.dat", (r + 3) % RANKS)),
                    "job file: rank {r} read {file}"
                );
            }
            // That unverified read read the kept files as they were: the written data is still
            // there for the next reader, and no rank dropped a cache it was not asked to.
            let out = mpirun_sh_in(&state, &read("--reorder-ranks 1"));
            assert!(out.status.success(), "read after the job file's: {}", stderr(&out));
            let d = read_json(&json);
            assert_eq!(u(&d["verify"]["failures_total"]), 0, "{}", d["verify"]);
            let targets = d["targets"].as_array().unwrap();
            assert_eq!(targets.len(), RANKS, "{targets:?}");
            for t in targets {
                assert_eq!(
                    (&t["created"], &t["laid_out_bytes"], &t["cache_dropped"]),
                    (&false.into(), &0.into(), &false.into()),
                    "{t}"
                );
            }
        }
        // The control: the same expectation on the rank's own data fails everywhere.
        let out = mpirun_sh_in(&state, &read(""));
        assert_eq!(out.status.code(), Some(3), "shared {shared}: {}", stderr(&out));
        let d = read_json(&json);
        assert_eq!(u(&d["reorder_ranks"]), 0);
        assert_eq!(u(&d["verify"]["failures_total"]), blocks, "shared {shared}: {}", d["verify"]);
        let per_rank: u64 = d["per_rank"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| u(&e["result"]["verify"]["failures_total"]))
            .sum();
        assert_eq!(per_rank, blocks);
        assert!(d["verify"]["failures"][0]["agent"].as_str().unwrap().starts_with("rank "));
    }
}

/// `--reorder-ranks` where it means nothing is refused, naming the reason.
#[test]
fn reorder_ranks_refuses_what_it_cannot_mean() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let target = format!("--target '{}' --bs 64k --size 1m -q", dir.path().display());
    for (args, why) in [
        ("--rw read --reorder-ranks 4", "multiple of the 4 ranks"),
        ("--rw read --reorder-ranks 0", "multiple of the 4 ranks"),
        ("--rw write --reorder-ranks 1", "no agent only reads"),
        ("--rw read --reorder-ranks 1", "does not exist"),
    ] {
        let out = mpirun_sh_in(&state, &format!("exec \"$IOLENS_BIN\" run {target} {args}"));
        assert!(!out.status.success(), "{args}");
        assert!(stderr(&out).contains(why), "{args}: {}", stderr(&out));
    }
    let out = Command::new(bin())
        .args(["run", "--target", dir.path().to_str().unwrap(), "--rw", "read", "--reorder-ranks", "1"])
        .env("IOLENS_STATE_DIR", &state)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("only under MPI"), "{}", stderr(&out));
}

/// `--repeat 3` under mpirun: three combined runs, summarized as without MPI.
#[test]
fn repeat_under_mpi_summarizes_every_combined_run() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("result.json");
    mpirun(&[
        "run",
        "--target",
        dir.path().to_str().unwrap(),
        "--rw",
        "write",
        "--bs",
        "64k",
        "--size",
        "1m",
        "--repeat",
        "3",
        "-q",
        "--json",
        json.to_str().unwrap(),
    ]);
    let d = read_json(&json);
    assert_eq!(u(&d["repeat"]), 3);
    assert_eq!(u(&d["completed"]), 3);
    let runs = d["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 3);
    for run in runs {
        assert_eq!(u(&run["ranks"]), RANKS as u64);
        assert_eq!(run["per_rank"].as_array().unwrap().len(), RANKS);
        assert_eq!(u(&run["aggregate"]["write_bytes"]), RANKS as u64 * (1 << 20));
    }
    let bps = d["summary"].as_array().unwrap().iter().find(|m| m["name"] == "bps").unwrap();
    let values: Vec<f64> = bps["values"].as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect();
    let want: Vec<f64> = runs.iter().map(|r| r["aggregate"]["bps"].as_f64().unwrap()).collect();
    assert_eq!(values, want);
    assert!(data_files(dir.path()).is_empty(), "every repetition removes its files");
}

/// Issue 25: the code paths see more than 4 ranks: 64 ranks (oversubscribed), tiny files, one
/// combined result with every rank in it.
#[test]
fn sixty_four_ranks_make_one_result() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("result.json");
    let out = Command::new("mpirun")
        .args(["--allow-run-as-root", "--oversubscribe", "-np", "64", bin()])
        .args(["run", "--target", dir.path().to_str().unwrap(), "--rw", "write", "--bs", "4k"])
        .args(["--size", "64k", "--bytes", "64k", "-q", "--json", json.to_str().unwrap()])
        .output()
        .expect("mpirun");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let d = read_json(&json);
    assert_eq!(u(&d["ranks"]), 64);
    assert_eq!(d["per_rank"].as_array().unwrap().len(), 64);
    assert_eq!(u(&d["aggregate"]["write_bytes"]), 64 * (64 << 10));
    assert_eq!(u(&d["aggregate"]["ops"]), 64 * 16);
    let ranks: Vec<u64> = d["per_rank"].as_array().unwrap().iter().map(|r| u(&r["rank"])).collect();
    assert_eq!(ranks, (0..64).collect::<Vec<u64>>());
}
