//! The user-space side of the perf-ring sampler (--mechanism perf-ring,
//! lo2s's design, issue 35): per package, a cpu-clock on the package's CPU
//! of the PMU cpumask samples a group of the package's energy events, as
//! its leader or its last member (rbench::perf::ring::Design). At every
//! period the kernel writes the group's values and the time into the
//! cpu-clock's ring buffer, waking nobody; this thread drains every ring
//! every DRAIN_EVERY (drain.rs: the lines, the other packages, what is
//! counted). A sample's key is its CPU. Samples the kernel had no room for
//! (PERF_RECORD_LOST) are dropped samples; a throttle is counted (the
//! periods it skipped show as missed ticks, from the gaps between a CPU's
//! samples).

use std::sync::atomic::AtomicBool;

use rbench::perf::ring::{GroupRing, Record};

use crate::batch::ProducerEnds;
use crate::drain::{until_stopped, Drain, KernelSample, ValueMap};
use crate::phase::{tell_started, Started};
use crate::ticker::TickerStats;

/// Data pages of each ring: 100 ms at 1 kHz of a 4-event group is about
/// 6 KB, 64 KB leaves room for 10 kHz and a late drain.
pub const RING_PAGES: usize = 16;

/// One CPU's ring and what its samples were so far.
pub struct CpuRing {
    /// Its sampling group.
    pub ring: GroupRing,
    /// What its samples were so far.
    seen: Seen,
}

/// One CPU's samples so far.
struct Seen {
    /// The CPU (the samples' key).
    cpu: u32,
    /// Its previous sample's time.
    last_ns: Option<u64>,
    /// Periods skipped since it started (cumulative).
    missed: u64,
}

impl CpuRing {
    /// `ring` on `cpu`, nothing drained yet.
    pub fn new(cpu: u32, ring: GroupRing) -> CpuRing {
        let seen = Seen {
            cpu,
            last_ns: None,
            missed: 0,
        };
        CpuRing { ring, seen }
    }
}

/// The periods a gap of `gap_ns` between two samples skipped, at `period_ns`.
fn skipped(gap_ns: u64, period_ns: u64) -> u64 {
    let periods = (gap_ns + period_ns / 2) / period_ns.max(1);
    periods.saturating_sub(1)
}

/// Takes every record `r` of one CPU's ring into `drain`.
fn take(r: Record, ring: &mut Seen, period_ns: u64, drain: &mut Drain) {
    match r {
        Record::Sample { time_ns, values } => {
            if let Some(last) = ring.last_ns.filter(|&last| time_ns > last) {
                ring.missed += skipped(time_ns - last, period_ns);
            }
            ring.last_ns = Some(ring.last_ns.map_or(time_ns, |t| t.max(time_ns)));
            let sample = KernelSample {
                key: ring.cpu,
                time_ns,
                missed: ring.missed,
                seq: None, // the kernel says what it lost in LOST records
                values: &values,
                failed: false, // a group the kernel cannot read is not sampled at all
            };
            drain.push(&sample, String::new);
        }
        Record::Lost(n) => drain.stats.dropped += n,
        Record::Throttle => drain.stats.throttled += 1,
        Record::Unthrottle => {}
    }
}

/// Drains `rings` (sampling since they were opened) into lines of the
/// domains of `map` until `stop` is set; every `period_ns` is a tick.
pub fn run(
    mut rings: Vec<CpuRing>,
    period_ns: u64,
    map: ValueMap,
    stop: &AtomicBool,
    ends: ProducerEnds,
    started: Started,
) -> TickerStats {
    let mut drain = Drain::new(ends, map);
    if tell_started(started, Ok(())).is_none() {
        return TickerStats::default();
    }
    let mut drain_all = |drain: &mut Drain| {
        for CpuRing { ring, seen } in rings.iter_mut() {
            ring.drain(|r| take(r, seen, period_ns, drain));
        }
    };
    until_stopped(stop, || drain_all(&mut drain));
    drain_all(&mut drain);
    drain.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_gap_of_several_periods_is_that_many_missed_less_one() {
        assert_eq!(skipped(1_000_000, 1_000_000), 0);
        assert_eq!(skipped(1_400_000, 1_000_000), 0, "late, not missed");
        assert_eq!(skipped(2_000_000, 1_000_000), 1);
        assert_eq!(skipped(5_100_000, 1_000_000), 4);
        assert_eq!(
            skipped(7, 0),
            6,
            "no period: every ns a period, never a panic"
        );
    }
}
