//! I/O backends: one file per backend, all behind [`IoBackend`].
//!
//! The agent loop is generic over the backend so each one is monomorphized into its own loop:
//! dispatch costs nothing on the per-op path.

use std::io;
use std::os::fd::RawFd;

mod null;
mod sync;
mod uring;

pub use null::NullBackend;
pub use sync::SyncBackend;
pub use uring::UringBackend;

use crate::buffers::AlignedBuffers;

/// Direction of a data request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    Read,
    Write,
}

/// One data request, using buffer `slot`.
#[derive(Debug, Clone, Copy)]
pub struct Request {
    pub dir: Direction,
    pub offset: u64,
    pub len: u32,
    pub slot: u16,
}

/// A finished request: bytes moved, or a negative errno.
#[derive(Debug, Clone, Copy)]
pub struct Completion {
    pub slot: u16,
    pub result: i64,
}

/// What every backend does.
pub trait IoBackend {
    /// How many requests may be in flight at once (buffers the agent has).
    fn depth(&self) -> usize;
    /// Called once on the agent's own thread before its first request.
    fn start(&mut self) -> io::Result<()> {
        Ok(())
    }
    /// Starts (or, for synchronous backends, performs) a request.
    fn submit(&mut self, req: Request) -> io::Result<()>;
    /// Waits until at least `min` requests completed (none if `min` is 0 and none is ready) and
    /// hands each to `done`.
    fn complete<F: FnMut(Completion)>(&mut self, min: usize, done: F) -> io::Result<()>;
    /// Flushes written data to stable storage (`data_only`: fdatasync, without metadata the
    /// data does not need).
    fn fsync(&mut self, data_only: bool) -> io::Result<()>;
    /// The buffer of `slot`, for filling before a write and checking after a read; empty for
    /// backends without buffers. Only touched while no request of that slot is in flight.
    fn buffer(&mut self, slot: u16) -> &mut [u8];
    /// Closes the target; part of the phase (a close can flush, on NFS for one).
    fn close(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The file descriptor (owned: closed on drop, unless closed before) and buffers a backend
/// works on.
pub struct BackendTarget {
    pub fd: RawFd,
    pub buffers: AlignedBuffers,
}

impl BackendTarget {
    /// Closes the descriptor now, reporting the error a close can carry.
    pub fn close(&mut self) -> io::Result<()> {
        if self.fd < 0 {
            return Ok(());
        }
        let fd = std::mem::replace(&mut self.fd, -1);
        // SAFETY: we own fd and close it exactly once.
        if unsafe { libc::close(fd) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }
}

impl Drop for BackendTarget {
    fn drop(&mut self) {
        let _ = self.close();
    }
}

pub(crate) fn errno_result(ret: isize) -> i64 {
    if ret < 0 {
        -(io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO) as i64)
    } else {
        ret as i64
    }
}
