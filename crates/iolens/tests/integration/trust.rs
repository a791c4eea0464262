//! Trust on a real cluster: the leftover registry never deletes a live or foreign file, and root
//! never loads or deletes what another user planted. Nodes sharing a home directory are
//! simulated with PID, mount and time namespaces; the other user is `nobody` (uid 65534).

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::util::{bin, entries as names, holds_written_data, require, root, s, user_data, wait_for, Env};

const NOBODY: u32 = 65534;

fn text(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

/// A write run that goes on for a minute unless stopped.
fn long_write(dir: &Path) -> [&str; 12] {
    ["run", "--quiet", "--target", s(dir), "--rw", "write", "--bs", "4k", "--size", "8m", "--time", "60s"]
}

fn write_run(env: &Env, dir: &Path) -> Child {
    env.iolens().args(long_write(dir)).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap()
}

/// `iolens ARGS` as a process of another node: PID, mount and (where the kernel has them) time
/// namespaces of its own, with the shared registry. Killing the returned child ends it (SIGTERM).
fn on_another_node(env: &Env, args: &[&str]) -> Command {
    let mut c = Command::new("unshare");
    c.args(["--pid", "--fork", "--mount-proc", "--kill-child=SIGTERM"]);
    if Path::new("/proc/self/ns/time").exists() {
        c.args(["--time", "--monotonic", "1000", "--boottime", "1000"]);
    }
    c.arg("--").arg(bin()).args(args).env("IOLENS_STATE_DIR", &env.state).stdin(Stdio::null());
    c
}

/// Issue 23, defect 1: a node that shares the home directory (and so the registry) decided that
/// a live run of another node was dead — its pid not found in its own /proc — and removed the
/// live run's files through `clean`, or through the quiet clean of any run.
#[test]
fn a_live_run_of_another_node_sharing_the_registry_is_never_touched() {
    if !require(root(), "root, for PID and mount namespaces") {
        return;
    }
    let env = Env::new();
    let data = env.mkdir("node1-data");
    let mut node1 = on_another_node(&env, &long_write(&data))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while names(&data).is_empty() {
        if let Some(status) = node1.try_wait().unwrap() {
            let mut err = String::new();
            std::io::Read::read_to_string(node1.stderr.as_mut().unwrap(), &mut err).unwrap();
            if !require(false, &format!("unshare --pid --mount-proc: {status}: {err}")) {
                return;
            }
        }
        assert!(started.elapsed() < Duration::from_secs(120), "node 1's run made no file");
        std::thread::sleep(Duration::from_millis(20));
    }
    let live = data.join(&names(&data)[0]);
    wait_for("node 1's run to write into its file", || holds_written_data(&live));

    // Node 2: `clean`, and a run (which cleans quietly first), in namespaces of its own.
    let clean = on_another_node(&env, &["clean"]).output().unwrap();
    assert!(clean.status.success(), "{}", text(&clean));
    assert!(text(&clean).contains("other host(s)"), "node 1's part is named, not judged: {}", text(&clean));
    let other = env.mkdir("node2-data");
    let run = on_another_node(
        &env,
        &["run", "--quiet", "--target", s(&other), "--rw", "write", "--bs", "4k", "--size", "1m"],
    )
    .output()
    .unwrap();
    assert!(run.status.success(), "{}", text(&run));
    // And this process's own namespace is yet another node.
    let here = env.iolens().arg("clean").output().unwrap();
    assert!(here.status.success(), "{}", text(&here));

    assert!(live.exists(), "node 1's live file was removed: {}{}", text(&clean), text(&here));
    assert!(node1.try_wait().unwrap().is_none(), "node 1's run still goes on");
    // Node 1's iolens (unshare's child, pid 1 of its namespace) ends as on Ctrl-C.
    let unshare = node1.id();
    let children = std::fs::read_to_string(format!("/proc/{unshare}/task/{unshare}/children")).unwrap();
    for pid in children.split_whitespace() {
        // SAFETY: signalling a process this test started.
        unsafe { libc::kill(pid.parse().unwrap(), libc::SIGTERM) };
    }
    node1.wait().unwrap();
    wait_for("node 1's run to remove its file", || !live.exists());
}

/// Defect 5: content someone wrote into a killed run's file after it died makes the file no
/// longer iolens's: `clean` leaves it, and says why.
#[test]
fn a_killed_runs_file_written_after_it_died_is_left_and_said() {
    let env = Env::new();
    let dir = env.mkdir("data");
    let mut child = write_run(&env, &dir);
    wait_for("the run's file", || names(&dir).len() == 1);
    wait_for("the run to write into its file", || holds_written_data(&dir.join(&names(&dir)[0])));
    child.kill().unwrap();
    child.wait().unwrap();
    let file = dir.join(&names(&dir)[0]);
    let mut appended = std::fs::read(&file).unwrap();
    std::io::Write::write_all(
        &mut std::fs::OpenOptions::new().append(true).open(&file).unwrap(),
        b"a line the user needs\n",
    )
    .unwrap();
    appended.extend_from_slice(b"a line the user needs\n");
    let out = env.iolens().arg("clean").output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(std::fs::read(&file).unwrap(), appended, "the user's data is intact: {}", text(&out));
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains(&format!("left {}", file.display())) && said.contains("grew"), "{said}");
}

