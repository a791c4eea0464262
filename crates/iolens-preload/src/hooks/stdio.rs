//! stdio: glibc's stdio calls the kernel through internal aliases, not through the exported
//! read/write, so its traffic is recorded here, at the application's calls. The calls whose
//! bytes are known only by how far they moved the stream (scans, wide characters) are in
//! `stdio_by_position`.

use iolens_record::event::{Excluded, IoOp, Layer, NO_FILE, UNKNOWN_OFFSET};
use libc::{c_char, c_int, c_uint, c_void, size_t, ssize_t, FILE};

use crate::base::clock::now_ns;
use crate::base::fd_table::{self, NOT_A_FILE};
use crate::base::guard::recording_interrupted;
use crate::base::raw_syscall::{errno, real, set_errno};
use crate::record::{
    count_excluded, count_interrupted, count_left_out, opened, path_of, record, result_of, traced_fd_call,
};
use crate::stream::enter_guard;

extern "C" {
    pub(super) static stdin: *mut FILE;
    pub(super) static stdout: *mut FILE;
    pub(super) fn fileno_unlocked(stream: *mut FILE) -> c_int;
}

pub(super) unsafe fn stream_file(stream: *mut FILE) -> (c_int, u32) {
    // SAFETY: `stream` is a stream the program passed to a stdio call, hence open.
    unsafe {
        if stream.is_null() {
            return (-1, NOT_A_FILE);
        }
        let fd = fileno_unlocked(stream);
        (fd, path_of(fd))
    }
}

/// Wraps a stdio call on `stream`: times it and records it if the stream is on a file. Without
/// `$requested`, the call asks for no length of its own (a line, a formatted string) and what it
/// moved is what it asked for.
macro_rules! traced_stdio_call {
    ($op:expr, $stream:expr, $call:expr, $moved:expr) => {{
        traced_stdio_call!($op, $stream, None::<u64>, $call, $moved)
    }};
    ($op:expr, $stream:expr, $requested:expr, $call:expr, $moved:expr) => {{
        match enter_guard() {
            None => {
                let ret = $call;
                if recording_interrupted() {
                    let fd = if $stream.is_null() { -1 } else { fileno_unlocked($stream) };
                    count_interrupted(fd, $op.is_data().then(|| $moved(&ret)));
                }
                ret
            }
            Some(guard) => {
                let (fd, file) = stream_file($stream);
                if file == NOT_A_FILE {
                    let ret = guard.lifted(|| $call);
                    if $op.is_data() {
                        count_excluded(fd, $moved(&ret));
                    }
                    ret
                } else {
                    let t0 = now_ns();
                    let ret = guard.lifted(|| $call);
                    let t1 = now_ns();
                    let err = errno();
                    let moved: i64 = $moved(&ret);
                    let requested: Option<u64> = $requested.into();
                    let requested = requested.unwrap_or(moved.max(0) as u64);
                    record($op, Layer::Stdio, file, UNKNOWN_OFFSET, requested, moved, t0, t1);
                    set_errno(err);
                    ret
                }
            }
        }
    }};
}

pub(super) use traced_stdio_call;

/// Registers the file `f` was just opened on (by fopen or freopen, at `t0`).
unsafe fn stream_opened(f: *mut FILE, path: *const c_char, mode: *const c_char, t0: u64) {
    // SAFETY: `f` is null or the stream just opened, `path` and `mode` the strings the program
    // passed (null, or NUL-terminated).
    unsafe {
        if f.is_null() {
            return;
        }
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
}

macro_rules! fopen_hook {
    ($name:ident, $real:literal) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(path: *const c_char, mode: *const c_char) -> *mut FILE {
            // SAFETY: a hook's contract (hooks/mod.rs): the program's arguments, passed on
            // unchanged.
            unsafe {
                let real = real!($real as unsafe extern "C" fn(*const c_char, *const c_char) -> *mut FILE);
                let Some(guard) = enter_guard() else { return real(path, mode) };
                let t0 = now_ns();
                let f = guard.lifted(|| real(path, mode));
                stream_opened(f, path, mode, t0);
                f
            }
        }
    };
}
fopen_hook!(fopen, "fopen");
fopen_hook!(fopen64, "fopen64");

