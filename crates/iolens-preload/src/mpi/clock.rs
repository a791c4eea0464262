//! MPI ranks and their clocks: `MPI_Init`, `MPI_Init_thread` and `MPI_Finalize` are hooked to
//! mark the stream with the process's rank and to measure, by ping-pong with rank 0, how far
//! this process's clock is from rank 0's. The two measurements (after init, before finalize) go
//! to `<pid>.<start ns>.mpi` beside the stream, for the analysis to put every rank's events on
//! rank 0's clock (ranks on other nodes have other clocks):
//!
//! ```text
//! rank 3 size 4
//! boot <the kernel's boot id>:<the time namespace's inode: ranks with rank 0's share its clock>
//! init <local ns> <offset ns>
//! finalize <local ns> <offset ns>
//! ```
//!
//! where rank 0's time = local time + offset, measured at that local time. The messages go over
//! a duplicate of `MPI_COMM_WORLD`, so they never match the program's own receives.
//!
//! Duplicating the communicator is collective, and the ping-pong needs rank 0: a rank that is
//! not traced (a remote node `LD_PRELOAD` did not reach, one half of an MPMD job) would leave
//! the others waiting forever. So the clocks are measured only when the environment says every
//! rank is traced: `IOLENS_MPI_CLOCK=1`, which `mpirun … iolens trace` sets (every rank runs
//! iolens there). Without it the file has the rank only, and ranks of one node, which share
//! `CLOCK_MONOTONIC`, need no correction.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering::*};

use iolens_record::clock_offset::{best_sample, PingSample};
use iolens_record::event::{IoEvent, IoOp, Layer, FLAG_MPI_RANK, NO_FILE};
use libc::{c_char, c_int, c_void};

use crate::base::clock::now_ns;
use crate::base::guard::ENABLED;
use crate::base::raw_syscall::{errno, fd_link, push_decimal, set_errno, sys};
use crate::mpi::abi::{comm_world, mpi_byte, pmpi, Handle};
use crate::mpi::pending::complete_unseen;
use crate::record::{event, push};
use crate::stream::{enter_guard, raw_write_all, stream_fd};

/// The duplicate of `MPI_COMM_WORLD` the measurements use; 0 before `MPI_Init`.
static CLOCK_COMM: AtomicUsize = AtomicUsize::new(0);
static RANK: AtomicU32 = AtomicU32::new(0);
static SIZE: AtomicU32 = AtomicU32::new(0);

/// Round trips per rank and measurement: the shortest one is kept.
const ROUNDS: usize = 8;
/// The tag of the measurement messages (any tag would do on a communicator of our own).
const TAG: c_int = 7331;

type SendFn = unsafe extern "C" fn(*const c_void, c_int, Handle, c_int, c_int, Handle) -> c_int;
type RecvFn = unsafe extern "C" fn(*mut c_void, c_int, Handle, c_int, c_int, Handle, *mut c_void) -> c_int;

/// Measures this rank's clock offset from rank 0: (local time of the measurement, offset).
/// Rank 0 answers every other rank in turn; each keeps its shortest round trip, whose middle
/// is taken as the moment rank 0 read its clock.
unsafe fn measure(comm: Handle, rank: u32, size: u32) -> (u64, i64) {
    // SAFETY: the messages are sent from and received into local words of the sizes given, on the
    // communicator of our own, with a status larger than any library's.
    unsafe {
        let send = pmpi!("PMPI_Send" as SendFn);
        let recv = pmpi!("PMPI_Recv" as RecvFn);
        let byte = mpi_byte();
        // Larger than MPI_Status in any implementation.
        let mut status = [0u64; 16];
        let now = iolens_record::clock::now_ns;
        if rank == 0 {
            for peer in 1..size as c_int {
                for _ in 0..ROUNDS {
                    let mut ping = 0u64;
                    recv(
                        (&mut ping as *mut u64).cast(),
                        8,
                        byte,
                        peer,
                        TAG,
                        comm,
                        status.as_mut_ptr().cast(),
                    );
                    let t = now();
                    send((&t as *const u64).cast(), 8, byte, peer, TAG, comm);
                }
            }
            return (now(), 0);
        }
        let mut samples = [PingSample { sent: 0, remote: 0, received: 0 }; ROUNDS];
        for sample in &mut samples {
            let sent = now();
            send((&sent as *const u64).cast(), 8, byte, 0, TAG, comm);
            let mut remote = 0u64;
            recv((&mut remote as *mut u64).cast(), 8, byte, 0, TAG, comm, status.as_mut_ptr().cast());
            *sample = PingSample { sent, remote, received: now() };
        }
        // Rank 0's clock minus this rank's, at this rank's midpoint of the best round.
        match best_sample(&samples) {
            Some(best) => (best.midpoint(), best.offset()),
            None => (now(), 0), // no rounds: ROUNDS is not 0, so never
        }
    }
}

