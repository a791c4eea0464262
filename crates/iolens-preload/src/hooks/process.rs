//! Process life cycle: exec and `_exit` write what is buffered (in every thread) before the
//! process image goes away, and note programs that will run untraced; vfork runs as fork; a
//! change of user prepares a trace directory the new user can write. (A forked child's fresh
//! start is `lib.rs`'s, which knows every layer's state.)

use std::sync::atomic::Ordering::*;
use std::sync::OnceLock;

use iolens_record::event::{IoOp, FLAG_SECURE_EXEC, FLAG_STATIC_EXEC};
use iolens_record::program::{elf_is_static, ELF_PROBE_BYTES};
use libc::{c_char, c_int};

use crate::base::clock::now_ns;
use crate::base::guard::ENABLED;
use crate::base::raw_syscall::{errno, program_head, real, set_errno, sys};
use crate::record::{define_path, record_flagged};
use crate::stream::{enter_guard, flush_all, freeze_and_flush_all, pid, thaw_all, trace_dir_path};

/// Whether this is a child sharing the memory of its parent (clone with `CLONE_VM`, as
/// `posix_spawn` makes): the recorder's state, buffers and descriptor table are the parent's
/// then, in use by its other threads, and the child must leave them alone.
unsafe fn in_parents_memory() -> bool {
    // SAFETY: getpid takes no argument.
    unsafe { sys()(libc::SYS_getpid) as u32 != pid() }
}

/// Whether the loader will run `path` in secure-execution mode, where it ignores
/// `LD_PRELOAD`: set-user-ID to another user, set-group-ID to another group, or file
/// capabilities for a user other than root.
unsafe fn runs_in_secure_mode(path: *const c_char) -> bool {
    // SAFETY: `path` is NUL-terminated (the caller's promise); `st` is a zeroed `struct stat`, a
    // valid value, for stat to fill.
    unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        if libc::stat(path, &mut st) != 0 || st.st_mode & libc::S_IFMT != libc::S_IFREG {
            return false;
        }
        let euid = libc::geteuid();
        (st.st_mode & libc::S_ISUID != 0 && st.st_uid != euid)
            || (st.st_mode & libc::S_ISGID != 0 && st.st_gid != libc::getegid())
            || (euid != 0
                && libc::getxattr(path, c"security.capability".as_ptr(), std::ptr::null_mut(), 0) > 0)
    }
}

/// The program `execvp(file)` would run: `file` itself if it names a path, else the first
/// executable `PATH` entry, written into `out`. Null when there is none.
unsafe fn search_path(file: *const c_char, out: &mut [u8; 4096]) -> *const c_char {
    // SAFETY: `file` is null or NUL-terminated (the caller's promise), as is PATH; each candidate
    // is written within `out` and NUL-terminated.
    unsafe {
        if file.is_null() || !libc::strchr(file, b'/' as c_int).is_null() {
            return file;
        }
        let name_len = libc::strlen(file);
        let path = libc::getenv(c"PATH".as_ptr());
        let path: &[u8] = if path.is_null() {
            b"/bin:/usr/bin"
        } else {
            std::slice::from_raw_parts(path.cast(), libc::strlen(path))
        };
        for dir in path.split(|b| *b == b':') {
            let dir: &[u8] = if dir.is_empty() { b"." } else { dir };
            if dir.len() + 1 + name_len + 1 > out.len() {
                continue;
            }
            out[..dir.len()].copy_from_slice(dir);
            out[dir.len()] = b'/';
            std::ptr::copy_nonoverlapping(file.cast::<u8>(), out.as_mut_ptr().add(dir.len() + 1), name_len);
            out[dir.len() + 1 + name_len] = 0;
            if libc::access(out.as_ptr().cast(), libc::X_OK) == 0 {
                return out.as_ptr().cast();
            }
        }
        std::ptr::null()
    }
}

/// Whether `path` is a statically linked program.
unsafe fn is_static_program(path: *const c_char) -> bool {
    // SAFETY: `path` is NUL-terminated (the caller's promise).
    unsafe {
        let mut head = [0u8; ELF_PROBE_BYTES];
        let len = program_head(path, &mut head);
        elf_is_static(&head[..len]) == Some(true)
    }
}

/// Notes that this process is about to run `program` where LD_PRELOAD does not reach: in
/// secure-execution mode, or statically linked. Nothing of that image will be seen, so the
/// reader says so.
pub(crate) unsafe fn note_untraced_exec(program: *const c_char) {
    // SAFETY: `program` is null or NUL-terminated (the caller's promise).
    unsafe {
        if program.is_null() {
            return;
        }
        let Some(_g) = enter_guard() else { return };
        let saved = errno();
        let flag = if runs_in_secure_mode(program) {
            Some(FLAG_SECURE_EXEC)
        } else {
            is_static_program(program).then_some(FLAG_STATIC_EXEC)
        };
        if let Some(flag) = flag {
            let id = define_path(program, libc::AT_FDCWD);
            record_flagged(IoOp::Other, id, flag, now_ns());
        }
        set_errno(saved);
    }
}

