//! Processes under the tracer: fork, exec chains, threads, signal handlers, abrupt ends, changes
//! of user, static and set-user-ID programs the preload cannot enter, `--only-exe`, daemons.

use super::*;

/// Two children write 100 lines each: one leaves by the raw exit_group system call (no exit
/// handlers run), the other is killed by SIGKILL.
const ABRUPT_ENDS_PROGRAM: &str = include_str!("../../programs/abrupt_ends.c");

#[test]
fn a_raw_exit_keeps_its_events_and_a_killed_process_is_named() {
    let Some((stdout, summary, _dir)) = trace_c_program("abrupt", ABRUPT_ENDS_PROGRAM) else { return };
    let killed = stdout.lines().next().unwrap().trim().to_string();
    let files = summary["files"].as_array().unwrap();
    let writes_of = |name: &str| {
        files
            .iter()
            .filter(|f| f["path"].as_str().is_some_and(|p| p.ends_with(name)))
            .map(|f| f["ops"].as_u64().unwrap())
            .sum::<u64>()
    };
    assert_eq!(writes_of("/raw-exit.txt"), 100, "a raw exit_group writes out the buffers first: {files:?}");
    let notes: Vec<&str> = summary["notes"].as_array().unwrap().iter().filter_map(|n| n.as_str()).collect();
    let note = notes.iter().find(|n| n.contains("no end")).unwrap_or_else(|| panic!("{notes:?}"));
    assert!(note.contains(&killed), "the killed child {killed} is named: {note}");
    assert!(note.contains("NOT in these figures"), "{note}");
}

/// I/O the program makes while one of its calls is under way: a periodic signal handler logs
/// while the main loop reads; a handler jumps out of a blocked read with siglongjmp; a
/// fopencookie stream's write function writes to a file from inside fwrite and fclose.
const NESTED_IO_PROGRAM: &str = include_str!("../../programs/nested_io.c");

#[test]
fn io_made_inside_a_call_by_a_signal_handler_or_a_callback_is_counted() {
    let Some((stdout, summary, _dir)) = trace_c_program("nested", NESTED_IO_PROGRAM) else { return };
    let handled: u64 = stdout.lines().next().unwrap().trim().parse().unwrap();
    let files = summary["files"].as_array().unwrap();
    let file = |name: &str| {
        files
            .iter()
            .find(|f| f["path"].as_str().is_some_and(|p| p.ends_with(name)))
            .map(|f| (f["ops"].as_u64().unwrap(), f["write_bytes"].as_u64().unwrap()))
            .unwrap_or((0, 0))
    };
    assert_eq!(file("/after-jump.txt"), (100, 10000), "a siglongjmp out of a blocked read: {files:?}");
    assert_eq!(file("/cookie-sink.txt"), (50, 5000), "a cookie stream's writes to its file: {files:?}");
    // A handler that runs while the tracer records the call it interrupted is counted in a note.
    let notes: Vec<&str> = summary["notes"].as_array().unwrap().iter().filter_map(|n| n.as_str()).collect();
    let (in_note, in_note_bytes) = notes
        .iter()
        .find(|n| n.contains("signal handler"))
        .map(|n| {
            let numbers: Vec<u64> =
                n.split(|c: char| !c.is_ascii_digit()).filter_map(|w| w.parse().ok()).collect();
            (numbers[0], numbers[1])
        })
        .unwrap_or((0, 0));
    let (recorded, recorded_bytes) = file("/handler.log");
    assert_eq!(recorded + in_note, handled, "every handler write recorded or noted: {files:?} {notes:?}");
    assert_eq!(recorded_bytes + in_note_bytes, 5 * handled, "{files:?} {notes:?}");
    // The self-pipe's writes count under pipes, wherever the handler interrupted: one before the
    // timer, one per tick; and the printf of the count to our pipe.
    let printed = format!("{handled}\n").len() as u64;
    let pipes = format!("{} calls ({} bytes) on pipes and sockets", handled + 2, handled + 1 + printed);
    assert!(notes.iter().any(|n| n.contains(&pipes)), "{pipes}: {notes:?}");
    // How many land inside the recording depends on the build's speed; some come inside preads.
    assert!(recorded > 0, "handler writes inside the program's preads are recorded: {notes:?}");
}

/// Behaves as a Go program does towards the tracer: it carries Go's build-ID note, and makes
/// its system calls by its own instructions, past libc (writes of a file, then exit_group).
const GO_LIKE_PROGRAM: &str = include_str!("../../programs/go_like.c");

