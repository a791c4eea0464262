//! What the engine derives from a parsed job before any I/O, exercised on every job a target
//! accepts: a job the parser lets through must never panic there.

use iolens_engine::offsets::{MixPicker, OffsetGen, SizePicker};
use iolens_engine::pacing::Pacer;
use iolens_engine::target::agent_file_in_dir;
use iolens_workload::{Job, Pattern, SizeSpec, DEFAULT_REGION_SIZE};
use rand::rngs::SmallRng;
use rand::SeedableRng;

pub fn exercise(job: &Job) {
    assert!(!job.agents.is_empty() && job.agents.len() <= iolens_workload::limits::MAX_AGENTS);
    for a in &job.agents {
        // The engine names each agent's thread after it, and its file in a directory target.
        assert!(std::ffi::CString::new(format!("agent-{}", a.name)).is_ok(), "{:?}", a.name);
        let file = agent_file_in_dir(&a.target, &job.name, &a.name);
        assert!(file.file_name().is_some_and(|f| f.len() < 256), "{file:?}");
        let mut rng = SmallRng::seed_from_u64(a.seed);
        let sizes = SizePicker::new(&a.sizes);
        let mix = MixPicker::new(a.op);
        let region = a.region_size.unwrap_or(DEFAULT_REGION_SIZE).max(a.sizes.max());
        let align = match &a.sizes {
            SizeSpec::Fixed(s) => *s,
            SizeSpec::Weighted(_) => a.sizes.min(),
        };
        let mut offsets = OffsetGen::new(&a.pattern, region, align, a.sizes.max(), a.random_map, &mut rng);
        for _ in 0..8 {
            let len = sizes.pick(&mut rng);
            let _ = mix.is_read(&mut rng);
            let at = offsets.next(len, &mut rng);
            assert!(at.checked_add(len).is_some_and(|end| end <= i64::MAX as u64), "{at} + {len}");
        }
        if let Pattern::Noncontiguous(n) = a.pattern {
            assert!(n.checked_span().is_some_and(|s| s <= i64::MAX as u64));
            assert!(n.max_call() <= u32::MAX as u64);
        }
        if let Some(mut pacer) = Pacer::new(&a.rate, 0) {
            let mut now = 0u64;
            for _ in 0..8 {
                pacer.issued(now, &mut rng);
                now = pacer.due();
            }
        }
        let depth = u64::from(a.queue_depth.max(1));
        assert!(a.sizes.max().checked_mul(depth).is_some_and(|b| b <= iolens_workload::limits::MAX_BUFFER_BYTES));
    }
}