/// tmpfile opens an unnamed file in /tmp inside libc: it is opened as O_TMPFILE is, named as
/// /proc/self/fd shows it.
macro_rules! tmpfile_hook {
    ($name:ident, $real:literal) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name() -> *mut FILE {
            // SAFETY: a hook's contract (hooks/mod.rs): the program's arguments, passed on
            // unchanged.
            unsafe {
                let real = real!($real as unsafe extern "C" fn() -> *mut FILE);
                let Some(guard) = enter_guard() else { return real() };
                let t0 = now_ns();
                let f = guard.lifted(|| real());
                if !f.is_null() {
                    opened(
                        fileno_unlocked(f),
                        c"/tmp".as_ptr(),
                        libc::AT_FDCWD,
                        libc::O_TMPFILE,
                        Layer::Stdio,
                        t0,
                    );
                }
                f
            }
        }
    };
}
tmpfile_hook!(tmpfile, "tmpfile");
tmpfile_hook!(tmpfile64, "tmpfile64");

/// freopen closes the stream's descriptor and opens `path` in its place, usually under the same
/// number, through calls no hook sees: the number must stop naming the old file. With no path,
/// the same file is reopened in another mode, and keeps its id.
macro_rules! freopen_hook {
    ($name:ident, $real:literal) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            path: *const c_char,
            mode: *const c_char,
            stream: *mut FILE,
        ) -> *mut FILE {
            // SAFETY: a hook's contract (hooks/mod.rs): the program's arguments, passed on
            // unchanged.
            unsafe {
                let real = real!(
                    $real as unsafe extern "C" fn(*const c_char, *const c_char, *mut FILE) -> *mut FILE
                );
                let Some(guard) = enter_guard() else { return real(path, mode, stream) };
                let (old_fd, old_file) = stream_file(stream);
                let t0 = now_ns();
                let f = guard.lifted(|| real(path, mode, stream));
                let err = errno();
                fd_table::forget(old_fd);
                if path.is_null() {
                    let fd = if f.is_null() { -1 } else { fileno_unlocked(f) };
                    if old_file != NOT_A_FILE && old_file != NO_FILE {
                        fd_table::set_path(fd, old_file);
                    }
                } else {
                    stream_opened(f, path, mode, t0);
                }
                set_errno(err);
                f
            }
        }
    };
}
freopen_hook!(freopen, "freopen");
freopen_hook!(freopen64, "freopen64");

macro_rules! fread_hook {
    ($name:ident, $real:literal, $op:expr, $buf:ty) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(ptr: $buf, size: size_t, n: size_t, stream: *mut FILE) -> size_t {
            // SAFETY: a hook's contract (hooks/mod.rs): the program's arguments, passed on
            // unchanged.
            unsafe {
                let real = real!($real as unsafe extern "C" fn($buf, size_t, size_t, *mut FILE) -> size_t);
                traced_stdio_call!(
                    $op,
                    stream,
                    Some(size.saturating_mul(n) as u64),
                    real(ptr, size, n, stream),
                    |r: &size_t| { r.saturating_mul(size) as i64 }
                )
            }
        }
    };
}
fread_hook!(fread, "fread", IoOp::Read, *mut c_void);
fread_hook!(fread_unlocked, "fread_unlocked", IoOp::Read, *mut c_void);
fread_hook!(fwrite, "fwrite", IoOp::Write, *const c_void);
fread_hook!(fwrite_unlocked, "fwrite_unlocked", IoOp::Write, *const c_void);

// The _FORTIFY_SOURCE forms, which carry the destination buffer's size.
macro_rules! fread_chk_hook {
    ($name:ident, $real:literal) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            ptr: *mut c_void,
            ptrlen: size_t,
            size: size_t,
            n: size_t,
            stream: *mut FILE,
        ) -> size_t {
            // SAFETY: a hook's contract (hooks/mod.rs): the program's arguments, passed on
            // unchanged.
            unsafe {
                let real = real!(
                    $real as unsafe extern "C" fn(*mut c_void, size_t, size_t, size_t, *mut FILE) -> size_t
                );
                traced_stdio_call!(
                    IoOp::Read,
                    stream,
                    Some(size.saturating_mul(n) as u64),
                    real(ptr, ptrlen, size, n, stream),
                    |r: &size_t| r.saturating_mul(size) as i64
                )
            }
        }
    };
}
fread_chk_hook!(__fread_chk, "__fread_chk");
fread_chk_hook!(__fread_unlocked_chk, "__fread_unlocked_chk");

