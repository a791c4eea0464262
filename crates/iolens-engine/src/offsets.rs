//! Where requests land and how large they are: the agent's access pattern and size mix.

use iolens_workload::{Distribution, Noncontiguous, OpMix, Pattern, SizeSpec};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution as _, Normal, Zipf};

/// Picks request sizes: fixed, or weighted like fio's bssplit.
#[derive(Debug, Clone)]
pub struct SizePicker {
    sizes: Vec<u64>,
    /// Cumulative weights; empty for a fixed size.
    cumulative: Vec<u64>,
}

impl SizePicker {
    pub fn new(spec: &SizeSpec) -> SizePicker {
        match spec {
            SizeSpec::Fixed(s) => SizePicker { sizes: vec![*s], cumulative: vec![] },
            SizeSpec::Weighted(list) => {
                let mut total = 0;
                let cumulative = list
                    .iter()
                    .map(|(_, w)| {
                        total += *w as u64;
                        total
                    })
                    .collect();
                SizePicker { sizes: list.iter().map(|(s, _)| *s).collect(), cumulative }
            }
        }
    }

    #[inline]
    pub fn pick(&self, rng: &mut SmallRng) -> u64 {
        if self.cumulative.is_empty() {
            return self.sizes[0];
        }
        let total = *self.cumulative.last().unwrap();
        let x = rng.random_range(0..total.max(1));
        let i = self.cumulative.partition_point(|c| *c <= x);
        self.sizes[i.min(self.sizes.len() - 1)]
    }
}

/// Chooses read or write per request.
#[derive(Debug, Clone, Copy)]
pub struct MixPicker {
    read_pct: u8,
}

impl MixPicker {
    pub fn new(op: OpMix) -> MixPicker {
        MixPicker {
            read_pct: match op {
                OpMix::Read => 100,
                OpMix::Write => 0,
                OpMix::Mixed { read_pct } => read_pct,
            },
        }
    }

    #[inline]
    pub fn is_read(&self, rng: &mut SmallRng) -> bool {
        match self.read_pct {
            100 => true,
            0 => false,
            p => rng.random_range(0..100u8) < p,
        }
    }
}

enum Placement {
    Sequential {
        cursor: u64,
    },
    Strided {
        cursor: u64,
        stride: u64,
    },
    Uniform,
    /// Uniform without replacement: a permutation of the slots, renewed after each pass.
    Map(BlockPermutation),
    Normal(Normal<f64>),
    /// Zipf ranks scattered over the region by a bijection so hot blocks are not all adjacent.
    Zipf {
        zipf: Zipf<f64>,
        multiplier: u64,
    },
}

/// Generates request offsets inside `[0, region)`, aligned to `align`, so a request of up to
/// the largest size always fits.
pub struct OffsetGen {
    placement: Placement,
    region: u64,
    align: u64,
    /// Aligned start positions available for a request of the largest size.
    slots: u64,
}

/// splitmix64's finalizer: a cheap, well-mixing 64-bit hash.
#[inline]
fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A random permutation of `[0, n)` in O(1) memory, like fio's random map but without its
/// bitmap: a 4-round Feistel network over the smallest power of two with an even number of
/// bits that holds `n` (at most 4n values), with cycle-walking (a value ≥ n is permuted again
/// until it lands below n, which keeps it a bijection on `[0, n)`). The i-th value of a pass is
/// the permutation of i, so nothing is stored per block and nothing is allocated per call.
/// After a full pass the keys are drawn again: the next pass is a new permutation.
#[derive(Debug, Clone)]
pub struct BlockPermutation {
    n: u64,
    half_bits: u32,
    half_mask: u64,
    keys: [u64; 4],
    /// Position in the current pass.
    next: u64,
}

impl BlockPermutation {
    pub fn new(n: u64, rng: &mut SmallRng) -> BlockPermutation {
        let n = n.max(1);
        let bits = 64 - (n - 1).leading_zeros();
        let half_bits = bits.div_ceil(2).max(1);
        let half_mask = if half_bits >= 64 { u64::MAX } else { (1u64 << half_bits) - 1 };
        let mut p = BlockPermutation { n, half_bits, half_mask, keys: [0; 4], next: 0 };
        p.rekey(rng);
        p
    }

    fn rekey(&mut self, rng: &mut SmallRng) {
        for k in &mut self.keys {
            *k = rng.random();
        }
    }

    #[inline]
    fn feistel(&self, x: u64) -> u64 {
        let (mut l, mut r) = (x >> self.half_bits, x & self.half_mask);
        for k in self.keys {
            let f = mix64(r ^ k) & self.half_mask;
            (l, r) = (r, l ^ f);
        }
        (l << self.half_bits) | r
    }