#[test]
fn a_go_program_is_said_to_be_untraced_and_not_killed() {
    let Some((_, summary, dir)) = trace_c_program("go-like", GO_LIKE_PROGRAM) else { return };
    assert_eq!(std::fs::metadata(dir.path().join("go-like.txt")).unwrap().len(), 1000, "it wrote its file");
    let notes: Vec<&str> = summary["notes"].as_array().unwrap().iter().filter_map(|n| n.as_str()).collect();
    let go = notes.iter().find(|n| n.contains("a Go program")).unwrap_or_else(|| panic!("{notes:?}"));
    assert!(go.contains("/go-like, a Go program") && go.contains("NOT traced"), "{go}");
    assert!(!notes.iter().any(|n| n.contains("no end marker")), "a Go exit is not a kill: {notes:?}");
}

#[test]
fn threads_and_forks_are_followed() {
    let script = include_str!("../../programs/python_threads_and_forks.py");
    let summary = compare(&["python3", "-c", script], |_| {});
    if summary.is_null() {
        return;
    }
    let processes = summary["processes"].as_array().unwrap();
    assert!(processes.len() >= 2, "parent and forked child: {processes:?}");
}

#[test]
fn exit_status_and_output_of_the_program_are_kept() {
    let dir = scratch();
    let out = iolens()
        .args(["trace", "--", "sh", "-c", "echo visible; exec 1>&- 2>&-; exit 7"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(7), "the program's exit status is iolens's");
    assert!(
        String::from_utf8_lossy(&out.stdout).starts_with("visible\n"),
        "the program's output is untouched"
    );
}

/// Appends 100 writes of 10 bytes to out.txt, then, while the count in argv[1] is above zero,
/// replaces itself through execl, execlp or execle (in turn) with the count one lower.
const EXEC_CHAIN_PROGRAM: &str = include_str!("../../programs/exec_chain.c");

#[test]
fn execl_execlp_execle_chains_keep_every_image_s_writes() {
    let build = scratch();
    let Some(prog) = compile_c(build.path(), "chain", EXEC_CHAIN_PROGRAM) else { return };
    let prog = prog.to_str().unwrap();
    // 30 images of 100 writes each, through each of the three calls ten times.
    let summary = compare(&[prog, "29"], |_| {});
    if !summary.is_null() {
        assert_eq!(summary["write_ops"].as_u64(), Some(3000), "{summary}");
    }
}

#[test]
fn a_thread_spawning_subprocesses_leaves_the_writers_counts_whole() {
    // subprocess.run forks with vfork (or posix_spawn) while eight threads write: the child
    // must not touch the buffers and descriptor table of the parent it shares memory with.
    let script = include_str!("../../programs/python_spawning_threads.py");
    let dir = scratch();
    let (counts, summary) = iolens_counts(&["python3", "-c", script], dir.path(), dir.path(), false);
    assert_eq!(counts.get("write"), Some(&(16_000, 16_000)), "{counts:?}");
    let notes = summary["notes"].to_string();
    assert!(!notes.contains("DROPPED") && !notes.contains("mid-write"), "{notes}");
}

/// Four threads each write 500 times to a file of their own and then wait, their events still
/// in their buffers, while the main thread execs `true`: the exec ends them, so it must write
/// their buffers out first, after they have left them.
const EXEC_WHILE_THREADS_HOLD_EVENTS: &str = include_str!("../../programs/exec_while_threads_hold_events.c");

#[test]
fn an_exec_writes_out_the_buffers_of_the_other_threads() {
    let build = scratch();
    let Some(prog) = compile_c(build.path(), "exec_threads", EXEC_WHILE_THREADS_HOLD_EVENTS) else { return };
    let dir = scratch();
    let (counts, summary) = iolens_counts(&[prog.to_str().unwrap()], dir.path(), dir.path(), false);
    assert_eq!(counts.get("write"), Some(&(2000, 2000)), "{counts:?}");
    let notes = summary["notes"].to_string();
    assert!(!notes.contains("DROPPED") && !notes.contains("mid-write"), "{notes}");
}

/// `iolens`, run as nobody through setpriv when the tests run as root (with `dir` open to it);
/// else as the current user.
fn as_nobody_if_root(dir: &Path) -> Command {
    if !root() || !have("setpriv") {
        return iolens();
    }
    use std::os::unix::fs::PermissionsExt;
    // Open to all and sticky, as /tmp: what nobody makes in it stays nobody's.
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let mut cmd = Command::new("setpriv");
    cmd.args(["--reuid=65534", "--regid=65534", "--clear-groups", env!("CARGO_BIN_EXE_iolens")]);
    // setpriv keeps root's HOME: nobody's copy of the preload library goes to a cache of its own,
    // and its registry to a state directory of its own.
    cmd.env("XDG_CACHE_HOME", dir.join(".cache")).env("IOLENS_STATE_DIR", dir.join(".state"));
    cmd
}

#[test]
fn a_program_with_umask_777_is_traced_and_keeps_its_exit_status() {
    // Root reads a stream of mode 000 all the same: the failure shows as another user.
    let dir = scratch();
    let json = dir.path().join("s.json");
    let mut cmd = as_nobody_if_root(dir.path());
    let run = cmd
        .args(["trace", "--json"])
        .arg(&json)
        .args(["--", "sh", "-c", "umask 777; dd if=/dev/zero of=x.bin bs=4k count=10 2>/dev/null; exit 3"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(3), "{}", String::from_utf8_lossy(&run.stderr));
    let summary: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(summary["write_ops"].as_u64(), Some(10), "{summary}");
}

#[test]
fn processes_that_give_up_root_are_traced_after_the_change() {
    if !require(root(), "root, to change user") {
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    let dd = "dd if=/dev/zero of=y.bin bs=4k count=10 2>/dev/null";
    let mut runs: Vec<Vec<&str>> = Vec::new();
    if require_tool("setpriv") {
        runs.push(vec!["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "sh", "-c", dd]);
    }
    if require_tool("su") {
        // su forks, the child becomes nobody and runs a shell, which forks dd.
        runs.push(vec!["su", "nobody", "-s", "/bin/sh", "-c", dd]);
    }
    for cmd in runs {
        let dir = scratch();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
        let (counts, _) = iolens_counts(&cmd, dir.path(), dir.path(), true);
        assert_eq!(counts.get("y.bin write"), Some(&(10, 40960)), "{cmd:?}: {counts:?}");
    }
}

/// Runs the program named by its argument (searched in PATH, then the working directory) with
/// posix_spawnp, and waits for it.
const SPAWN_PROGRAM: &str = include_str!("../../programs/spawn.c");

#[test]
fn a_statically_linked_program_run_by_a_traced_process_is_said_to_be_untraced() {
    let dir = scratch();
    if compile_c(dir.path(), "chain", EXEC_CHAIN_PROGRAM).is_none() {
        return;
    }
    compile_c(dir.path(), "spawner", SPAWN_PROGRAM).unwrap();
    let status = Command::new("gcc")
        .args(["-O2", "-static", "-o"])
        .arg(dir.path().join("static-chain"))
        .arg(dir.path().join("chain.c"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&status.stderr);
    if !require(status.status.success(), &format!("a static C library (libc6-dev): {stderr}")) {
        return;
    }
    let json = dir.path().join("s.json");
    let out = iolens()
        .args(["trace", "--quiet", "--json"])
        .arg(&json)
        .args(["--", "sh", "-c", "./static-chain; ./chain; ./static-chain; ./spawner static-chain"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let summary: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(summary["write_ops"].as_u64(), Some(100), "only the dynamic program's writes: {summary}");
    let notes: Vec<&str> = summary["notes"].as_array().unwrap().iter().filter_map(|n| n.as_str()).collect();
    let static_notes: Vec<&&str> = notes.iter().filter(|n| n.contains("statically linked")).collect();
    assert_eq!(static_notes.len(), 3, "one note per process that ran it (exec or spawn): {notes:?}");
    assert!(static_notes.iter().all(|n| n.contains("static-chain") && n.contains("NOT traced")), "{notes:?}");
}

#[test]
fn a_set_user_id_program_is_said_to_be_untraced() {
    if !require(root() && have("setpriv"), "root and setpriv, to make a set-user-ID program of another user")
    {
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    let dir = scratch();
    let Some(prog) = compile_c(dir.path(), "suid", EXEC_CHAIN_PROGRAM) else { return };
    std::fs::set_permissions(&prog, std::fs::Permissions::from_mode(0o4755)).unwrap();
    let json = dir.path().join("s.json");
    for cmd in [vec!["./suid"], vec!["sh", "-c", "./suid; true"]] {
        let mut run = as_nobody_if_root(dir.path());
        let out = run
            .args(["trace", "--json"])
            .arg(&json)
            .arg("--")
            .args(&cmd)
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert!(out.status.success(), "{cmd:?}: {}", String::from_utf8_lossy(&out.stderr));
        let summary: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        let notes = summary["notes"].to_string();
        assert!(notes.contains("secure-execution mode") && notes.contains("suid"), "{cmd:?}: {notes}");
    }
}

#[test]
fn only_exe_counts_the_chosen_processes_and_says_which() {
    // A launcher (as mpirun) reading its own files around the program that does the I/O.
    let script = include_str!("../../programs/python_launcher.py");
    let dir = scratch();
    write_file(&dir.path().join("data.bin"), 100_000);
    let streams = dir.path().join("streams");
    let traced = iolens()
        .args(["trace", "--out"])
        .arg(&streams)
        .args(["--", "python3", "-c", script])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(traced.status.success(), "{}", String::from_utf8_lossy(&traced.stderr));
    let analyze = |only: &[&str]| -> serde_json::Value {
        let json = dir.path().join("s.json");
        let mut cmd = iolens();
        cmd.arg("analyze").arg(&streams).arg("--json").arg(&json);
        for name in only {
            cmd.args(["--only-exe", name]);
        }
        let out = cmd.output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap()
    };
    let all = analyze(&[]);
    let dd = analyze(&["dd"]);
    assert_eq!(dd["write_ops"].as_u64(), Some(10), "{dd}");
    assert_eq!(dd["write_bytes"].as_u64(), Some(40960));
    assert!(all["read_ops"].as_u64().unwrap() >= 200, "the launcher's reads: {all}");
    assert_eq!(dd["read_ops"].as_u64(), Some(0), "dd's reads are of /dev/zero, left out: {dd}");
    assert!(
        dd["wall_s"].as_f64().unwrap() < all["wall_s"].as_f64().unwrap(),
        "dd's life lies inside the launcher's: {} vs {}",
        dd["wall_s"],
        all["wall_s"]
    );
    let notes = dd["notes"].to_string();
    assert!(notes.contains("--only-exe dd: the figures count") && notes.contains("left out:"), "{notes}");
    let rows = dd["executables"].as_array().unwrap();
    let row = |name: &str| rows.iter().find(|r| r["exe"].as_str().unwrap().contains(name)).unwrap();
    assert_eq!(row("/dd")["counted"], true);
    assert_eq!(row("/dd")["ops"].as_u64(), Some(10), "its reads of /dev/zero are not file I/O: {rows:?}");
    assert_eq!(row("python3")["counted"], false);
    // One tree: the traced program (python3, or a wrapper that runs it) and everything it
    // started, dd among them; only dd's process counts.
    let trees = dd["process_trees"].as_array().unwrap();
    assert_eq!(trees.len(), 1, "{trees:?}");
    let tree = &trees[0];
    let processes = tree["processes"].as_u64().unwrap();
    assert!(processes >= 2, "{tree}");
    let exes: Vec<&str> =
        tree["executables"].as_array().unwrap().iter().map(|e| e.as_str().unwrap()).collect();
    assert!(exes.contains(&"dd") && exes.iter().any(|e| e.starts_with("python3")), "{tree}");
    assert_eq!(tree["counted_pids"].as_array().unwrap().len(), 1, "{tree}");
    assert_eq!(tree["counted_ops"].as_u64(), Some(10));
    assert_eq!(tree["ops"], all["ops"], "every data call lies in the tree");
    let text = String::from_utf8_lossy(
        &iolens().arg("analyze").arg(&streams).args(["--only-exe", "dd"]).output().unwrap().stdout,
    )
    .to_string();
    assert!(text.contains("process trees") && text.contains(&format!("1 of {processes} (pids")), "{text}");
}

#[test]
fn a_daemon_still_running_at_the_end_is_named_in_a_note() {
    // Double fork: the grandchild outlives the traced program, closing every descriptor first.
    let dir = scratch();
    let json = dir.path().join("s.json");
    let run = iolens()
        .args(["trace", "--json"])
        .arg(&json)
        .args(["--", "sh", "-c", "(sh -c 'exec 0<&- 1>&- 2>&-; sleep 5' &) ; exit 0"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    let summary: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let notes = summary["notes"].to_string();
    assert!(notes.contains("still running when it exited"), "{notes}");
}
