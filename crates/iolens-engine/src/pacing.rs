//! Issue times of a rate-limited agent: constant gaps or a Poisson process.

use iolens_workload::{Arrival, Rate};
use rand::rngs::SmallRng;
use rand_distr::{Distribution, Exp};

/// When the next request is due. Late requests are issued at once, without bursts to catch up
/// on a whole backlog: a schedule that falls more than one gap behind restarts from now.
pub struct Pacer {
    gap_ns: f64,
    exp: Option<Exp<f64>>,
    next_due: u64,
}

impl Pacer {
    /// `None` when the agent runs as fast as possible.
    pub fn new(rate: &Rate, start_ns: u64) -> Option<Pacer> {
        if rate.ops_per_s <= 0.0 {
            return None;
        }
        let gap_ns = 1e9 / rate.ops_per_s;
        let exp = match rate.arrival {
            Arrival::Constant => None,
            Arrival::Poisson => Some(Exp::new(1.0 / gap_ns).expect("positive rate")),
        };
        Some(Pacer { gap_ns, exp, next_due: start_ns })
    }

    pub fn due(&self) -> u64 {
        self.next_due
    }

    /// Marks the current request as issued at `now` and schedules the next one.
    pub fn issued(&mut self, now: u64, rng: &mut SmallRng) {
        let gap = match &self.exp {
            Some(exp) => exp.sample(rng),
            None => self.gap_ns,
        };
        let base = if now > self.next_due + self.gap_ns as u64 { now } else { self.next_due };
        self.next_due = base + gap as u64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::offsets::agent_rng;

    #[test]
    fn constant_rate_schedule() {
        let mut p = Pacer::new(&Rate { ops_per_s: 1000.0, arrival: Arrival::Constant }, 0).unwrap();
        let mut rng = agent_rng(1);
        let mut dues = vec![];
        for _ in 0..4 {
            let d = p.due();
            dues.push(d);
            p.issued(d, &mut rng);
        }
        assert_eq!(dues, vec![0, 1_000_000, 2_000_000, 3_000_000]);
    }

    #[test]
    fn poisson_mean_gap() {
        let mut p = Pacer::new(&Rate { ops_per_s: 1000.0, arrival: Arrival::Poisson }, 0).unwrap();
        let mut rng = agent_rng(2);
        for _ in 0..100_000 {
            let d = p.due();
            p.issued(d, &mut rng);
        }
        let mean_gap = p.due() as f64 / 100_000.0;
        assert!((mean_gap - 1e6).abs() < 2e4, "{mean_gap}");
    }

    #[test]
    fn unlimited_has_no_pacer() {
        assert!(Pacer::new(&Rate::UNLIMITED, 0).is_none());
    }

    #[test]
    fn falling_behind_does_not_burst() {
        let mut p = Pacer::new(&Rate { ops_per_s: 1000.0, arrival: Arrival::Constant }, 0).unwrap();
        let mut rng = agent_rng(1);
        p.issued(50_000_000, &mut rng); // 50 ms late
        assert_eq!(p.due(), 51_000_000);
    }
}
