//! Issue 23, item 12c: ranks given different jobs are refused before anything runs, on every
//! rank, naming the ranks that differ from rank 0 and the first setting that differs; rank 0's
//! JSON is a valid error document.

use super::*;

/// As [`mpirun_sh`], ended after 120 s: ranks given different jobs used to hang a suite.
fn mpirun_sh_limited(script: &str) -> Output {
    let mut c = Command::new("timeout");
    c.args(["-k", "5", "120", "mpirun", "--allow-run-as-root", "--oversubscribe", "-np", &RANKS.to_string()]);
    c.args(["sh", "-c", script]).env("IOLENS_BIN", bin());
    let out = c.output().expect("timeout (coreutils)");
    assert_ne!(out.status.code(), Some(127), "mpirun not found (install openmpi-bin)");
    assert_ne!(out.status.code(), Some(124), "mpirun hung for 120 s: {}", stderr(&out));
    out
}

fn refused_as_another_job(out: &Output, json: &Path, ranks: &str, field: &str) {
    let verb = if ranks.contains(',') || ranks.contains('-') { "ranks {} run" } else { "rank {} runs" };
    let err = stderr(out);
    assert!(!out.status.success(), "a mixed launch must fail:\n{err}");
    let want = format!("{} another job than rank 0: {field}", verb.replace("{}", ranks));
    assert!(err.contains(&want), "want {want:?} in:\n{err}");
    assert!(err.contains("every rank must be given the same job (one command line, one job file)"), "{err}");
    let d = read_json(json);
    let error = d["error"]["message"].as_str().unwrap_or_else(|| panic!("no error in {d}"));
    assert!(error.contains(&want), "{error}");
}

#[test]
fn an_mpmd_launch_of_two_job_files_is_refused_naming_the_ranks() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("result.json");
    let job = |name: &str, rw: &str| {
        let path = dir.path().join(format!("{name}.toml"));
        std::fs::write(
            &path,
            format!(
                "name = \"{name}\"\n[[agent]]\nname = \"agent0\"\ntarget = \"{}\"\nrw = \"{rw}\"\nbs = \"64k\"\nsize = \"1m\"\nbytes = \"1m\"\n",
                dir.path().display()
            ),
        )
        .unwrap();
        path
    };
    let (a, b) = (job("a", "write"), job("b", "randwrite"));
    let mut c = Command::new("timeout");
    c.args(["-k", "5", "120", "mpirun", "--allow-run-as-root", "--oversubscribe"]);
    for (n, file) in [("2", &a), ("2", &b)] {
        if file == &b {
            c.arg(":");
        }
        c.args(["-np", n, bin(), "run"]).arg(file).args(["-q", "--json"]).arg(&json);
    }
    let out = c.output().expect("timeout (coreutils)");
    assert_ne!(out.status.code(), Some(127), "mpirun not found (install openmpi-bin)");
    refused_as_another_job(
        &out,
        &json,
        "2,3",
        "pattern random distribution=uniform on rank 2, sequential on rank 0",
    );
    assert!(data_files(dir.path()).is_empty(), "nothing ran: {:?}", data_files(dir.path()));
}

#[test]
fn a_rank_dependent_block_size_is_refused_naming_the_ranks() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("result.json");
    let script = format!(
        "BS=64k; if [ \"$OMPI_COMM_WORLD_RANK\" -ge 2 ]; then BS=4k; fi; \
         exec \"$IOLENS_BIN\" run --target '{}' --rw write --bs $BS --size 1m --bytes 1m -q --json '{}'",
        dir.path().display(),
        json.display()
    );
    let out = mpirun_sh_limited(&script);
    refused_as_another_job(&out, &json, "2,3", "bs 4096 on rank 2, 65536 on rank 0");
    assert!(data_files(dir.path()).is_empty(), "nothing ran: {:?}", data_files(dir.path()));

    // Flags of the measurement count too, not only the job: --shared-file on rank 1 alone.
    let script = format!(
        "S=; if [ \"$OMPI_COMM_WORLD_RANK\" = 1 ]; then S=--shared-file; fi; \
         exec \"$IOLENS_BIN\" run --target '{}' --rw write --bs 64k --size 1m --bytes 1m $S -q --json '{}'",
        dir.path().display(),
        json.display()
    );
    refused_as_another_job(
        &mpirun_sh_limited(&script),
        &json,
        "1",
        "--shared-file true on rank 1, false on rank 0",
    );
}

/// What may differ per rank does not count: where each rank writes its own output.
#[test]
fn per_rank_output_paths_and_directories_are_the_same_job() {
    let dir = tempfile::tempdir().unwrap();
    for r in 0..RANKS {
        std::fs::create_dir(dir.path().join(format!("d{r}"))).unwrap();
    }
    let script = format!(
        "D='{0}'/d$OMPI_COMM_WORLD_RANK; exec \"$IOLENS_BIN\" run --target \"$D\" --rw write --bs 64k \
         --size 1m --bytes 1m -q --trace \"$D/ops.trace\" --json \"$D/result.json\"",
        dir.path().display()
    );
    let out = mpirun_sh(&script);
    assert!(out.status.success(), "{}", stderr(&out));
    let d = read_json(&dir.path().join("d0/result.json"));
    assert!(d["error"].is_null(), "{d}");
    assert_eq!(u(&d["aggregate"]["bytes"]), RANKS as u64 * (1 << 20));
}

/// A suite's points are jobs as well: a rank-dependent suite flag is refused the same way.
#[test]
fn a_suite_with_rank_dependent_flags_is_refused_naming_the_ranks() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("sweep.json");
    let script = format!(
        "M=16k; if [ \"$OMPI_COMM_WORLD_RANK\" = 3 ]; then M=32k; fi; \
         exec \"$IOLENS_BIN\" sweep '{}' --buffered --threads 1 --min-bs 4k --max-bs $M --size 1m --time 200ms \
         -q --json '{}'",
        dir.path().display(),
        json.display()
    );
    refused_as_another_job(
        &mpirun_sh_limited(&script),
        &json,
        "3",
        "--max-bs \"32k\" on rank 3, \"16k\" on rank 0",
    );
}

/// b_eff_io too: a rank-dependent --time is refused before any MPI-IO file is opened.
#[test]
fn beff_io_with_rank_dependent_flags_is_refused_naming_the_ranks() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("beff-io.json");
    let script = format!(
        "T=1s; if [ \"$OMPI_COMM_WORLD_RANK\" -ge 1 ]; then T=2s; fi; \
         exec \"$IOLENS_BIN\" beff-io '{}' --time $T --mpart 2m --memory 64m -q --json '{}'",
        dir.path().display(),
        json.display()
    );
    refused_as_another_job(
        &mpirun_sh_limited(&script),
        &json,
        "1-3",
        "--time \"2s\" on rank 1, \"1s\" on rank 0",
    );
}
