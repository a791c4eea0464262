use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

/// The version with the commit it was built from.
pub const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), " (git ", env!("IOLENS_GIT_COMMIT"), ")");

/// Storage and I/O performance as the application sees it.
#[derive(Debug, Parser)]
#[command(name = "iolens", version = VERSION, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a workload: a job file, or one agent described by flags (replicated by --threads).
    Run(Box<RunArgs>),
    /// A short characterization of a directory's storage: a block-size sweep of random reads
    /// (4 KiB to 16 MiB), the saturation point of random reads and writes (up to 32 in flight),
    /// the three write modes, and b_eff_io with a short T; direct I/O where the file system
    /// takes it. One summary page; each part's full result as JSON in --results.
    Quick(QuickArgs),
    /// Block-size sweep (the iops program's experiment): IO/s, MiB/s, BPS and latency per size,
    /// with the knee of the IOPS curve and the size reaching 90% of peak bandwidth.
    Sweep(SweepArgs),
    /// Concurrency doubling until throughput stops growing: the saturation point.
    Saturate(SaturateArgs),
    /// Random writes measured naively, with the final fsync timed, and with O_DIRECT.
    WriteModes(WriteModesArgs),
    /// b_eff_io, the effective I/O bandwidth benchmark: five pattern types × write, rewrite, read.
    BeffIo(BeffIoArgs),
    /// b_eff, the effective bandwidth of the communication network (under `mpirun -np N`, N ≥ 2,
    /// and a build with `--features mpi`): ring and random patterns × 21 message sizes × 3 methods.
    Beff(BeffArgs),
    /// Full-factorial experiments with resume (`doe PLAN.toml`), and their ANOVA
    /// (`doe analyze DATA.csv`).
    Doe(DoeArgs),
    /// Which metrics track execution time on this machine: the BPS paper's four experiment sets.
    Validate(ValidateArgs),
    /// Pearson correlation of metric columns with execution time, normalized by expected direction.
    Correlate(CorrelateArgs),
    /// Device statistics like `iostat -x`, from /proc/diskstats, every interval.
    Monitor(MonitorArgs),
    /// Run an unmodified program and measure its real I/O (POSIX and stdio calls, through
    /// LD_PRELOAD; children, threads, fork and exec followed).
    Trace(TraceArgs),
    /// Summarize a trace: iolens traces and event streams, `strace -f -ttt -T` output, blkparse
    /// text, binary Darshan logs (`.darshan`, versions 3.0 to 3.5) or Darshan DXT text.
    Analyze(AnalyzeArgs),
    /// Print the TOML job equivalent to a fio job file (each key noting the fio line it came
    /// from); `iolens run JOB.fio` runs the same job directly.
    Convert(ConvertArgs),
    /// Compare results (`--json` of run, run --repeat, sweep, saturate) with the first one,
    /// figure by figure: ratios, better or worse, and whether a difference exceeds the noise of
    /// the repetitions (Welch's t-test). `--fail-if-slower 5%` exits with status 4 on a drop.
    Compare(CompareArgs),
    /// Draw results as one self-contained HTML page (inline SVG charts, no network fetches):
    /// `iolens report run.json sweep.json --html report.html`. Reads the --json of any command.
    Report(ReportArgs),
    /// Print a shell completion script: `iolens completions bash > /etc/bash_completion.d/iolens`.
    Completions(CompletionsArgs),
    /// Print a manual page (roff): `iolens man > iolens.1; man ./iolens.1` for iolens(1), `iolens
    /// man run` for iolens-run(1), one page per command; `--all DIR` writes every page there.
    Man(ManArgs),
    /// Remove what killed runs left behind: files and scratch directories the ownership
    /// registry lists for processes that no longer exist (each checked to be the very object
    /// recorded before removal). Every command that writes files does this quietly first.
    Clean(QuietOnly),
}

