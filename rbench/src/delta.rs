//! Counter differences with wrap correction.
//!
//! Energy counters are free-running and wrap: a 32-bit RAPL MSR after
//! 0xFFFF_FFFF, a powercap energy_uj after max_energy_range_uj, a perf count
//! after u64::MAX. Between two readings `prev` and `cur` the counter advanced
//!
//! ```text
//! Δ = cur − prev                 when cur ≥ prev
//! Δ = cur + (max + 1) − prev     otherwise (it wrapped once)
//! ```
//!
//! which is only right if it wrapped at most once: the sampling interval must
//! be shorter than the wrap time (about 60 s under heavy load on many parts).
//! [`CounterDiff`] keeps the previous reading, like Alumet's counter type.

/// The advance of a counter that wraps after `max`, from `prev` to `cur`
/// (both at most `max`), assuming at most one wrap.
///
/// ```
/// use rbench::delta::wrapping_delta;
/// assert_eq!(wrapping_delta(100, 250, 0xFFFF_FFFF), 150);
/// assert_eq!(wrapping_delta(0xFFFF_FFFF, 0, 0xFFFF_FFFF), 1); // wrapped
/// assert_eq!(wrapping_delta(u64::MAX - 1, 1, u64::MAX), 3);
/// ```
pub fn wrapping_delta(prev: u64, cur: u64, max: u64) -> u64 {
    if cur >= prev {
        cur - prev
    } else {
        // (max - prev) + cur + 1; max + 1 overflows for max = u64::MAX, where
        // the wrapping sum is exactly cur - prev modulo 2^64, as it should be.
        (max - prev).wrapping_add(cur).wrapping_add(1)
    }
}

/// What one new reading told a [`CounterDiff`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Update {
    /// The first reading: there is nothing to compare it with yet.
    FirstTime,
    /// The counter advanced by this much without wrapping.
    NoWrap(u64),
    /// The counter wrapped; this is the corrected advance.
    Wrapped(u64),
    /// No difference can be trusted: a reading above the counter's range,
    /// or a step back whose wrap-corrected advance is more than half the
    /// range (the counter went backwards, or wrapped more than once; a
    /// powercap zone without max_energy_range_uj is read with the range of
    /// a u64, where a step back would otherwise count as 1.8e13 J).
    Implausible,
}

impl Update {
    /// The advance since the previous reading, if there was one.
    ///
    /// ```
    /// use rbench::delta::Update;
    /// assert_eq!(Update::Wrapped(3).difference(), Some(3));
    /// assert_eq!(Update::FirstTime.difference(), None);
    /// ```
    pub fn difference(self) -> Option<u64> {
        match self {
            Update::FirstTime | Update::Implausible => None,
            Update::NoWrap(d) | Update::Wrapped(d) => Some(d),
        }
    }
}

/// Successive differences of one wrapping counter.
///
/// ```
/// use rbench::delta::{CounterDiff, Update};
/// let mut energy = CounterDiff::with_max(0xFFFF_FFFF);
/// assert_eq!(energy.update(0xFFFF_FFF0), Update::FirstTime);
/// assert_eq!(energy.update(0xFFFF_FFFF), Update::NoWrap(0xF));
/// assert_eq!(energy.update(0x10), Update::Wrapped(0x11));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CounterDiff {
    /// The largest raw value before the counter wraps to 0.
    pub max: u64,
    /// The previous reading, None before the first.
    pub previous: Option<u64>,
}

impl CounterDiff {
    /// A counter that wraps after `max` (see [`crate::Domain::max`]).
    pub fn with_max(max: u64) -> Self {
        CounterDiff {
            max,
            previous: None,
        }
    }

    /// Takes a new reading and returns the advance since the previous one.
    /// A reading above `max` is [`Update::Implausible`], and so is the next
    /// one (it has nothing valid to compare with).
    pub fn update(&mut self, value: u64) -> Update {
        let update = match self.previous {
            _ if value > self.max => Update::Implausible,
            None => Update::FirstTime,
            Some(prev) if prev > self.max => Update::Implausible,
            Some(prev) if value >= prev => Update::NoWrap(value - prev),
            Some(prev) => match wrapping_delta(prev, value, self.max) {
                d if d > self.max / 2 => Update::Implausible,
                d => Update::Wrapped(d),
            },
        };
        self.previous = Some(value);
        update
    }
}

