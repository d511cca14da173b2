//! The sampling thread of the user-space mechanisms (powercap, msr, perf):
//! a timerfd armed at absolute deadlines on CLOCK_MONOTONIC (a periodic
//! timer on a fixed grid: the period does not drift), one read of every
//! domain per tick into a preallocated batch, batches handed to the writer.
//!
//! The hot loop does no I/O but the counter read itself, no allocation, no
//! formatting and no floating point. A tick whose timerfd read reports more
//! than one expiration missed the others; they are counted.

use rbench::clock::{monotonic_ns, timespec};
use rbench::CounterSource;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};

use crate::batch::ProducerEnds;
use crate::phase::{tell_started, Started};

/// Where and how the thread runs.
#[derive(Debug, Clone, Copy)]
pub struct TickerSetup {
    /// The sampling period.
    pub period_ns: u64,
    /// Pin to this CPU.
    pub cpu: Option<usize>,
    /// Run under SCHED_FIFO.
    pub fifo: bool,
}

/// What the sampling thread counted.
#[derive(Debug, Default, Clone)]
pub struct TickerStats {
    /// Samples dropped because no empty batch was available (writer too
    /// slow); ebpf: also those the ring buffer had no room for.
    pub dropped: u64,
    /// Reads that failed (for ebpf: samples whose err is not 0); never
    /// written as data.
    pub read_errors: u64,
    /// Samples that repeat their CPU's previous one (ebpf: its time did not
    /// advance); never written as data.
    pub stale: u64,
    /// ebpf: samples of the lead CPU not written because another package's
    /// CPU had not sampled yet (its trigger may not fire: the cpu-clock
    /// fallback on an idle CPU); never written with a made-up value.
    pub incomplete: u64,
    /// perf-ring: times the kernel throttled the sampling leader (the
    /// periods it skipped are missed ticks).
    pub throttled: u64,
    /// The first failure, in words.
    pub first_error: Option<String>,
}

/// Pins the calling thread and sets its policy; the reason on failure.
pub fn place_thread(setup: &TickerSetup) -> Result<(), String> {
    if let Some(cpu) = setup.cpu {
        rbench::cpu::pin_to_cpu(cpu).map_err(|e| e.to_string())?;
    }
    if setup.fifo {
        let param = libc::sched_param { sched_priority: 50 };
        // SAFETY: param is valid; pid 0 is the calling thread.
        if unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) } != 0 {
            return Err(format!(
                "SCHED_FIFO refused: {} (needs root or CAP_SYS_NICE)",
                std::io::Error::last_os_error()
            ));
        }
    }
    Ok(())
}

/// The last OS error of the call `what`, in words.
fn os_error(what: &str) -> String {
    format!("{what}: {}", std::io::Error::last_os_error())
}

/// Arms `timer`: it expires at `value_ns` (absolute with
/// TFD_TIMER_ABSTIME in `flags`, else from now), then every `interval_ns`
/// (0: once).
fn arm(timer: &OwnedFd, flags: i32, interval_ns: u64, value_ns: u64) -> Result<(), String> {
    let spec = libc::itimerspec {
        it_interval: timespec(interval_ns),
        it_value: timespec(value_ns),
    };
    // SAFETY: a valid timerfd and itimerspec.
    match unsafe { libc::timerfd_settime(timer.as_raw_fd(), flags, &spec, std::ptr::null_mut()) } {
        0 => Ok(()),
        _ => Err(os_error("timerfd_settime")),
    }
}

/// A timerfd expiring every period_ns from one period from now, on absolute
/// deadlines.
pub fn periodic_timer(period_ns: u64) -> Result<OwnedFd, String> {
    // SAFETY: a plain syscall; the fd is wrapped at once.
    let fd = unsafe { libc::timerfd_create(libc::CLOCK_MONOTONIC, libc::TFD_CLOEXEC) };
    if fd < 0 {
        return Err(os_error("timerfd_create"));
    }
    // SAFETY: a descriptor just created, owned by nothing else.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let first = monotonic_ns() + period_ns;
    arm(&fd, libc::TFD_TIMER_ABSTIME, period_ns, first)?;
    Ok(fd)
}

/// Makes the timer expire now, once, so that a thread waiting on it wakes
/// (and sees the stop flag) instead of waiting up to a period (1 s at 1 Hz).
pub fn wake(timer: &OwnedFd) {
    let _ = arm(timer, 0, 0, 1); // relative: 1 ns from now
}

/// Samples `source` on each expiration of `timer` (periodic_timer) until
/// `stop` is set (and the timer woken: wake). `started` receives Ok once
/// the thread is placed (or the reason it could not be).
pub fn run(
    source: &mut dyn CounterSource,
    setup: TickerSetup,
    timer: &OwnedFd,
    stop: &AtomicBool,
    mut ends: ProducerEnds,
    started: Started,
) -> TickerStats {
    let mut stats = TickerStats::default();
    if tell_started(started, place_thread(&setup)).is_none() {
        return stats;
    }
    let mut expirations = 0u64;

    while !stop.load(Ordering::Relaxed) {
        // SAFETY: reads 8 bytes into a u64 we own.
        let n = unsafe { libc::read(timer.as_raw_fd(), (&mut expirations as *mut u64).cast(), 8) };
        if n != 8 {
            continue; // EINTR
        }
        if stop.load(Ordering::Relaxed) {
            break; // woken to stop: no sample off the grid
        }
        ends.missed += expirations - 1;
        match ends.push(monotonic_ns(), |values| source.read(values)) {
            Ok(true) => {}
            Ok(false) => stats.dropped += 1,
            Err(e) => {
                stats.read_errors += 1;
                // allocates, once, on failure
                stats.first_error.get_or_insert_with(|| e.to_string());
            }
        }
    }
    ends.hand_over();
    stats
}
