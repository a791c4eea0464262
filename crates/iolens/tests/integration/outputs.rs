//! Where results go and how iolens ends: output paths that are symlinks, FIFOs or stdout,
//! temporary names another user could plant, failed writes, a closed or full stdout, repeated
//! Ctrl-C, and the traced program's life when iolens itself dies.

use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::util::{holds_written_data, require};

fn iolens() -> Command {
    Command::new(env!("CARGO_BIN_EXE_iolens"))
}

fn scratch() -> tempfile::TempDir {
    tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap()
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}\n{text}", path.display()))
}

fn entries(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    v.sort();
    v
}

/// A short run that does no I/O: the null engine on a directory it leaves untouched.
fn null_run(dir: &Path) -> Command {
    let mut c = iolens();
    c.args(["run", "--quiet", "--engine", "null", "--time", "100ms", "--target", s(dir)]);
    c
}

fn text(out: &Output) -> String {
    format!(
        "status {:?}\nstdout: {}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Waits (bounded) for `cond`; false if it never held.
fn wait_for(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let started = Instant::now();
    while started.elapsed() < limit {
        if cond() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    cond()
}

fn signal(child: &Child, sig: i32) {
    // SAFETY: signalling our own child process.
    unsafe { libc::kill(child.id() as i32, sig) };
}

// ---- (1) output paths that are symlinks, FIFOs, or stdout ----

#[test]
fn json_through_a_symlink_replaces_its_target_and_keeps_the_link() {
    let dir = scratch();
    let real = dir.path().join("real.json");
    let out = null_run(dir.path()).args(["--json", s(&real)]).output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    std::fs::write(dir.path().join("stamp"), "").unwrap();
    let link = dir.path().join("link.json");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let out = null_run(dir.path()).args(["--json", s(&link)]).output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink(), "the link is kept");
    assert!(read_json(&real)["aggregate"]["ops"].as_u64().unwrap() > 0);
    assert!(
        std::fs::metadata(&real).unwrap().modified().unwrap()
            >= std::fs::metadata(dir.path().join("stamp")).unwrap().modified().unwrap(),
        "written again through the link"
    );
    assert_eq!(entries(dir.path()), vec![link, real, dir.path().join("stamp")], "no temporary file left");
}

#[test]
fn json_through_a_symlink_to_a_fifo_is_written_into_it() {
    let dir = scratch();
    let fifo = dir.path().join("fifo");
    let c = std::ffi::CString::new(s(&fifo)).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let link = dir.path().join("stdout-like");
    std::os::unix::fs::symlink(&fifo, &link).unwrap();
    let reader_path = fifo.clone();
    let reader = std::thread::spawn(move || std::fs::read_to_string(reader_path).unwrap());
    let out = null_run(dir.path()).args(["--json", s(&link)]).output().unwrap();
    // Should iolens not have opened the FIFO, this lets the reader see an end instead of waiting.
    let _ = std::fs::OpenOptions::new().write(true).custom_flags(libc::O_NONBLOCK).open(&fifo);
    assert!(out.status.success(), "{}", text(&out));
    let json: Value = serde_json::from_str(&reader.join().unwrap()).unwrap();
    assert!(json["aggregate"]["ops"].as_u64().unwrap() > 0);
    assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
    assert!(std::fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo(), "the FIFO is not replaced");
}

#[test]
fn a_trace_is_never_written_through_a_link_to_a_fifo_or_device() {
    // The trace is written at positions by every agent at once, so it needs a regular file; a
    // FIFO without a reader used to hang the run in open(), a device would have been written.
    let dir = scratch();
    let fifo = dir.path().join("fifo");
    let c = std::ffi::CString::new(s(&fifo)).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let link = dir.path().join("trace.bin");
    std::os::unix::fs::symlink(&fifo, &link).unwrap();
    let json = dir.path().join("o.json");
    let mut child = null_run(dir.path())
        .args(["--trace", s(&link), "--json", s(&json)])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let ended = wait_for(Duration::from_secs(30), || child.try_wait().unwrap().is_some());
    if !ended {
        // Unblock a writer stuck in open() so the test ends either way.
        let _ = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(&fifo);
        let _ = child.kill();
    }
    let out = child.wait_with_output().unwrap();
    assert!(ended, "iolens hung opening a FIFO as its trace: {}", text(&out));
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("regular file"), "{}", text(&out));
    assert!(std::fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo());
    assert!(read_json(&json)["error"]["message"].is_string(), "the JSON still says what failed");

    let dev = dir.path().join("dev.bin");
    std::os::unix::fs::symlink("/dev/null", &dev).unwrap();
    let out = null_run(dir.path()).args(["--trace", s(&dev)]).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("regular file"), "{}", text(&out));
}