/// `-q` of a command that shows no progress and writes nothing on stderr but warnings and
/// errors: every command takes `-q`, so that scripts may give it to all.
#[derive(Debug, Args)]
pub struct QuietOnly {
    /// No progress line (this command shows none).
    #[arg(long = "quiet", short = 'q')]
    pub _quiet: bool,
}

/// Where results go and how a run may touch files.
#[derive(Debug, Args, Clone)]
pub struct OutputArgs {
    /// Write the results as JSON (atomically; valid JSON even when the run fails).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Write one CSV row per agent plus the aggregate.
    #[arg(long, value_name = "FILE")]
    pub csv: Option<PathBuf>,
    /// Keep the files iolens created (they are removed by default, also on Ctrl-C).
    #[arg(long)]
    pub keep: bool,
    /// No progress line.
    #[arg(long, short)]
    pub quiet: bool,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// A job file: TOML ([defaults] and [[agent]] tables) or fio's job format (`*.fio`, or any
    /// file that is not TOML). Flags below describe a single-agent job instead.
    #[arg(value_name = "JOB", conflicts_with_all = ["target", "job"])]
    pub job_file: Option<PathBuf>,
    /// The job file, as a flag (the same as the positional JOB).
    #[arg(long, short, value_name = "JOB.toml", conflicts_with_all = ["target"])]
    pub job: Option<PathBuf>,
    /// File, directory (iolens creates its files in it) or block device.
    #[arg(long, required_unless_present_any = ["job", "job_file"])]
    pub target: Option<PathBuf>,
    /// read, write, randread, randwrite, rw (sequential mix), randrw.
    #[arg(long, default_value = "randread")]
    pub rw: String,
    /// Request size, or a weighted list like 4k:70,64k:30.
    #[arg(long, default_value = "4k")]
    pub bs: String,
    /// Agents (threads) with these settings, each with its own file in a directory target.
    #[arg(long, default_value_t = 1)]
    pub threads: u32,
    /// Requests in flight per agent (io_uring).
    #[arg(long, default_value_t = 1)]
    pub qd: u32,
    /// sync (pread/pwrite), io_uring, or null (no I/O: measures iolens itself).
    #[arg(long, default_value = "sync")]
    pub engine: String,
    /// O_DIRECT: bypass the page cache.
    #[arg(long)]
    pub direct: bool,
    /// Region (file) size each agent addresses, e.g. 1g.
    #[arg(long)]
    pub size: Option<String>,
    /// Time-driven: run this long (after the ramp), e.g. 10s.
    #[arg(long)]
    pub time: Option<String>,
    /// Size-driven: stop after requesting this many bytes.
    #[arg(long)]
    pub bytes: Option<String>,
    /// Excluded from every metric, e.g. 2s.
    #[arg(long)]
    pub ramp: Option<String>,
    /// Operations per second per agent (0 = as fast as possible).
    #[arg(long)]
    pub rate: Option<f64>,
    /// Inter-arrival times with --rate: constant or poisson.
    #[arg(long)]
    pub arrival: Option<String>,
    /// none, end (timed inside the phase), or N (every N writes).
    #[arg(long)]
    pub fsync: Option<String>,
    /// Read percentage of a rw/randrw mix.
    #[arg(long)]
    pub read_pct: Option<u8>,
    /// Random offsets: uniform, normal, zipf.
    #[arg(long)]
    pub distribution: Option<String>,
    /// zipf exponent.
    #[arg(long)]
    pub zipf_theta: Option<f64>,
    /// normal: hot-spot centre as a fraction of the region.
    #[arg(long)]
    pub hot_spot: Option<f64>,
    /// normal: standard deviation as a fraction of the region.
    #[arg(long)]
    pub spread: Option<f64>,
    /// Strided pattern: distance between request starts.
    #[arg(long)]
    pub stride: Option<String>,
    /// `noncontig`: Hpio-style noncontiguous reads (with --regions, --region-size, --spacing).
    /// Other patterns follow from --rw and --stride.
    #[arg(long)]
    pub pattern: Option<String>,
    /// noncontig: regions per access.
    #[arg(long)]
    pub regions: Option<u64>,
    /// noncontig: bytes of each region.
    #[arg(long)]
    pub region_size: Option<String>,
    /// noncontig: bytes between regions.
    #[arg(long)]
    pub spacing: Option<String>,
    /// noncontig: data sieving — read spans covering several regions, keep the regions.
    #[arg(long)]
    pub sieve: bool,
    /// noncontig with --sieve: the sieve buffer (default 4m, as ROMIO).
    #[arg(long)]
    pub sieve_buffer: Option<String>,
    /// Random offsets without replacement: true visits every block once per pass in random
    /// order (fio's random map, IOR -z); false draws each offset independently. Default: true
    /// for uniform random writes, false otherwise.
    #[arg(long, value_name = "BOOL")]
    pub random_map: Option<bool>,
    /// BPS block unit (default 512).
    #[arg(long)]
    pub block_unit: Option<String>,
    #[arg(long)]
    pub seed: Option<u64>,
    /// Data verification: crc32c, xxh3 or pattern. Writes stamp each block with a header;
    /// reads check every block (exit code 3 on a mismatch). Filling and checking are outside
    /// latencies, busy time and BPS; IOPS and MiB/s, per wall second, include them (`cost_s`).
    #[arg(long, value_name = "KIND")]
    pub verify: Option<String>,
    /// With --verify on a write: read back and check every written block after the write phase.
    #[arg(long)]
    pub verify_after_write: bool,
    /// With --verify: the generation writes stamp (default: new each run) or reads expect
    /// (default: that of the first valid block read).
    #[arg(long, value_name = "N")]
    pub verify_generation: Option<u64>,
    /// Run the job N times: each metric as mean, standard deviation, 95% interval and CV, with
    /// every repetition's value kept in the JSON (and one CSV row per repetition).
    #[arg(long, default_value_t = 1)]
    pub repeat: u32,
    /// Warn when a metric's coefficient of variation over the repetitions exceeds this.
    #[arg(long, default_value_t = 0.10)]
    pub cv_warn: f64,
    /// Record every operation into this binary trace file.
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
    /// Per-interval figures (ops, bytes, IOPS, bandwidth, latency p50/p99/max) per agent and for
    /// the aggregate, every DUR (e.g. 1s, 250ms; at least 10ms): `series` in the JSON, and
    /// STEM-series.csv / STEM-series.parquet beside --csv / --parquet.
    #[arg(long, value_name = "DUR")]
    pub log_interval: Option<String>,
    /// Write the results as Parquet (zstd): one row per agent plus the aggregate, the JSON
    /// envelope in the file's metadata; STEM-series.parquet with --log-interval and
    /// STEM-ops.parquet (one row per operation) with --trace beside it.
    #[arg(long, value_name = "FILE")]
    pub parquet: Option<PathBuf>,
    /// Write this process's busy periods (16-byte records: start, end ns) to FILE, to merge
    /// busy time exactly across processes.
    #[arg(long, value_name = "FILE")]
    pub busy_log: Option<PathBuf>,
    /// Keep the pages of a file this run creates and lays out in the page cache (by default
    /// they are dropped after the layout, as fio's invalidate=1), e.g. to measure cached reads
    /// on purpose.
    #[arg(long, conflicts_with = "drop_cache")]
    pub keep_cache: bool,
    /// Drop the cached pages of targets that existed before the run (fdatasync, then
    /// POSIX_FADV_DONTNEED: advice, the data stays as it is), so reads start from the device.
    /// By default a file found is read as it is, cache included; the JSON's
    /// `targets[].cache_dropped` says what was done.
    #[arg(long)]
    pub drop_cache: bool,
    /// Allow writing to an existing file iolens did not create, or to an unmounted block device.
    #[arg(long)]
    pub allow_overwrite: bool,
    /// Run as an MPI program even when no MPI launcher is detected in the environment (needs a
    /// build with `--features mpi`). Under `mpirun`, MPI is used without this flag.
    #[arg(long)]
    pub mpi: bool,
    /// Under MPI: every rank's agents share one file (in a directory target:
    /// iolens-JOB-shared.dat) instead of each rank its own files. Each agent of each rank owns a
    /// share of --size bytes, as IOR's -b is per process: the file is ranks × agents × size.
    #[arg(long)]
    pub shared_file: bool,
    /// With --shared-file: segmented (each agent of each rank its contiguous segment) or
    /// strided (interleaved blocks of the request size).
    #[arg(long, default_value = "segmented", requires = "shared_file")]
    pub layout: String,
    /// Under MPI, as IOR's -C: agents that only read read what rank (rank + N) mod ranks wrote
    /// (its files, or its share of the shared file), so its data is not in this node's cache.
    #[arg(long, value_name = "N")]
    pub reorder_ranks: Option<usize>,
    #[command(flatten)]
    pub output: OutputArgs,
}