/// What the end of the process image means to every hook family (exit, `_exit`, exec): set
/// once at start-up by the composition root (`lib.rs`), which knows them all; until then the
/// recorder is off and there is nothing to note.
static IMAGE_END: OnceLock<unsafe fn()> = OnceLock::new();

/// Sets what [`image_ends`] runs.
pub(crate) fn on_image_end(note: unsafe fn()) {
    let _ = IMAGE_END.set(note);
}

/// Notes that this process image ends now (exit, `_exit`, exec).
unsafe fn image_ends() {
    // SAFETY: the note is the root's `image_ends`, which enters the hook guard itself.
    unsafe {
        if let Some(note) = IMAGE_END.get() {
            note();
        }
    }
}

/// Runs an exec of `program`: every thread's buffer written out first (the exec ends those
/// threads), the threads held off meanwhile, and let go if the exec fails.
unsafe fn exec_with_flush(program: *const c_char, exec: impl FnOnce() -> c_int) -> c_int {
    // SAFETY: `program` is null or NUL-terminated (the caller's promise); `exec` is the program's
    // exec, made as it asked.
    unsafe {
        if in_parents_memory() {
            return exec();
        }
        note_untraced_exec(program);
        image_ends();
        freeze_and_flush_all();
        let ret = exec();
        let err = errno();
        thaw_all();
        set_errno(err);
        ret
    }
}

#[no_mangle]
pub unsafe extern "C" fn execve(
    path: *const c_char,
    argv: *const *const c_char,
    envp: *const *const c_char,
) -> c_int {
    // SAFETY: a hook's contract (hooks/mod.rs): the program's arguments, passed on unchanged.
    unsafe {
        let real = real!(
            "execve"
                as unsafe extern "C" fn(*const c_char, *const *const c_char, *const *const c_char) -> c_int
        );
        exec_with_flush(path, || real(path, argv, envp))
    }
}

#[no_mangle]
pub unsafe extern "C" fn execv(path: *const c_char, argv: *const *const c_char) -> c_int {
    // SAFETY: a hook's contract (hooks/mod.rs): the program's arguments, passed on unchanged.
    unsafe {
        let real = real!("execv" as unsafe extern "C" fn(*const c_char, *const *const c_char) -> c_int);
        exec_with_flush(path, || real(path, argv))
    }
}

#[no_mangle]
pub unsafe extern "C" fn execvp(file: *const c_char, argv: *const *const c_char) -> c_int {
    // SAFETY: a hook's contract (hooks/mod.rs): the program's arguments, passed on unchanged.
    unsafe {
        let real = real!("execvp" as unsafe extern "C" fn(*const c_char, *const *const c_char) -> c_int);
        let mut found = [0u8; 4096];
        exec_with_flush(search_path(file, &mut found), || real(file, argv))
    }
}

#[no_mangle]
pub unsafe extern "C" fn execvpe(
    file: *const c_char,
    argv: *const *const c_char,
    envp: *const *const c_char,
) -> c_int {
    // SAFETY: a hook's contract (hooks/mod.rs): the program's arguments, passed on unchanged.
    unsafe {
        let real = real!(
            "execvpe"
                as unsafe extern "C" fn(*const c_char, *const *const c_char, *const *const c_char) -> c_int
        );
        let mut found = [0u8; 4096];
        exec_with_flush(search_path(file, &mut found), || real(file, argv, envp))
    }
}

/// vfork runs as fork under trace. A vfork child shares the parent's memory until it execs:
/// the hooks it runs (dup2, close, exec) would change the parent's descriptor table and write
/// out buffers the parent's other threads are filling. A forked child has memory of its own;
/// POSIX allows vfork to be fork, and a program correct under vfork is correct under fork.
#[no_mangle]
pub unsafe extern "C" fn vfork() -> libc::pid_t {
    // SAFETY: a hook's contract (hooks/mod.rs): the program's arguments, passed on unchanged.
    unsafe { libc::fork() }
}

#[no_mangle]
pub unsafe extern "C" fn __vfork() -> libc::pid_t {
    // SAFETY: a hook's contract (hooks/mod.rs): the program's arguments, passed on unchanged.
    unsafe { libc::fork() }
}

/// Before the process ends without exit handlers (`_exit`, `_Exit`, a raw `exit_group`): the
/// end is noted and every buffer written out.
pub(crate) unsafe fn before_exit() {
    // SAFETY: noting the end and flushing ask nothing of the caller.
    unsafe {
        if !in_parents_memory() {
            image_ends();
            flush_all();
        }
    }
}

#[no_mangle]
pub unsafe extern "C" fn _exit(status: c_int) -> ! {
    // SAFETY: a hook's contract (hooks/mod.rs): the program's arguments, passed on unchanged.
    unsafe {
        let real = real!("_exit" as unsafe extern "C" fn(c_int) -> !);
        before_exit();
        real(status)
    }
}

