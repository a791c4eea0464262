//! What a rank loop runs on: the other ranks ([`Ranks`]) and the pattern files ([`PatternIo`],
//! [`PatternFile`]), with [`Placement`] saying where a call's chunks go. Threads doing POSIX
//! `pwrite`/`pread` implement them here; `iolens-mpi` implements them with MPI and MPI-IO.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Barrier, Mutex};

use super::Method;

/// What ranks need from each other: a barrier and an all-gather of one number. Threads of one
/// process implement it with [`ThreadRanks`]; MPI ranks (in `iolens-mpi`) with MPI_Barrier and
/// MPI_Allgather on the partition's communicator.
pub trait Ranks {
    fn rank(&self) -> usize;
    fn size(&self) -> usize;
    fn barrier(&self);
    /// Every rank's `value`, in rank order, on every rank.
    fn all_gather(&self, value: u64) -> Vec<u64>;
    /// After every call of a collective pattern type (0, 1, 4). A collective MPI-IO call
    /// synchronizes the ranks by itself; threads stand in for it with a barrier.
    fn collective_call_done(&self) {
        self.barrier();
    }
}

/// Where one pattern's calls go: its pattern type, the ranks, where it starts, and how one call's
/// L bytes of memory map to l-byte chunks on disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Placement {
    pub pattern_type: u8,
    pub ranks: u64,
    pub rank: u64,
    /// Where the pattern starts: in the shared file (types 0, 1), the rank's file (type 2), or
    /// inside the rank's segment (types 3, 4).
    pub base: u64,
    /// Segment size per rank of types 3 and 4.
    pub segment: u64,
    /// Contiguous chunk on disk (l).
    pub chunk: u64,
    /// Bytes in memory per call (L, a whole number of chunks).
    pub memory: u64,
}

impl Placement {
    /// Chunks per call: L / l.
    pub fn pieces(&self) -> u64 {
        self.memory / self.chunk.max(1)
    }

    /// Where a rank's call `call` puts its chunk `piece`.
    pub fn offset(&self, call: u64, piece: u64) -> u64 {
        let chunk = self.chunk;
        match self.pattern_type {
            // Chunk by chunk, the ranks interleave across the file.
            0 => self.base + ((call * self.pieces() + piece) * self.ranks + self.rank) * chunk,
            1 => self.base + (call * self.ranks + self.rank) * chunk,
            2 => self.base + call * chunk,
            _ => self.rank * self.segment + self.base + call * chunk,
        }
    }

    /// Bytes of the file the pattern covered in `calls` calls, to place the next pattern after it.
    pub fn advance(&self, calls: u64) -> u64 {
        match self.pattern_type {
            0 | 1 => calls * self.memory * self.ranks,
            _ => calls * self.memory,
        }
    }
}

/// One open pattern-type file of one rank: POSIX here, MPI-IO in `iolens-mpi`. Calls come in
/// the same order on every rank (the decisions are collective), so an implementation may make
/// collective calls in any of them.
pub trait PatternFile {
    /// Before a pattern's first call: set up where its calls go (a file view, a file pointer).
    fn begin(&mut self, place: &Placement) -> std::io::Result<()>;
    /// Call `call` of the pattern begun last: writes `buf` (L bytes) or reads into it.
    fn transfer(&mut self, method: Method, call: u64, buf: &mut [u8]) -> std::io::Result<()>;
    /// Closes a write loop, inside its timed region.
    fn sync(&mut self) -> std::io::Result<()>;
}

/// Opens the files of the pattern types and names the calls they make.
pub trait PatternIo {
    /// The file of `pattern_type` for `method`: one per rank for type 2, one shared otherwise.
    /// The write creates it; rewrite and read open what the write made.
    fn open(&mut self, pattern_type: u8, method: Method) -> std::io::Result<Box<dyn PatternFile + '_>>;
    /// The call a pattern type makes for `method`, for the protocol.
    fn call_name(&self, pattern_type: u8, method: Method) -> String;
}

/// Pattern files of threads: POSIX `pwrite`/`pread` per chunk, `fdatasync` to close a write loop.
pub struct PosixIo<'a> {
    pub dir: &'a Path,
    pub rank: usize,
}

struct PosixFile {
    file: File,
    place: Option<Placement>,
}

