//! `-q` on every command that reads or reports: it succeeds and leaves stderr empty (no
//! progress, no chatter; only warnings and errors may go there). The commands that run
//! workloads are run with `-q` by the contract test already.

use std::path::Path;
use std::process::Command;

fn iolens() -> Command {
    Command::new(env!("CARGO_BIN_EXE_iolens"))
}

/// Runs `iolens ARGS -q`; it must succeed and write nothing on stderr.
fn quietly(args: &[&str]) {
    let out = iolens().args(args).arg("-q").output().unwrap();
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
    let (trace, run) = (p("t.trace"), p("run.json"));
    quietly(&[
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
    ]);
    quietly(&["analyze", text(&trace)]);
    quietly(&["analyze", text(&trace), "--json", text(&p("a.json")), "--csv", text(&p("ops.csv"))]);
    quietly(&["compare", text(&run), text(&run)]);
    quietly(&["report", text(&run), text(&p("a.json")), "--html", text(&p("r.html"))]);

    let metrics = p("m.csv");
    std::fs::write(&metrics, "time_s,iops,bw,arpt\n10,100,5,1.0\n8,120,6,0.8\n6,150,9,0.7\n4,190,8,0.5\n")
        .unwrap();
    quietly(&["correlate", text(&metrics), "--time", "time_s"]);
    let study = p("study.csv");
    std::fs::write(
        &study,
        "bs,threads,iops\n4k,1,100\n4k,1,104\n4k,2,180\n4k,2,176\n16k,1,90\n16k,1,93\n16k,2,150\n16k,2,149\n",
    )
    .unwrap();
    quietly(&["doe", "analyze", text(&study), "--response", "iops", "--factors", "bs,threads"]);

    let job = p("job.fio");
    std::fs::write(&job, "[a]\nrw=randread\nbs=4k\nsize=1m\n").unwrap();
    quietly(&["convert", text(&job)]);
    quietly(&["monitor", "--count", "1", "--interval", "100ms"]);
    quietly(&["completions", "bash"]);
    quietly(&["man"]);
    quietly(&["clean"]);
}
