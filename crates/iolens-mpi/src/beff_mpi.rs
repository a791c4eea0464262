//! b_eff's measurement (feature `mpi`): every pattern × message size × method, 3 repetitions,
//! the loop length adjusted so that each loop takes 2.5–5 ms, the time of a loop the maximum
//! over ranks (`MPI_Allreduce` of `MPI_Wtime` differences). All ranks take every decision from
//! the same reduced times, so they stay in step without further messages; every rank ends with
//! the same protocol.

use std::ffi::c_void;

use mpi::collective::SystemOperation;
use mpi::ffi;
use mpi::raw::AsRaw;
use mpi::traits::*;

use crate::beff::{
    bandwidth, message_sizes, next_loops, pattern_results, patterns, summarize, Measurement, Method, Pattern,
    PatternResult, PingPong, Summary, METHODS, REPS, START_LOOPS, TARGET_MAX_S, TARGET_MIN_S,
};
use crate::world::World;

/// Re-measurements allowed to bring a loop into 2.5–5 ms before the measurement counts anyway.
const MAX_ADJUST: usize = 6;

/// A whole b_eff run: the protocol and what follows from it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct BeffRun {
    pub sizes: Vec<u64>,
    pub patterns: Vec<Pattern>,
    pub results: Vec<PatternResult>,
    pub summary: Summary,
    /// Ping-pong between ranks 0 and 1 at Lmax: every repetition.
    pub ping_pong: Vec<PingPong>,
    /// Every counted measurement.
    pub protocol: Vec<Measurement>,
}

struct Bufs {
    send: Vec<u8>,
    recv: Vec<u8>,
    counts: Vec<i32>,
    displs: Vec<i32>,
}

fn byte() -> ffi::MPI_Datatype {
    u8::equivalent_datatype().as_raw()
}

/// One execution of `pattern` by this rank with messages of `l` bytes.
fn exchange(world: &World, left: usize, right: usize, l: usize, method: Method, b: &mut Bufs) {
    let comm = world.comm().as_raw();
    let lmax = b.send.len() / 2;
    let (sp, rp) = (b.send.as_mut_ptr(), b.recv.as_mut_ptr());
    let n = l as i32;
    // SAFETY: the buffers hold 2·Lmax bytes and l ≤ Lmax; the ranks are in the communicator;
    // every request is completed before the buffers are touched again.
    unsafe {
        match method {
            Method::Sendrecv => {
                ffi::MPI_Sendrecv(
                    sp as *const c_void,
                    n,
                    byte(),
                    left as i32,
                    1,
                    rp as *mut c_void,
                    n,
                    byte(),
                    right as i32,
                    1,
                    comm,
                    ffi::RSMPI_STATUS_IGNORE,
                );
                ffi::MPI_Sendrecv(
                    sp.add(lmax) as *const c_void,
                    n,
                    byte(),
                    right as i32,
                    2,
                    rp.add(lmax) as *mut c_void,
                    n,
                    byte(),
                    left as i32,
                    2,
                    comm,
                    ffi::RSMPI_STATUS_IGNORE,
                );
            }
            Method::Alltoallv => {
                b.counts.iter_mut().for_each(|c| *c = 0);
                b.displs.iter_mut().for_each(|d| *d = 0);
                b.counts[left] += n;
                b.counts[right] += n;
                if left != right {
                    b.displs[right] = n;
                }
                ffi::MPI_Alltoallv(
                    sp as *const c_void,
                    b.counts.as_ptr(),
                    b.displs.as_ptr(),
                    byte(),
                    rp as *mut c_void,
                    b.counts.as_ptr(),
                    b.displs.as_ptr(),
                    byte(),
                    comm,
                );
            }
            Method::Nonblocking => {
                let mut req = [ffi::RSMPI_REQUEST_NULL; 4];
                ffi::MPI_Irecv(rp as *mut c_void, n, byte(), right as i32, 1, comm, &mut req[0]);
                ffi::MPI_Irecv(rp.add(lmax) as *mut c_void, n, byte(), left as i32, 2, comm, &mut req[1]);
                ffi::MPI_Isend(sp as *const c_void, n, byte(), left as i32, 1, comm, &mut req[2]);
                ffi::MPI_Isend(sp.add(lmax) as *const c_void, n, byte(), right as i32, 2, comm, &mut req[3]);
                ffi::MPI_Waitall(4, req.as_mut_ptr(), ffi::RSMPI_STATUSES_IGNORE);
            }
        }
    }
}

/// Maximum over ranks of this rank's `secs`.
fn max_over_ranks(world: &World, secs: f64) -> f64 {
    let mut max = 0.0f64;
    world.comm().all_reduce_into(&secs, &mut max, SystemOperation::max());
    max
}

