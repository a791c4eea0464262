//! The asynchronous backend: io_uring with one registered buffer per request in flight and the
//! target registered as a fixed file, as fio's io_uring engine does with
//! `fixedbufs`/`registerfiles`.

use std::io;

use io_uring::{opcode, types, IoUring};

use super::{BackendTarget, Completion, Direction, IoBackend, Request};

pub struct UringBackend {
    ring: IoUring,
    target: BackendTarget,
    depth: usize,
}

impl UringBackend {
    pub fn new(target: BackendTarget, depth: usize) -> io::Result<Self> {
        let entries = depth.next_power_of_two() as u32;
        // The agent thread is the only submitter: completions are then run in its own context
        // when it waits, not through interrupts. The ring starts disabled so the agent thread,
        // not this one, becomes its submitter (see `start`). Older kernels lack these flags.
        let ring = IoUring::builder()
            .setup_r_disabled()
            .setup_single_issuer()
            .setup_defer_taskrun()
            .build(entries)
            .or_else(|_| IoUring::builder().build(entries))?;
        let iovecs: Vec<libc::iovec> = (0..depth)
            .map(|i| libc::iovec { iov_base: target.buffers.ptr(i).cast(), iov_len: target.buffers.size() })
            .collect();
        // SAFETY: the buffers live in `target`, owned by this backend, until the ring is dropped
        // (fields drop in declaration order: the ring first).
        unsafe { ring.submitter().register_buffers(&iovecs)? };
        ring.submitter().register_files(&[target.fd])?;
        Ok(UringBackend { ring, target, depth })
    }
}

impl IoBackend for UringBackend {
    fn depth(&self) -> usize {
        self.depth
    }

    fn start(&mut self) -> io::Result<()> {
        match self.ring.submitter().register_enable_rings() {
            // EINVAL: the ring was built without R_DISABLED (fallback path) and is enabled.
            Err(e) if e.raw_os_error() != Some(libc::EINVAL) => Err(e),
            _ => Ok(()),
        }
    }

    #[inline]
    fn submit(&mut self, req: Request) -> io::Result<()> {
        let buf = self.target.buffers.ptr(req.slot as usize);
        let file = types::Fixed(0);
        let sqe = match req.dir {
            Direction::Read => {
                opcode::ReadFixed::new(file, buf, req.len, req.slot).offset(req.offset).build()
            }
            Direction::Write => {
                opcode::WriteFixed::new(file, buf, req.len, req.slot).offset(req.offset).build()
            }
        }
        .user_data(req.slot as u64);
        // SAFETY: the SQE points into a registered buffer that stays untouched until its
        // completion is reaped; the queue has room because at most `depth` are in flight.
        unsafe {
            if self.ring.submission().push(&sqe).is_err() {
                self.ring.submit()?;
                self.ring
                    .submission()
                    .push(&sqe)
                    .map_err(|_| io::Error::other("io_uring submission queue full"))?;
            }
        }
        self.ring.submit()?;
        Ok(())
    }

    #[inline]
    fn complete<F: FnMut(Completion)>(&mut self, min: usize, mut done: F) -> io::Result<()> {
        if min > 0 {
            loop {
                match self.ring.submit_and_wait(min) {
                    Ok(_) => break,
                    Err(e) if e.raw_os_error() == Some(libc::EINTR) => continue,
                    Err(e) => return Err(e),
                }
            }
        }
        for cqe in self.ring.completion() {
            done(Completion { slot: cqe.user_data() as u16, result: cqe.result() as i64 });
        }
        Ok(())
    }

    fn fsync(&mut self, data_only: bool) -> io::Result<()> {
        let sync = if data_only { libc::fdatasync } else { libc::fsync };
        // SAFETY: plain syscall on our fd; no request is in flight when the agent syncs.
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