#[derive(Debug, Args)]
pub struct QuickArgs {
    /// Directory to test in; default: the current one. iolens works in a scratch subdirectory
    /// of its own and removes it afterwards.
    pub dir: Option<PathBuf>,
    /// Time of each measured point; every part scales with it (b_eff_io gets T = 30 × this).
    #[arg(long, default_value = "1s")]
    pub time: String,
    /// Size of the test files.
    #[arg(long, default_value = "256m")]
    pub size: String,
    /// Directory for the JSON of each part and report.html, all of them drawn on one page
    /// (default: iolens-results-<time> in the current one).
    #[arg(long, value_name = "DIR")]
    pub results: Option<PathBuf>,
    #[command(flatten)]
    pub output: OutputArgs,
}

#[derive(Debug, Args)]
pub struct MonitorArgs {
    /// Devices (e.g. sda, nvme0n1); default: every whole disk that has done I/O.
    pub devices: Vec<String>,
    /// Sampling interval.
    #[arg(long, default_value = "1s")]
    pub interval: String,
    /// Stop after this many intervals (default: until Ctrl-C).
    #[arg(long)]
    pub count: Option<u64>,
    /// Write every sample as JSON (atomically, also on Ctrl-C).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    #[command(flatten)]
    pub _quiet: QuietOnly,
}

