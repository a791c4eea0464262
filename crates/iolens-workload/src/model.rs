use std::path::PathBuf;
use std::time::Duration;

/// A complete workload: agents that run concurrently, one thread each.
#[derive(Debug, Clone, PartialEq)]
pub struct Job {
    pub name: String,
    /// The block unit of BPS (bytes); 512 unless the job says otherwise.
    pub block_unit: u64,
    pub agents: Vec<AgentSpec>,
}

impl Job {
    /// The phase numbers in order (a job without phases has one, 1).
    pub fn phase_numbers(&self) -> Vec<u32> {
        let mut numbers: Vec<u32> = self.agents.iter().map(|a| a.phase).collect();
        numbers.sort_unstable();
        numbers.dedup();
        numbers
    }
}

/// One IOAgent agent: a thread issuing a stream of requests against one target.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentSpec {
    pub name: String,
    /// A regular file, a directory (iolens creates the agent's own file in it) or a block device.
    pub target: PathBuf,
    pub op: OpMix,
    pub pattern: Pattern,
    /// Random offsets without replacement (fio's random map, IOR `-z`): each pass over the
    /// region visits every start slot once, in a random order, before any repeats. Only uniform
    /// random patterns use it; the parser defaults it to true for write-only uniform agents.
    pub random_map: bool,
    pub sizes: SizeSpec,
    pub engine: EngineKind,
    /// Requests in flight (buffers) for the asynchronous engine; 1 for sync.
    pub queue_depth: u32,
    /// O_DIRECT: bypass the page cache.
    pub direct: bool,
    pub rate: Rate,
    pub fsync: FsyncPolicy,
    /// Size of the region the agent addresses (file size); `None` = the target's size, or a
    /// default for new files.
    pub region_size: Option<u64>,
    pub termination: Termination,
    /// Excluded from every metric: operations that start before the ramp ends are not recorded.
    pub ramp: Duration,
    /// Seed for the agent's random streams (offsets, sizes, mix, arrivals).
    pub seed: u64,
    /// Data verification: written blocks carry a checked header, read blocks are checked.
    pub verify: Option<Verify>,
    /// The phase the agent runs in (from 1): phases run one after another, each a measurement
    /// of its own; agents of one phase run together (fio's `stonewall`).
    pub phase: u32,
    /// Time between the phase's start and the agent's first request (fio's `startdelay`).
    pub start_delay: Duration,
}

/// How an agent verifies data. Each written block starts with a header (magic, file offset,
/// block size, generation, payload checksum, header checksum) and ends with a trailer (offset,
/// generation); the payload between is a deterministic function of offset and generation, so
/// a read detects corrupt, misplaced, stale, torn and unwritten blocks and the first bad byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Verify {
    pub kind: VerifyKind,
    /// Write agents: after the write phase, read back every block written and check it (not
    /// counted in the I/O figures).
    pub after_write: bool,
    /// Writers stamp this generation (default: a new one per run, the run's start time in
    /// nanoseconds since the epoch). Readers expect it; without it a reader takes the
    /// generation of the first valid block it reads and reports blocks of any other.
    pub generation: Option<u64>,
}

/// How a block's payload is checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VerifyKind {
    /// CRC-32C of the payload, stored in the header.
    Crc32c,
    /// XXH3-64 of the payload, stored in the header.
    Xxh3,
    /// No stored checksum: the payload is regenerated and compared byte for byte.
    Pattern,
}

impl VerifyKind {
    pub fn name(self) -> &'static str {
        match self {
            VerifyKind::Crc32c => "crc32c",
            VerifyKind::Xxh3 => "xxh3",
            VerifyKind::Pattern => "pattern",
        }
    }
}

/// Whether an agent reads, writes or mixes both.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum OpMix {
    Read,
    Write,
    /// Each request is a read with probability `read_pct`/100, else a write.
    Mixed {
        read_pct: u8,
    },
}

impl OpMix {
    pub fn reads(self) -> bool {
        !matches!(self, OpMix::Write)
    }
    pub fn writes(self) -> bool {
        !matches!(self, OpMix::Read)
    }
}

/// Where in the region successive requests land.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Pattern {
    Sequential,
    /// Each request starts `stride` bytes after the previous one's start (wrapping at the end).
    Strided {
        stride: u64,
    },
    Random(Distribution),
    /// Hpio-style noncontiguous reads: each access wants `regions` regions of `region_size`
    /// bytes, `spacing` bytes apart; accesses follow each other through the file.
    Noncontiguous(Noncontiguous),
}

/// A noncontiguous access and how it reaches the file system.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Noncontiguous {
    pub regions: u64,
    pub region_size: u64,
    pub spacing: u64,
    /// Data sieving (as ROMIO does): read spans of up to this many bytes covering several
    /// regions and extract the regions from memory; `None` reads each region with its own call.
    pub sieve_buffer: Option<u64>,
}

impl Noncontiguous {
    /// Bytes from the first byte of an access to its last; `None` when that overflows u64.
    pub fn checked_span(&self) -> Option<u64> {
        let gaps = self.regions.saturating_sub(1).checked_mul(self.spacing)?;
        self.regions.checked_mul(self.region_size)?.checked_add(gaps)
    }

    /// [`checked_span`](Self::checked_span), saturating: parsed jobs never saturate (the parser
    /// bounds the span by the largest file offset), so this only guards hand-built values.
    pub fn span(&self) -> u64 {
        self.checked_span().unwrap_or(u64::MAX)
    }

