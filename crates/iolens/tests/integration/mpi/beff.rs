//! b_eff (`iolens beff`) and b_eff_io (`iolens beff-io`) under mpirun: their values recomputed
//! from the JSON protocol, and their refusals.

use super::*;

/// `iolens beff --quick` under mpirun -np 4: 21 sizes, 6 ring and 6 random patterns, 3 methods ×
/// 3 repetitions each, every loop timed in 2.5–5 ms where the loop length allows it, and b_eff
/// recomputed from the JSON protocol with the paper's formula equals the reported one.
#[test]
fn beff_quick_protocol_recomputes_b_eff() {
    use iolens_suites::beff::{pattern_results, summarize, BeffOutput, Kind, Method};
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("beff.json");
    let t0 = Instant::now();
    let out = mpirun(&["beff", "--quick", "-q", "--json", json.to_str().unwrap()]);
    let took = t0.elapsed();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(stdout.matches("b_eff = ").count(), 1, "one table, from rank 0:\n{stdout}");
    let o: BeffOutput = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(o.sizes.len(), 21);
    assert_eq!(&o.sizes[..13], &[1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096]);
    assert_eq!(*o.sizes.last().unwrap(), 64 << 10);
    assert_eq!(o.summary.lmax, 64 << 10);
    assert_eq!(o.summary.processes, RANKS);
    assert_eq!(o.patterns.iter().filter(|p| p.kind == Kind::Ring).count(), 6);
    assert_eq!(o.patterns.iter().filter(|p| p.kind == Kind::Random).count(), 6);
    // Ring sizes on 4 ranks: 2,2 for pattern 1, one ring of 4 for the others.
    assert_eq!(o.patterns[0].rings, vec![vec![0, 1], vec![2, 3]]);
    for p in &o.patterns {
        let mut ranks: Vec<usize> = p.rings.iter().flatten().copied().collect();
        ranks.sort();
        assert_eq!(ranks, (0..RANKS).collect::<Vec<_>>(), "{}", p.name);
        for &l in &o.sizes {
            for method in [Method::Sendrecv, Method::Alltoallv, Method::Nonblocking] {
                let n = o
                    .protocol
                    .iter()
                    .filter(|m| m.pattern == p.name && m.size == l && m.method == method)
                    .count();
                assert_eq!(n, 3, "{} L={l} {method:?}: 3 repetitions", p.name);
            }
        }
    }
    assert_eq!(o.protocol.len(), 12 * 21 * 3 * 3);
    for m in &o.protocol {
        assert_eq!(m.messages, 2 * RANKS as u64);
        let b = m.size as f64 * m.messages as f64 * m.loops as f64 / m.time_s;
        assert!((b - m.bandwidth).abs() <= 1e-9 * b, "{m:?}");
        assert!(m.loops >= 1 && m.time_s > 0.0);
    }
    // Most loops land in 2.5–5 ms (a busy, oversubscribed machine may push some out).
    let held = o.protocol.iter().filter(|m| (0.0025..=0.005).contains(&m.time_s)).count();
    assert!(held * 2 > o.protocol.len(), "only {held} of {} loops took 2.5-5 ms", o.protocol.len());
    // b_eff from the protocol: max over methods and reps, mean over the 21 sizes, logavg.
    let results = pattern_results(&o.patterns, &o.sizes, &o.protocol);
    let pp = o.ping_pong.iter().map(|p| p.bandwidth).fold(0.0, f64::max);
    let s = summarize(&results, RANKS, o.summary.lmax, Some(pp));
    assert!(s.b_eff > 0.0);
    assert!((s.b_eff - o.summary.b_eff).abs() <= 1e-9 * s.b_eff, "{s:?} vs {:?}", o.summary);
    for (a, b) in [
        (s.b_eff_at_lmax, o.summary.b_eff_at_lmax),
        (s.ring_at_lmax_per_process, o.summary.ring_at_lmax_per_process),
        (s.b_eff_per_process, o.summary.b_eff_per_process),
    ] {
        assert!((a - b).abs() <= 1e-9 * a, "{s:?} vs {:?}", o.summary);
    }
    // And by hand, independently of the library: geometric means of arithmetic means.
    let avg = |name: &str| -> f64 {
        o.sizes
            .iter()
            .map(|&l| {
                o.protocol
                    .iter()
                    .filter(|m| m.pattern == name && m.size == l)
                    .map(|m| m.bandwidth)
                    .fold(0.0, f64::max)
            })
            .sum::<f64>()
            / 21.0
    };
    let geo = |v: Vec<f64>| (v.iter().map(|x| x.ln()).sum::<f64>() / v.len() as f64).exp();
    let ring = geo((1..=6).map(|p| avg(&format!("ring{p}"))).collect());
    let random = geo((1..=6).map(|p| avg(&format!("random{p}"))).collect());
    let b_eff = (ring * random).sqrt();
    assert!((b_eff - o.summary.b_eff).abs() <= 1e-9 * b_eff);
    assert_eq!(o.ping_pong.len(), 3);
    assert!(pp > 0.0);
    println!("beff --quick took {took:?}");
}