/// Where a suite runs and what it may touch.
#[derive(Debug, Args, Clone)]
pub struct SuiteArgs {
    /// A directory (the suite makes its own file in it), a file, or a block device; or give it
    /// as --target, as `run` takes it.
    #[arg(value_name = "TARGET", required_unless_present = "target_flag", conflicts_with = "target_flag")]
    pub target: Option<PathBuf>,
    /// The target, as `run` takes it (the same as the positional TARGET).
    #[arg(long = "target", value_name = "TARGET")]
    pub target_flag: Option<PathBuf>,
    /// Duration of each point.
    #[arg(long, default_value = "2s")]
    pub time: String,
    /// Size of the file (region) the points address.
    #[arg(long, default_value = "1g")]
    pub size: String,
    /// Write the results as JSON.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Write one row per point as Parquet (zstd), the rest of the result in its metadata.
    #[arg(long, value_name = "FILE")]
    pub parquet: Option<PathBuf>,
    /// Keep the file the suite created.
    #[arg(long)]
    pub keep: bool,
    /// Allow writing to an existing file iolens did not create, or to an unmounted block device.
    #[arg(long)]
    pub allow_overwrite: bool,
    /// No progress line.
    #[arg(long, short)]
    pub quiet: bool,
}

#[derive(Debug, Args)]
pub struct SweepArgs {
    #[command(flatten)]
    pub suite: SuiteArgs,
    /// Thread counts, one curve each (comma-separated).
    #[arg(long, default_value = "32", value_delimiter = ',')]
    pub threads: Vec<u32>,
    #[arg(long, default_value = "randread")]
    pub rw: String,
    /// Use the page cache instead of O_DIRECT.
    #[arg(long)]
    pub buffered: bool,
    /// Smallest size (default: the device's logical sector, else 512).
    #[arg(long)]
    pub min_bs: Option<String>,
    #[arg(long, default_value = "16m")]
    pub max_bs: String,
    /// A point below this many IO/s ends its curve.
    #[arg(long, default_value_t = 1.0)]
    pub floor_iops: f64,
}

