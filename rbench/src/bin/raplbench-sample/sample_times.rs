//! The times of a window's samples, kept in memory that does not grow with
//! the run (keeping every time grew a soak by 512 KiB a minute).
//!
//! What the report needs of them: how many samples fell inside the window,
//! how many came after its clock started, and the quantiles of the interval
//! errors |interval − period|, over the whole window and over its inside.
//! Samples outside the window are a few at its edges (taken before its clock
//! started, or after it was told to stop), so the first and the last EDGE
//! times are kept exactly; every interval's error goes into a histogram
//! (ErrorHistogram), and the intervals that touch an outside sample are taken
//! back out of it when the window's bounds are known.

use std::collections::VecDeque;

/// How many times are kept exactly at each end of a window: far more than
/// the samples that can fall outside it (one or two at each end).
pub const EDGE: usize = 64;

/// Bits of precision of a histogram bucket: errors below 2^BITS ns (2 µs)
/// are counted exactly, larger ones in buckets 2^-(BITS-1) of their value
/// wide, so a bucket's middle is within 1/2^BITS (0.05%) of any value in it.
const BITS: u32 = 11;
const EXACT: u64 = 1 << BITS;
const HALF: u64 = EXACT / 2;

/// A histogram of nonnegative ns values, log-linear like HdrHistogram: its
/// size grows with the largest value seen (about 1024 buckets per doubling),
/// never with the count.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ErrorHistogram {
    counts: Vec<u64>,
    total: u64,
}

/// The bucket of `v`.
fn bucket(v: u64) -> usize {
    if v < EXACT {
        return v as usize;
    }
    let shift = 63 - v.leading_zeros() - (BITS - 1); // v >> shift is in [HALF, EXACT)
    (EXACT + (u64::from(shift) - 1) * HALF + ((v >> shift) - HALF)) as usize
}

/// The value a bucket stands for: itself below EXACT, else its middle.
fn middle(index: usize) -> f64 {
    let i = index as u64;
    if i < EXACT {
        return i as f64;
    }
    let shift = (i - EXACT) / HALF + 1;
    let low = (HALF + (i - EXACT) % HALF) << shift;
    low as f64 + ((1u64 << shift) as f64 - 1.0) / 2.0
}

impl ErrorHistogram {
    /// Counts `v` once more.
    pub fn add(&mut self, v: u64) {
        let b = bucket(v);
        if b >= self.counts.len() {
            self.counts.resize(b + 1, 0);
        }
        self.counts[b] += 1;
        self.total += 1;
    }

    /// Counts `v` once less (it must have been added).
    pub fn remove(&mut self, v: u64) {
        let b = bucket(v);
        assert!(
            self.counts.get(b).is_some_and(|&c| c > 0),
            "{v} was never added"
        );
        self.counts[b] -= 1;
        self.total -= 1;
    }

    /// The value of rank `r` (0-based, ascending), as its bucket's middle.
    fn at_rank(&self, r: u64) -> f64 {
        let mut seen = 0;
        for (i, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen > r {
                return middle(i);
            }
        }
        f64::NAN
    }

    /// The p-quantile as numpy computes it (linear between the two closest
    /// ranks), ns; None when empty.
    pub fn quantile(&self, p: f64) -> Option<f64> {
        if self.total == 0 {
            return None;
        }
        let h = (self.total - 1) as f64 * p.clamp(0.0, 1.0);
        let (lo, hi) = (h.floor() as u64, h.ceil() as u64);
        let (a, b) = (self.at_rank(lo), self.at_rank(hi));
        Some(a + (h - lo as f64) * (b - a))
    }
}

/// The samples of one window inside given bounds.
#[derive(Debug, Clone, PartialEq)]
pub struct Inside {
    /// How many samples fell inside.
    pub samples: u64,
    /// The errors of the intervals between consecutive inside samples.
    pub errors: ErrorHistogram,
}

/// The times of a window's samples, in order, in bounded memory.
#[derive(Debug, Clone, Default)]
pub struct SampleTimes {
    period_ns: u64,
    count: u64,
    /// The first EDGE times.
    head: Vec<u64>,
    /// The last EDGE times.
    tail: VecDeque<u64>,
    /// |interval − period| of every two consecutive samples, ns.
    errors: ErrorHistogram,
    /// The largest of them, exactly.
    max_error: Option<u64>,
}