/// What fgets read: the string it returned (the buffer's size is only a limit).
unsafe fn line_length(line: *mut c_char) -> i64 {
    // SAFETY: `line` is null or the NUL-terminated string fgets returned.
    unsafe {
        if line.is_null() {
            0
        } else {
            libc::strlen(line) as i64
        }
    }
}

macro_rules! fgets_hook {
    ($name:ident, $real:literal) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(s: *mut c_char, n: c_int, stream: *mut FILE) -> *mut c_char {
            // SAFETY: a hook's contract (hooks/mod.rs): the program's arguments, passed on
            // unchanged.
            unsafe {
                let real = real!($real as unsafe extern "C" fn(*mut c_char, c_int, *mut FILE) -> *mut c_char);
                traced_stdio_call!(IoOp::Read, stream, real(s, n, stream), |r: &*mut c_char| line_length(*r))
            }
        }
    };
}
fgets_hook!(fgets, "fgets");
fgets_hook!(fgets_unlocked, "fgets_unlocked");

macro_rules! fgets_chk_hook {
    ($name:ident, $real:literal) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            s: *mut c_char,
            size: size_t,
            n: c_int,
            stream: *mut FILE,
        ) -> *mut c_char {
            // SAFETY: a hook's contract (hooks/mod.rs): the program's arguments, passed on
            // unchanged.
            unsafe {
                let real = real!(
                    $real as unsafe extern "C" fn(*mut c_char, size_t, c_int, *mut FILE) -> *mut c_char
                );
                traced_stdio_call!(IoOp::Read, stream, real(s, size, n, stream), |r: &*mut c_char| {
                    line_length(*r)
                })
            }
        }
    };
}
fgets_chk_hook!(__fgets_chk, "__fgets_chk");
fgets_chk_hook!(__fgets_unlocked_chk, "__fgets_unlocked_chk");

#[no_mangle]
pub unsafe extern "C" fn getline(line: *mut *mut c_char, n: *mut size_t, stream: *mut FILE) -> ssize_t {
    // SAFETY: a hook's contract (hooks/mod.rs): the program's arguments, passed on unchanged.
    unsafe {
        let real =
            real!("getline" as unsafe extern "C" fn(*mut *mut c_char, *mut size_t, *mut FILE) -> ssize_t);
        // -1 is the end of the file as well as an error: either way nothing was read.
        traced_stdio_call!(IoOp::Read, stream, real(line, n, stream), |r: &ssize_t| (*r).max(0) as i64)
    }
}

macro_rules! getdelim_hook {
    ($name:ident, $real:literal) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            line: *mut *mut c_char,
            n: *mut size_t,
            delim: c_int,
            stream: *mut FILE,
        ) -> ssize_t {
            // SAFETY: a hook's contract (hooks/mod.rs): the program's arguments, passed on
            // unchanged.
            unsafe {
                let real = real!(
                    $real as unsafe extern "C" fn(*mut *mut c_char, *mut size_t, c_int, *mut FILE) -> ssize_t
                );
                traced_stdio_call!(
                    IoOp::Read,
                    stream,
                    real(line, n, delim, stream),
                    |r: &ssize_t| (*r).max(0) as i64
                )
            }
        }
    };
}
getdelim_hook!(getdelim, "getdelim");
getdelim_hook!(__getdelim, "__getdelim");

macro_rules! getc_hook {
    ($name:ident, $real:literal) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(stream: *mut FILE) -> c_int {
            // SAFETY: a hook's contract (hooks/mod.rs): the program's arguments, passed on
            // unchanged.
            unsafe {
                let real = real!($real as unsafe extern "C" fn(*mut FILE) -> c_int);
                traced_stdio_call!(
                    IoOp::Read,
                    stream,
                    Some(1u64),
                    real(stream),
                    |r: &c_int| (*r != libc::EOF) as i64
                )
            }
        }
    };
}
getc_hook!(fgetc, "fgetc");
getc_hook!(getc, "getc");
getc_hook!(_IO_getc, "_IO_getc");
getc_hook!(fgetc_unlocked, "fgetc_unlocked");
getc_hook!(getc_unlocked, "getc_unlocked");

