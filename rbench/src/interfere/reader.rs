//! The neighbour of a route experiment: the calling thread (pinned to the
//! row's CPU, its reader open throughout) follows the victim's window grid
//! and reads only inside the on windows, flat out or at a fixed rate.
//!
//! At a rate the deadlines are absolute CLOCK_MONOTONIC times from the
//! window's start (TIMER_ABSTIME: a grid that does not drift, as
//! raplbench-sample's ticker); a wake-up past the next deadline skips the
//! deadlines it missed and counts them.

use core::arch::x86_64::_rdtsc;
use std::sync::atomic::{AtomicBool, Ordering};

use super::schedule::{Grid, Role};
use super::ticks::TscClock;
use crate::clock::{monotonic_ns, timespec};
use crate::plan::Reader;

/// Reads between two looks at the TSC, flat out: the window's end is
/// overrun by at most this many reads.
const BATCH: u64 = 8;
/// The longest sleep between two looks at the stop flag.
const NAP_NS: u64 = 50_000_000;

/// One window's reads.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Count {
    /// Reads issued in the window.
    pub reads: u64,
    /// Deadlines missed (at a rate).
    pub missed: u64,
}

/// What the reader did over the windows.
#[derive(Debug, Clone, Default)]
pub struct Driven {
    /// Per window.
    pub counts: Vec<Count>,
    /// The first read that failed, in words (the run ended there).
    pub error: Option<String>,
    /// Whether `stop` ended it early.
    pub stopped: bool,
}

/// Sleeps until CLOCK_MONOTONIC `until_ns` or `stop`, looking at `stop`
/// at least every [`NAP_NS`]; whether it was stopped.
pub fn sleep_until(until_ns: u64, stop: &AtomicBool) -> bool {
    loop {
        if stop.load(Ordering::Relaxed) {
            return true;
        }
        let now = monotonic_ns();
        if now >= until_ns {
            return false;
        }
        nanosleep_abs(until_ns.min(now + NAP_NS));
    }
}

/// clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME) until `ns`.
fn nanosleep_abs(ns: u64) {
    let ts = timespec(ns);
    // SAFETY: a valid timespec; an early return (EINTR) is fine: callers loop.
    unsafe {
        libc::clock_nanosleep(
            libc::CLOCK_MONOTONIC,
            libc::TIMER_ABSTIME,
            &ts,
            std::ptr::null_mut(),
        )
    };
}

/// Follows `grid` for the windows of `roles`, reading with `reader` inside
/// the on windows only, `rate_hz` reads per second on absolute deadlines
/// or flat out (None), until the last window ends, a read fails or `stop`
/// is set.
pub fn drive(
    reader: &mut dyn Reader,
    roles: &[Role],
    grid: &Grid,
    clock: &TscClock,
    rate_hz: Option<u32>,
    stop: &AtomicBool,
) -> Driven {
    let mut out = Driven {
        counts: vec![Count::default(); roles.len()],
        ..Driven::default()
    };
    for (k, role) in roles.iter().enumerate() {
        let (start, end) = grid.bounds(k);
        let (start_ns, end_ns) = (clock.mono_of(start), clock.mono_of(end));
        if *role != Role::On {
            out.stopped = sleep_until(end_ns, stop);
        } else if !sleep_until(start_ns, stop) {
            let count = &mut out.counts[k];
            let result = match rate_hz {
                None => flat_out(reader, end, stop, count),
                Some(r) => at_rate(reader, start_ns, end_ns, r, stop, count),
            };
            if let Err(e) = result {
                out.error = Some(e.to_string());
                return out;
            }
        }
        out.stopped = stop.load(Ordering::Relaxed);
        if out.stopped {
            break;
        }
    }
    out
}

/// Reads back to back until the TSC reaches `end`.
fn flat_out(
    reader: &mut dyn Reader,
    end: u64,
    stop: &AtomicBool,
    count: &mut Count,
) -> Result<(), crate::Error> {
    // SAFETY (every _rdtsc): RDTSC exists on every x86_64 CPU.
    while unsafe { _rdtsc() } < end && !stop.load(Ordering::Relaxed) {
        reader.read_n(BATCH)?;
        count.reads += BATCH;
    }
    Ok(())
}

/// `rate_hz` reads per second, on deadlines from `start_ns` until `end_ns`.
fn at_rate(
    reader: &mut dyn Reader,
    start_ns: u64,
    end_ns: u64,
    rate_hz: u32,
    stop: &AtomicBool,
    count: &mut Count,
) -> Result<(), crate::Error> {
    let period_ns = 1_000_000_000 / u64::from(rate_hz.max(1));
    let mut next = start_ns;
    while next < end_ns && !stop.load(Ordering::Relaxed) {
        nanosleep_abs(next);
        let now = monotonic_ns();
        if now < next {
            continue; // woken early (a signal): sleep again
        }
        if now >= end_ns {
            break;
        }
        let behind = (now - next) / period_ns;
        count.missed += behind;
        next += behind * period_ns;
        reader.read()?;
        count.reads += 1;
        next += period_ns;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Counts its reads; fails at read `fail_at`.
    struct Fake {
        reads: u64,
        fail_at: u64,
    }

    impl Reader for Fake {
        fn read(&mut self) -> Result<(), crate::Error> {
            self.reads += 1;
            if self.reads == self.fail_at {
                return Err(crate::Error::Unavailable("it broke".into()));
            }
            Ok(())
        }
    }

    /// `drive`s a reader failing at read `fail_at` (0: never) over `roles`
    /// on a grid of `window_ms` windows from now (at 1 GHz "TSC": the test
    /// times itself in ns); what it did and how many reads it made.
    fn drive_fake(
        fail_at: u64,
        roles: &[Role],
        window_ms: u64,
        rate_hz: Option<u32>,
        stop: bool,
    ) -> (Driven, u64) {
        let (mono_ns, tsc) = crate::victim::calibrate::stamp();
        let clock = TscClock {
            mono_ns,
            tsc,
            tsc_ghz: 1.0,
        };
        let grid = Grid {
            start_tsc: tsc,
            window_cycles: window_ms * 1_000_000,
        };
        let mut fake = Fake { reads: 0, fail_at };
        let stop = AtomicBool::new(stop);
        let d = drive(&mut fake, roles, &grid, &clock, rate_hz, &stop);
        (d, fake.reads)
    }

    #[test]
    fn reads_only_in_on_windows_at_a_rate() {
        let roles = [Role::Settle, Role::Off, Role::On];
        let (d, reads) = drive_fake(0, &roles, 20, Some(1000), false);
        assert_eq!((d.error, d.stopped), (None, false));
        assert_eq!(d.counts[0], Count::default());
        assert_eq!(d.counts[1], Count::default());
        let on = d.counts[2];
        // 20 deadlines in the window: each read or missed
        assert!(
            on.reads + on.missed <= 20 && on.reads + on.missed >= 18,
            "{on:?}"
        );
        assert_eq!(reads, on.reads);
    }

    #[test]
    fn a_failing_read_ends_the_run_with_the_reason() {
        let (d, _) = drive_fake(3, &[Role::On, Role::On], 5, None, false);
        assert!(d.error.unwrap().contains("it broke"));
    }

    #[test]
    fn a_stop_ends_it_at_once() {
        let (d, reads) = drive_fake(0, &[Role::Off, Role::On], 10_000, None, true);
        assert!(d.stopped);
        assert_eq!(reads, 0);
    }
}