/// `iolens beff` in one process refuses with exit 2: b_eff needs mpirun -np N, N ≥ 2.
#[test]
fn beff_alone_refuses_with_exit_2() {
    let out = Command::new(bin()).args(["beff", "--quick"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("mpirun -np N"));
}

/// `iolens beff-io` under mpirun -np 4 over MPI-IO, partitions of 1, 2 and 4 processes: one
/// table, one JSON whose b_eff_io the paper's formula gives again from the protocol (type =
/// bytes / open-to-close time; method = types with type 0 twice; partition = 25% write, 25%
/// rewrite, 50% read; system = best partition), the MPI-IO call of every pattern type, the hint
/// passed, and no file left behind.
#[test]
fn beff_io_over_mpi_io_recomputes_its_value_and_names_its_calls() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("target");
    std::fs::create_dir(&target).unwrap();
    let json = dir.path().join("beff-io.json");
    let t0 = Instant::now();
    let out = mpirun(&[
        "beff-io",
        target.to_str().unwrap(),
        "--partitions",
        "1,2,4",
        "--time",
        "1s",
        "--mpart",
        "2m",
        "--memory",
        "64m",
        "--hint",
        "cb_nodes=2",
        "-q",
        "--json",
        json.to_str().unwrap(),
    ]);
    println!("beff-io over MPI-IO, 3 partitions at T = 1 s: {:?}", t0.elapsed());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(stdout.matches("b_eff_io = ").count(), 1, "one table, from rank 0:\n{stdout}");
    assert!(stdout.contains("MPI_File_write_all (view: hvector)"), "{stdout}");
    let d = read_json(&json);
    assert_eq!(d["ranks_are"], "MPI processes");
    assert!(d["mpi"]["library"].as_str().unwrap().contains("MPI"), "{}", d["mpi"]);
    assert_eq!(d["mpi"]["hints"], serde_json::json!([["cb_nodes", "2"]]));
    let f = |v: &Value| v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"));
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * b.abs().max(1.0);
    let calls = [
        ("MPI_File_write_all (view: hvector)", "MPI_File_read_all (view: hvector)"),
        ("MPI_File_write_ordered", "MPI_File_read_ordered"),
        ("MPI_File_write (own file, MPI_COMM_SELF)", "MPI_File_read (own file, MPI_COMM_SELF)"),
        ("MPI_File_write_at", "MPI_File_read_at"),
        ("MPI_File_write_at_all", "MPI_File_read_at_all"),
    ];
    let partitions = d["partitions"].as_array().unwrap();
    let sizes: Vec<u64> = partitions.iter().map(|p| u(&p["ranks"])).collect();
    assert_eq!(sizes, [1, 2, 4], "one entry per partition");
    let (method_weight, type_weight) =
        ([0.25, 0.25, 0.5], [2.0 / 6.0, 1.0 / 6.0, 1.0 / 6.0, 1.0 / 6.0, 1.0 / 6.0]);
    let mut best = (0.0f64, 0u64);
    for p in partitions {
        let patterns = p["patterns"].as_array().unwrap();
        assert_eq!(patterns.len(), 3 * 43, "{} ranks: every pattern of Table 2, three methods", p["ranks"]);
        let mut partition = 0.0;
        for (m, method) in ["write", "rewrite", "read"].iter().enumerate() {
            let mut value = 0.0;
            for (ty, (write_call, read_call)) in calls.iter().enumerate() {
                let t = p["types"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|t| t["method"] == *method && u(&t["pattern_type"]) == ty as u64)
                    .unwrap();
                assert_eq!(t["call"], if *method == "read" { *read_call } else { *write_call });
                let bytes: u64 = patterns
                    .iter()
                    .filter(|x| x["method"] == *method && u(&x["pattern_type"]) == ty as u64)
                    .map(|x| u(&x["bytes"]))
                    .sum();
                assert_eq!(u(&t["bytes"]), bytes, "{method} type {ty}: the patterns' bytes");
                let mb_s = bytes as f64 / f(&t["time_s"]) / 1e6;
                assert!(close(f(&t["bw_mb_s"]), mb_s), "{method} type {ty}");
                value += type_weight[ty] * mb_s;
            }
            assert!(close(f(&p["methods"][m]["bw_mb_s"]), value), "{method}");
            partition += method_weight[m] * value;
        }
        assert!(close(f(&p["b_eff_io_mb_s"]), partition), "{} ranks", p["ranks"]);
        if partition > best.0 {
            best = (partition, u(&p["ranks"]));
        }
    }
    assert!(best.0 > 0.0);
    assert!(close(f(&d["b_eff_io_mb_s"]), best.0), "the system value is the best partition's");
    assert_eq!(u(&d["best_ranks"]), best.1);
    let left: Vec<_> = std::fs::read_dir(&target).unwrap().map(|e| e.unwrap().path()).collect();
    assert!(left.is_empty(), "b_eff_io removes its files: {left:?}");
}