impl PatternFile for PosixFile {
    fn begin(&mut self, place: &Placement) -> std::io::Result<()> {
        self.place = Some(*place);
        Ok(())
    }
    fn transfer(&mut self, method: Method, call: u64, buf: &mut [u8]) -> std::io::Result<()> {
        let Some(place) = self.place else { return Err(std::io::Error::other("a call before its pattern")) };
        let chunk = place.chunk as usize;
        for (piece, part) in buf.chunks_exact_mut(chunk).enumerate() {
            let offset = place.offset(call, piece as u64);
            match method {
                Method::Read => self.file.read_exact_at(part, offset)?,
                _ => self.file.write_all_at(part, offset)?,
            }
        }
        Ok(())
    }
    fn sync(&mut self) -> std::io::Result<()> {
        self.file.sync_data()
    }
}

impl PatternIo for PosixIo<'_> {
    fn open(&mut self, pattern_type: u8, method: Method) -> std::io::Result<Box<dyn PatternFile + '_>> {
        let file = open_type_file(self.dir, pattern_type, self.rank, method)?;
        Ok(Box::new(PosixFile { file, place: None }))
    }
    fn call_name(&self, pattern_type: u8, method: Method) -> String {
        let call = if method == Method::Read { "pread" } else { "pwrite" };
        match pattern_type {
            0 => format!("{call} per l-byte chunk of L, strided over ranks"),
            1 => format!("{call} at the rank's turn in a shared order"),
            2 => format!("{call} on the rank's own file"),
            3 => format!("{call} in the rank's segment"),
            _ => format!("{call} in the rank's segment, ranks in step"),
        }
    }
}

struct Shared {
    barrier: Barrier,
    values: Mutex<Vec<u64>>,
}

/// Ranks that are threads of this process.
pub struct ThreadRanks {
    rank: usize,
    size: usize,
    shared: Arc<Shared>,
}

impl ThreadRanks {
    /// One handle per rank.
    pub fn group(size: usize) -> Vec<ThreadRanks> {
        let shared = Arc::new(Shared { barrier: Barrier::new(size), values: Mutex::new(vec![0; size]) });
        (0..size).map(|rank| ThreadRanks { rank, size, shared: Arc::clone(&shared) }).collect()
    }
}

impl Ranks for ThreadRanks {
    fn rank(&self) -> usize {
        self.rank
    }
    fn size(&self) -> usize {
        self.size
    }
    fn barrier(&self) {
        self.shared.barrier.wait();
    }
    fn all_gather(&self, value: u64) -> Vec<u64> {
        if let Ok(mut v) = self.shared.values.lock() {
            v[self.rank] = value;
        }
        self.shared.barrier.wait();
        let all = self.shared.values.lock().map(|v| v.clone()).unwrap_or_default();
        // Nobody overwrites a value before everyone has read it.
        self.shared.barrier.wait();
        all
    }
}

fn type_file(dir: &Path, pattern_type: u8, rank: usize) -> PathBuf {
    if pattern_type == 2 {
        dir.join(format!("iolens-type2-rank{rank}.dat"))
    } else {
        dir.join(format!("iolens-type{pattern_type}.dat"))
    }
}

fn open_type_file(dir: &Path, pattern_type: u8, rank: usize, method: Method) -> std::io::Result<File> {
    let path = type_file(dir, pattern_type, rank);
    let mut o = OpenOptions::new();
    match method {
        // The files live in a directory of this run's own: creating them cannot clobber anything.
        Method::Write => o.read(true).write(true).create(true),
        Method::Rewrite => o.read(true).write(true),
        Method::Read => o.read(true),
    };
    o.open(&path).map_err(|e| std::io::Error::new(e.kind(), format!("{}: {e}", path.display())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placements_do_not_overlap() {
        // Two ranks, type 0 with 4 pieces per call, 3 calls: every chunk at its own offset.
        let mut seen = std::collections::BTreeSet::new();
        for rank in 0..2 {
            let p =
                Placement { pattern_type: 0, ranks: 2, rank, base: 100, segment: 0, chunk: 10, memory: 40 };
            for call in 0..3 {
                for piece in 0..4 {
                    assert!(seen.insert(p.offset(call, piece)));
                }
            }
            assert_eq!(p.advance(3), 240);
        }
        assert_eq!(seen.first(), Some(&100));
        assert_eq!(seen.last(), Some(&(100 + 23 * 10)));
        let seg =
            Placement { pattern_type: 3, ranks: 2, rank: 1, base: 5, segment: 1000, chunk: 10, memory: 10 };
        assert_eq!(seg.offset(2, 0), 1000 + 5 + 20);
    }

    #[test]
    fn thread_ranks_gather_in_rank_order() {
        let group = ThreadRanks::group(3);
        let got: Vec<Vec<u64>> = std::thread::scope(|s| {
            let hs: Vec<_> =
                group.iter().map(|r| s.spawn(move || r.all_gather(10 + r.rank() as u64))).collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert!(got.iter().all(|v| v == &[10, 11, 12]));
    }
}