impl SampleTimes {
    /// No sample yet, for a sampler ticking every `period_ns`.
    pub fn new(period_ns: u64) -> SampleTimes {
        SampleTimes {
            period_ns,
            ..SampleTimes::default()
        }
    }

    /// `times` (in order) as they would be recorded.
    #[cfg(test)]
    pub fn of(period_ns: u64, times: impl IntoIterator<Item = u64>) -> SampleTimes {
        let mut all = SampleTimes::new(period_ns);
        times.into_iter().for_each(|t| all.push(t));
        all
    }

    fn error(&self, earlier: u64, later: u64) -> u64 {
        later.abs_diff(earlier).abs_diff(self.period_ns)
    }

    /// Records the next sample's time.
    pub fn push(&mut self, t: u64) {
        if let Some(&last) = self.tail.back() {
            let e = self.error(last, t);
            self.errors.add(e);
            self.max_error = Some(self.max_error.map_or(e, |m| m.max(e)));
        }
        if self.head.len() < EDGE {
            self.head.push(t);
        }
        if self.tail.len() == EDGE {
            self.tail.pop_front();
        }
        self.tail.push_back(t);
        self.count += 1;
    }

    /// How many samples were recorded.
    pub fn len(&self) -> u64 {
        self.count
    }

    /// The errors of every interval, ns.
    pub fn errors(&self) -> &ErrorHistogram {
        &self.errors
    }

    /// The largest interval error, ns, exactly.
    pub fn max_error(&self) -> Option<u64> {
        self.max_error
    }

    /// How many samples were taken before `start_ns` (all among the first
    /// EDGE: see EDGE).
    pub fn before(&self, start_ns: u64) -> u64 {
        self.head.partition_point(|&t| t < start_ns) as u64
    }