/// A partition larger than the job is a usage error (exit 2), said once by rank 0.
#[test]
fn beff_io_refuses_a_partition_larger_than_the_job() {
    let dir = tempfile::tempdir().unwrap();
    let out = mpirun_sh(&format!(
        "exec \"$IOLENS_BIN\" beff-io '{}' --partitions 2,8 --time 1s -q",
        dir.path().display()
    ));
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.matches("--partitions: 8 is not between 1 and the 4 processes").count(), 1, "{err}");
}

/// A rank that cannot use the directory ends the job, naming itself and its host.
#[test]
fn beff_io_a_failing_rank_ends_the_job_naming_the_rank() {
    let dir = tempfile::tempdir().unwrap();
    let script = format!(
        "T='{}'; if [ \"$OMPI_COMM_WORLD_RANK\" = 2 ]; then T=/nonexistent/iolens/dir; fi; \
        exec \"$IOLENS_BIN\" beff-io \"$T\" --time 1s --mpart 2m --memory 64m -q",
        dir.path().display()
    );
    let (took, err) = failing_mpirun_sh(&script);
    assert!(took < Duration::from_secs(10), "took {took:?}");
    assert!(err.contains("rank 2 on "), "{err}");
    assert!(err.contains("/nonexistent/iolens/dir"), "{err}");
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert!(left.is_empty(), "nothing made before the failure: {left:?}");
}

/// Issue 25, defect 2: each rank derives Lmax from its own node's memory (÷ its local ranks), so
/// with uneven placement the ranks disagree and their messages no longer match (the job died
/// after its first pattern). Here rank 0 is given less memory than the others: every rank must
/// run with the smallest Lmax, agreed before the first pattern.
#[test]
fn ranks_agree_on_lmax_before_the_first_pattern() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("beff.json");
    let script = format!(
        "case \"$OMPI_COMM_WORLD_RANK\" in 0) m=1m;; *) m=1g;; esac; \
         exec \"$IOLENS_BIN\" beff -q --memory-per-process \"$m\" --max-size 64k --json '{}'",
        json.display()
    );
    let out = Command::new("timeout")
        .args(["-s", "KILL", "300", "mpirun", "--allow-run-as-root", "--oversubscribe", "-np"])
        .arg(RANKS.to_string())
        .args(["sh", "-c", &script])
        .env("IOLENS_BIN", bin())
        .output()
        .expect("timeout and mpirun");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v = read_json(&json);
    // Rank 0's 1 MiB per process gives Lmax = max(1 MiB / 128, 4 KiB) = 8 KiB; the others' 64 KiB.
    assert_eq!(v["summary"]["lmax_bytes"].as_u64(), Some(8 << 10), "{}", v["summary"]);
}

/// Issue 25, defect 3: SIGTERM to mpirun (passed on to the ranks) stops b_eff at the next
/// message size on every rank. It ran to the end and wrote its JSON as if complete; now the JSON,
/// if any, is an interrupted error document without a b_eff value.
#[test]
fn beff_stops_on_sigterm() {
    use std::io::BufRead;
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("beff.json");
    // Lmax from the memory per process (up to 128 MiB): minutes of patterns, far longer than
    // the wait for the first one.
    let mut child = Command::new("mpirun")
        .args(["--allow-run-as-root", "--oversubscribe", "-np", &RANKS.to_string(), bin()])
        .args(["beff", "--json", json.to_str().unwrap()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("mpirun");
    let mut lines = std::io::BufReader::new(child.stderr.take().unwrap()).lines();
    let mut seen = String::new();
    // The observable state: rank 0 says its first pattern is done.
    for line in lines.by_ref() {
        let line = line.unwrap();
        seen.push_str(&line);
        seen.push('\n');
        if line.contains("done (1/12)") {
            break;
        }
    }
    assert!(seen.contains("done (1/12)"), "b_eff ended before its first pattern: {seen}");
    let rest = std::thread::spawn(move || lines.map_while(Result::ok).collect::<Vec<_>>().join("\n"));
    let (status, _) = crate::util::signal_and_wait(&mut child, libc::SIGTERM, Duration::from_secs(120));
    let err = rest.join().unwrap();
    assert!(!status.success(), "{err}");
    assert!(!err.contains("done (12/12)"), "every pattern ran: {err}");
    if json.exists() {
        let d = read_json(&json);
        assert_eq!(d["interrupted"], true, "{d}");
        assert!(d.get("summary").is_none(), "no b_eff value from some of the patterns: {d}");
    }
}
