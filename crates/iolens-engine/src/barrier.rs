//! Phase barriers: every participant reaches a point before any goes on. A single process needs
//! none beyond its own threads; an MPI backend implements the same trait across ranks.

/// Separates phases of a run across all participating processes.
pub trait PhaseBarrier: Sync {
    /// Blocks until every participant called `wait` for the same `phase`.
    fn wait(&self, phase: &str);
    /// Number of participating processes.
    fn size(&self) -> usize {
        1
    }
    /// This process's index among them.
    fn rank(&self) -> usize {
        0
    }
    /// Replaces `values` on every participant with rank 0's (a broadcast); called by all
    /// participants at the same point. Alone, the values are already rank 0's.
    fn share(&self, _values: &mut [u64]) {}
    /// Tells the other participants that this one's phase ended with an error, so theirs end
    /// early too (their partial results stay valid). Called by the main thread.
    fn announce_failure(&self) {}
    /// Whether another participant announced a failure. Polled by the main thread while agents
    /// run (every progress tick, 100 ms), never by agents.
    fn peer_failed(&self) -> bool {
        false
    }
}

/// The barrier of a single process: there is no one else to wait for.
#[derive(Debug, Default, Clone, Copy)]
pub struct LocalBarrier;

impl PhaseBarrier for LocalBarrier {
    fn wait(&self, _phase: &str) {}
}