#[test]
fn a_trace_replaces_its_file_whole_and_leaves_no_temporary() {
    let dir = scratch();
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    let trace = dir.path().join("t.bin");
    let out = null_run(&data).args(["--trace", s(&trace)]).output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let first = std::fs::read(&trace).unwrap();
    let out = null_run(&data).args(["--trace", s(&trace)]).output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let bytes = std::fs::read(&trace).unwrap();
    assert_eq!(&bytes[..8], b"IOLTRACE", "a trace");
    assert_ne!(bytes, first, "the new trace, not the old one");
    assert_eq!(entries(dir.path()), vec![data, trace], "no temporary file left");
}

#[test]
fn json_and_csv_to_stdout_with_a_dash() {
    let dir = scratch();
    let out = null_run(dir.path()).args(["--json", "-"]).output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&out)));
    assert!(v["aggregate"]["ops"].as_u64().unwrap() > 0);
    assert!(entries(dir.path()).is_empty(), "no file named '-'");

    let out = null_run(dir.path()).args(["--csv", "-"]).output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.lines().any(|l| l.starts_with("row_kind,name,")), "{stdout}");
    assert!(stdout.lines().any(|l| l.starts_with("aggregate,")), "{stdout}");
    assert!(entries(dir.path()).is_empty(), "no file named '-'");
}

// ---- (2) temporary names nobody else can predict or plant ----

#[test]
fn a_planted_temporary_symlink_is_not_written_through() {
    let dir = scratch();
    let victim = dir.path().join("victim");
    std::fs::write(&victim, "precious").unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    // `exec` keeps the shell's pid, so the link carries the pid iolens will run with.
    let script = format!(
        "ln -s {victim} .o.json.$$.tmp && ln -s {victim} .o.csv.$$.tmp && exec {bin} run --quiet --engine null --time 100ms --target {data} --json o.json --csv o.csv",
        victim = s(&victim),
        bin = env!("CARGO_BIN_EXE_iolens"),
        data = s(&data),
    );
    let out = Command::new("sh").args(["-c", &script]).current_dir(dir.path()).output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
    assert!(read_json(&dir.path().join("o.json"))["aggregate"].is_object());
    assert!(std::fs::read_to_string(dir.path().join("o.csv")).unwrap().starts_with("row_kind,"));
}

/// Whether the preload library was built beside the binary (`cargo build --workspace`); the
/// tracing tests skip without it.
fn have_preload() -> bool {
    let exe = Path::new(env!("CARGO_BIN_EXE_iolens"));
    let dir = exe.parent().unwrap();
    let built = dir.join("libiolens_preload.so").exists() || dir.join("deps/libiolens_preload.so").exists();
    require(built, "the preload library (build the workspace first)")
}

