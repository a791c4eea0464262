//! The synchronous backend: pread/pwrite, one request at a time.

use std::io;

use super::{errno_result, BackendTarget, Completion, Direction, IoBackend, Request};

pub struct SyncBackend {
    target: BackendTarget,
    done: Option<Completion>,
}

impl SyncBackend {
    pub fn new(target: BackendTarget) -> Self {
        SyncBackend { target, done: None }
    }
}

impl IoBackend for SyncBackend {
    fn depth(&self) -> usize {
        1
    }

    #[inline]
    fn submit(&mut self, req: Request) -> io::Result<()> {
        let buf = self.target.buffers.ptr(req.slot as usize);
        // SAFETY: the buffer holds at least `len` bytes (sized for the largest request) and is
        // owned by this agent; the fd stays open for the backend's lifetime.
        let ret = unsafe {
            match req.dir {
                Direction::Read => {
                    libc::pread(self.target.fd, buf.cast(), req.len as usize, req.offset as i64)
                }
                Direction::Write => {
                    libc::pwrite(self.target.fd, buf.cast(), req.len as usize, req.offset as i64)
                }
            }
        };
        self.done = Some(Completion { slot: req.slot, result: errno_result(ret) });
        Ok(())
    }

    #[inline]
    fn complete<F: FnMut(Completion)>(&mut self, _min: usize, mut done: F) -> io::Result<()> {
        if let Some(c) = self.done.take() {
            done(c);
        }
        Ok(())
    }

    fn fsync(&mut self, data_only: bool) -> io::Result<()> {
        let sync = if data_only { libc::fdatasync } else { libc::fsync };
        // SAFETY: plain syscall on our fd.
        if unsafe { sync(self.target.fd) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    fn buffer(&mut self, slot: u16) -> &mut [u8] {
        self.target.buffers.slot_mut(slot as usize)
    }

    fn close(&mut self) -> io::Result<()> {
        self.target.close()
    }
}