/// Whether the time between two readings was long enough for the counter
/// to wrap twice, which no difference can see (it assumes at most one wrap):
/// judged at the fastest advance seen so far, against half the range (the
/// margin [`CounterDiff`] keeps). A VM paused, a suspended process or a
/// sampling thread starved for minutes makes such gaps.
///
/// ```
/// use rbench::delta::GapCheck;
/// let mut gaps = GapCheck::with_max(1000);
/// assert!(!gaps.too_long(10, 1_000)); // 10 units per µs
/// assert!(!gaps.too_long(10, 1_000));
/// assert!(gaps.too_long(600, 60_000)); // 60 µs at 10 per µs: 600 > 500
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GapCheck {
    max: u64,
    /// The fastest advance seen, units per ns.
    fastest: f64,
}

impl GapCheck {
    /// For a counter that wraps after `max`.
    pub fn with_max(max: u64) -> Self {
        GapCheck { max, fastest: 0.0 }
    }

    /// Takes one interval (its advance, its length in ns): true when, at
    /// the fastest advance seen before it, `gap_ns` covers half the range
    /// or more. (The interval's own advance then counts for later ones.)
    pub fn too_long(&mut self, advance: u64, gap_ns: u64) -> bool {
        let too_long = self.fastest * gap_ns as f64 >= self.max as f64 / 2.0;
        if gap_ns > 0 {
            self.fastest = self.fastest.max(advance as f64 / gap_ns as f64);
        }
        too_long
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_gap_is_judged_at_the_fastest_rate_seen_before_it() {
        let mut gaps = GapCheck::with_max(0xFFFF_FFFF);
        // 1 kHz at 100 W in 61 µJ units: about 1640 units per ms
        for _ in 0..100 {
            assert!(!gaps.too_long(1640, 1_000_000));
        }
        // 21 minutes: 2.1e9 units, half the range: a second wrap could hide
        assert!(!gaps.too_long(0, 1_000_000_000)); // a second is fine
        assert!(gaps.too_long(5, 1_310_000_000_000));
        // nothing known yet: no rate, no judgement
        assert!(!GapCheck::with_max(100).too_long(0, u64::MAX));
    }

    const MSR_MAX: u64 = 0xFFFF_FFFF;

    #[test]
    fn no_wrap_is_a_plain_difference() {
        assert_eq!(wrapping_delta(5, 5, MSR_MAX), 0);
        assert_eq!(wrapping_delta(5, 9, MSR_MAX), 4);
        assert_eq!(wrapping_delta(0, MSR_MAX, MSR_MAX), MSR_MAX);
    }

    #[test]
    fn wrap_at_the_exact_boundary() {
        assert_eq!(wrapping_delta(MSR_MAX, 0, MSR_MAX), 1);
        assert_eq!(wrapping_delta(MSR_MAX - 1, 1, MSR_MAX), 3);
        // powercap: the counter runs 0..=max_energy_range_uj
        let range = 262_143_328_850;
        assert_eq!(wrapping_delta(range, 0, range), 1);
        assert_eq!(wrapping_delta(range - 10, 5, range), 16);
    }

    #[test]
    fn perf_counts_wrap_at_u64_max_without_overflow() {
        assert_eq!(wrapping_delta(u64::MAX, 0, u64::MAX), 1);
        assert_eq!(wrapping_delta(u64::MAX - 1, 1, u64::MAX), 3);
        assert_eq!(wrapping_delta(u64::MAX, u64::MAX, u64::MAX), 0);
        assert_eq!(wrapping_delta(1, 0, u64::MAX), u64::MAX);
    }

    #[test]
    fn a_step_back_of_a_counter_without_a_known_range_is_no_difference() {
        // issue 14: a powercap zone without max_energy_range_uj (u64::MAX)
        // going from 900000 to 100 summed to 18446744073708.65 J
        let mut c = CounterDiff::with_max(u64::MAX);
        assert_eq!(c.update(900_000), Update::FirstTime);
        assert_eq!(c.update(100), Update::Implausible);
        assert_eq!(c.update(150), Update::NoWrap(50)); // and on from there

        // a real wrap of a known range still counts
        let mut c = CounterDiff::with_max(MSR_MAX);
        c.update(MSR_MAX - 5);
        assert_eq!(c.update(4), Update::Wrapped(10));
        // more than half the range in one step back: not one wrap
        c.update(MSR_MAX / 2);
        assert_eq!(c.update(MSR_MAX / 2 - 10), Update::Implausible);
    }

    #[test]
    fn a_reading_above_the_range_is_no_difference_and_never_underflows() {
        let range = 1_000;
        let mut c = CounterDiff::with_max(range);
        assert_eq!(c.update(500), Update::FirstTime);
        assert_eq!(c.update(range + 7), Update::Implausible);
        assert_eq!(c.update(3), Update::Implausible); // the previous was out of range
        assert_eq!(c.update(10), Update::NoWrap(7));
        assert_eq!(Update::Implausible.difference(), None);
    }

    #[test]
    fn counter_diff_tracks_the_previous_reading() {
        let mut c = CounterDiff::with_max(MSR_MAX);
        assert_eq!(c.update(MSR_MAX - 1), Update::FirstTime);
        assert_eq!(c.update(MSR_MAX - 1), Update::NoWrap(0));
        assert_eq!(c.update(1), Update::Wrapped(3));
        assert_eq!(c.update(1).difference(), Some(0));
        assert_eq!(c.previous, Some(1));
    }
}

/// Property tests (proptest): any counter range, any reading, any advance.
#[cfg(test)]
mod properties {
    use super::*;
    use crate::testutil::fixed_cases;
    use proptest::prelude::*;