#[test]
fn a_planted_trace_directory_is_neither_used_nor_emptied() {
    if !have_preload() {
        return;
    }
    let dir = scratch();
    let script = format!(
        "mkdir iolens-trace-$$ && echo stale > iolens-trace-$$/keep && exec {} trace -- sh -c 'echo \"$IOLENS_TRACE_DIR\"'",
        env!("CARGO_BIN_EXE_iolens")
    );
    let out = Command::new("sh")
        .args(["-c", &script])
        .current_dir(dir.path())
        .env("TMPDIR", dir.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let planted: Vec<PathBuf> = entries(dir.path()).into_iter().filter(|p| p.join("keep").exists()).collect();
    assert_eq!(planted.len(), 1, "the planted directory and its file are kept: {}", text(&out));
    let used = String::from_utf8_lossy(&out.stdout).lines().next().unwrap_or_default().to_string();
    assert_ne!(Path::new(&used), planted[0].as_path(), "the traced program got the planted directory");
    assert_eq!(entries(dir.path()), planted, "iolens's own directory is removed");
}

#[test]
fn the_trace_stream_directory_is_private() {
    if !have_preload() {
        return;
    }
    let dir = scratch();
    let out = iolens()
        .args([
            "trace",
            "--",
            "sh",
            "-c",
            "stat -c %a \"$IOLENS_TRACE_DIR\"; grep -l \"^iolens-run-v2 pid=$PPID$\" \"$IOLENS_STATE_DIR\"/hosts/*/runs/*.run | xargs grep -c \"^d \"",
        ])
        .env("TMPDIR", dir.path())
        .env("IOLENS_STATE_DIR", dir.path().join("state"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let lines: Vec<String> = String::from_utf8_lossy(&out.stdout).lines().map(str::to_string).collect();
    assert_eq!(lines.first().map(String::as_str), Some("700"), "{}", text(&out));
    // In the lease of iolens (the program's parent) while the trace runs.
    assert_eq!(lines.get(1).map(String::as_str), Some("1"), "{}", text(&out));
}

// ---- (3) a failed write is a failure, and flag errors still leave JSON ----

#[test]
fn an_unwritable_json_path_fails_and_names_the_path() {
    let dir = scratch();
    for bad in [dir.path().join("missing/o.json"), dir.path().to_path_buf()] {
        let out = null_run(dir.path()).args(["--json", s(&bad)]).output().unwrap();
        assert_eq!(out.status.code(), Some(1), "{}: {}", bad.display(), text(&out));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(s(&bad)), "the path is named: {stderr}");
    }
    let out = null_run(dir.path()).args(["--csv", s(&dir.path().join("missing/o.csv"))]).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
}

/// A result file that cannot be written (a full device) fails every command the same way:
/// exit 1, the path named on stderr, and the JSON result (written last) carrying the error.
#[test]
fn a_result_file_that_cannot_be_written_fails_the_command_and_its_json_says_so() {
    let dir = scratch();
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    let trace = dir.path().join("r.trace");
    let out = null_run(&data).args(["--trace", s(&trace)]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let t = s(&trace);
    let d = s(&data);
    let small = ["--size", "1m", "--time", "100ms", "-q"];
    let cases: Vec<Vec<&str>> = vec![
        vec!["analyze", t, "--csv", "/dev/full"],
        vec!["analyze", t, "--parquet", "/dev/full"],
        vec!["analyze", t, "--emit-workload", "/dev/full"],
        vec!["run", "--quiet", "--engine", "null", "--time", "100ms", "--target", d, "--csv", "/dev/full"],
        vec![
            "run",
            "--quiet",
            "--engine",
            "null",
            "--time",
            "100ms",
            "--target",
            d,
            "--parquet",
            "/dev/full",
        ],
        vec![
            "run",
            "--quiet",
            "--engine",
            "null",
            "--time",
            "100ms",
            "--target",
            d,
            "--busy-log",
            "/dev/full",
        ],
        [
            &["sweep", d, "--min-bs", "4k", "--max-bs", "4k", "--threads", "1", "--parquet", "/dev/full"][..],
            &small,
        ]
        .concat(),
    ];
    for (i, args) in cases.iter().enumerate() {
        let json = dir.path().join(format!("r{i}.json"));
        let out = iolens().args(args).args(["--json", s(&json)]).output().unwrap();
        assert_eq!(out.status.code(), Some(1), "{args:?}: {}", text(&out));
        assert!(String::from_utf8_lossy(&out.stderr).contains("/dev/full"), "{args:?}: {}", text(&out));
        let v = read_json(&json);
        let message = v["error"]["message"].as_str().unwrap_or_else(|| panic!("{args:?}: no error in {v}"));
        assert!(message.contains("/dev/full"), "{args:?}: {message}");
        assert_eq!(v["error"]["code"], "failed", "{args:?}");
    }
}

/// A file iolens did not write is never replaced by a result: a trace named by mistake after
/// `--json` (the trace argument left out) stays as it was, whether writable or read-only, and
/// the error names it; so does a user's CSV named after `--csv`.
#[test]
fn a_file_named_by_mistake_as_an_output_is_left_as_it_was() {
    let dir = scratch();
    let trace = dir.path().join("trace.txt");
    for mode in [0o644, 0o444] {
        std::fs::write(&trace, "precious trace\n").unwrap();
        std::fs::set_permissions(&trace, std::os::unix::fs::PermissionsExt::from_mode(mode)).unwrap();
        let out = iolens().args(["analyze", "--json", s(&trace)]).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{}", text(&out));
        assert_eq!(std::fs::read_to_string(&trace).unwrap(), "precious trace\n", "mode {mode:o}");
        assert!(String::from_utf8_lossy(&out.stderr).contains(s(&trace)), "named: {}", text(&out));
        std::fs::remove_file(&trace).unwrap();
    }
    let csv = dir.path().join("notes.csv");
    std::fs::write(&csv, "keep me\n").unwrap();
    let out = null_run(dir.path()).args(["--csv", s(&csv)]).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert_eq!(std::fs::read_to_string(&csv).unwrap(), "keep me\n");
    assert_eq!(entries(dir.path()), vec![csv], "no temporary file left");
}

/// The extended attributes of `path`, or why it has none (the file system keeps none).
fn xattr_names(path: &Path) -> std::io::Result<Vec<u8>> {
    let c = std::ffi::CString::new(s(path)).unwrap();
    let mut buf = [0u8; 1024];
    // SAFETY: a NUL-terminated path and a buffer we own, its length given.
    let n = unsafe { libc::listxattr(c.as_ptr(), buf.as_mut_ptr().cast(), buf.len()) };
    if n < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(buf[..n as usize].to_vec())
}

/// On a file system that keeps user attributes, a result is known by its `user.iolens.output`
/// mark: a plain copy of a result (`cp` drops the mark) is a user's file like any other and is
/// not replaced, even though it holds an iolens JSON document; the command fails naming it.
#[test]
fn a_copy_of_a_result_without_the_mark_is_not_replaced_where_attributes_are_kept() {
    let dir = scratch();
    let json = dir.path().join("r.json");
    let out = null_run(dir.path()).args(["--json", s(&json)]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let names = xattr_names(&json)
        .unwrap_or_else(|e| panic!("{} must keep user attributes for this test: {e}", dir.path().display()));
    assert!(names.windows(18).any(|w| w == b"user.iolens.output"), "a result is marked: {names:?}");
    // A result is replaced by the next one.
    let out = null_run(dir.path()).args(["--json", s(&json)]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    // Its copy is not: `cp` keeps no attributes.
    let copy = dir.path().join("copy.json");
    let cp = Command::new("cp").arg(&json).arg(&copy).status().unwrap();
    assert!(cp.success());
    assert!(
        !xattr_names(&copy).unwrap().windows(18).any(|w| w == b"user.iolens.output"),
        "cp drops the mark"
    );
    let before = std::fs::read(&copy).unwrap();
    let out = null_run(dir.path()).args(["--json", s(&copy)]).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert_eq!(std::fs::read(&copy).unwrap(), before, "the copy is left as it was");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(s(&copy)) && stderr.contains("hint:"), "named, with a hint: {stderr}");
    let mut left = entries(dir.path());
    left.retain(|p| p.file_name().unwrap().to_string_lossy().starts_with('.'));
    assert!(left.is_empty(), "no temporary left: {left:?}");
}

#[test]
fn flag_errors_still_write_the_json_error_report() {
    let dir = scratch();
    let cases: [&[&str]; 3] =
        [&["run", "--no-such-flag"], &["run", "--threads", "many", "--target", "."], &["no-such-command"]];
    for (i, args) in cases.iter().enumerate() {
        let json = dir.path().join(format!("e{i}.json"));
        let spaced = iolens().args(*args).args(["--json", s(&json)]).output().unwrap();
        assert_eq!(spaced.status.code(), Some(2), "{args:?}: {}", text(&spaced));
        let v = read_json(&json);
        assert!(!v["error"]["message"].as_str().unwrap().is_empty(), "{v}");
        assert_eq!(v["interrupted"], false);
        std::fs::remove_file(&json).unwrap();
        let joined = iolens().args(*args).arg(format!("--json={}", s(&json))).output().unwrap();
        assert_eq!(joined.status.code(), Some(2), "{args:?}: {}", text(&joined));
        assert!(read_json(&json)["error"]["message"].is_string());
    }
}

// ---- (4) stdout closed or full ----

#[test]
fn a_full_stdout_fails_cleanly_and_still_writes_json() {
    let dir = scratch();
    let json = dir.path().join("o.json");
    let full = std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap();
    let out = null_run(dir.path()).args(["--json", s(&json)]).stdout(full).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(read_json(&json)["aggregate"]["ops"].as_u64().unwrap() > 0);
}

#[test]
fn a_closed_stdout_pipe_fails_cleanly_and_still_writes_json() {
    let dir = scratch();
    let json = dir.path().join("o.json");
    let mut child = null_run(dir.path())
        .args(["--json", s(&json)])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(141), "EPIPE reads as SIGPIPE would: {}", text(&out));
    assert!(read_json(&json)["aggregate"]["ops"].as_u64().unwrap() > 0);
}

#[test]
fn a_full_stdout_keeps_the_traced_programs_exit_code() {
    if !have_preload() {
        return;
    }
    let dir = scratch();
    let json = dir.path().join("t.json");
    let full = std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap();
    let out = iolens()
        .args(["trace", "--json", s(&json), "--", "sh", "-c", "exit 3"])
        .env("TMPDIR", dir.path())
        .stdout(full)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    assert!(read_json(&json).is_object());
}

// ---- (5) Ctrl-C twice ----

#[test]
fn two_quick_ctrl_c_still_leave_json_and_no_files() {
    let dir = scratch();
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    let json = dir.path().join("out.json");
    let child = iolens()
        .args(["run", "--quiet", "--target", s(&data), "--rw", "write", "--bs", "4k", "--size", "64m"])
        .args(["--time", "30s", "--json", s(&json)])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    assert!(
        wait_for(Duration::from_secs(120), || entries(&data).iter().any(|f| holds_written_data(f))),
        "the run never wrote"
    );
    signal(&child, libc::SIGINT);
    // The scenario itself, not a wait: the second Ctrl-C comes while the first is handled.
    std::thread::sleep(Duration::from_millis(10));
    signal(&child, libc::SIGINT);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", text(&out));
    assert_eq!(read_json(&json)["interrupted"], true);
    assert_eq!(entries(&data), Vec::<PathBuf>::new(), "created files removed");
    assert_eq!(entries(dir.path()), vec![data, json], "no temporary file left");
}

// ---- (6) the traced program does not outlive iolens ----

fn children_of(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else { return out };
    for t in tasks.flatten() {
        if let Ok(list) = std::fs::read_to_string(t.path().join("children")) {
            out.extend(list.split_whitespace().filter_map(|p| p.parse::<u32>().ok()));
        }
    }
    out
}

/// Gone, or a zombie waiting for whoever inherited it.
fn is_gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat.rsplit_once(')').is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    }
}

fn traced_sleep(dir: &Path) -> (Child, u32) {
    let child = iolens()
        .args(["trace", "--", "sleep", "30"])
        .env("TMPDIR", dir)
        .env("IOLENS_STATE_DIR", dir.join("state"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut traced = None;
    assert!(
        wait_for(Duration::from_secs(10), || {
            traced = children_of(child.id()).first().copied();
            traced.is_some()
        }),
        "the traced program never started"
    );
    (child, traced.unwrap())
}

#[test]
fn the_traced_program_dies_with_a_killed_iolens() {
    if !have_preload() {
        return;
    }
    let dir = scratch();
    let (mut child, traced) = traced_sleep(dir.path());
    signal(&child, libc::SIGKILL);
    child.wait().unwrap();
    let gone = wait_for(Duration::from_secs(5), || is_gone(traced));
    if !gone {
        // SAFETY: the orphan this test made.
        unsafe { libc::kill(traced as i32, libc::SIGKILL) };
    }
    assert!(gone, "traced program {traced} outlived iolens");
}

#[test]
fn sigterm_reaches_the_traced_program() {
    if !have_preload() {
        return;
    }
    let dir = scratch();
    let (mut child, traced) = traced_sleep(dir.path());
    signal(&child, libc::SIGTERM);
    let mut status = None;
    let ended = wait_for(Duration::from_secs(10), || {
        status = child.try_wait().unwrap();
        status.is_some()
    });
    if !ended {
        let _ = child.kill();
        let _ = child.wait();
        // SAFETY: the process this test made.
        unsafe { libc::kill(traced as i32, libc::SIGKILL) };
    }
    assert!(ended, "iolens trace did not end on SIGTERM");
    assert_eq!(status.unwrap().code(), Some(128 + libc::SIGTERM), "the program's fate is iolens's");
    assert!(wait_for(Duration::from_secs(5), || is_gone(traced)));
}

// ---- (7) leftovers of a killed trace are removed, and only those ----

#[test]
fn leftovers_of_a_killed_trace_are_removed_and_nothing_else() {
    if !have_preload() {
        return;
    }
    let dir = scratch();
    // Directories that merely look like a trace's (planted, copied, another run's with a forged
    // owner file) are not in the registry: never removed.
    let planted = dir.path().join("iolens-trace-planted");
    std::fs::create_dir(&planted).unwrap();
    std::fs::write(planted.join("1.events"), "x").unwrap();
    std::fs::write(planted.join(".iolens-owner"), "1 1\n").unwrap();
    let via_link = dir.path().join("iolens-trace-symlink");
    std::os::unix::fs::symlink(&planted, &via_link).unwrap();
    let trace_dirs = || -> Vec<PathBuf> {
        entries(dir.path())
            .into_iter()
            .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with("iolens-trace-"))
            .filter(|p| *p != planted && *p != via_link)
            .collect()
    };

    // SIGKILL: the trace cannot clean up after itself.
    let (mut child, traced) = traced_sleep(dir.path());
    signal(&child, libc::SIGKILL);
    child.wait().unwrap();
    assert!(wait_for(Duration::from_secs(5), || is_gone(traced)));
    let left = trace_dirs();
    assert_eq!(left.len(), 1, "the killed trace's directory: {left:?}");

    let out = iolens()
        .args(["trace", "--", "true"])
        .env("TMPDIR", dir.path())
        .env("IOLENS_STATE_DIR", dir.path().join("state"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    assert!(!left[0].exists(), "a dead trace's leftovers are removed");
    assert!(trace_dirs().is_empty(), "and the new trace removed its own");
    assert!(planted.join("1.events").exists(), "a directory iolens did not make is kept");
    assert!(std::fs::symlink_metadata(&via_link).unwrap().file_type().is_symlink());
}