/// Appends `line` to the stream's `.mpi` file.
unsafe fn append_to_clock_file(line: &[u8]) {
    // SAFETY: `path` is NUL-terminated within its array; the line is written from a live slice, and
    // the file opened here is closed here.
    unsafe {
        let fd = stream_fd();
        let mut path = [0u8; 4096];
        let Some(len) = (if fd >= 0 { fd_link(fd, &mut path) } else { None }) else { return };
        if len < 4 || &path[len - 4..len] != b".evt" || len + 1 > path.len() {
            return;
        }
        path[len - 3..len].copy_from_slice(b"mpi");
        path[len] = 0;
        let file = sys()(
            libc::SYS_openat,
            libc::AT_FDCWD,
            path.as_ptr(),
            libc::O_WRONLY | libc::O_CREAT | libc::O_APPEND | libc::O_CLOEXEC,
            0o600,
        ) as c_int;
        if file < 0 {
            return;
        }
        sys()(libc::SYS_fchmod, file, 0o600);
        raw_write_all(file, line);
        sys()(libc::SYS_close, file);
    }
}

fn push_signed(out: &mut [u8], at: &mut usize, v: i64) {
    if v < 0 {
        out[*at] = b'-';
        *at += 1;
    }
    push_decimal(out, at, v.unsigned_abs());
}

/// Writes one measurement line: `<name> <local ns> <offset ns>`.
unsafe fn write_measurement(name: &[u8], (at_ns, offset): (u64, i64)) {
    // SAFETY: the line is a live local array.
    unsafe {
        let mut line = [0u8; 80];
        line[..name.len()].copy_from_slice(name);
        let mut len = name.len();
        line[len] = b' ';
        len += 1;
        push_decimal(&mut line, &mut len, at_ns);
        line[len] = b' ';
        len += 1;
        push_signed(&mut line, &mut len, offset);
        line[len] = b'\n';
        append_to_clock_file(&line[..len + 1]);
    }
}

/// Writes `boot <id>[:<time namespace>]\n` into `out` (at least 80 bytes): the kernel's boot
/// id and the inode of this process's time namespace. Ranks with rank 0's boot id *and* time
/// namespace read its very `CLOCK_MONOTONIC`; a node in a time namespace of its own (a container,
/// a simulated cluster) shares the boot id but not the clock. Its length (0 if unreadable).
unsafe fn boot_line(out: &mut [u8]) -> usize {
    // SAFETY: the paths are NUL-terminated; each read is into a local array, at most its size,
    // and the file closed.
    unsafe {
        let fd = sys()(
            libc::SYS_openat,
            libc::AT_FDCWD,
            c"/proc/sys/kernel/random/boot_id".as_ptr(),
            libc::O_RDONLY | libc::O_CLOEXEC,
        ) as c_int;
        if fd < 0 {
            return 0;
        }
        let mut id = [0u8; 48];
        let n = sys()(libc::SYS_read, fd, id.as_mut_ptr(), id.len());
        sys()(libc::SYS_close, fd);
        let id = &id[..n.max(0) as usize];
        let id = &id[..id.iter().position(|b| !b.is_ascii_hexdigit() && *b != b'-').unwrap_or(id.len())];
        // `time:[4026531834]`: the digits name the namespace (none before Linux 5.6).
        let mut link = [0u8; 32];
        let n = sys()(
            libc::SYS_readlinkat,
            libc::AT_FDCWD,
            c"/proc/self/ns/time".as_ptr(),
            link.as_mut_ptr(),
            link.len(),
        );
        let link = &link[..n.max(0) as usize];
        let digits: &[u8] = match link.iter().position(u8::is_ascii_digit) {
            Some(start) => {
                let rest = &link[start..];
                &rest[..rest.iter().position(|b| !b.is_ascii_digit()).unwrap_or(rest.len())]
            }
            None => &[],
        };
        let len = 5 + id.len() + if digits.is_empty() { 0 } else { 1 + digits.len() } + 1;
        if id.is_empty() || out.len() < len {
            return 0;
        }
        let mut at = 0;
        for part in [&b"boot "[..], id] {
            out[at..at + part.len()].copy_from_slice(part);
            at += part.len();
        }
        if !digits.is_empty() {
            out[at] = b':';
            out[at + 1..at + 1 + digits.len()].copy_from_slice(digits);
            at += 1 + digits.len();
        }
        out[at] = b'\n';
        at + 1
    }
}

/// Whether the environment says every rank of the job runs with this preload.
unsafe fn every_rank_traced() -> bool {
    // SAFETY: getenv's result is null or NUL-terminated.
    unsafe {
        let v = libc::getenv(c"IOLENS_MPI_CLOCK".as_ptr());
        !v.is_null() && libc::strcmp(v, c"1".as_ptr()) == 0
    }
}