    /// The value at position `i` (< n) of the current pass.
    #[inline]
    pub fn at(&self, i: u64) -> u64 {
        let mut x = self.feistel(i);
        while x >= self.n {
            x = self.feistel(x);
        }
        x
    }

    /// The next value; a new permutation starts after every `n` values.
    #[inline]
    pub fn next(&mut self, rng: &mut SmallRng) -> u64 {
        if self.next == self.n {
            self.rekey(rng);
            self.next = 0;
        }
        let v = self.at(self.next);
        self.next += 1;
        v
    }
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

impl OffsetGen {
    /// `random_map` draws uniform random offsets without replacement (see [`BlockPermutation`]);
    /// it is ignored for other patterns (the job parser only sets it for uniform ones). Its
    /// first permutation is keyed from `rng`, so the order follows the agent's seed.
    pub fn new(
        pattern: &Pattern,
        region: u64,
        align: u64,
        max_size: u64,
        random_map: bool,
        rng: &mut SmallRng,
    ) -> OffsetGen {
        let align = align.max(1);
        let slots = (region.saturating_sub(max_size) / align + 1).max(1);
        let placement = match pattern {
            // Noncontiguous accesses place their calls themselves (see `Calls`).
            Pattern::Sequential | Pattern::Noncontiguous(_) => Placement::Sequential { cursor: 0 },
            Pattern::Strided { stride } => Placement::Strided { cursor: 0, stride: *stride },
            Pattern::Random(Distribution::Uniform) if random_map => {
                Placement::Map(BlockPermutation::new(slots, rng))
            }
            Pattern::Random(Distribution::Uniform) => Placement::Uniform,
            Pattern::Random(Distribution::Normal { center, spread }) => {
                let slots_f = slots as f64;
                Placement::Normal(
                    Normal::new(center * slots_f, (spread * slots_f).max(1e-9)).expect("validated spread"),
                )
            }
            Pattern::Random(Distribution::Zipf { theta }) => {
                let mut multiplier = (0x9E37_79B9_7F4A_7C15 % slots.max(2)) | 1;
                while gcd(multiplier, slots) != 1 {
                    multiplier += 2;
                }
                Placement::Zipf {
                    zipf: Zipf::new(slots as f64, *theta).expect("validated theta"),
                    multiplier,
                }
            }
        };
        OffsetGen { placement, region, align, slots }
    }

    /// The offset of the next request of `len` bytes.
    #[inline]
    pub fn next(&mut self, len: u64, rng: &mut SmallRng) -> u64 {
        match &mut self.placement {
            Placement::Sequential { cursor } => {
                if *cursor + len > self.region {
                    *cursor = 0;
                }
                let at = *cursor;
                *cursor += len;
                at
            }
            Placement::Strided { cursor, stride } => {
                if *cursor + len > self.region {
                    *cursor = 0;
                }
                let at = *cursor;
                *cursor += *stride;
                at
            }
            Placement::Uniform => rng.random_range(0..self.slots) * self.align,
            Placement::Map(map) => map.next(rng) * self.align,
            Placement::Normal(normal) => {
                let slot = normal.sample(rng).round().clamp(0.0, (self.slots - 1) as f64) as u64;
                slot * self.align
            }
            Placement::Zipf { zipf, multiplier } => {
                let rank = zipf.sample(rng) as u64 - 1;
                ((rank as u128 * *multiplier as u128) % self.slots as u128) as u64 * self.align
            }
        }
    }
}

/// One call to the file system, and how many of its bytes the application wanted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Call {
    pub offset: u64,
    pub len: u64,
    pub app_bytes: u64,
}

/// The calls of noncontiguous accesses: one per region, or with data sieving one per span of
/// regions that fits the sieve buffer (the holes between them are read too, then dropped).
pub struct NoncontigCalls {
    access: Noncontiguous,
    region: u64,
    access_start: u64,
    next_region: u64,
}

impl NoncontigCalls {
    pub fn new(access: Noncontiguous, region: u64) -> NoncontigCalls {
        NoncontigCalls { access, region, access_start: 0, next_region: 0 }
    }

    fn region_offset(&self, i: u64) -> u64 {
        self.access_start + i * (self.access.region_size + self.access.spacing)
    }

