//! The offset between two machines' clocks, as NTP and Cristian's algorithm estimate it: the one
//! estimator of iolens, used by `mpirun … iolens run` (between ranks, `iolens-mpi`) and by the
//! preload inside a traced MPI job (its clock files, read back by the importer).
//!
//! One side sends a ping at `sent` (its clock), the other answers with its clock reading
//! `remote`, the answer arrives at `received`. If the reply was read halfway through the round
//! trip, the other clock is ahead by `remote − (sent + received) / 2`; the reading lies somewhere
//! inside the round trip, so the estimate is wrong by at most half of it. Of many rounds the one
//! with the smallest round trip is kept: it had the least queueing, so its midpoint assumption is
//! the tightest. Nothing here allocates: the preload calls it inside someone else's program.

/// One ping-pong round: this side's send and receive times, and the other side's reading.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PingSample {
    pub sent: u64,
    pub remote: u64,
    pub received: u64,
}

impl PingSample {
    /// The round trip.
    pub fn rtt(&self) -> u64 {
        self.received.saturating_sub(self.sent)
    }

    /// This side's time at the middle of the round trip.
    pub fn midpoint(&self) -> u64 {
        ((self.sent as u128 + self.received as u128) / 2) as u64
    }

    /// The other clock minus this one, assuming the reading was taken mid-round-trip.
    pub fn offset(&self) -> i64 {
        let mid = (self.sent as i128 + self.received as i128) / 2;
        (self.remote as i128 - mid) as i64
    }
}

/// The sample with the smallest round trip (the first of equals); `None` without samples.
pub fn best_sample(samples: &[PingSample]) -> Option<&PingSample> {
    samples.iter().min_by_key(|s| s.rtt())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shortest_round_trip_wins_and_its_midpoint_gives_the_offset() {
        let skew = 5_000_000u64;
        let samples = [
            PingSample { sent: 1_000, remote: 1_000 + 30_000 + skew, received: 41_000 },
            PingSample { sent: 100_000, remote: 100_000 + 5_000 + skew, received: 110_000 },
            PingSample { sent: 200_000, remote: 200_000 + 10_000 + skew, received: 290_000 },
        ];
        let best = best_sample(&samples).unwrap();
        assert_eq!((best.rtt(), best.midpoint(), best.offset()), (10_000, 105_000, skew as i64));
        assert_eq!(best_sample(&[]), None);
        // Odd ends: the midpoint is exact, not the sum of two halves rounded down.
        let odd = PingSample { sent: 1, remote: 10, received: 3 };
        assert_eq!((odd.midpoint(), odd.offset()), (2, 8));
        let huge = PingSample { sent: u64::MAX - 1, remote: 0, received: u64::MAX };
        assert_eq!(huge.midpoint(), u64::MAX - 1);
    }
}
