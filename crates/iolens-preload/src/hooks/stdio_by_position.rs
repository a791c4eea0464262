//! stdio calls whose bytes are known only by how far they advanced the stream: the scanf
//! families (narrow and wide, from the C shim), and wide-character input and output, whose
//! bytes depend on the stream's encoding.

use iolens_record::event::{IoOp, Layer, UNKNOWN_OFFSET};
use libc::{c_char, c_int, c_void, FILE};

use crate::base::clock::now_ns;
use crate::base::fd_table::NOT_A_FILE;
use crate::base::guard::recording_interrupted;
use crate::base::raw_syscall::{errno, real, set_errno};
use crate::hooks::stdio::{fileno_unlocked, stdin, stdout, stream_file, traced_stdio_call};
use crate::record::{count_excluded, count_interrupted, record};
use crate::stream::enter_guard;

/// Runs a stdio call on `stream` whose bytes are known only by how far it advanced the stream
/// (a scan, or wide characters converted to the stream's encoding), and records it with them.
/// On a stream that cannot tell its position (a pipe) they are unknown, and counted as 0.
#[inline]
unsafe fn traced_by_position<R>(
    op: IoOp,
    stream: *mut FILE,
    call: impl FnOnce() -> R,
    failed: impl Fn(&R) -> bool,
) -> R {
    // SAFETY: `stream` is null or a stream the program passed to a stdio call, hence open.
    unsafe {
        let saved = errno();
        let before = if stream.is_null() { -1 } else { libc::ftello(stream) };
        set_errno(saved);
        traced_stdio_call!(op, stream, call(), |r: &R| {
            let after = libc::ftello(stream);
            if failed(r) && libc::ferror(stream) != 0 {
                -(errno() as i64)
            } else if before >= 0 && after >= before {
                after - before
            } else {
                0
            }
        })
    }
}

/// The scanf family, from the C shim (scanf.c): `c99` picks the ISO C99 scanner
/// (`__isoc99_vfscanf`, what programs built in standard mode call) over the GNU one.
#[no_mangle]
pub unsafe extern "C" fn iolens_hook_vfscanf(
    stream: *mut FILE,
    format: *const c_char,
    ap: *mut c_void,
    c99: c_int,
) -> c_int {
    // SAFETY: a hook's contract (hooks/mod.rs): the program's arguments, passed on unchanged.
    unsafe {
        type Scan = unsafe extern "C" fn(*mut FILE, *const c_char, *mut c_void) -> c_int;
        let real = if c99 != 0 { real!("__isoc99_vfscanf" as Scan) } else { real!("vfscanf" as Scan) };
        traced_by_position(IoOp::Read, stream, || real(stream, format, ap), |r| *r == libc::EOF)
    }
}

/// The wide scanf family, from the C shim, as [`iolens_hook_vfscanf`].
#[no_mangle]
pub unsafe extern "C" fn iolens_hook_vfwscanf(
    stream: *mut FILE,
    format: *const libc::wchar_t,
    ap: *mut c_void,
    c99: c_int,
) -> c_int {
    // SAFETY: a hook's contract (hooks/mod.rs): the program's arguments, passed on unchanged.
    unsafe {
        type Scan = unsafe extern "C" fn(*mut FILE, *const libc::wchar_t, *mut c_void) -> c_int;
        let real = if c99 != 0 { real!("__isoc99_vfwscanf" as Scan) } else { real!("vfwscanf" as Scan) };
        traced_by_position(IoOp::Read, stream, || real(stream, format, ap), |r| *r == libc::EOF)
    }
}

/// The wide printf family, from the C shim: the result counts wide characters, the stream
/// takes their encoding, so the bytes are how far it advanced.
#[no_mangle]
pub unsafe extern "C" fn iolens_hook_vfwprintf(
    stream: *mut FILE,
    format: *const libc::wchar_t,
    ap: *mut c_void,
) -> c_int {
    // SAFETY: a hook's contract (hooks/mod.rs): the program's arguments, passed on unchanged.
    unsafe {
        let real =
            real!("vfwprintf" as unsafe extern "C" fn(*mut FILE, *const libc::wchar_t, *mut c_void) -> c_int);
        traced_by_position(IoOp::Write, stream, || real(stream, format, ap), |r| *r < 0)
    }
}

