use super::*;
use std::io::Write;

/// A dead run's lease in `host`, listing `entries` (unlocked: its process is gone).
fn dead_lease(host: &HostDir, entries: &[&Entry]) -> PathBuf {
    let path = host.path.join("runs").join(format!("{:032x}.run", rand::random::<u128>()));
    std::fs::write(&path, format_document(RUN_HEADER, entries)).unwrap();
    path
}

/// What a run records of a file it made: its token in the attribute, its identity now.
fn made(path: &Path, bytes: &[u8]) -> Entry {
    std::fs::write(path, bytes).unwrap();
    let f = File::open(path).unwrap();
    let token = rand::random::<u128>();
    let place = if write_token(&f, token) { TokenPlace::Xattr } else { TokenPlace::None };
    let identity = Identity::of(&f).unwrap();
    Entry {
        kind: EntryKind::File,
        place,
        token,
        identity,
        limit: bytes.len() as u64,
        laid_out: 0,
        path: path.into(),
    }
}

fn made_dir(path: &Path) -> Entry {
    std::fs::create_dir(path).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o700)).unwrap();
    let d = File::open(path).unwrap();
    let token = rand::random::<u128>();
    let place = if write_token(&d, token) {
        TokenPlace::Xattr
    } else {
        assert!(write_marker(&d, token));
        TokenPlace::Marker
    };
    Entry {
        kind: EntryKind::Dir,
        place,
        token,
        identity: Identity::of(&d).unwrap(),
        limit: 0,
        laid_out: 0,
        path: path.into(),
    }
}

use std::os::unix::fs::PermissionsExt;

#[test]
fn a_dead_runs_files_are_removed_only_with_every_proof() {
    let state = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let host = HostDir::open_under(state.path()).unwrap();
    let plain = made(&data.path().join("iolens-plain.dat"), b"run data");
    let appended = made(&data.path().join("iolens-appended.dat"), b"run data");
    std::fs::OpenOptions::new().append(true).open(&appended.path).unwrap().write_all(b"user line\n").unwrap();
    let replaced = made(&data.path().join("iolens-replaced.dat"), b"run data");
    // Renamed over it, so another inode (a file made after a removal may get the same one).
    std::fs::write(data.path().join("other"), b"someone else's").unwrap();
    std::fs::rename(data.path().join("other"), &replaced.path).unwrap();
    let mut forged = made(&data.path().join("iolens-forged.dat"), b"run data");
    forged.token ^= 1; // an entry whose token the file does not carry
    if forged.place == TokenPlace::None {
        forged.place = TokenPlace::Xattr;
    }
    dead_lease(&host, &[&plain, &appended, &replaced, &forged]);

    let cleaned = clean_in(&host).unwrap();
    assert_eq!(cleaned.removed, vec![plain.path.clone()]);
    assert_eq!(cleaned.forgotten, vec![replaced.path.clone()]);
    let left: Vec<&PathBuf> = cleaned.left.iter().map(|(p, _)| p).collect();
    assert_eq!(left.len(), 2, "{:?}", cleaned.left);
    assert!(left.contains(&&appended.path) && left.contains(&&forged.path));
    let why = &cleaned.left.iter().find(|(p, _)| *p == appended.path).unwrap().1;
    assert!(why.contains("grew"), "{why}");
    assert!(!plain.path.exists());
    assert_eq!(std::fs::read(&appended.path).unwrap(), b"run datauser line\n");
    assert_eq!(std::fs::read(&replaced.path).unwrap(), b"someone else's");
    assert!(forged.path.exists());
    // The dead lease is gone with its entries: a second clean has nothing to do.
    let again = clean_in(&host).unwrap();
    assert!(again.removed.is_empty() && again.left.is_empty() && again.forgotten.is_empty());
}