#[derive(Debug, Args)]
pub struct SaturateArgs {
    #[command(flatten)]
    pub suite: SuiteArgs,
    #[arg(long, default_value = "4k")]
    pub bs: String,
    /// Largest concurrency tried.
    #[arg(long, default_value_t = 256)]
    pub max_concurrency: u32,
    /// Concurrency through sync threads instead of io_uring requests in flight.
    #[arg(long)]
    pub threads: bool,
    /// Use the page cache instead of O_DIRECT.
    #[arg(long)]
    pub buffered: bool,
    /// Curves, comma-separated (randread, randwrite, read, write).
    #[arg(long, default_value = "randread,randwrite", value_delimiter = ',')]
    pub rw: Vec<String>,
    /// Cores of a compute node: also report how many such nodes, one request in flight per
    /// core, saturate the target (ceil(saturation concurrency / cores)).
    #[arg(long, value_name = "K")]
    pub cores_per_node: Option<u32>,
}

#[derive(Debug, Args)]
pub struct BeffIoArgs {
    /// A directory: b_eff_io makes (and removes) a directory of its own files in it.
    pub dir: PathBuf,
    /// Rank counts of the partitions (threads), e.g. 1,2,4; the value is the maximum over them.
    /// Default: the number of cores. Under mpirun, use --partitions.
    #[arg(long, value_delimiter = ',')]
    pub ranks: Vec<usize>,
    /// Under mpirun (a `--features mpi` build): the partitions' sizes in MPI processes, e.g.
    /// 1,2,4, each run on the first N ranks over MPI-IO; the value is the best. Default: all ranks.
    #[arg(long, value_delimiter = ',')]
    pub partitions: Vec<usize>,
    /// Under mpirun: an MPI-IO hint for every MPI_File_open, e.g. romio_cb_write=enable
    /// (repeatable; reported in the JSON).
    #[arg(long, value_name = "KEY=VALUE")]
    pub hint: Vec<String>,
    /// Scheduled time T of one partition (the paper's rule is at least 15m).
    #[arg(long, default_value = "15m")]
    pub time: String,
    /// Largest chunk (MPART); default max(2 MiB, memory / 128).
    #[arg(long)]
    pub mpart: Option<String>,
    /// Memory of the node for MPART and the coffee-cup figure; default MemTotal.
    #[arg(long)]
    pub memory: Option<String>,
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Write one row per pattern (of each partition) as Parquet (zstd), the rest of the result
    /// in its metadata.
    #[arg(long, value_name = "FILE")]
    pub parquet: Option<PathBuf>,
    #[arg(long, short)]
    pub quiet: bool,
}

#[derive(Debug, Args)]
pub struct BeffArgs {
    /// Memory per process for Lmax = min(128 MiB, memory / 128); default MemTotal divided by the
    /// ranks on this node.
    #[arg(long, value_name = "SIZE")]
    pub memory_per_process: Option<String>,
    /// Caps Lmax (the largest message), e.g. 1m: shorter runs, not the paper's b_eff.
    #[arg(long, value_name = "SIZE")]
    pub max_size: Option<String>,
    /// A short run for tests: Lmax = 64 KiB (same as --max-size 64k).
    #[arg(long)]
    pub quick: bool,
    /// Seed of the random patterns' permutations.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Write the result and the whole protocol (every measurement) as JSON.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    #[arg(long, short)]
    pub quiet: bool,
}