macro_rules! getchar_hook {
    ($name:ident, $real:literal) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name() -> c_int {
            // SAFETY: a hook's contract (hooks/mod.rs): the program's arguments, passed on
            // unchanged.
            unsafe {
                let real = real!($real as unsafe extern "C" fn() -> c_int);
                traced_stdio_call!(IoOp::Read, stdin, Some(1u64), real(), |r: &c_int| (*r != libc::EOF)
                    as i64)
            }
        }
    };
}
getchar_hook!(getchar, "getchar");
getchar_hook!(getchar_unlocked, "getchar_unlocked");

/// getw reads a word; EOF is a word too, so the stream's flags tell the end or an error.
#[no_mangle]
pub unsafe extern "C" fn getw(stream: *mut FILE) -> c_int {
    // SAFETY: a hook's contract (hooks/mod.rs): the program's arguments, passed on unchanged.
    unsafe {
        let real = real!("getw" as unsafe extern "C" fn(*mut FILE) -> c_int);
        const WORD: usize = std::mem::size_of::<c_int>();
        traced_stdio_call!(IoOp::Read, stream, Some(WORD as u64), real(stream), |r: &c_int| {
            if *r == libc::EOF && (libc::feof(stream) != 0 || libc::ferror(stream) != 0) {
                0
            } else {
                WORD as i64
            }
        })
    }
}

#[no_mangle]
pub unsafe extern "C" fn putw(w: c_int, stream: *mut FILE) -> c_int {
    // SAFETY: a hook's contract (hooks/mod.rs): the program's arguments, passed on unchanged.
    unsafe {
        let real = real!("putw" as unsafe extern "C" fn(c_int, *mut FILE) -> c_int);
        const WORD: usize = std::mem::size_of::<c_int>();
        traced_stdio_call!(IoOp::Write, stream, Some(WORD as u64), real(w, stream), |r: &c_int| put_result(
            *r, WORD
        ))
    }
}

/// What a put call that returns a non-negative number on success moved: `len` bytes.
fn put_result(ret: c_int, len: usize) -> i64 {
    if ret < 0 {
        -(libc::EIO as i64)
    } else {
        len as i64
    }
}

macro_rules! fputs_hook {
    ($name:ident, $real:literal) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(s: *const c_char, stream: *mut FILE) -> c_int {
            // SAFETY: a hook's contract (hooks/mod.rs): the program's arguments, passed on
            // unchanged.
            unsafe {
                let real = real!($real as unsafe extern "C" fn(*const c_char, *mut FILE) -> c_int);
                let len = if s.is_null() { 0 } else { libc::strlen(s) };
                traced_stdio_call!(IoOp::Write, stream, Some(len as u64), real(s, stream), |r: &c_int| {
                    put_result(*r, len)
                })
            }
        }
    };
}
fputs_hook!(fputs, "fputs");
fputs_hook!(fputs_unlocked, "fputs_unlocked");

#[no_mangle]
pub unsafe extern "C" fn puts(s: *const c_char) -> c_int {
    // SAFETY: a hook's contract (hooks/mod.rs): the program's arguments, passed on unchanged.
    unsafe {
        let real = real!("puts" as unsafe extern "C" fn(*const c_char) -> c_int);
        // The string and the newline puts adds.
        let len = if s.is_null() { 0 } else { libc::strlen(s) + 1 };
        traced_stdio_call!(IoOp::Write, stdout, Some(len as u64), real(s), |r: &c_int| put_result(*r, len))
    }
}

macro_rules! putc_hook {
    ($name:ident, $real:literal) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(c: c_int, stream: *mut FILE) -> c_int {
            // SAFETY: a hook's contract (hooks/mod.rs): the program's arguments, passed on
            // unchanged.
            unsafe {
                let real = real!($real as unsafe extern "C" fn(c_int, *mut FILE) -> c_int);
                traced_stdio_call!(IoOp::Write, stream, Some(1u64), real(c, stream), |r: &c_int| {
                    if *r == libc::EOF {
                        -(libc::EIO as i64)
                    } else {
                        1
                    }
                })
            }
        }
    };
}
putc_hook!(fputc, "fputc");
putc_hook!(putc, "putc");
putc_hook!(_IO_putc, "_IO_putc");
putc_hook!(fputc_unlocked, "fputc_unlocked");
putc_hook!(putc_unlocked, "putc_unlocked");

