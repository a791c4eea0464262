//! The bottom layer: what every layer above uses and which uses nothing above it. The
//! recursion guard and the per-thread state it works on, the recorder's own system calls, the
//! event clock, the descriptor table, and the handle table the families that wait for a
//! completion keep their requests in.

pub(crate) mod clock;
pub(crate) mod fd_table;
pub(crate) mod guard;
pub(crate) mod handle_table;
pub(crate) mod raw_syscall;
pub(crate) mod thread_state;