/// Defect 6: a killed `quick`'s scratch directory was removed with the user's files in it, and
/// reported as "forgotten … left alone" while it was gone.
#[test]
fn a_killed_quicks_scratch_directory_keeps_what_iolens_did_not_make() {
    let env = Env::new();
    let base = env.mkdir("quick");
    let scratch = env.killed_quick(&base);
    std::fs::write(scratch.join("notes.txt"), user_data(5000, 3)).unwrap();
    let out = env.iolens().arg("clean").output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(std::fs::read(scratch.join("notes.txt")).unwrap(), user_data(5000, 3), "{}", text(&out));
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains(&format!("left {}", scratch.display())) && said.contains("notes.txt"), "{said}");
    assert!(!said.contains("forgotten"), "{said}");
    assert_eq!(names(&scratch), vec!["notes.txt".to_string()], "iolens's own files in it are removed");
}

fn chown_nobody(p: &Path) {
    std::os::unix::fs::lchown(p, Some(NOBODY), Some(NOBODY)).unwrap();
}

/// The part of the registry this host would use (see `ownership::host_key`): what an attacker
/// who can read /proc computes too.
fn host_key() -> String {
    let host: String = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .unwrap()
        .trim()
        .chars()
        .take(64)
        .map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '_' })
        .collect();
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").unwrap().trim().replace('-', "");
    let ns = |k: &str| std::fs::metadata(format!("/proc/self/ns/{k}")).unwrap().ino();
    format!("{host}.{boot}.{}.{}", ns("pid"), ns("mnt"))
}

fn hex(p: &Path) -> String {
    p.as_os_str().as_encoded_bytes().iter().map(|b| format!("{b:02x}")).collect()
}

