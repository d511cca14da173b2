//! The user-space side of the in-kernel BPF sampler (--mechanism ebpf): the
//! BPF program (bpf/counters.bpf.c) samples on its own, on a CPU-pinned
//! bpf_timer re-armed at absolute deadlines, and pushes each sample into a
//! ring buffer without waking anyone. This thread drains the ring every
//! DRAIN_EVERY (drain.rs: the lines, the other packages, what is counted).
//! Every package's counters are sampled on that package's CPU of the PMU
//! cpumask: a sample's key is its CPU.

use rbench::ebpf::{BpfSampler, RbSample, TickCounts};
use std::cell::RefCell;
use std::sync::atomic::AtomicBool;

use crate::batch::ProducerEnds;
use crate::drain::{until_stopped, Drain, KernelSample, ValueMap};
use crate::phase::{tell_started, Started};
use crate::ticker::TickerStats;

/// A ring buffer sample as the drain takes it.
fn sample(s: &RbSample) -> KernelSample<'_> {
    KernelSample {
        key: s.cpu,
        time_ns: s.time_ns,
        missed: s.missed,
        seq: None, // the ring buffer counts what it had no room for (ring_drops)
        values: &s.value,
        failed: s.err != 0,
    }
}

/// Why a sample's read failed, in words.
fn failure(s: &RbSample) -> String {
    format!(
        "bpf_perf_event_read_value failed in the kernel on CPU {}: {}",
        s.cpu,
        std::io::Error::from_raw_os_error(-s.err)
    )
}

/// Drains `sampler`'s samples into lines of the domains of `map` until
/// `stop` is set. `started` receives Ok once the ring buffer is attached.
pub fn run(
    sampler: &BpfSampler,
    map: ValueMap,
    stop: &AtomicBool,
    ends: ProducerEnds,
    started: Started,
) -> TickerStats {
    let drain = RefCell::new(Drain::new(ends, map));
    let ring = sampler.samples_ring_buffer(|s| drain.borrow_mut().push(&sample(s), || failure(s)));
    let Some(ring) = tell_started(started, ring.map_err(|e| e.to_string())) else {
        return TickerStats::default();
    };
    until_stopped(stop, || {
        let _ = ring.consume();
    });
    let _ = ring.consume();
    drop(ring);
    let mut drain = drain.into_inner();
    // samples the program had no ring buffer room for: lost in the kernel,
    // counted as dropped (this window's program started with 0)
    drain.stats.dropped += summed(sampler, |t| t.ring_drops);
    drain.finish()
}

/// `count` of each of `sampler`'s CPUs, summed (a CPU whose counts cannot
/// be read counts 0).
pub fn summed(sampler: &BpfSampler, count: fn(TickCounts) -> u64) -> u64 {
    (sampler.cpus().iter())
        .filter_map(|&cpu| sampler.tick_counts(cpu).ok())
        .map(count)
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_read_names_its_cpu_and_errno() {
        let s = RbSample {
            cpu: 3,
            err: -2,
            ..Default::default()
        };
        let taken = sample(&s);
        assert!(taken.failed);
        assert!(
            failure(&s).starts_with(
                "bpf_perf_event_read_value failed in the kernel on CPU 3: No such file"
            ),
            "{}",
            failure(&s)
        );
        assert_eq!((taken.key, taken.seq), (3, None));
    }
}
