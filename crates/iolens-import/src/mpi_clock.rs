//! The clock file an MPI rank's preload leaves beside its event stream (`<pid>.<start>.mpi`
//! beside `<pid>.<start>.evt`): its rank, and how far its clock was from rank 0's when
//! measured (by ping-pong) after `MPI_Init` and before `MPI_Finalize`:
//!
//! ```text
//! rank 3 size 4
//! boot <the kernel's boot id>:<the time namespace's inode>
//! init <local ns> <offset ns>
//! finalize <local ns> <offset ns>
//! ```
//!
//! The `boot` line names the kernel and the time namespace (`<boot id>:<namespace inode>`; the
//! boot id alone from a kernel without time namespaces). Ranks with rank 0's (the same kernel and
//! time namespace) read the very same `CLOCK_MONOTONIC`: their offsets are exactly zero, whatever the ping-pong's noise says (on an
//! oversubscribed node a round trip takes milliseconds). Others: rank 0's time = local time +
//! offset (the measurements are made only when every rank is
//! traced, `IOLENS_MPI_CLOCK=1`; without them the file has its first line only). Between the two measurements the offset is
//! interpolated (clocks drift apart linearly over a job), outside them extrapolated; with one
//! measurement it is constant, and with none (a job of one rank) zero. That line is
//! [`OffsetLine`], the one `iolens-mpi` moves ranks' times to rank 0's clock with as well.

use std::io::Read;
use std::path::Path;

use iolens_record::clock_offset::OffsetLine;

use crate::ImportError;

/// A clock file is a few lines: anything longer is not one.
const MAX_CLOCK_FILE: u64 = 4096;

/// One rank's place in the job and its clock's offsets from rank 0's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RankClock {
    pub rank: u32,
    pub size: u32,
    /// The kernel's boot id where the rank ran (`/proc/sys/kernel/random/boot_id`).
    pub boot: Option<String>,
    /// (local time, offset) of the `init` and `finalize` measurements, in that order.
    points: Vec<(u64, i64)>,
}

impl RankClock {
    /// Reads a clock file's text; the error names the line (1-based) and what is wrong.
    pub fn parse(text: &str) -> Result<RankClock, (u64, String)> {
        let mut lines = text.lines().enumerate().map(|(i, l)| (i as u64 + 1, l.trim()));
        let (first_no, first) = lines.next().ok_or((1, "empty: expected `rank R size N`".to_string()))?;
        let words: Vec<&str> = first.split_whitespace().collect();
        let (rank, size) = match words[..] {
            ["rank", rank, "size", size] => (
                rank.parse::<u32>().map_err(|_| (first_no, format!("rank `{rank}` is not a number")))?,
                size.parse::<u32>().map_err(|_| (first_no, format!("size `{size}` is not a number")))?,
            ),
            _ => return Err((first_no, format!("expected `rank R size N`, found `{first}`"))),
        };
        if rank >= size {
            return Err((first_no, format!("rank {rank} is not below the job size {size}")));
        }
        let (mut init, mut finalize, mut boot) = (None, None, None);
        for (no, line) in lines.filter(|(_, l)| !l.is_empty()) {
            let words: Vec<&str> = line.split_whitespace().collect();
            if let ["boot", id] = words[..] {
                if boot.replace(id.to_string()).is_some() {
                    return Err((no, "`boot` given twice".to_string()));
                }
                continue;
            }
            let [key, at, offset] = words[..] else {
                return Err((no, format!("expected `init|finalize <local ns> <offset ns>`, found `{line}`")));
            };
            let slot = match key {
                "init" => &mut init,
                "finalize" => &mut finalize,
                other => {
                    return Err((
                        no,
                        format!("unknown key `{other}` (hint: the keys are `boot`, `init` and `finalize`)"),
                    ))
                }
            };
            if slot.is_some() {
                return Err((no, format!("`{key}` given twice")));
            }
            let at = at.parse::<u64>().map_err(|_| (no, format!("{key}: time `{at}` is not a number")))?;
            let offset = offset
                .parse::<i64>()
                .map_err(|_| (no, format!("{key}: offset `{offset}` is not a number")))?;
            *slot = Some((at, offset));
        }
        Ok(RankClock { rank, size, boot, points: init.into_iter().chain(finalize).collect() })
    }

    /// This rank ran under the same kernel as rank 0, whose boot id is `rank0_boot`: it read the
    /// same clock, so its measured offsets are noise and are dropped.
    pub fn align_with(&mut self, rank0_boot: Option<&str>) {
        if self.boot.is_some() && self.boot.as_deref() == rank0_boot {
            self.points.clear();
        }
    }

    /// The offset from rank 0's clock over local time: the line through the measurements.
    fn line(&self) -> OffsetLine {
        OffsetLine::through_all(&self.points)
    }

    /// The offset from rank 0's clock at local time `t`, in ns.
    pub fn offset_at(&self, t: u64) -> i64 {
        self.line().offset_at(t)
    }

    /// Local time `t` on rank 0's clock.
    pub fn to_rank0(&self, t: u64) -> u64 {
        self.line().to_reference(t)
    }

    /// Whether the clock was measured at all (`IOLENS_MPI_CLOCK=1` in the traced job).
    pub fn measured(&self) -> bool {
        !self.points.is_empty()
    }

    /// The largest offset measured, in absolute value.
    pub fn largest_offset(&self) -> u64 {
        self.points.iter().map(|(_, o)| o.unsigned_abs()).max().unwrap_or(0)
    }
}

