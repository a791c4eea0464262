//! The MPI side (feature `mpi`): initialization, the phase barrier across ranks, clock
//! ping-pong, and moving reports and busy periods to rank 0. Every call here is made by the
//! main thread, before or after the measured phase; agent threads never touch MPI.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

use mpi::collective::SystemOperation;
use mpi::environment::Universe;
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;
use mpi::Threading;

use iolens_engine::PhaseBarrier;
use iolens_record::busy::{merge_sorted_streams_grouped, UnionTotals};
use iolens_record::clock::now_ns;
use iolens_record::Interval;

use crate::clock::{estimate, OffsetEstimate, PingSample};
use crate::wire::{
    another_job_message, decode_chunk, encode_chunk, ranks_differing, ChunkStream, JobFingerprint,
    RankReport, CHUNK_PERIODS,
};

/// Ping-pong rounds per rank and estimate; the smallest round trip is kept.
pub const CLOCK_ROUNDS: usize = 32;

const TAG_PING: i32 = 101;
const TAG_PONG: i32 = 102;
const TAG_REPORT: i32 = 103;
const TAG_CHUNK: i32 = 104;
const TAG_STOP: i32 = 105;
const TAG_HOST: i32 = 106;
const TAG_CLOCK_DONE: i32 = 107;
const TAG_JOB: i32 = 108;

/// The word a failing rank sends to the others (a static: its non-blocking sends outlive calls).
static STOP_WORD: u64 = 1;

/// `MPI_COMM_WORLD` and this process's place in it.
pub struct World {
    comm: SimpleCommunicator,
    rank: usize,
    size: usize,
    host: String,
    /// This rank announced a failure (sent a stop to every other rank).
    announced: AtomicBool,
    /// Stop messages received from other ranks.
    stops_received: AtomicU64,
    /// The non-blocking stop sends, completed at the next barrier.
    stop_sends: Mutex<Vec<mpi::ffi::MPI_Request>>,
    // Dropped last: finalizes MPI.
    _universe: Universe,
}

// SAFETY: the communicator is only used from the thread that initialized MPI (the main
// thread, `MPI_THREAD_FUNNELED`); `Sync` is needed only because `PhaseBarrier` is shared by
// reference with code that also runs agent threads, which never call it.
unsafe impl Sync for World {}

impl World {
    /// `MPI_Init_thread` with `MPI_THREAD_FUNNELED`: agents are threads, only the main thread
    /// calls MPI.
    pub fn init() -> Result<World, String> {
        let (universe, level) = mpi::initialize_with_threading(Threading::Funneled)
            .ok_or_else(|| "MPI was initialized twice".to_string())?;
        if level == Threading::Single {
            return Err(
                "the MPI library offers only MPI_THREAD_SINGLE; iolens runs agent threads and needs \
                 MPI_THREAD_FUNNELED"
                    .into(),
            );
        }
        let comm = universe.world();
        let host = mpi::environment::processor_name().unwrap_or_else(|_| "unknown".into());
        Ok(World {
            rank: comm.rank() as usize,
            size: comm.size() as usize,
            comm,
            host,
            announced: AtomicBool::new(false),
            stops_received: AtomicU64::new(0),
            stop_sends: Mutex::new(Vec::new()),
            _universe: universe,
        })
    }

    pub fn rank(&self) -> usize {
        self.rank
    }
    pub fn size(&self) -> usize {
        self.size
    }
    pub fn host(&self) -> &str {
        &self.host
    }
    /// `MPI_COMM_WORLD` itself, for benchmarks that drive MPI directly (b_eff).
    pub fn comm(&self) -> &SimpleCommunicator {
        &self.comm
    }

    /// The MPI library and version (`MPI_Get_library_version`), first line.
    pub fn library(&self) -> String {
        mpi::environment::library_version()
            .map(|v| v.split([',', '\n']).next().unwrap_or_default().trim().to_string())
            .unwrap_or_default()
    }

    /// Ends every rank of the job (`MPI_Abort`) with `code`.
    pub fn abort(&self, code: i32) -> ! {
        self.comm.abort(code)
    }

    /// Collective: the smallest of every rank's `mine`.
    pub fn min(&self, mine: u64) -> u64 {
        let mut min = 0u64;
        self.comm.all_reduce_into(&mine, &mut min, SystemOperation::min());
        min
    }

    /// Collective: whether `mine` is true on any rank (a logical or over all ranks).
    pub fn any(&self, mine: bool) -> bool {
        let mut any = 0u64;
        self.comm.all_reduce_into(&(mine as u64), &mut any, SystemOperation::max());
        any != 0
    }

