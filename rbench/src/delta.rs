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

#[cfg(test)]
mod tests {
    use super::*;

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
