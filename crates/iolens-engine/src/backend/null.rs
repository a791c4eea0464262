//! The null backend: requests complete at once without touching any file, so a run measures
//! only iolens itself (timestamps, recording, union, histogram).

use std::io;

use super::{Completion, IoBackend, Request};

pub struct NullBackend {
    depth: usize,
    ready: Vec<Completion>,
}

impl NullBackend {
    pub fn new(depth: usize) -> Self {
        NullBackend { depth, ready: Vec::with_capacity(depth) }
    }
}

impl IoBackend for NullBackend {
    fn depth(&self) -> usize {
        self.depth
    }

    #[inline]
    fn submit(&mut self, req: Request) -> io::Result<()> {
        self.ready.push(Completion { slot: req.slot, result: req.len as i64 });
        Ok(())
    }

    #[inline]
    fn complete<F: FnMut(Completion)>(&mut self, _min: usize, mut done: F) -> io::Result<()> {
        for c in self.ready.drain(..) {
            done(c);
        }
        Ok(())
    }

    fn buffer(&mut self, _slot: u16) -> &mut [u8] {
        &mut []
    }

    fn fsync(&mut self, _data_only: bool) -> io::Result<()> {
        Ok(())
    }
}