    /// Every rank's clock offset to rank 0's, by ping-pong (see [`crate::clock`]). Collective:
    /// rank 0 gets one estimate per rank (its own is zero), the others an empty list.
    pub fn clock_offsets(&self) -> Vec<OffsetEstimate> {
        if self.rank != 0 {
            let root = self.comm.process_at_rank(0);
            // Wait for our turn without spinning: with more ranks than cores, waiting ranks that
            // busy-poll (MPICH does) steal the CPU from the pair ping-ponging and stretch every
            // round trip to a scheduler time slice.
            while root.immediate_probe_with_tag(TAG_PING).is_none() {
                std::thread::sleep(std::time::Duration::from_micros(20));
            }
            for _ in 0..CLOCK_ROUNDS {
                let (_ping, _) = root.receive_with_tag::<u64>(TAG_PING);
                root.send_with_tag(&now_ns(), TAG_PONG);
            }
            // Likewise until every rank has had its turn.
            while root.immediate_probe_with_tag(TAG_CLOCK_DONE).is_none() {
                std::thread::sleep(std::time::Duration::from_micros(20));
            }
            let (_done, _) = root.receive_with_tag::<u64>(TAG_CLOCK_DONE);
            return Vec::new();
        }
        let mut out = vec![OffsetEstimate::default()];
        for r in 1..self.size {
            let p = self.comm.process_at_rank(r as i32);
            let samples: Vec<PingSample> = (0..CLOCK_ROUNDS)
                .map(|_| {
                    let sent = now_ns();
                    p.send_with_tag(&sent, TAG_PING);
                    let (remote, _) = p.receive_with_tag::<u64>(TAG_PONG);
                    PingSample { sent, remote, received: now_ns() }
                })
                .collect();
            out.push(estimate(&samples).expect("at least one round"));
        }
        for r in 1..self.size {
            self.comm.process_at_rank(r as i32).send_with_tag(&0u64, TAG_CLOCK_DONE);
        }
        out
    }

    /// Collective: rank 0's `bytes` on every rank (the others' are replaced); for results that
    /// every rank must act on alike, such as a suite's figures of one point.
    pub fn broadcast_bytes(&self, bytes: &mut Vec<u8>) {
        let root = self.comm.process_at_rank(0);
        let mut len = bytes.len() as u64;
        root.broadcast_into(&mut len);
        // Rank 0's own length: a bounded allocation of exactly what it sends.
        bytes.resize(usize::try_from(len).expect("rank 0 sent a buffer it holds"), 0);
        root.broadcast_into(&mut bytes[..]);
    }

    /// Collective: every rank's host, in rank order, on every rank.
    pub fn hosts(&self) -> Result<Vec<String>, String> {
        let mut all = Vec::new();
        if self.rank == 0 {
            all.push(self.host.clone());
            for r in 1..self.size {
                let (bytes, _) = self.comm.process_at_rank(r as i32).receive_vec_with_tag::<u8>(TAG_HOST);
                all.push(String::from_utf8_lossy(&bytes).into_owned());
            }
        } else {
            self.comm.process_at_rank(0).send_with_tag(self.host.as_bytes(), TAG_HOST);
        }
        let mut bytes =
            if self.rank == 0 { serde_json::to_vec(&all).expect("strings serialize") } else { Vec::new() };
        self.broadcast_bytes(&mut bytes);
        serde_json::from_slice(&bytes).map_err(|e| format!("rank 0's host list is unreadable: {e}"))
    }

    /// Collective: whether every rank was given the job rank 0 was (`mine`: this rank's). Every
    /// rank gets the same answer: `Err` names the ranks that differ from rank 0 and, from the
    /// first of them, the first field that differs. One hash per rank travels, and one rank's
    /// fields when they differ.
    pub fn same_job(&self, mine: &JobFingerprint) -> Result<(), String> {
        let mut hashes = vec![0u64; self.size];
        self.comm.all_gather_into(&mine.hash(), &mut hashes[..]);
        let differing = ranks_differing(&hashes);
        let Some(&first) = differing.first() else { return Ok(()) };
        let what = if self.rank == first {
            self.comm.process_at_rank(0).send_with_tag(&mine.encode()[..], TAG_JOB);
            None
        } else if self.rank == 0 {
            let (bytes, _) = self.comm.process_at_rank(first as i32).receive_vec_with_tag::<u8>(TAG_JOB);
            JobFingerprint::decode(&bytes).ok().and_then(|theirs| mine.first_difference(&theirs, first))
        } else {
            None
        };
        // Rank 0's words on every rank, so each reports the same.
        let mut bytes = if self.rank == 0 {
            another_job_message(&differing, what.as_deref()).into_bytes()
        } else {
            Vec::new()
        };
        self.broadcast_bytes(&mut bytes);
        Err(String::from_utf8_lossy(&bytes).into_owned())
    }

    /// Collective: rank 0 gets every rank's report in rank order, the others `None`.
    pub fn gather_reports(&self, mine: &RankReport) -> Result<Option<Vec<RankReport>>, String> {
        if self.rank != 0 {
            self.comm.process_at_rank(0).send_with_tag(&mine.encode()[..], TAG_REPORT);
            return Ok(None);
        }
        let mut all = vec![mine.clone()];
        for r in 1..self.size {
            let (bytes, _) = self.comm.process_at_rank(r as i32).receive_vec_with_tag::<u8>(TAG_REPORT);
            all.push(RankReport::decode(&bytes)?);
        }
        Ok(Some(all))
    }