#[derive(Debug, Args)]
pub struct WriteModesArgs {
    /// A directory (each mode writes fresh files in a scratch directory of its own), or a file;
    /// or give it as --target, as `run` takes it.
    #[arg(value_name = "TARGET", required_unless_present = "target_flag", conflicts_with = "target_flag")]
    pub target: Option<PathBuf>,
    /// The target, as `run` takes it (the same as the positional TARGET).
    #[arg(long = "target", value_name = "TARGET")]
    pub target_flag: Option<PathBuf>,
    #[arg(long, default_value = "4k")]
    pub bs: String,
    /// Bytes each mode writes (over all threads). Default: 2 × the kernel's dirty-page limit
    /// (vm.dirty_bytes, or vm.dirty_ratio of MemAvailable), within the file system's free space.
    #[arg(long)]
    pub bytes: Option<String>,
    /// Writers per mode, each with its own file in a directory target.
    #[arg(long, default_value_t = 1)]
    pub threads: u32,
    /// Stop each mode after this long even if it has not written its bytes (reported).
    #[arg(long)]
    pub time: Option<String>,
    /// File size per thread. Default: the bytes each thread writes, so each block is written
    /// exactly once (random offsets without replacement).
    #[arg(long)]
    pub size: Option<String>,
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Write one row per mode as Parquet (zstd), the rest of the result in its metadata.
    #[arg(long, value_name = "FILE")]
    pub parquet: Option<PathBuf>,
    #[arg(long)]
    pub keep: bool,
    #[arg(long)]
    pub allow_overwrite: bool,
    #[arg(long, short)]
    pub quiet: bool,
}

/// What a trace summary shows and where its exports go.
#[derive(Debug, Args, Clone)]
pub struct SummaryArgs {
    /// Rows in the per-file table [default: 10]; 0 leaves the table out, and the per-file
    /// bookkeeping with it (faster on traces of many files).
    #[arg(long, value_name = "N")]
    pub top_files: Option<usize>,
    /// Operations in the slowest-operations list [default: 10].
    #[arg(long, value_name = "N")]
    pub slowest: Option<usize>,
    /// Deprecated: sets both --top-files and --slowest (and the per-process table's rows);
    /// an explicit --top-files or --slowest wins.
    #[arg(long, value_name = "N")]
    pub top: Option<usize>,
    /// BPS block unit.
    #[arg(long, default_value = "512")]
    pub block_unit: String,
    /// Write the summary as JSON (same aggregate keys as `run`).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Write one CSV row per traced operation.
    #[arg(long, value_name = "FILE")]
    pub csv: Option<PathBuf>,
    /// Write one Parquet row per traced operation (same columns as the CSV).
    #[arg(long, value_name = "FILE")]
    pub parquet: Option<PathBuf>,
    /// Write a job file reproducing the load profile (sizes, mix, sequentiality, concurrency, rate).
    #[arg(long, value_name = "JOB.toml")]
    pub emit_workload: Option<PathBuf>,
    /// Target written into the emitted job file.
    #[arg(long, default_value = "/tmp/iolens-replay")]
    pub workload_target: String,
    /// Count only the processes running this executable (its file name, e.g. `ior`; repeat for
    /// more); wall time is then theirs, from the first one's start to the last one's end.
    #[arg(long, value_name = "NAME")]
    pub only_exe: Vec<String>,
    /// Count only files whose path matches this regular expression (repeat: any of them), as
    /// Darshan's NAME_INCLUDE; what is left out is counted in the summary.
    #[arg(long, value_name = "REGEX")]
    pub include: Vec<String>,
    /// Leave out files whose path matches this regular expression (repeat: any of them), as
    /// Darshan's NAME_EXCLUDE; it wins over --include.
    #[arg(long, value_name = "REGEX")]
    pub exclude: Vec<String>,
    /// No progress line.
    #[arg(long, short)]
    pub quiet: bool,
}

#[derive(Debug, Args)]
pub struct TraceArgs {
    /// Keep the per-process event streams in this directory (default: a temporary one, removed).
    #[arg(long)]
    pub out: Option<PathBuf>,
    #[command(flatten)]
    pub summary: SummaryArgs,
    /// The program and its arguments.
    #[arg(last = true, required = true, value_name = "CMD")]
    pub command: Vec<String>,
}