/// Runs `body` `loops` times between a barrier and the reduction; the maximum time over ranks.
fn timed(world: &World, loops: u64, mut body: impl FnMut()) -> f64 {
    world.comm().barrier();
    let t0 = mpi::time();
    for _ in 0..loops {
        body();
    }
    max_over_ranks(world, mpi::time() - t0)
}

/// Measures with `loops`, re-measuring with an adjusted loop length while the loop is outside
/// 2.5–5 ms (at most [`MAX_ADJUST`] times); returns the loop length used and the time.
fn adjusted(world: &World, loops: &mut u64, mut body: impl FnMut()) -> f64 {
    let mut t = timed(world, *loops, &mut body);
    for _ in 0..MAX_ADJUST {
        if (TARGET_MIN_S..=TARGET_MAX_S).contains(&t) {
            break;
        }
        let next = next_loops(*loops, t);
        if next == *loops {
            break;
        }
        *loops = next;
        t = timed(world, *loops, &mut body);
    }
    t
}

/// Runs b_eff on every rank of `world` with message sizes up to `lmax`; `progress` is called
/// (on every rank) after each pattern. Collective: every rank must call it. `None` when `stop`
/// was set on any rank: the ranks agree on it after each message size, and b_eff, an average over
/// every pattern, has no value without all of them.
pub fn run(
    world: &World,
    lmax: u64,
    seed: u64,
    stop: &std::sync::atomic::AtomicBool,
    mut progress: impl FnMut(&str),
) -> Option<BeffRun> {
    let (rank, n) = (world.rank(), world.size());
    let sizes = message_sizes(lmax);
    let lmax = *sizes.last().unwrap();
    let pats = patterns(n, seed);
    let mut bufs = Bufs {
        send: vec![1u8; 2 * lmax as usize],
        recv: vec![0u8; 2 * lmax as usize],
        counts: vec![0; n],
        displs: vec![0; n],
    };
    let mut protocol = Vec::new();
    for p in &pats {
        let (left, right) = p.neighbours(rank);
        let mut loops = START_LOOPS;
        for &l in &sizes {
            for method in METHODS {
                for rep in 0..REPS {
                    let t = adjusted(world, &mut loops, || {
                        exchange(world, left, right, l as usize, method, &mut bufs)
                    });
                    protocol.push(Measurement {
                        pattern: p.name.clone(),
                        kind: p.kind,
                        size: l,
                        method,
                        rep,
                        loops,
                        time_s: t,
                        messages: p.messages(),
                        bandwidth: bandwidth(l, p.messages(), loops, t),
                    });
                }
            }
            if world.any(stop.load(std::sync::atomic::Ordering::SeqCst)) {
                return None;
            }
        }
        progress(&p.name);
    }
    let ping_pong = ping_pong(world, lmax, &mut bufs);
    let pp = ping_pong.iter().map(|m| m.bandwidth).fold(0.0, f64::max);
    let results = pattern_results(&pats, &sizes, &protocol);
    let summary = summarize(&results, n, lmax, (!ping_pong.is_empty()).then_some(pp));
    Some(BeffRun { sizes, patterns: pats, results, summary, ping_pong, protocol })
}

/// Ping-pong between ranks 0 and 1 with messages of Lmax: bandwidth = 2·L·loops / time.
fn ping_pong(world: &World, lmax: u64, b: &mut Bufs) -> Vec<PingPong> {
    let rank = world.rank();
    let comm = world.comm().as_raw();
    let n = lmax as i32;
    let (sp, rp) = (b.send.as_ptr(), b.recv.as_mut_ptr());
    let mut out = Vec::new();
    let mut loops = 1;
    for rep in 0..REPS {
        let t = adjusted(world, &mut loops, || {
            // SAFETY: Lmax-byte messages within 2·Lmax buffers; blocking calls.
            unsafe {
                if rank == 0 {
                    ffi::MPI_Send(sp as *const c_void, n, byte(), 1, 3, comm);
                    ffi::MPI_Recv(rp as *mut c_void, n, byte(), 1, 4, comm, ffi::RSMPI_STATUS_IGNORE);
                } else if rank == 1 {
                    ffi::MPI_Recv(rp as *mut c_void, n, byte(), 0, 3, comm, ffi::RSMPI_STATUS_IGNORE);
                    ffi::MPI_Send(sp as *const c_void, n, byte(), 0, 4, comm);
                }
            }
        });
        out.push(PingPong { size: lmax, rep, loops, time_s: t, bandwidth: bandwidth(lmax, 2, loops, t) });
    }
    out
}