// Wide-character stdio: a character's bytes depend on the stream's encoding.
/// C's `wint_t` (unsigned int with glibc).
type WideInt = u32;
const WEOF: WideInt = WideInt::MAX;

macro_rules! getwc_hook {
    ($name:ident, $real:literal) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(stream: *mut FILE) -> WideInt {
            // SAFETY: a hook's contract (hooks/mod.rs): the program's arguments, passed on
            // unchanged.
            unsafe {
                let real = real!($real as unsafe extern "C" fn(*mut FILE) -> WideInt);
                traced_by_position(IoOp::Read, stream, || real(stream), |r| *r == WEOF)
            }
        }
    };
}
getwc_hook!(fgetwc, "fgetwc");
getwc_hook!(getwc, "getwc");
getwc_hook!(fgetwc_unlocked, "fgetwc_unlocked");
getwc_hook!(getwc_unlocked, "getwc_unlocked");

macro_rules! getwchar_hook {
    ($name:ident, $real:literal) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name() -> WideInt {
            // SAFETY: a hook's contract (hooks/mod.rs): the program's arguments, passed on
            // unchanged.
            unsafe {
                let real = real!($real as unsafe extern "C" fn() -> WideInt);
                traced_by_position(IoOp::Read, stdin, || real(), |r| *r == WEOF)
            }
        }
    };
}
getwchar_hook!(getwchar, "getwchar");
getwchar_hook!(getwchar_unlocked, "getwchar_unlocked");

macro_rules! putwc_hook {
    ($name:ident, $real:literal) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(c: libc::wchar_t, stream: *mut FILE) -> WideInt {
            // SAFETY: a hook's contract (hooks/mod.rs): the program's arguments, passed on
            // unchanged.
            unsafe {
                let real = real!($real as unsafe extern "C" fn(libc::wchar_t, *mut FILE) -> WideInt);
                traced_by_position(IoOp::Write, stream, || real(c, stream), |r| *r == WEOF)
            }
        }
    };
}
putwc_hook!(fputwc, "fputwc");
putwc_hook!(putwc, "putwc");
putwc_hook!(fputwc_unlocked, "fputwc_unlocked");
putwc_hook!(putwc_unlocked, "putwc_unlocked");

macro_rules! putwchar_hook {
    ($name:ident, $real:literal) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(c: libc::wchar_t) -> WideInt {
            // SAFETY: a hook's contract (hooks/mod.rs): the program's arguments, passed on
            // unchanged.
            unsafe {
                let real = real!($real as unsafe extern "C" fn(libc::wchar_t) -> WideInt);
                traced_by_position(IoOp::Write, stdout, || real(c), |r| *r == WEOF)
            }
        }
    };
}
putwchar_hook!(putwchar, "putwchar");
putwchar_hook!(putwchar_unlocked, "putwchar_unlocked");

macro_rules! fgetws_hook {
    ($name:ident, $real:literal) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            s: *mut libc::wchar_t,
            n: c_int,
            stream: *mut FILE,
        ) -> *mut libc::wchar_t {
            // SAFETY: a hook's contract (hooks/mod.rs): the program's arguments, passed on
            // unchanged.
            unsafe {
                let real = real!(
                    $real as unsafe extern "C" fn(*mut libc::wchar_t, c_int, *mut FILE) -> *mut libc::wchar_t
                );
                traced_by_position(IoOp::Read, stream, || real(s, n, stream), |r| r.is_null())
            }
        }
    };
}
fgetws_hook!(fgetws, "fgetws");
fgetws_hook!(fgetws_unlocked, "fgetws_unlocked");

macro_rules! fputws_hook {
    ($name:ident, $real:literal) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(s: *const libc::wchar_t, stream: *mut FILE) -> c_int {
            // SAFETY: a hook's contract (hooks/mod.rs): the program's arguments, passed on
            // unchanged.
            unsafe {
                let real = real!($real as unsafe extern "C" fn(*const libc::wchar_t, *mut FILE) -> c_int);
                traced_by_position(IoOp::Write, stream, || real(s, stream), |r| *r < 0)
            }
        }
    };
}
fputws_hook!(fputws, "fputws");
fputws_hook!(fputws_unlocked, "fputws_unlocked");
