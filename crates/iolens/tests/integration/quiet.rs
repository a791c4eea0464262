//! `-q` on every command that reads or reports: it succeeds and leaves stderr empty (no
//! progress, no chatter; only warnings and errors may go there). The commands that run
//! workloads are run with `-q` by the contract test already.

use std::path::Path;
use std::process::Command;

/// iolens with an ownership registry of its own: leftovers of runs other tests kill would
/// otherwise be removed, and reported on stderr, by these commands.
fn iolens(state: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_iolens"));
    cmd.env("IOLENS_STATE_DIR", state);
    cmd
}

/// Runs `iolens ARGS -q`; it must succeed and write nothing on stderr.
fn quietly(state: &Path, args: &[&str]) {
    let out = iolens(state).args(args).arg("-q").output().unwrap();
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    assert!(out.stderr.is_empty(), "{args:?} -q wrote on stderr: {}", String::from_utf8_lossy(&out.stderr));
}

fn text(path: &Path) -> &str {
    path.to_str().unwrap()
}

#[test]
fn the_reading_and_reporting_commands_say_nothing_on_stderr_with_q() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let p = |name: &str| dir.path().join(name);
    std::fs::create_dir(p("d")).unwrap();
    let state = p("state");
    let (trace, run) = (p("t.trace"), p("run.json"));
    quietly(
        &state,
        &[
            "run",
            "--target",
            text(&p("d")),
            "--size",
            "1m",
            "--time",
            "100ms",
            "--trace",
            text(&trace),
            "--json",
            text(&run),
        ],
    );
    quietly(&state, &["analyze", text(&trace)]);
    quietly(&state, &["analyze", text(&trace), "--json", text(&p("a.json")), "--csv", text(&p("ops.csv"))]);
    quietly(&state, &["compare", text(&run), text(&run)]);
    quietly(&state, &["report", text(&run), text(&p("a.json")), "--html", text(&p("r.html"))]);

    let metrics = p("m.csv");
    std::fs::write(&metrics, "time_s,iops,bw,arpt\n10,100,5,1.0\n8,120,6,0.8\n6,150,9,0.7\n4,190,8,0.5\n")
        .unwrap();
    quietly(&state, &["correlate", text(&metrics), "--time", "time_s"]);
    let study = p("study.csv");
    std::fs::write(
        &study,
        "bs,threads,iops\n4k,1,100\n4k,1,104\n4k,2,180\n4k,2,176\n16k,1,90\n16k,1,93\n16k,2,150\n16k,2,149\n",
    )
    .unwrap();
    quietly(&state, &["doe", "analyze", text(&study), "--response", "iops", "--factors", "bs,threads"]);

    let job = p("job.fio");
    std::fs::write(&job, "[a]\nrw=randread\nbs=4k\nsize=1m\n").unwrap();
    quietly(&state, &["convert", text(&job)]);
    quietly(&state, &["monitor", "--count", "1", "--interval", "100ms"]);
    quietly(&state, &["completions", "bash"]);
    quietly(&state, &["man"]);
    quietly(&state, &["clean"]);
}

#[test]
fn the_workload_commands_say_only_warnings_on_stderr_with_q() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let d = dir.path().join("d");
    std::fs::create_dir(&d).unwrap();
    let state = dir.path().join("state");
    let small = ["--size", "1m", "--time", "100ms", "-q"];
    let plan = dir.path().join("plan.toml");
    std::fs::write(
        &plan,
        format!(
            "[defaults]\ntarget = \"{}\"\nrw = \"randread\"\nengine = \"null\"\nsize = \"1m\"\ntime = \"100ms\"\n\
             [[agent]]\nname = \"a\"\n[doe]\nreplicates = 1\nseed = 9\nfactors = {{ bs = [\"4k\", \"16k\"] }}\n",
            d.display()
        ),
    )
    .unwrap();
    for args in [
        [&["run", "--target", text(&d), "--repeat", "2"][..], &small[..]].concat(),
        [&["sweep", text(&d), "--min-bs", "4k", "--max-bs", "8k"][..], &small[..]].concat(),
        vec!["write-modes", text(&d), "--bytes", "1m", "--threads", "1", "-q"],
        vec!["doe", text(&plan), "--out", text(&dir.path().join("doe.csv")), "-q"],
    ] {
        let out = iolens(&state).args(&args).output().unwrap();
        assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        let stderr = String::from_utf8_lossy(&out.stderr);
        let chatter: Vec<&str> = stderr.lines().filter(|l| !l.contains("warning")).collect();
        assert!(chatter.is_empty(), "{args:?} wrote on stderr: {chatter:?}");
    }
}