    /// Collective: the union of every rank's busy periods (`mine`: this rank's, sorted and
    /// disjoint), each rank's moved to rank 0's clock by `to_root[rank]`. The periods travel in
    /// chunks of [`CHUNK_PERIODS`] and are merged as sorted runs, so rank 0 holds one chunk per
    /// rank at a time. Rank 0 gets the totals, and beside them each node's (`node_of[rank]`: the
    /// rank's node, from 0; read on rank 0 only); the others `None`.
    pub fn busy_union(
        &self,
        mine: impl Iterator<Item = Interval>,
        to_root: &[&dyn Fn(u64) -> u64],
        node_of: &[usize],
    ) -> Option<(UnionTotals, Vec<UnionTotals>)> {
        if self.rank != 0 {
            let root = self.comm.process_at_rank(0);
            let mut chunk = Vec::with_capacity(CHUNK_PERIODS);
            for p in mine {
                chunk.push(p);
                if chunk.len() == CHUNK_PERIODS {
                    root.send_with_tag(&encode_chunk(&chunk)[..], TAG_CHUNK);
                    chunk.clear();
                }
            }
            if !chunk.is_empty() {
                root.send_with_tag(&encode_chunk(&chunk)[..], TAG_CHUNK);
            }
            root.send_with_tag(&[0u64; 0][..], TAG_CHUNK);
            return None;
        }
        let mut streams: Vec<Box<dyn Iterator<Item = Interval> + '_>> = vec![Box::new(mine)];
        for (r, correct) in to_root.iter().enumerate().take(self.size).skip(1) {
            let p = self.comm.process_at_rank(r as i32);
            let next = move || decode_chunk(&p.receive_vec_with_tag::<u64>(TAG_CHUNK).0);
            streams.push(Box::new(ChunkStream::new(next, correct)));
        }
        Some(merge_sorted_streams_grouped(streams, node_of))
    }
}

impl PhaseBarrier for World {
    /// A barrier that also settles failure announcements: the ranks agree (all-reduce) on how
    /// many announced a failure, each receives every stop meant for it, and completes its own
    /// stop sends — so no message is left pending, whoever failed when.
    fn wait(&self, _phase: &str) {
        let mine = self.announced.load(Ordering::Relaxed) as u64;
        let mut total = 0u64;
        self.comm.all_reduce_into(&mine, &mut total, SystemOperation::sum());
        let expected = total - mine;
        while self.stops_received.load(Ordering::Relaxed) < expected {
            let (_stop, _) = self.comm.any_process().receive_with_tag::<u64>(TAG_STOP);
            self.stops_received.fetch_add(1, Ordering::Relaxed);
        }
        let mut sends = self.stop_sends.lock().unwrap_or_else(|e| e.into_inner());
        if !sends.is_empty() {
            // SAFETY: the requests come from MPI_Isend below and are waited for exactly once;
            // their buffer is a static.
            unsafe {
                mpi::ffi::MPI_Waitall(
                    sends.len() as i32,
                    sends.as_mut_ptr(),
                    mpi::ffi::RSMPI_STATUSES_IGNORE,
                );
            }
            sends.clear();
        }
    }

    fn announce_failure(&self) {
        if self.announced.swap(true, Ordering::Relaxed) {
            return;
        }
        let mut sends = self.stop_sends.lock().unwrap_or_else(|e| e.into_inner());
        for r in (0..self.size).filter(|&r| r != self.rank) {
            // SAFETY: a non-blocking send of one u64 from a static, on this communicator; the
            // request is completed in `wait`.
            unsafe {
                let mut req = std::mem::MaybeUninit::uninit();
                mpi::ffi::MPI_Isend(
                    &STOP_WORD as *const u64 as *const std::ffi::c_void,
                    1,
                    u64::equivalent_datatype().as_raw(),
                    r as i32,
                    TAG_STOP,
                    self.comm.as_raw(),
                    req.as_mut_ptr(),
                );
                sends.push(req.assume_init());
            }
        }
    }

    fn peer_failed(&self) -> bool {
        let mut failed = self.stops_received.load(Ordering::Relaxed) > 0;
        while self.comm.any_process().immediate_probe_with_tag(TAG_STOP).is_some() {
            let (_stop, _) = self.comm.any_process().receive_with_tag::<u64>(TAG_STOP);
            self.stops_received.fetch_add(1, Ordering::Relaxed);
            failed = true;
        }
        failed
    }

    fn size(&self) -> usize {
        self.size
    }
    fn rank(&self) -> usize {
        self.rank
    }
    fn share(&self, values: &mut [u64]) {
        self.comm.process_at_rank(0).broadcast_into(values);
    }
}