#[no_mangle]
pub unsafe extern "C" fn _Exit(status: c_int) -> ! {
    // SAFETY: a hook's contract (hooks/mod.rs): the program's arguments, passed on unchanged.
    unsafe {
        let real = real!("_Exit" as unsafe extern "C" fn(c_int) -> !);
        before_exit();
        real(status)
    }
}

/// Before a privileged process takes the identity `uid`: it will not be able to create files
/// in the trace directory of the user running iolens (mode 0700), so a directory `uid-<uid>`
/// is made inside for it (and the processes it starts), owned by that user, and the trace
/// directory opened to passing through (0711: nothing in it can be listed).
unsafe fn before_user_change(uid: libc::uid_t) {
    // SAFETY: every path is NUL-terminated within `path`.
    unsafe {
        if !ENABLED.load(Relaxed) || uid == libc::uid_t::MAX || uid == 0 || libc::geteuid() != 0 {
            return;
        }
        let saved = errno();
        let mut path = [0u8; 3200];
        let dir_len = trace_dir_path(&mut path, None);
        path[dir_len] = 0;
        sys()(libc::SYS_fchmodat, libc::AT_FDCWD, path.as_ptr(), 0o711);
        let len = trace_dir_path(&mut path, Some(uid));
        path[len] = 0;
        sys()(libc::SYS_mkdirat, libc::AT_FDCWD, path.as_ptr(), 0o700);
        sys()(libc::SYS_fchownat, libc::AT_FDCWD, path.as_ptr(), uid, u32::MAX, libc::AT_SYMLINK_NOFOLLOW);
        set_errno(saved);
    }
}

#[no_mangle]
pub unsafe extern "C" fn setuid(uid: libc::uid_t) -> c_int {
    // SAFETY: a hook's contract (hooks/mod.rs): the program's arguments, passed on unchanged.
    unsafe {
        let real = real!("setuid" as unsafe extern "C" fn(libc::uid_t) -> c_int);
        before_user_change(uid);
        real(uid)
    }
}

#[no_mangle]
pub unsafe extern "C" fn seteuid(uid: libc::uid_t) -> c_int {
    // SAFETY: a hook's contract (hooks/mod.rs): the program's arguments, passed on unchanged.
    unsafe {
        let real = real!("seteuid" as unsafe extern "C" fn(libc::uid_t) -> c_int);
        before_user_change(uid);
        real(uid)
    }
}

#[no_mangle]
pub unsafe extern "C" fn setreuid(ruid: libc::uid_t, euid: libc::uid_t) -> c_int {
    // SAFETY: a hook's contract (hooks/mod.rs): the program's arguments, passed on unchanged.
    unsafe {
        let real = real!("setreuid" as unsafe extern "C" fn(libc::uid_t, libc::uid_t) -> c_int);
        before_user_change(euid);
        real(ruid, euid)
    }
}

#[no_mangle]
pub unsafe extern "C" fn setresuid(ruid: libc::uid_t, euid: libc::uid_t, suid: libc::uid_t) -> c_int {
    // SAFETY: a hook's contract (hooks/mod.rs): the program's arguments, passed on unchanged.
    unsafe {
        let real = real!("setresuid" as unsafe extern "C" fn(libc::uid_t, libc::uid_t, libc::uid_t) -> c_int);
        before_user_change(euid);
        real(ruid, euid, suid)
    }
}

/// posix_spawn and posix_spawnp: where the pid goes, the program, file actions, attributes,
/// argv, envp.
type Spawn = unsafe extern "C" fn(
    *mut libc::pid_t,
    *const c_char,
    *const libc::c_void,
    *const libc::c_void,
    *const *mut c_char,
    *const *mut c_char,
) -> c_int;

/// posix_spawn's child shares the parent's memory until it execs, so it is the parent that
/// notes a program the child will run untraced.
#[no_mangle]
pub unsafe extern "C" fn posix_spawn(
    pid: *mut libc::pid_t,
    path: *const c_char,
    actions: *const libc::c_void,
    attributes: *const libc::c_void,
    argv: *const *mut c_char,
    envp: *const *mut c_char,
) -> c_int {
    // SAFETY: a hook's contract (hooks/mod.rs): the program's arguments, passed on unchanged.
    unsafe {
        let real = real!("posix_spawn" as Spawn);
        if !in_parents_memory() {
            note_untraced_exec(path);
        }
        real(pid, path, actions, attributes, argv, envp)
    }
}

#[no_mangle]
pub unsafe extern "C" fn posix_spawnp(
    pid: *mut libc::pid_t,
    file: *const c_char,
    actions: *const libc::c_void,
    attributes: *const libc::c_void,
    argv: *const *mut c_char,
    envp: *const *mut c_char,
) -> c_int {
    // SAFETY: a hook's contract (hooks/mod.rs): the program's arguments, passed on unchanged.
    unsafe {
        let real = real!("posix_spawnp" as Spawn);
        if !in_parents_memory() {
            let mut found = [0u8; 4096];
            note_untraced_exec(search_path(file, &mut found));
        }
        real(pid, file, actions, attributes, argv, envp)
    }
}
