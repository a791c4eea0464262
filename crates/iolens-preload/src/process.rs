//! Process life cycle: a forked child starts a stream of its own; exec and `_exit` write what is
//! buffered before the process image goes away.

use std::sync::atomic::Ordering::*;

use libc::{c_char, c_int};

use crate::record::FD_PATH;
use crate::stream::{flush_all, DROPPED, POOL, STREAM_FD};
use crate::{MY_SLOT, MY_TID, PID, START_NS};
use iolens_record::event::NO_FILE;

pub(crate) unsafe extern "C" fn after_fork_in_child() {
    PID.store(libc::getpid() as u32, Relaxed);
    START_NS.store(iolens_record::clock::now_ns(), Relaxed);
    MY_TID.with(|t| t.set(0));
    let fd = STREAM_FD.swap(-1, AcqRel);
    if fd >= 0 {
        libc::syscall(libc::SYS_close, fd);
    }
    // The parent's buffered events are the parent's to write; the child starts empty and keeps
    // only the slot of the thread that forked (the only thread the child has).
    let mine = MY_SLOT.with(|s| s.get());
    for (i, slot) in POOL.iter().enumerate() {
        *slot.len.get() = 0;
        *slot.events.get() = 0;
        *slot.excluded.get() = Default::default();
        if i as u32 != mine {
            slot.claimed.store(false, Relaxed);
        }
    }
    DROPPED.store(0, Relaxed);
    // Path ids are defined per stream: the child rediscovers inherited descriptors itself.
    for slot in &FD_PATH {
        slot.store(NO_FILE, Relaxed);
    }
}
#[no_mangle]
pub unsafe extern "C" fn execve(
    path: *const c_char,
    argv: *const *const c_char,
    envp: *const *const c_char,
) -> c_int {
    let real = real!(
        "execve" as unsafe extern "C" fn(*const c_char, *const *const c_char, *const *const c_char) -> c_int
    );
    flush_all();
    real(path, argv, envp)
}

#[no_mangle]
pub unsafe extern "C" fn execv(path: *const c_char, argv: *const *const c_char) -> c_int {
    let real = real!("execv" as unsafe extern "C" fn(*const c_char, *const *const c_char) -> c_int);
    flush_all();
    real(path, argv)
}

#[no_mangle]
pub unsafe extern "C" fn execvp(file: *const c_char, argv: *const *const c_char) -> c_int {
    let real = real!("execvp" as unsafe extern "C" fn(*const c_char, *const *const c_char) -> c_int);
    flush_all();
    real(file, argv)
}

#[no_mangle]
pub unsafe extern "C" fn execvpe(
    file: *const c_char,
    argv: *const *const c_char,
    envp: *const *const c_char,
) -> c_int {
    let real = real!(
        "execvpe" as unsafe extern "C" fn(*const c_char, *const *const c_char, *const *const c_char) -> c_int
    );
    flush_all();
    real(file, argv, envp)
}

#[no_mangle]
pub unsafe extern "C" fn _exit(status: c_int) -> ! {
    let real = real!("_exit" as unsafe extern "C" fn(c_int) -> !);
    flush_all();
    real(status)
}

#[no_mangle]
pub unsafe extern "C" fn _Exit(status: c_int) -> ! {
    let real = real!("_Exit" as unsafe extern "C" fn(c_int) -> !);
    flush_all();
    real(status)
}
