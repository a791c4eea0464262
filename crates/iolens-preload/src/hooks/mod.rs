//! The hook families: the functions of libc (and libaio) a traced program calls, each
//! forwarding to the real function and recording the call. The families stand on the layers
//! below and not on one another, but for three hand-overs: `syscall` passes its file calls to
//! `posix`, `dup` and `copy` (and its exits to `process`, its rings to `io_uring`),
//! `native_aio` records its requests as `aio` does, and `stdio_by_position` wraps its calls as
//! `stdio` does. What each family does at a fork or at the end of the process image, `lib.rs`
//! calls.
//!
//! # A hook's contract
//!
//! Every hook is an `unsafe extern "C" fn` the program calls under the contract of the C
//! function of the same name, and its body is one `unsafe` block resting on that contract: the
//! arguments go unchanged to the real function (found by `real!` under the same name and called
//! with the C type written at the call), and the recorder reads of them only what the real
//! function reads too: a path, an iovec array, a stream, or, once it has returned, what it
//! filled.

pub(crate) mod aio;
pub(crate) mod copy;
pub(crate) mod dup;
pub(crate) mod io_uring;
pub(crate) mod mmap;
pub(crate) mod native_aio;
pub(crate) mod posix;
pub(crate) mod process;
pub(crate) mod stdio;
pub(crate) mod stdio_by_position;
pub(crate) mod syscall;