#[derive(Debug, Args)]
pub struct AnalyzeArgs {
    /// A trace file (or a directory of iolens event streams).
    pub trace: PathBuf,
    /// auto, iolens, events, strace, blkparse, dxt (Darshan DXT text), darshan (binary `*.darshan` logs).
    #[arg(long, default_value = "auto")]
    pub format: String,
    /// Stop at the first malformed line instead of skipping it.
    #[arg(long)]
    pub strict: bool,
    #[command(flatten)]
    pub summary: SummaryArgs,
}

#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct DoeArgs {
    #[command(subcommand)]
    pub action: Option<DoeCommand>,
    /// The plan: a job file with a [doe] table (factors, replicates, response, seed).
    pub plan: Option<PathBuf>,
    /// The study's CSV (one row per finished run; re-running resumes it). Default: PLAN.csv.
    #[arg(long, value_name = "DATA.csv")]
    pub out: Option<PathBuf>,
    #[arg(long)]
    pub allow_overwrite: bool,
    #[arg(long, short)]
    pub quiet: bool,
}

#[derive(Debug, Subcommand)]
pub enum DoeCommand {
    /// Fixed-effects ANOVA (Type II) of a study's CSV, parsimony, diagnostics, recommendations.
    Analyze(DoeAnalyzeArgs),
}

#[derive(Debug, Args)]
pub struct DoeAnalyzeArgs {
    pub data: PathBuf,
    /// The response column (e.g. bw_bytes_s).
    #[arg(long)]
    pub response: String,
    /// The factor columns.
    #[arg(long, value_delimiter = ',', required = true)]
    pub factors: Vec<String>,
    /// Analyse the natural log of the response.
    #[arg(long)]
    pub log: bool,
    /// Highest order of interactions in the model (1 = main effects only).
    #[arg(long, default_value_t = 2)]
    pub interactions: usize,
    /// Keep every interaction (no parsimony).
    #[arg(long)]
    pub full: bool,
    /// Significance level.
    #[arg(long, default_value_t = 0.05)]
    pub alpha: f64,
    /// max or min: whether a larger response is better (default from the response's name).
    #[arg(long)]
    pub goal: Option<String>,
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    #[command(flatten)]
    pub _quiet: QuietOnly,
}

#[derive(Debug, Args)]
pub struct CorrelateArgs {
    pub data: PathBuf,
    /// The execution-time column.
    #[arg(long)]
    pub time: String,
    /// Metric columns (default: those with a built-in direction: iops, bw, arpt, bps).
    #[arg(long, value_delimiter = ',')]
    pub metrics: Vec<String>,
    /// Expected direction of a metric's correlation with time, e.g. --expect cache_hits:neg.
    #[arg(long)]
    pub expect: Vec<String>,
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    #[command(flatten)]
    pub _quiet: QuietOnly,
}

#[derive(Debug, Args)]
pub struct ValidateArgs {
    /// A directory on the storage to test (a scratch directory of iolens's own is made in it).
    pub dir: PathBuf,
    /// An extra storage target for set 1 (a directory or a file).
    #[arg(long)]
    pub target: Option<PathBuf>,
    /// Bytes the application reads in each run.
    #[arg(long, default_value = "64m")]
    pub volume: String,
    /// Repetitions of every configuration (run in a shuffled order).
    #[arg(long, default_value_t = 3)]
    pub repeat: u32,
    /// Experiment sets to run: 1 storage, 2 request size, 3 concurrency, 4 data sieving.
    #[arg(long, value_delimiter = ',', default_value = "1,2,3,4")]
    pub sets: Vec<u8>,
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Write one row per run (of each set) as Parquet (zstd), the rest of the result in its
    /// metadata.
    #[arg(long, value_name = "FILE")]
    pub parquet: Option<PathBuf>,
    #[arg(long)]
    pub keep: bool,
    #[arg(long, short)]
    pub quiet: bool,
}

