//! The hook families: the functions of libc (and libaio) a traced program calls, each
//! forwarding to the real function and recording the call. Families use one another only where
//! one hands a call to another (`syscall` passes its file calls to `posix`, `dup` and `copy`;
//! `native_aio` records its requests as `aio` does), never in a cycle. What each does at a fork
//! or at the end of the process image, `lib.rs` calls.

pub(crate) mod aio;
pub(crate) mod copy;
pub(crate) mod dup;
pub(crate) mod io_uring;
pub(crate) mod mmap;
pub(crate) mod native_aio;
pub(crate) mod posix;
pub(crate) mod process;
pub(crate) mod stdio;
pub(crate) mod syscall;