macro_rules! putchar_hook {
    ($name:ident, $real:literal) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(c: c_int) -> c_int {
            // SAFETY: a hook's contract (hooks/mod.rs): the program's arguments, passed on
            // unchanged.
            unsafe {
                let real = real!($real as unsafe extern "C" fn(c_int) -> c_int);
                traced_stdio_call!(IoOp::Write, stdout, Some(1u64), real(c), |r: &c_int| {
                    if *r == libc::EOF {
                        -(libc::EIO as i64)
                    } else {
                        1
                    }
                })
            }
        }
    };
}
putchar_hook!(putchar, "putchar");
putchar_hook!(putchar_unlocked, "putchar_unlocked");

/// The printf family, from the C shim (variadic.c) with the caller's va_list: the bytes are
/// known only afterwards, and what was formatted is what was asked for.
#[no_mangle]
pub unsafe extern "C" fn iolens_hook_vfprintf(
    stream: *mut FILE,
    format: *const c_char,
    ap: *mut c_void,
) -> c_int {
    // SAFETY: a hook's contract (hooks/mod.rs): the program's arguments, passed on unchanged.
    unsafe {
        // The shim exports vfprintf too: the real one is libc's.
        let real = real!("vfprintf" as unsafe extern "C" fn(*mut FILE, *const c_char, *mut c_void) -> c_int);
        traced_stdio_call!(IoOp::Write, stream, real(stream, format, ap), |r: &c_int| result_of(
            *r as i64,
            errno()
        ))
    }
}

/// The dprintf family, from the C shim: formatted output straight to a descriptor. glibc
/// writes it through its internal write, which no hook sees, so the call is recorded here, as
/// a POSIX write of what it wrote.
#[no_mangle]
pub unsafe extern "C" fn iolens_hook_vdprintf(fd: c_int, format: *const c_char, ap: *mut c_void) -> c_int {
    // SAFETY: a hook's contract (hooks/mod.rs): the program's arguments, passed on unchanged.
    unsafe {
        let real = real!("vdprintf" as unsafe extern "C" fn(c_int, *const c_char, *mut c_void) -> c_int);
        traced_fd_call!(@asked IoOp::Write, fd, None, |moved: i64| moved.max(0) as u64, real(fd, format, ap))
    }
}

/// The head of glibc's `struct _IO_FILE` (its public layout, `bits/types/struct_FILE.h`): the
/// buffer pointers the inlined character macros work on.
#[repr(C)]
struct GlibcFileHead {
    flags: c_int,
    read_ptr: *mut c_char,
    read_end: *mut c_char,
    read_base: *mut c_char,
    write_base: *mut c_char,
    write_ptr: *mut c_char,
}

/// Whether `stream` is on a file, so its buffer traffic concerns storage.
unsafe fn on_a_file(stream: *mut FILE) -> bool {
    // SAFETY: `stream` is a stream the program passed to a stdio call, hence open.
    unsafe {
        let (_, file) = stream_file(stream);
        file != NOT_A_FILE
    }
}

/// `getc_unlocked`, `fgetc_unlocked`, `getchar_unlocked` and `fread_unlocked` of a constant
/// small size are inlined by glibc's headers: they read the buffer in place and call
/// `__uflow` only to refill it. Each refill of a file stream's buffer is counted with the bytes
/// it brought; the characters themselves are never calls.
#[no_mangle]
pub unsafe extern "C" fn __uflow(stream: *mut FILE) -> c_int {
    // SAFETY: a hook's contract (hooks/mod.rs): the program's arguments, passed on unchanged. A
    // stream's head is glibc's public `struct _IO_FILE`.
    unsafe {
        let real = real!("__uflow" as unsafe extern "C" fn(*mut FILE) -> c_int);
        let ret = real(stream);
        if let Some(_g) = enter_guard() {
            if !stream.is_null() && ret != libc::EOF && on_a_file(stream) {
                let head = stream.cast::<GlibcFileHead>();
                // The character returned was taken: the refill brought it and what is left.
                let brought = ((*head).read_end as usize).saturating_sub((*head).read_base as usize);
                count_left_out(Excluded::InlinedStdioRead, brought as u64);
            }
        }
        ret
    }
}