#[test]
fn a_file_changed_in_place_after_its_run_died_is_left() {
    let state = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let host = HostDir::open_under(state.path()).unwrap();
    let mut e = made(&data.path().join("iolens-run.dat"), b"0123456789");
    // As if the run's last record were 3 s older than the file's last change.
    e.identity.ctime_ns -= 3_000_000_000;
    dead_lease(&host, &[&e]);
    let cleaned = clean_in(&host).unwrap();
    assert!(cleaned.removed.is_empty());
    assert!(cleaned.left[0].1.contains("changed"), "{:?}", cleaned.left);
    assert!(e.path.exists());
}

#[test]
fn a_locked_lease_is_alive_whatever_its_process_id_says() {
    let state = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let host = HostDir::open_under(state.path()).unwrap();
    let e = made(&data.path().join("iolens-live.dat"), b"live");
    let lease = dead_lease(&host, &[&e]);
    let held = File::options().read(true).write(true).open(&lease).unwrap();
    assert!(fs_at::try_lock(&held).unwrap());
    let cleaned = clean_in(&host).unwrap();
    assert_eq!(cleaned.live_runs, 1);
    assert!(cleaned.removed.is_empty() && e.path.exists() && lease.exists());
    drop(held);
    let cleaned = clean_in(&host).unwrap();
    assert_eq!(cleaned.removed, vec![e.path.clone()]);
    assert!(!lease.exists());
}

#[test]
fn another_hosts_part_of_a_shared_registry_is_never_judged() {
    let state = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let host = HostDir::open_under(state.path()).unwrap();
    // Another node's part, as a shared home directory holds it: its run is not locked here.
    let other = state.path().join("hosts/node2.0123456789abcdef0123456789abcdef.4026531836.4026531841");
    std::fs::create_dir_all(other.join("runs")).unwrap();
    let e = made(&data.path().join("iolens-node2.dat"), b"node2's live data");
    std::fs::write(other.join("runs/x.run"), format_document(RUN_HEADER, &[&e])).unwrap();
    let cleaned = clean_in(&host).unwrap();
    assert_eq!(cleaned.other_hosts, 1);
    assert!(cleaned.removed.is_empty() && e.path.exists());
}

#[test]
fn a_dead_runs_directory_is_emptied_of_its_own_files_and_keeps_anything_else() {
    let state = tempfile::tempdir().unwrap();
    let base = tempfile::tempdir().unwrap();
    let host = HostDir::open_under(state.path()).unwrap();
    let clean_dir = made_dir(&base.path().join("iolens-quick-a"));
    std::fs::write(clean_dir.path.join("iolens-run-agent0.dat"), b"x").unwrap();
    std::fs::create_dir(clean_dir.path.join("uid-0")).unwrap();
    std::fs::write(clean_dir.path.join("uid-0/12.34.evt"), b"x").unwrap();
    let shared = made_dir(&base.path().join("iolens-quick-b"));
    std::fs::write(shared.path.join("iolens-run-agent0.dat"), b"x").unwrap();
    std::fs::write(shared.path.join("precious.txt"), b"user data").unwrap();
    dead_lease(&host, &[&clean_dir, &shared]);

    let cleaned = clean_in(&host).unwrap();
    assert!(!clean_dir.path.exists());
    assert!(cleaned.removed.contains(&clean_dir.path));
    assert!(cleaned.removed.contains(&clean_dir.path.join("uid-0/12.34.evt")));
    assert_eq!(std::fs::read(shared.path.join("precious.txt")).unwrap(), b"user data");
    assert!(!shared.path.join("iolens-run-agent0.dat").exists());
    let (path, why) = &cleaned.left[0];
    assert_eq!(path, &shared.path);
    assert!(why.contains("precious.txt"), "{why}");
    assert!(!cleaned.removed.contains(&shared.path), "reported as left, not removed");
}