/// The clock file beside the stream `stream`, if there is one.
pub(crate) fn read_beside(stream: &Path) -> Result<Option<RankClock>, ImportError> {
    let path = stream.with_extension("mpi");
    let file = match std::fs::File::open(&path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => return Err(ImportError::Io { path, source }),
    };
    let mut text = String::new();
    let mut bytes = Vec::new();
    file.take(MAX_CLOCK_FILE + 1)
        .read_to_end(&mut bytes)
        .map_err(|source| ImportError::Io { path: path.clone(), source })?;
    if bytes.len() as u64 > MAX_CLOCK_FILE {
        return Err(ImportError::Format {
            path,
            message: format!(
                "an MPI clock file of more than {MAX_CLOCK_FILE} bytes: not one the tracer wrote"
            ),
        });
    }
    text.push_str(&String::from_utf8_lossy(&bytes));
    RankClock::parse(&text).map(Some).map_err(|(line, message)| ImportError::Malformed {
        path,
        line,
        message,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_are_interpolated_between_the_measurements() {
        let c = RankClock::parse("rank 2 size 4\ninit 1000 500\nfinalize 3000 -500\n").unwrap();
        assert_eq!((c.rank, c.size), (2, 4));
        assert_eq!(c.offset_at(1000), 500);
        assert_eq!(c.offset_at(2000), 0);
        assert_eq!(c.offset_at(3000), -500);
        assert_eq!(c.offset_at(4000), -1000, "extrapolated after finalize");
        assert_eq!(c.to_rank0(1000), 1500);
        assert_eq!(c.to_rank0(3000), 2500);
        assert_eq!(c.largest_offset(), 500);
    }

    #[test]
    fn one_measurement_is_a_constant_offset_and_none_is_zero() {
        let c = RankClock::parse("rank 1 size 2\ninit 10 -7\n").unwrap();
        assert_eq!(c.to_rank0(1_000_000), 999_993);
        assert_eq!(c.to_rank0(3), 0, "clamped at zero");
        let c = RankClock::parse("rank 0 size 1\n").unwrap();
        assert_eq!(c.to_rank0(42), 42);
    }

    #[test]
    fn a_rank_on_rank_0s_kernel_keeps_its_clock() {
        let text = "rank 1 size 2\nboot 7c1e\ninit 10 -7000\nfinalize 20 9000\n";
        let mut same = RankClock::parse(text).unwrap();
        same.align_with(Some("7c1e"));
        assert_eq!((same.to_rank0(15), same.measured()), (15, false));
        let mut other = RankClock::parse(text).unwrap();
        other.align_with(Some("another"));
        assert_eq!(other.to_rank0(20), 9020, "another node: the measurement stands");
        assert_eq!(RankClock::parse("rank 1 size 2\nboot a\nboot b\n").unwrap_err().0, 3);
    }

    /// Issue 25, defect 1: a node in a time namespace of its own (a container, a simulated
    /// cluster) runs under rank 0's kernel but not on its clock: the measurement stands.
    #[test]
    fn a_rank_in_another_time_namespace_keeps_its_measured_offset() {
        let text = "rank 1 size 2\nboot 7c1e:4026532300\ninit 10 1000000000000\nfinalize 20 1000000000000\n";
        let mut other_clock = RankClock::parse(text).unwrap();
        other_clock.align_with(Some("7c1e:4026531834"));
        assert!(other_clock.measured());
        assert_eq!(other_clock.to_rank0(15), 1_000_000_000_015);
        let mut same_clock = RankClock::parse(text).unwrap();
        same_clock.align_with(Some("7c1e:4026532300"));
        assert_eq!(same_clock.to_rank0(15), 15, "same kernel and time namespace: the very same clock");
    }

    #[test]
    fn hostile_numbers_saturate() {
        let c = RankClock::parse(&format!("rank 1 size 2\ninit 0 {}\nfinalize 1 {}\n", i64::MIN, i64::MAX))
            .unwrap();
        assert_eq!(c.to_rank0(u64::MAX), u64::MAX);
        assert_eq!(c.to_rank0(0), 0);
        let same_time = RankClock::parse("rank 1 size 2\ninit 5 3\nfinalize 5 9\n").unwrap();
        assert_eq!(same_time.offset_at(100), 3);
    }

    #[test]
    fn errors_name_the_line_and_the_key() {
        let err = |text: &str| RankClock::parse(text).unwrap_err();
        assert_eq!(err(""), (1, "empty: expected `rank R size N`".into()));
        assert_eq!(err("rank 4 size 4\n").1, "rank 4 is not below the job size 4");
        assert_eq!(err("rank x size 4\n").1, "rank `x` is not a number");
        assert_eq!(
            err("rank 0 size 2\ninit 1 2\nstart 1 2\n"),
            (3, "unknown key `start` (hint: the keys are `boot`, `init` and `finalize`)".into())
        );
        assert_eq!(err("rank 0 size 2\ninit 1 2\ninit 1 2\n"), (3, "`init` given twice".into()));
        assert_eq!(err("rank 0 size 2\nfinalize 1 -\n"), (2, "finalize: offset `-` is not a number".into()));
        assert_eq!(err("rank 0 size 2\ninit 1\n").0, 2);
    }

    #[test]
    fn a_long_file_is_refused_before_it_is_read_whole() {
        let dir = tempfile::tempdir().unwrap();
        let stream = dir.path().join("1.2.evt");
        std::fs::write(dir.path().join("1.2.mpi"), "rank 0 size 1\n".repeat(1000)).unwrap();
        let err = read_beside(&stream).unwrap_err().to_string();
        assert!(err.contains("1.2.mpi") && err.contains("more than 4096 bytes"), "{err}");
        assert_eq!(read_beside(&dir.path().join("9.9.evt")).unwrap(), None);
    }
}
