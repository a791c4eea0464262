//! Page-aligned request buffers, filled with incompressible data so writes cannot be shrunk by
//! compression or deduplication below us.

use std::alloc::{alloc_zeroed, dealloc, Layout};

use rand::rngs::SmallRng;
use rand::{RngCore, SeedableRng};

/// Alignment satisfying O_DIRECT on every common device (4 KiB logical sectors included).
pub const BUFFER_ALIGN: usize = 4096;

/// `count` buffers of `size` bytes each, in one aligned allocation.
pub struct AlignedBuffers {
    base: *mut u8,
    layout: Layout,
    size: usize,
    count: usize,
}

// SAFETY: the allocation is owned exclusively; moving it to another thread is fine.
unsafe impl Send for AlignedBuffers {}

impl AlignedBuffers {
    pub fn new(count: usize, size: usize, seed: u64) -> AlignedBuffers {
        let size = size.div_ceil(BUFFER_ALIGN).max(1) * BUFFER_ALIGN;
        let layout = Layout::from_size_align(size * count.max(1), BUFFER_ALIGN).expect("buffer layout");
        // SAFETY: layout has non-zero size.
        let base = unsafe { alloc_zeroed(layout) };
        assert!(!base.is_null(), "out of memory allocating request buffers");
        let mut b = AlignedBuffers { base, layout, size, count: count.max(1) };
        fill_random(b.as_mut_slice(), seed);
        b
    }

    pub fn size(&self) -> usize {
        self.size
    }

    pub fn count(&self) -> usize {
        self.count
    }

    #[inline]
    pub fn ptr(&self, slot: usize) -> *mut u8 {
        debug_assert!(slot < self.count);
        // SAFETY: slot < count keeps the pointer inside the allocation.
        unsafe { self.base.add(slot * self.size) }
    }

    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: the allocation is size * count bytes, initialized (zeroed) and owned by us.
        unsafe { std::slice::from_raw_parts_mut(self.base, self.size * self.count) }
    }

    pub fn slot_mut(&mut self, slot: usize) -> &mut [u8] {
        // SAFETY: as `ptr`, with the buffer's full length; `&mut self` makes it exclusive.
        unsafe { std::slice::from_raw_parts_mut(self.ptr(slot), self.size) }
    }

    pub fn slot(&self, slot: usize) -> &[u8] {
        // SAFETY: as `ptr`, with the buffer's full length.
        unsafe { std::slice::from_raw_parts(self.ptr(slot), self.size) }
    }
}

impl Drop for AlignedBuffers {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout.
        unsafe { dealloc(self.base, self.layout) };
    }
}

/// Fills `buf` with pseudo-random bytes: incompressible, and different for every seed.
pub fn fill_random(buf: &mut [u8], seed: u64) {
    SmallRng::seed_from_u64(seed).fill_bytes(buf);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_are_aligned_and_random() {
        let b = AlignedBuffers::new(3, 5000, 7);
        assert_eq!(b.size(), 8192);
        for i in 0..3 {
            assert_eq!(b.ptr(i) as usize % BUFFER_ALIGN, 0);
        }
        let zeros = b.slot(1).iter().filter(|x| **x == 0).count();
        assert!(zeros < 100, "random fill has few zero bytes, got {zeros}");
        assert_ne!(b.slot(0), b.slot(1));
    }
}