    /// The ranges met in practice, and any other.
    fn ranges() -> impl Strategy<Value = u64> {
        prop_oneof![
            Just(0xFFFF_FFFF),     // a 32-bit RAPL MSR
            Just(262_143_328_850), // a powercap energy_uj
            Just(u64::MAX),        // a perf count
            2u64..u64::MAX,
        ]
    }

    /// A range, a reading within it and an advance of at most half of it.
    fn steps() -> impl Strategy<Value = (u64, u64, u64)> {
        ranges().prop_flat_map(|max| (Just(max), 0..=max, 0..=max / 2))
    }

    /// The reading `advance` after `prev` on a counter that wraps after `max`.
    fn advanced(prev: u64, advance: u64, max: u64) -> u64 {
        ((u128::from(prev) + u128::from(advance)) % (u128::from(max) + 1)) as u64
    }

    proptest! {
        #![proptest_config(fixed_cases(4000))]

        #[test]
        fn an_advance_of_up_to_half_the_range_is_recovered_exactly((max, prev, advance) in steps()) {
            let cur = advanced(prev, advance, max);
            let mut diff = CounterDiff::with_max(max);
            prop_assert_eq!(diff.update(prev), Update::FirstTime);
            let update = diff.update(cur);
            prop_assert_eq!(update.difference(), Some(advance));
            prop_assert_eq!(matches!(update, Update::Wrapped(_)), cur < prev);
            prop_assert_eq!(wrapping_delta(prev, cur, max), advance);
        }

        #[test]
        fn a_reading_above_the_range_is_never_a_difference(
            max in prop_oneof![Just(0xFFFF_FFFFu64), Just(262_143_328_850), 2u64..u64::MAX / 2],
            at in 0.0f64..=1.0,
            above in 1u64..=1000,
        ) {
            let prev = (max as f64 * at) as u64;
            let mut diff = CounterDiff::with_max(max);
            diff.update(prev);
            prop_assert_eq!(diff.update(max + above), Update::Implausible);
            // and the reading after it has nothing valid to compare with
            prop_assert_eq!(diff.update(prev), Update::Implausible);
        }

        #[test]
        fn a_gap_is_flagged_exactly_when_the_fastest_rate_covers_half_the_range(
            max in ranges(), per_ns in 1u64..1_000, gap_ns in 1u64..u64::MAX / 2_000,
        ) {
            let mut gaps = GapCheck::with_max(max);
            prop_assert!(!gaps.too_long(per_ns * 1000, 1000));
            let covers = per_ns as f64 * gap_ns as f64 >= max as f64 / 2.0;
            prop_assert_eq!(gaps.too_long(0, gap_ns), covers);
        }
    }
}