    pub fn next_call(&mut self) -> Call {
        let a = self.access;
        let first = self.next_region;
        let offset = self.region_offset(first);
        let mut last = first;
        if let Some(buffer) = a.sieve_buffer {
            while last + 1 < a.regions && self.region_offset(last + 1) + a.region_size - offset <= buffer {
                last += 1;
            }
        }
        let len = self.region_offset(last) + a.region_size - offset;
        self.next_region = last + 1;
        if self.next_region == a.regions {
            self.next_region = 0;
            let stride = a.span() + a.spacing;
            self.access_start += stride;
            if self.access_start + a.span() > self.region {
                self.access_start = 0;
            }
        }
        Call { offset, len, app_bytes: (last - first + 1) * a.region_size }
    }
}

/// Every call an agent makes: sized and placed by its size mix and pattern, or by its
/// noncontiguous accesses.
pub enum Calls {
    Sized { sizes: SizePicker, offsets: OffsetGen },
    Noncontiguous(NoncontigCalls),
}

impl Calls {
    pub fn new(
        pattern: &Pattern,
        sizes: &SizeSpec,
        region: u64,
        align: u64,
        random_map: bool,
        rng: &mut SmallRng,
    ) -> Calls {
        match pattern {
            Pattern::Noncontiguous(n) => Calls::Noncontiguous(NoncontigCalls::new(*n, region)),
            _ => Calls::Sized {
                sizes: SizePicker::new(sizes),
                offsets: OffsetGen::new(pattern, region, align, sizes.max(), random_map, rng),
            },
        }
    }

    #[inline]
    pub fn next(&mut self, rng: &mut SmallRng) -> Call {
        match self {
            Calls::Sized { sizes, offsets } => {
                let len = sizes.pick(rng);
                Call { offset: offsets.next(len, rng), len, app_bytes: len }
            }
            Calls::Noncontiguous(n) => n.next_call(),
        }
    }
}