/// Inode numbers are reused at once: a directory that took a dead run's place can match its
/// device and inode; only the run's token tells them apart. A marker planted by another user,
/// or a directory others can write, is not the run's either.
#[test]
fn a_directory_without_the_runs_token_is_not_removed() {
    let state = tempfile::tempdir().unwrap();
    let base = tempfile::tempdir().unwrap();
    let host = HostDir::open_under(state.path()).unwrap();
    let theirs = base.path().join("iolens-quick-theirs");
    std::fs::create_dir(&theirs).unwrap();
    std::fs::write(theirs.join("iolens-precious.dat"), b"user data").unwrap();
    let entry = Entry {
        kind: EntryKind::Dir,
        place: TokenPlace::Marker,
        token: 0x1234,
        identity: Identity::of(&File::open(&theirs).unwrap()).unwrap(),
        limit: 0,
        laid_out: 0,
        path: theirs.clone(),
    };
    // A marker with the token, but another user's.
    let marker = theirs.join(DIR_MARKER);
    std::fs::write(&marker, format!("iolens token={:032x}\n", 0x1234)).unwrap();
    std::os::unix::fs::chown(&marker, Some(65534), Some(65534)).unwrap();
    // The run's directory, since made writable by everyone (as a sticky /tmp is).
    let open_dir = made_dir(&base.path().join("iolens-open"));
    std::fs::set_permissions(&open_dir.path, std::fs::Permissions::from_mode(0o1777)).unwrap();
    std::fs::write(open_dir.path.join("iolens-x.dat"), b"user data").unwrap();
    dead_lease(&host, &[&entry, &open_dir]);
    let cleaned = clean_in(&host).unwrap();
    assert!(cleaned.removed.is_empty(), "{:?}", cleaned.removed);
    assert!(theirs.join("iolens-precious.dat").exists() && open_dir.path.join("iolens-x.dat").exists());
}

#[test]
fn a_scratch_directory_removes_what_iolens_made_in_it_and_nothing_else() {
    let base = tempfile::tempdir().unwrap();
    let scratch = ScratchDir::create(base.path(), "iolens-test-", false).unwrap();
    let path = scratch.path().to_path_buf();
    std::fs::write(path.join("iolens-a.dat"), b"x").unwrap();
    std::fs::write(path.join("1.2.evt"), b"x").unwrap();
    std::fs::write(path.join("1.2.mpi"), b"x").unwrap();
    std::fs::create_dir(path.join("rank-3")).unwrap();
    std::fs::write(path.join("rank-3/iolens-exit"), b"code 0").unwrap();
    drop(scratch);
    assert!(!path.exists());

    let scratch = ScratchDir::create(base.path(), "iolens-test-", false).unwrap();
    let path = scratch.path().to_path_buf();
    std::fs::write(path.join("iolens-a.dat"), b"x").unwrap();
    std::fs::write(path.join("notes.txt"), b"user data").unwrap();
    drop(scratch);
    assert_eq!(std::fs::read(path.join("notes.txt")).unwrap(), b"user data");
    assert!(!path.join("iolens-a.dat").exists());
}

#[test]
fn the_marker_holds_a_directorys_token_and_nothing_planted_counts() {
    let base = tempfile::tempdir().unwrap();
    let dir = File::open(base.path()).unwrap();
    assert_eq!(marker_token(&dir), None);
    assert!(write_marker(&dir, 0x1234));
    assert_eq!(marker_token(&dir), Some(0x1234));
    // An existing marker is never overwritten.
    assert!(!write_marker(&dir, 0x5678));
    assert_eq!(marker_token(&dir), Some(0x1234));

    let elsewhere = tempfile::tempdir().unwrap();
    std::fs::write(elsewhere.path().join("token"), format!("iolens token={:032x}", 0x1234)).unwrap();
    let linked = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(elsewhere.path().join("token"), linked.path().join(DIR_MARKER)).unwrap();
    assert_eq!(marker_token(&File::open(linked.path()).unwrap()), None);
    let fifo = tempfile::tempdir().unwrap();
    let fifo_path = CString::new(fifo.path().join(DIR_MARKER).as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: valid C string.
    assert_eq!(unsafe { libc::mkfifo(fifo_path.as_ptr(), 0o600) }, 0);
    assert_eq!(marker_token(&File::open(fifo.path()).unwrap()), None);
}