    /// The samples within [start_ns, end_ns], the bounds of the window they
    /// were taken in: their count, and the errors of the intervals between
    /// them (the intervals that touch a sample outside taken out of the
    /// whole window's).
    pub fn inside(&self, start_ns: u64, end_ns: u64) -> Inside {
        // outside samples are among the first or the last EDGE - 1 (more
        // would be a phase that sampled 63 periods before its clock started
        // or after it stopped; they are counted only up to that); while
        // every time is kept, any of them are
        let most = if self.count as usize <= EDGE {
            EDGE
        } else {
            EDGE - 1
        };
        let before = (self.before(start_ns) as usize).min(most);
        let after = (self.tail.iter().rev().take_while(|t| **t > end_ns).count()).min(most);
        let samples = self.count.saturating_sub((before + after) as u64);
        let mut errors = ErrorHistogram::default();
        if samples >= 2 {
            errors = self.errors.clone();
            // the intervals ending at head[1..=before], then those ending at
            // the last `after` samples
            for w in self.head[..=before].windows(2) {
                errors.remove(self.error(w[0], w[1]));
            }
            let n = self.tail.len();
            for i in n - after..n {
                errors.remove(self.error(self.tail[i - 1], self.tail[i]));
            }
        }
        Inside { samples, errors }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// numpy's quantile of `values` (linear between the closest ranks).
    fn exact_quantile(values: &[u64], p: f64) -> f64 {
        let mut v = values.to_vec();
        v.sort_unstable();
        let h = (v.len() - 1) as f64 * p;
        let (lo, hi) = (h.floor() as usize, h.ceil() as usize);
        v[lo] as f64 + (h - lo as f64) * (v[hi] as f64 - v[lo] as f64)
    }

    #[test]
    fn small_values_are_exact_and_buckets_are_contiguous() {
        for v in [0, 1, 2047] {
            assert_eq!(middle(bucket(v)), v as f64);
        }
        // every value maps to a bucket whose middle is within 1/2^BITS of it,
        // and the buckets of consecutive values never go back or skip one
        let mut last = bucket(EXACT - 1);
        for v in EXACT..EXACT * 64 {
            let b = bucket(v);
            assert!(b == last || b == last + 1, "{v}: {last} then {b}");
            assert!(
                (middle(b) - v as f64).abs() <= v as f64 / EXACT as f64,
                "{v}"
            );
            last = b;
        }
        assert!(bucket(u64::MAX) < 64 * HALF as usize + EXACT as usize);
    }

    #[test]
    fn the_histogram_size_follows_the_largest_value_not_the_count() {
        let mut h = ErrorHistogram::default();
        for i in 0..1_000_000u64 {
            h.add(i % 50_000); // up to 50 µs
        }
        assert_eq!(h.total, 1_000_000);
        assert!(h.counts.len() < 8 * 1024, "{}", h.counts.len());
    }

    #[test]
    fn the_median_is_numpys_for_exact_values() {
        let mut h = ErrorHistogram::default();
        for v in [4000u64, 1000, 10_000, 0] {
            h.add(v / 10); // 400, 100, 1000, 0: below EXACT, exact
        }
        assert_eq!(h.quantile(0.5), Some(250.0));
        assert_eq!(h.quantile(1.0), Some(1000.0));
        h.remove(1000);
        assert_eq!(h.quantile(0.5), Some(100.0));
        assert_eq!(ErrorHistogram::default().quantile(0.5), None);
    }

    #[test]
    fn samples_outside_the_window_and_their_intervals_are_left_out() {
        // one sample 10 ns before the start, 100 at 1 ms inside, one 0.7 ms
        // after the end; intervals inside are all exactly the period
        let start = 1_000_000_000;
        let mut times = vec![start - 10];
        times.extend((1..=100).map(|i| start + i * 1_000_000));
        times.push(start + 100_000_000 + 700_000);
        let all = SampleTimes::of(1_000_000, times);
        assert_eq!(all.len(), 102);
        assert_eq!(all.before(start), 1);
        let inside = all.inside(start, start + 100_000_000);
        assert_eq!(inside.samples, 100);
        assert_eq!(inside.errors.total, 99);
        assert_eq!(inside.errors.quantile(1.0), Some(0.0));
        // the whole window's intervals include the two at its edges
        assert_eq!(all.max_error(), Some(300_000));
        // a short window (every time kept): the same
        let few = SampleTimes::of(
            1_000_000,
            [start - 10, start + 1_000_000, start + 2_000_000],
        );
        assert_eq!(few.inside(start, start + 1_500_000).samples, 1);
        assert_eq!(
            few.inside(start, start + 2_000_000).errors.quantile(0.5),
            Some(0.0)
        );
        assert_eq!(SampleTimes::new(1).inside(0, 100).samples, 0);
    }

    proptest! {
        #![proptest_config(crate::testutil::fixed_cases(300))]

        /// Any run of intervals and any window bounds at its edges: the
        /// inside count is exact, and each quantile of the inside errors is
        /// within 1/2^BITS of the one computed from every kept time.
        #[test]
        fn bounded_memory_gives_the_exact_counts_and_close_quantiles(
            gaps in proptest::collection::vec(0u64..3_000_000, 2..600),
            cut_front in 0usize..3, cut_back in 0usize..3, p in 0.0f64..1.0,
        ) {
            let times: Vec<u64> = gaps.iter().scan(1_000u64, |t, g| { *t += g; Some(*t) }).collect();
            let (start, end) = (times[cut_front.min(times.len() - 1)], times[times.len() - 1 - cut_back.min(times.len() - 1)]);
            let all = SampleTimes::of(1_000_000, times.iter().copied());
            let kept: Vec<u64> = times.iter().copied().filter(|&t| t >= start && t <= end).collect();
            let inside = all.inside(start, end);
            prop_assert_eq!(inside.samples, kept.len() as u64);
            let errors: Vec<u64> = kept.windows(2).map(|w| (w[1] - w[0]).abs_diff(1_000_000)).collect();
            prop_assert_eq!(inside.errors.total, errors.len() as u64);
            if !errors.is_empty() {
                let (got, want) = (inside.errors.quantile(p).unwrap(), exact_quantile(&errors, p));
                prop_assert!((got - want).abs() <= want / EXACT as f64 + 1e-9, "{} vs {}", got, want);
            }
        }
    }
}