/// Defects 3 and 4: with `sudo -E`, root's state directory is in a home the user owns. The user
/// forges entries — a root-owned file by device and inode, a world-writable sticky directory
/// with a planted `.iolens-owner` — in the registry's old and new formats. Root's `clean` and
/// `run` removed both. Now the user's directory is refused as the registry's home (and said).
#[test]
fn root_never_removes_what_a_user_forged_into_a_registry_in_their_home() {
    if !require(root(), "root, to play root against a user") {
        return;
    }
    let env = Env::new();
    let home = env.mkdir("home");
    let state = home.join("state");
    let victim = env.path("root-only.dat");
    std::fs::write(&victim, user_data(65536, 9)).unwrap();
    let shared = env.mkdir("shared-tmp");
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o1777)).unwrap();
    std::fs::write(shared.join("iolens-run-precious.dat"), user_data(4096, 1)).unwrap();
    let token = "0123456789abcdef0123456789abcdef";
    std::fs::write(shared.join(".iolens-owner"), format!("iolens token={token}\n")).unwrap();
    chown_nobody(&shared.join(".iolens-owner"));
    let v = std::fs::metadata(&victim).unwrap();
    let d = std::fs::metadata(&shared).unwrap();
    let times = |m: &std::fs::Metadata| {
        (
            i128::from(m.mtime()) * 1_000_000_000 + i128::from(m.mtime_nsec()),
            i128::from(m.ctime()) * 1_000_000_000 + i128::from(m.ctime_nsec()),
        )
    };
    let ((vm, vc), (dm, dc)) = (times(&v), times(&d));
    // The old format (pid 999999 is not alive) and the new one (a lease no process holds).
    let old = format!(
        "iolens-owned-v1\nf 999999 1 {token} {} {} {} {vm} {vc} 0 {}\nd 999999 1 {token} {} {} {} {dm} {dc} 0 {}\n",
        v.dev(),
        v.ino(),
        v.len(),
        hex(&victim),
        d.dev(),
        d.ino(),
        d.len(),
        hex(&shared)
    );
    let new = format!(
        "iolens-run-v2 pid=999999\nf n {token} {} {} {} {vm} {vc} {} 0 {}\nd m {token} {} {} {} {dm} {dc} 0 0 {}\nend\n",
        v.dev(),
        v.ino(),
        v.len(),
        v.len(),
        hex(&victim),
        d.dev(),
        d.ino(),
        d.len(),
        hex(&shared)
    );
    let runs = state.join("hosts").join(host_key()).join("runs");
    std::fs::create_dir_all(&runs).unwrap();
    std::fs::write(state.join("owned"), old).unwrap();
    std::fs::write(runs.join("forged.run"), new).unwrap();
    for p in [
        &home,
        &state,
        &state.join("owned"),
        &state.join("hosts"),
        &runs.parent().unwrap().to_path_buf(),
        &runs,
    ] {
        chown_nobody(p);
    }
    chown_nobody(&runs.join("forged.run"));
    for p in [&home, &state, &state.join("hosts"), &runs.parent().unwrap().to_path_buf(), &runs] {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o700)).unwrap();
    }

    let as_root_with_the_users_env = |args: &[&str]| {
        Command::new(bin())
            .args(args)
            .env("HOME", &home)
            .env("IOLENS_STATE_DIR", &state)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    let clean = as_root_with_the_users_env(&["clean"]);
    assert!(clean.status.success(), "{}", text(&clean));
    let data = env.mkdir("data");
    let run =
        as_root_with_the_users_env(&["run", "-q", "--target", s(&data), "--rw", "write", "--size", "1m"]);
    assert!(run.status.success(), "{}", text(&run));
    assert_eq!(std::fs::read(&victim).unwrap(), user_data(65536, 9), "{}{}", text(&clean), text(&run));
    assert_eq!(std::fs::read(shared.join("iolens-run-precious.dat")).unwrap(), user_data(4096, 1));
    assert!(
        text(&clean).contains(&format!("not kept in {}", state.display()))
            && text(&clean).contains("uid 65534"),
        "the refusal is said: {}",
        text(&clean)
    );
}

/// Defect 2: root with the user's XDG_CACHE_HOME (`sudo -E`) wrote the preload library below a
/// directory the user owns and handed that path to the loader; the user could swap the
/// directory in between and have root run their constructor. The user's directory is refused:
/// the library root loads lies where only root can change anything.
#[test]
fn root_never_loads_a_preload_library_from_a_directory_a_user_controls() {
    if !require(root(), "root, to play root against a user") {
        return;
    }
    let env = Env::new();
    let home = env.mkdir("home");
    std::fs::create_dir(home.join(".cache")).unwrap();
    chown_nobody(&home.join(".cache"));
    chown_nobody(&home);
    let out = Command::new(bin())
        .args(["trace", "--", "sh", "-c", "printf '%s\\n' \"$LD_PRELOAD\""])
        .env("HOME", &home)
        .env("XDG_CACHE_HOME", home.join(".cache"))
        .env("IOLENS_STATE_DIR", &env.state)
        .env_remove("IOLENS_PRELOAD")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let loaded = PathBuf::from(String::from_utf8_lossy(&out.stdout).lines().next().unwrap_or_default());
    assert!(loaded.is_absolute() && !loaded.starts_with(&home), "LD_PRELOAD={}", loaded.display());
    let mut at = loaded.as_path();
    while let Some(parent) = at.parent() {
        let m = std::fs::metadata(parent).unwrap();
        assert!(m.uid() == 0 && (m.mode() & 0o022 == 0 || m.mode() & 0o1000 != 0), "{}", parent.display());
        at = parent;
    }
    assert!(!home.join(".cache/iolens").exists(), "nothing written where the user could swap it");
}