/// A fast, seedable generator for the agent's random streams.
pub fn agent_rng(seed: u64) -> SmallRng {
    SmallRng::seed_from_u64(seed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequential_wraps_and_stays_inside() {
        let mut rng = agent_rng(1);
        let mut g = OffsetGen::new(&Pattern::Sequential, 10 * 4096, 4096, 4096, false, &mut rng);
        let offs: Vec<u64> = (0..12).map(|_| g.next(4096, &mut rng)).collect();
        assert_eq!(&offs[..3], &[0, 4096, 8192]);
        assert_eq!(offs[10], 0, "wraps at the end of the region");
    }

    #[test]
    fn strided_steps_by_stride() {
        let mut rng = agent_rng(1);
        let mut g =
            OffsetGen::new(&Pattern::Strided { stride: 3 * 4096 }, 10 * 4096, 4096, 4096, false, &mut rng);
        let offs: Vec<u64> = (0..5).map(|_| g.next(4096, &mut rng)).collect();
        assert_eq!(offs, vec![0, 12288, 24576, 36864, 0]);
    }

    fn histogram(pattern: Pattern, n: usize) -> Vec<u64> {
        let mut rng = agent_rng(42);
        let mut g = OffsetGen::new(&pattern, 100 * 4096, 4096, 4096, false, &mut rng);
        let mut counts = vec![0u64; 100];
        for _ in 0..n {
            let off = g.next(4096, &mut rng);
            assert_eq!(off % 4096, 0);
            assert!(off + 4096 <= 100 * 4096);
            counts[(off / 4096) as usize] += 1;
        }
        counts
    }

    #[test]
    fn uniform_covers_region_evenly() {
        let c = histogram(Pattern::Random(Distribution::Uniform), 100_000);
        assert!(c.iter().all(|&x| (800..1200).contains(&x)), "{c:?}");
    }

    #[test]
    fn normal_concentrates_around_hot_spot() {
        let c = histogram(Pattern::Random(Distribution::Normal { center: 0.25, spread: 0.05 }), 100_000);
        let near: u64 = c[20..31].iter().sum();
        assert!(near > 70_000, "±1σ-ish window holds most ops: {near}");
        assert_eq!(c[90], 0);
    }

    #[test]
    fn zipf_is_skewed_and_scattered() {
        let c = histogram(Pattern::Random(Distribution::Zipf { theta: 1.2 }), 100_000);
        let mut sorted = c.clone();
        sorted.sort_unstable_by(|a, b| b.cmp(a));
        let top10: u64 = sorted[..10].iter().sum();
        assert!(top10 > 50_000, "10% of blocks take most ops: {top10}");
        let hottest = c.iter().position(|&x| x == sorted[0]).unwrap();
        assert_eq!(hottest, 0, "rank 1 maps to block 0");
        assert!(c[1] < sorted[1], "rank 2 is not the adjacent block");
    }

    /// Block indices of `n` offsets from a uniform generator over `blocks` 4 KiB blocks.
    fn uniform_blocks(blocks: u64, map: bool, seed: u64, n: usize) -> Vec<u64> {
        let mut rng = agent_rng(seed);
        let pattern = Pattern::Random(Distribution::Uniform);
        let mut g = OffsetGen::new(&pattern, blocks * 4096, 4096, 4096, map, &mut rng);
        (0..n)
            .map(|_| {
                let off = g.next(4096, &mut rng);
                assert_eq!(off % 4096, 0);
                assert!(off + 4096 <= blocks * 4096);
                off / 4096
            })
            .collect()
    }

    #[test]
    fn random_map_visits_every_block_once_per_pass() {
        for blocks in [1u64, 2, 3, 5, 64, 100, 1000, 4097] {
            let seen = uniform_blocks(blocks, true, 7, 2 * blocks as usize);
            let (first, second) = seen.split_at(blocks as usize);
            for pass in [first, second] {
                let mut sorted = pass.to_vec();
                sorted.sort_unstable();
                assert_eq!(sorted, (0..blocks).collect::<Vec<_>>(), "{blocks} blocks: one visit each");
            }
            if blocks >= 64 {
                assert_ne!(first, second, "each pass is a new permutation");
                assert_ne!(first, &(0..blocks).collect::<Vec<_>>()[..], "not in order");
            }
        }
    }

    #[test]
    fn without_random_map_blocks_repeat() {
        let seen = uniform_blocks(1000, false, 7, 1000);
        let distinct: std::collections::BTreeSet<u64> = seen.iter().copied().collect();
        // Drawn with replacement, about 1 - 1/e of the blocks are hit by 1000 draws.
        assert!(distinct.len() < 700, "{}", distinct.len());
    }

    #[test]
    fn random_map_follows_the_seed() {
        assert_eq!(uniform_blocks(5000, true, 11, 6000), uniform_blocks(5000, true, 11, 6000));
        assert_ne!(uniform_blocks(5000, true, 11, 100), uniform_blocks(5000, true, 12, 100));
    }

    #[test]
    fn random_map_handles_huge_regions_in_constant_memory() {
        // 2^50 slots: no bitmap could hold them; values stay inside and do not repeat early.
        let mut rng = agent_rng(3);
        let mut p = BlockPermutation::new(1 << 50, &mut rng);
        let vals: std::collections::BTreeSet<u64> = (0..10_000).map(|_| p.next(&mut rng)).collect();
        assert_eq!(vals.len(), 10_000);
        assert!(vals.iter().all(|v| *v < 1 << 50));
        let mut p = BlockPermutation::new(u64::MAX, &mut rng);
        assert!((0..100).all(|_| p.next(&mut rng) < u64::MAX));
    }

    #[test]
    fn weighted_sizes_follow_weights() {
        let p = SizePicker::new(&SizeSpec::Weighted(vec![(4096, 75), (65536, 25)]));
        let mut rng = agent_rng(3);
        let small = (0..100_000).filter(|_| p.pick(&mut rng) == 4096).count();
        assert!((73_000..77_000).contains(&small), "{small}");
    }

    #[test]
    fn noncontiguous_calls_with_and_without_sieving() {
        let access = Noncontiguous { regions: 4, region_size: 8, spacing: 24, sieve_buffer: None };
        let mut plain = NoncontigCalls::new(access, 1 << 20);
        let calls: Vec<(u64, u64, u64)> =
            (0..5).map(|_| plain.next_call()).map(|c| (c.offset, c.len, c.app_bytes)).collect();
        assert_eq!(calls, [(0, 8, 8), (32, 8, 8), (64, 8, 8), (96, 8, 8), (128, 8, 8)]);
        // A 72-byte sieve buffer covers three regions (0..72) per call: the holes are moved too.
        let mut sieved = NoncontigCalls::new(Noncontiguous { sieve_buffer: Some(72), ..access }, 1 << 20);
        let calls: Vec<(u64, u64, u64)> =
            (0..3).map(|_| sieved.next_call()).map(|c| (c.offset, c.len, c.app_bytes)).collect();
        assert_eq!(calls, [(0, 72, 24), (96, 8, 8), (128, 72, 24)]);
        // The accesses wrap inside the region.
        let mut small = NoncontigCalls::new(access, 200);
        let offsets: Vec<u64> = (0..9).map(|_| small.next_call().offset).collect();
        assert_eq!(offsets[8], 0, "a second access would pass the end: back to the start");
    }

    #[test]
    fn mix_follows_percentage() {
        let m = MixPicker::new(OpMix::Mixed { read_pct: 70 });
        let mut rng = agent_rng(5);
        let reads = (0..100_000).filter(|_| m.is_read(&mut rng)).count();
        assert!((68_500..71_500).contains(&reads), "{reads}");
    }
}