#[derive(Debug, Args)]
pub struct ConvertArgs {
    /// The fio job file.
    #[arg(value_name = "JOB.fio")]
    pub job: PathBuf,
    #[command(flatten)]
    pub _quiet: QuietOnly,
}

#[derive(Debug, Args)]
pub struct CompareArgs {
    /// The baseline result, then the results to compare with it.
    #[arg(value_name = "RESULT.json", num_args = 2.., required = true)]
    pub files: Vec<PathBuf>,
    /// Exit with status 4 when a throughput figure (IOPS, bandwidth, BPS) drops more than this
    /// below the baseline — significantly, when both results carry repetitions. E.g. 5%.
    #[arg(long, value_name = "PERCENT")]
    pub fail_if_slower: Option<String>,
    /// p-value under which Welch's t-test calls a difference significant.
    #[arg(long, default_value_t = 0.05)]
    pub alpha: f64,
    /// Write the comparison as JSON.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    #[command(flatten)]
    pub _quiet: QuietOnly,
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Results (`--json` files of run, sweep, saturate, write-modes, beff-io, beff, validate,
    /// correlate, doe analyze, trace, analyze, quick, compare, monitor); one section each.
    #[arg(value_name = "RESULT.json", required = true)]
    pub files: Vec<PathBuf>,
    /// The HTML page to write (`-` for stdout).
    #[arg(long, value_name = "OUT.html", required = true)]
    pub html: PathBuf,
    #[command(flatten)]
    pub _quiet: QuietOnly,
}

#[derive(Debug, Args)]
pub struct ManArgs {
    /// The command whose page to print (`run`, `trace`, ...); iolens(1) without one.
    pub command: Option<String>,
    /// Write every page (iolens.1 and iolens-COMMAND.1 for each command) into this directory.
    #[arg(long, value_name = "DIR", conflicts_with = "command")]
    pub all: Option<std::path::PathBuf>,
    /// No progress line (this command shows none).
    #[arg(long = "quiet", short = 'q')]
    pub _quiet: bool,
}

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// bash, zsh, fish, elvish or powershell.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
    #[command(flatten)]
    pub _quiet: QuietOnly,
}

/// Flags whose value is a size or a duration: a number with its unit attached.
const UNIT_FLAGS: [&str; 19] = [
    "--time",
    "--ramp",
    "--bs",
    "--size",
    "--bytes",
    "--stride",
    "--region-size",
    "--spacing",
    "--sieve-buffer",
    "--block-unit",
    "--log-interval",
    "--interval",
    "--min-bs",
    "--max-bs",
    "--mpart",
    "--memory",
    "--volume",
    "--memory-per-process",
    "--max-size",
];

/// `--time 200 ms` and its like, refused with a message naming the word and the flag (see
/// [`iolens_workload::unit_apart_from_its_number`]).
pub fn unit_apart_from_its_number(argv: &[std::ffi::OsString]) -> Option<String> {
    iolens_workload::unit_apart_from_its_number(argv, &UNIT_FLAGS)
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    /// Every command and subcommand, by its path ("doe analyze").
    fn commands(cmd: &clap::Command, path: &str, out: &mut Vec<(String, clap::Command)>) {
        for sub in cmd.get_subcommands() {
            let here = format!("{path} {}", sub.get_name()).trim().to_string();
            out.push((here.clone(), sub.clone()));
            commands(sub, &here, out);
        }
    }

    #[test]
    fn every_command_takes_quiet() {
        // Clap's own checks first: a second `-q` in a command would be refused here.
        super::Cli::command().debug_assert();
        let mut all = Vec::new();
        commands(&super::Cli::command(), "", &mut all);
        assert!(all.len() > 15, "{} commands", all.len());
        let missing: Vec<&str> = all
            .iter()
            .filter(|(_, cmd)| {
                !cmd.get_arguments().any(|a| a.get_short() == Some('q') && a.get_long() == Some("quiet"))
            })
            .map(|(path, _)| path.as_str())
            .collect();
        assert!(missing.is_empty(), "commands without -q/--quiet: {missing:?}");
    }
}
