//! stdio: glibc's stdio calls the kernel through internal aliases, not through the exported
//! read/write, so its traffic is recorded here, at the application's calls.

use std::sync::atomic::Ordering::*;

use iolens_record::event::{IoOp, Layer, NO_FILE, UNKNOWN_OFFSET};
use libc::{c_char, c_int, c_void, size_t, FILE};

use crate::clock::now_ns;
use crate::posix::opened;
use crate::record::{path_of, record, result_of, FD_OFFSET, FD_PATH, MAX_FDS, NOT_A_FILE};
use crate::{errno, fileno_unlocked, set_errno, vfprintf, Guard};

unsafe fn stream_file(stream: *mut FILE) -> (c_int, u32) {
    if stream.is_null() {
        return (-1, NOT_A_FILE);
    }
    let fd = fileno_unlocked(stream);
    (fd, path_of(fd))
}

macro_rules! traced_stdio_call {
    ($op:expr, $stream:expr, $requested:expr, $call:expr, $moved:expr) => {{
        match Guard::enter() {
            None => $call,
            Some(_g) => {
                let (_, file) = stream_file($stream);
                if file == NOT_A_FILE {
                    $call
                } else {
                    let t0 = now_ns();
                    let ret = $call;
                    let t1 = now_ns();
                    let err = errno();
                    let moved: i64 = $moved(&ret);
                    record($op, Layer::Stdio, file, UNKNOWN_OFFSET, $requested as u64, moved, t0, t1);
                    set_errno(err);
                    ret
                }
            }
        }
    }};
}

macro_rules! fopen_hook {
    ($name:ident, $real:literal) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(path: *const c_char, mode: *const c_char) -> *mut FILE {
            let real = real!($real as unsafe extern "C" fn(*const c_char, *const c_char) -> *mut FILE);
            let Some(_g) = Guard::enter() else { return real(path, mode) };
            let t0 = now_ns();
            let f = real(path, mode);
            if !f.is_null() {
                let append = !mode.is_null() && *mode == b'a' as c_char;
                opened(
                    fileno_unlocked(f),
                    path,
                    libc::AT_FDCWD,
                    if append { libc::O_APPEND } else { 0 },
                    Layer::Stdio,
                    t0,
                );
            }
            f
        }
    };
}
fopen_hook!(fopen, "fopen");
fopen_hook!(fopen64, "fopen64");

#[no_mangle]
pub unsafe extern "C" fn fread(ptr: *mut c_void, size: size_t, n: size_t, stream: *mut FILE) -> size_t {
    let real = real!("fread" as unsafe extern "C" fn(*mut c_void, size_t, size_t, *mut FILE) -> size_t);
    traced_stdio_call!(
        IoOp::Read,
        stream,
        size.saturating_mul(n),
        real(ptr, size, n, stream),
        |r: &size_t| (*r * size) as i64
    )
}

#[no_mangle]
pub unsafe extern "C" fn fwrite(ptr: *const c_void, size: size_t, n: size_t, stream: *mut FILE) -> size_t {
    let real = real!("fwrite" as unsafe extern "C" fn(*const c_void, size_t, size_t, *mut FILE) -> size_t);
    traced_stdio_call!(
        IoOp::Write,
        stream,
        size.saturating_mul(n),
        real(ptr, size, n, stream),
        |r: &size_t| (*r * size) as i64
    )
}

#[no_mangle]
pub unsafe extern "C" fn fgets(s: *mut c_char, n: c_int, stream: *mut FILE) -> *mut c_char {
    let real = real!("fgets" as unsafe extern "C" fn(*mut c_char, c_int, *mut FILE) -> *mut c_char);
    traced_stdio_call!(IoOp::Read, stream, n.max(1) - 1, real(s, n, stream), |r: &*mut c_char| if r.is_null()
    {
        0
    } else {
        libc::strlen(*r) as i64
    })
}

#[no_mangle]
pub unsafe extern "C" fn fputs(s: *const c_char, stream: *mut FILE) -> c_int {
    let real = real!("fputs" as unsafe extern "C" fn(*const c_char, *mut FILE) -> c_int);
    let len = if s.is_null() { 0 } else { libc::strlen(s) };
    traced_stdio_call!(IoOp::Write, stream, len, real(s, stream), |r: &c_int| if *r < 0 {
        -(libc::EIO as i64)
    } else {
        len as i64
    })
}

/// Called by the C shim's fprintf with the caller's va_list.
#[no_mangle]
pub unsafe extern "C" fn iolens_hook_vfprintf(
    stream: *mut FILE,
    format: *const c_char,
    ap: *mut c_void,
) -> c_int {
    let Some(_g) = Guard::enter() else { return vfprintf(stream, format, ap) };
    let (_, file) = stream_file(stream);
    if file == NOT_A_FILE {
        return vfprintf(stream, format, ap);
    }
    let t0 = now_ns();
    let ret = vfprintf(stream, format, ap);
    let t1 = now_ns();
    let err = errno();
    // The length is known only afterwards: what was formatted is what was asked for.
    let moved = result_of(ret as i64, err);
    record(IoOp::Write, Layer::Stdio, file, UNKNOWN_OFFSET, moved.max(0) as u64, moved, t0, t1);
    set_errno(err);
    ret
}

#[no_mangle]
pub unsafe extern "C" fn fflush(stream: *mut FILE) -> c_int {
    let real = real!("fflush" as unsafe extern "C" fn(*mut FILE) -> c_int);
    traced_stdio_call!(IoOp::Flush, stream, 0u64, real(stream), |r: &c_int| *r as i64)
}

#[no_mangle]
pub unsafe extern "C" fn fclose(stream: *mut FILE) -> c_int {
    let real = real!("fclose" as unsafe extern "C" fn(*mut FILE) -> c_int);
    let Some(_g) = Guard::enter() else { return real(stream) };
    let (fd, file) = stream_file(stream);
    let t0 = now_ns();
    let ret = real(stream);
    let t1 = now_ns();
    let err = errno();
    if file != NOT_A_FILE {
        record(IoOp::Close, Layer::Stdio, file, UNKNOWN_OFFSET, 0, result_of(ret as i64, err), t0, t1);
    }
    if fd >= 0 && (fd as usize) < MAX_FDS {
        FD_PATH[fd as usize].store(NO_FILE, Relaxed);
        FD_OFFSET[fd as usize].store(UNKNOWN_OFFSET, Relaxed);
    }
    set_errno(err);
    ret
}
