//! Where a process's agents do their I/O when several processes (MPI ranks) run one job.
//!
//! File per process (the default): every rank's agents get their own files in a directory
//! target, named with the rank. One shared file (`shared_file`): every agent of every rank is a
//! *participant* with index `rank × agents + agent`, addressing its own share of the file:
//! - segmented: participant `p` owns the contiguous segment `[p × R, (p + 1) × R)`, where `R` is
//!   the agent's own region (`size`), as IOR's `-s 1 -b R` is per process: the file holds
//!   `P × R` bytes for `P` participants;
//! - strided: the file is a sequence of blocks of the request size; participant `p` owns blocks
//!   `p, p + P, p + 2P, …` (IOR's interleaved `-t` transfers).
//!
//! Agents generate offsets in `[0, R)` as always; an [`OffsetMap`] moves each into the file.
//!
//! `reorder` (IOR's `-C`): an agent that only reads addresses the data of the rank `reorder`
//! further on — its files, or its participants' shares — so on a cluster it reads what another
//! node wrote, which this node's page cache does not hold.

/// How participants share one file.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Layout {
    #[default]
    Segmented,
    Strided,
}

impl Layout {
    pub fn parse(s: &str) -> Result<Layout, String> {
        match s {
            "segmented" => Ok(Layout::Segmented),
            "strided" => Ok(Layout::Strided),
            _ => {
                let near = iolens_workload::suggest(s, &["segmented", "strided"]);
                let near = near.map(|k| format!("did you mean {k}? ")).unwrap_or_default();
                Err(format!("unknown layout {s:?}: {near}give segmented or strided"))
            }
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Layout::Segmented => "segmented",
            Layout::Strided => "strided",
        }
    }
}

/// This process's place among the processes running one job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Placement {
    pub rank: usize,
    pub ranks: usize,
    /// All processes' agents use one file (else each process its own files).
    pub shared_file: bool,
    pub layout: Layout,
    /// Agents that only read use the data of rank `(rank + reorder) mod ranks` (0: their own).
    pub reorder: usize,
}

impl Placement {
    /// Participants of a shared file: every agent of every rank.
    pub fn participants(&self, agents: usize) -> u64 {
        (self.ranks.max(1) * agents.max(1)) as u64
    }

    /// The rank whose data an agent addresses: its own, or for an agent that only reads, the
    /// rank `reorder` further on.
    pub fn data_rank(&self, reads_only: bool) -> usize {
        if reads_only {
            (self.rank + self.reorder) % self.ranks.max(1)
        } else {
            self.rank
        }
    }

    /// Whether an agent addresses another rank's data.
    pub fn reordered(&self, reads_only: bool) -> bool {
        self.data_rank(reads_only) != self.rank
    }

    /// The participant index whose share this rank's `agent` addresses.
    pub fn participant(&self, agent: usize, agents: usize, reads_only: bool) -> u64 {
        (self.data_rank(reads_only) * agents.max(1) + agent) as u64
    }
}

/// Moves an agent's offsets (in `[0, region)`) into its share of a file. Plain arithmetic: it
/// runs once per request on the agent's hot path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OffsetMap {
    base: u64,
    /// Strided: the block size (0 = contiguous, offset + base).
    block: u64,
    participants: u64,
    index: u64,
}

impl OffsetMap {
    pub const IDENTITY: OffsetMap = OffsetMap { base: 0, block: 0, participants: 1, index: 0 };

    /// Participant `index` of `participants`, each addressing `region` bytes.
    pub fn segmented(index: u64, region: u64) -> OffsetMap {
        OffsetMap { base: index * region, block: 0, participants: 1, index: 0 }
    }

    /// Participant `index` of `participants`, owning every `participants`-th block of `block` bytes.
    pub fn strided(index: u64, participants: u64, block: u64) -> OffsetMap {
        OffsetMap { base: 0, block: block.max(1), participants: participants.max(1), index }
    }

    #[inline(always)]
    pub fn apply(&self, offset: u64) -> u64 {
        match offset.checked_div(self.block) {
            None => self.base + offset,
            Some(k) => (k * self.participants + self.index) * self.block + offset % self.block,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_misspelt_layout_gets_a_did_you_mean() {
        assert_eq!(Layout::parse("strided"), Ok(Layout::Strided));
        let e = Layout::parse("segmnted").unwrap_err();
        assert_eq!(e, "unknown layout \"segmnted\": did you mean segmented? give segmented or strided");
        assert_eq!(
            Layout::parse("zigzag").unwrap_err(),
            "unknown layout \"zigzag\": give segmented or strided"
        );
    }

    #[test]
    fn segments_are_contiguous_and_disjoint() {
        let region = 1 << 20;
        for p in 0..4u64 {
            let m = OffsetMap::segmented(p, region);
            assert_eq!(m.apply(0), p * region);
            assert_eq!(m.apply(region - 1), (p + 1) * region - 1);
        }
    }

    #[test]
    fn strided_blocks_interleave_and_cover_the_file_once() {
        let (block, parts, region) = (4096u64, 4u64, 4 * 4096u64);
        let mut seen = std::collections::BTreeSet::new();
        for p in 0..parts {
            let m = OffsetMap::strided(p, parts, block);
            assert_eq!(m.apply(0), p * block);
            assert_eq!(m.apply(block), (parts + p) * block, "the next block is a whole stride further");
            for k in 0..region / block {
                assert!(seen.insert(m.apply(k * block)));
            }
            assert_eq!(m.apply(100), p * block + 100);
        }
        let all: Vec<u64> = seen.into_iter().collect();
        let want: Vec<u64> = (0..parts * region / block).map(|k| k * block).collect();
        assert_eq!(all, want);
    }

    #[test]
    fn participants_number_agents_rank_major() {
        let p = Placement { rank: 2, ranks: 4, shared_file: true, layout: Layout::Strided, reorder: 0 };
        assert_eq!(p.participants(3), 12);
        assert_eq!(p.participant(1, 3, false), 7);
        assert_eq!(p.participant(1, 3, true), 7);
    }

    #[test]
    fn reordered_readers_address_the_data_of_the_rank_further_on() {
        let p = Placement { rank: 3, ranks: 4, shared_file: true, layout: Layout::Segmented, reorder: 1 };
        assert_eq!(p.data_rank(true), 0, "wraps around");
        assert_eq!(p.data_rank(false), 3, "writers keep their own");
        assert!(p.reordered(true) && !p.reordered(false));
        assert_eq!(p.participant(1, 3, true), 1);
        assert_eq!(p.participant(1, 3, false), 10);
        let whole_turn = Placement { reorder: 8, ..p };
        assert!(!whole_turn.reordered(true));
    }
}