/// `putc_unlocked`, `fputc_unlocked` and `putchar_unlocked` are inlined likewise and call
/// `__overflow` when the buffer is full: each flush of a file stream's buffer is counted with
/// what the buffer held and the character that did not fit.
#[no_mangle]
pub unsafe extern "C" fn __overflow(stream: *mut FILE, c: c_int) -> c_int {
    // SAFETY: a hook's contract (hooks/mod.rs): the program's arguments, passed on unchanged. A
    // stream's head is glibc's public `struct _IO_FILE`.
    unsafe {
        let real = real!("__overflow" as unsafe extern "C" fn(*mut FILE, c_int) -> c_int);
        let held = if stream.is_null() {
            0
        } else {
            let head = stream.cast::<GlibcFileHead>();
            ((*head).write_ptr as usize).saturating_sub((*head).write_base as usize)
        };
        let ret = real(stream, c);
        if let Some(_g) = enter_guard() {
            if !stream.is_null() && on_a_file(stream) {
                count_left_out(Excluded::InlinedStdioWrite, (held + (c != libc::EOF) as usize) as u64);
            }
        }
        ret
    }
}

/// The stream printf and puts write to, for the C shim.
#[no_mangle]
pub unsafe extern "C" fn iolens_stdout() -> *mut FILE {
    // SAFETY: `stdout` is glibc's, set before any constructor runs.
    unsafe { stdout }
}

#[no_mangle]
pub unsafe extern "C" fn fflush(stream: *mut FILE) -> c_int {
    // SAFETY: a hook's contract (hooks/mod.rs): the program's arguments, passed on unchanged.
    unsafe {
        let real = real!("fflush" as unsafe extern "C" fn(*mut FILE) -> c_int);
        traced_stdio_call!(IoOp::Flush, stream, 0u64, real(stream), |r: &c_int| *r as i64)
    }
}

#[no_mangle]
pub unsafe extern "C" fn fclose(stream: *mut FILE) -> c_int {
    // SAFETY: a hook's contract (hooks/mod.rs): the program's arguments, passed on unchanged.
    unsafe {
        let real = real!("fclose" as unsafe extern "C" fn(*mut FILE) -> c_int);
        let Some(guard) = enter_guard() else { return real(stream) };
        let (fd, file) = stream_file(stream);
        let t0 = now_ns();
        let ret = guard.lifted(|| real(stream));
        let t1 = now_ns();
        let err = errno();
        if file != NOT_A_FILE {
            record(IoOp::Close, Layer::Stdio, file, UNKNOWN_OFFSET, 0, result_of(ret as i64, err), t0, t1);
        }
        fd_table::forget(fd);
        set_errno(err);
        ret
    }
}

/// pclose closes the pipe's descriptor inside libc.
#[no_mangle]
pub unsafe extern "C" fn pclose(stream: *mut FILE) -> c_int {
    // SAFETY: a hook's contract (hooks/mod.rs): the program's arguments, passed on unchanged.
    unsafe {
        let real = real!("pclose" as unsafe extern "C" fn(*mut FILE) -> c_int);
        let fd = if stream.is_null() { -1 } else { fileno_unlocked(stream) };
        let ret = real(stream);
        fd_table::forget(fd);
        ret
    }
}

/// fcloseall closes every stream's descriptor inside libc, and which descriptors had streams
/// is not known here: every number forgets its file, and those still open are found again
/// through /proc/self/fd at their next call.
#[no_mangle]
pub unsafe extern "C" fn fcloseall() -> c_int {
    // SAFETY: a hook's contract (hooks/mod.rs): the program's arguments, passed on unchanged.
    unsafe {
        let real = real!("fcloseall" as unsafe extern "C" fn() -> c_int);
        let ret = real();
        fd_table::forget_range(0, c_uint::MAX);
        ret
    }
}