/// Whether the rank was marked: the Fortran `MPI_INIT` hook and the C one it may reach (MPICH's
/// Fortran binding calls `MPI_Init`) both call [`after_init`], which must act once.
static INIT_SEEN: AtomicBool = AtomicBool::new(false);

/// After a successful `MPI_Init`: the rank marker, and the first clock measurement.
pub(crate) unsafe fn after_init() {
    // SAFETY: MPI is initialized (the caller's promise): the PMPI calls take handles of the
    // library's ABI and local out-arguments.
    unsafe {
        if !ENABLED.load(Relaxed) || INIT_SEEN.swap(true, Relaxed) {
            return;
        }
        let saved = errno();
        let comm_rank = pmpi!("PMPI_Comm_rank" as unsafe extern "C" fn(Handle, *mut c_int) -> c_int);
        let comm_size = pmpi!("PMPI_Comm_size" as unsafe extern "C" fn(Handle, *mut c_int) -> c_int);
        let comm_dup = pmpi!("PMPI_Comm_dup" as unsafe extern "C" fn(Handle, *mut Handle) -> c_int);
        let world = comm_world();
        let (mut rank, mut size, mut comm): (c_int, c_int, Handle) = (-1, 0, 0);
        if comm_rank(world, &mut rank) != 0 || comm_size(world, &mut size) != 0 || rank < 0 || size <= 0 {
            set_errno(saved);
            return;
        }
        if let Some(_g) = enter_guard() {
            let t = now_ns();
            push(&IoEvent {
                flags: FLAG_MPI_RANK,
                ..event(IoOp::Other, Layer::MpiIo, NO_FILE, rank as u64, size as u64, 0, t, t)
            });
            let mut line = [0u8; 128];
            let mut len = 0;
            for (word, value) in [(&b"rank "[..], rank as u64), (&b" size "[..], size as u64)] {
                line[len..len + word.len()].copy_from_slice(word);
                len += word.len();
                push_decimal(&mut line, &mut len, value);
            }
            line[len] = b'\n';
            len += 1;
            len += boot_line(&mut line[len..]);
            append_to_clock_file(&line[..len]);
        }
        RANK.store(rank as u32, Relaxed);
        SIZE.store(size as u32, Relaxed);
        // A communicator of our own: the measurements cannot match the program's receives.
        if size > 1 && every_rank_traced() && comm_dup(world, &mut comm) == 0 && comm != 0 {
            CLOCK_COMM.store(comm, Relaxed);
            let measured = measure(comm, rank as u32, size as u32);
            if let Some(_g) = enter_guard() {
                write_measurement(b"init", measured);
            }
        }
        set_errno(saved);
    }
}

/// Before `MPI_Finalize`: the MPI-IO calls whose completion went unseen, and the second clock
/// measurement (the two give the drift in between).
pub(crate) unsafe fn before_finalize() {
    // SAFETY: MPI is not finalized yet (the caller's promise): the PMPI calls take our own
    // communicator.
    unsafe {
        complete_unseen();
        let mut comm = CLOCK_COMM.swap(0, Relaxed);
        if comm == 0 || !ENABLED.load(Relaxed) {
            return;
        }
        let saved = errno();
        let measured = measure(comm, RANK.load(Relaxed), SIZE.load(Relaxed));
        if let Some(_g) = enter_guard() {
            write_measurement(b"finalize", measured);
        }
        let comm_free = pmpi!("PMPI_Comm_free" as unsafe extern "C" fn(*mut Handle) -> c_int);
        comm_free(&mut comm);
        set_errno(saved);
    }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Init(argc: *mut c_int, argv: *mut *mut *mut c_char) -> c_int {
    // SAFETY: a hook's contract (mpi/mod.rs): the program's arguments, passed on unchanged.
    unsafe {
        let real = pmpi!("PMPI_Init" as unsafe extern "C" fn(*mut c_int, *mut *mut *mut c_char) -> c_int);
        let ret = real(argc, argv);
        if ret == 0 {
            after_init();
        }
        ret
    }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Init_thread(
    argc: *mut c_int,
    argv: *mut *mut *mut c_char,
    required: c_int,
    provided: *mut c_int,
) -> c_int {
    // SAFETY: a hook's contract (mpi/mod.rs): the program's arguments, passed on unchanged.
    unsafe {
        let real = pmpi!(
            "PMPI_Init_thread"
                as unsafe extern "C" fn(*mut c_int, *mut *mut *mut c_char, c_int, *mut c_int) -> c_int
        );
        let ret = real(argc, argv, required, provided);
        if ret == 0 {
            after_init();
        }
        ret
    }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Finalize() -> c_int {
    // SAFETY: a hook's contract (mpi/mod.rs): the program's arguments, passed on unchanged.
    unsafe {
        let real = pmpi!("PMPI_Finalize" as unsafe extern "C" fn() -> c_int);
        before_finalize();
        real()
    }
}