    /// The largest single call.
    pub fn max_call(&self) -> u64 {
        match self.sieve_buffer {
            Some(b) => b.min(self.span()).max(self.region_size),
            None => self.region_size,
        }
    }
}

/// The distribution of random offsets over the region.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Distribution {
    Uniform,
    /// A hot spot: offsets normally distributed around `center` (fraction of the region, 0..1)
    /// with standard deviation `spread` (fraction of the region). IOAgent's "Poisson" case.
    Normal {
        center: f64,
        spread: f64,
    },
    /// Zipf over the region's blocks with exponent `theta` (> 0); block 0 is the hottest, and
    /// hot blocks are scattered over the region.
    Zipf {
        theta: f64,
    },
}

/// Request sizes: one size, or a weighted list (like fio's bssplit).
#[derive(Debug, Clone, PartialEq)]
pub enum SizeSpec {
    Fixed(u64),
    /// (size in bytes, weight) pairs; weights are relative.
    Weighted(Vec<(u64, u32)>),
}

impl SizeSpec {
    pub fn max(&self) -> u64 {
        match self {
            SizeSpec::Fixed(s) => *s,
            SizeSpec::Weighted(list) => list.iter().map(|(s, _)| *s).max().unwrap_or(0),
        }
    }
    pub fn min(&self) -> u64 {
        match self {
            SizeSpec::Fixed(s) => *s,
            SizeSpec::Weighted(list) => list.iter().map(|(s, _)| *s).min().unwrap_or(0),
        }
    }
}

/// The I/O backend an agent uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EngineKind {
    /// pread/pwrite, one request at a time.
    Sync,
    /// io_uring with `queue_depth` requests in flight.
    IoUring,
    /// No I/O at all: measures the tool's own per-op overhead.
    Null,
}

impl EngineKind {
    pub fn name(self) -> &'static str {
        match self {
            EngineKind::Sync => "sync",
            EngineKind::IoUring => "io_uring",
            EngineKind::Null => "null",
        }
    }
}

/// Issue rate of an agent.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rate {
    /// Operations per second; 0 = as fast as possible.
    pub ops_per_s: f64,
    pub arrival: Arrival,
}

impl Rate {
    pub const UNLIMITED: Rate = Rate { ops_per_s: 0.0, arrival: Arrival::Constant };
}

/// Inter-arrival times of a rate-limited agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arrival {
    Constant,
    /// Exponentially distributed gaps (a Poisson process) with the configured mean rate.
    Poisson,
}

/// When writes are flushed to stable storage.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FsyncPolicy {
    None,
    /// fsync after every N write operations.
    EveryN(u64),
    /// fdatasync after every N write operations: data and the metadata needed to read it back,
    /// not timestamps.
    DataEveryN(u64),
    /// One fsync at the end of the phase; its time is counted in the phase.
    AtEnd,
}

/// When an agent stops. With neither set, the agent moves `region_size` bytes once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Termination {
    /// Time-driven: stop after this long (the ramp comes on top).
    pub time: Option<Duration>,
    /// Size-driven: stop after this many bytes were requested (after the ramp).
    pub bytes: Option<u64>,
}

/// Region size for new files when neither the job nor the target gives one.
pub const DEFAULT_REGION_SIZE: u64 = 64 << 20;

/// Limits on what a job may ask for. Each protects the engine from work or memory out of all
/// proportion to any real measurement; errors that hit one say which and how to stay below it.
pub mod limits {
    /// Agents (threads) in one job, over all `[[agent]]` tables and their `threads`.
    pub const MAX_AGENTS: usize = 1024;
    /// Request buffers (largest request × queue depth, summed over agents) of one job: the
    /// engine allocates them all up front.
    pub const MAX_BUFFER_BYTES: u64 = 32 << 30;
    /// Sizes and offsets end up in lseek/pread/pwrite, which take a signed 64-bit offset.
    pub const MAX_OFFSET: u64 = i64::MAX as u64;
    /// Regions per noncontig access.
    pub const MAX_REGIONS: u64 = 1 << 20;
    /// Rate limits in operations per second: below the minimum a single gap would be longer
    /// than a run should last; above the maximum the gap is under a nanosecond, i.e. no limit.
    pub const MIN_RATE: f64 = 1e-3;
    pub const MAX_RATE: f64 = 1e9;
    /// Run time and ramp: a deadline past this is a typo, and far enough out overflows clocks.
    pub const MAX_DURATION: std::time::Duration = std::time::Duration::from_secs(366 * 24 * 3600);
    /// The normal distribution's spread, as a fraction of the region: far beyond 1 it is uniform
    /// in effect, and far enough it no longer has a finite width in slots.
    pub const MAX_SPREAD: f64 = 10.0;
    /// The zipf exponent: beyond this every access hits the hottest block anyway.
    pub const MAX_ZIPF_THETA: f64 = 100.0;
    /// Smallest request size with verification: the block header (48 bytes) and trailer (16).
    pub const MIN_VERIFY_BLOCK: u64 = 64;
    /// Characters in a job or agent name, which become part of file names (255 bytes at most).
    pub const MAX_NAME_CHARS: usize = 100;
    /// Phases of one job.
    pub const MAX_PHASES: u64 = 1024;
}
