//! The user-space side of the in-kernel sampler (--mechanism ebpf): the BPF
//! program (bpf/counters.bpf.c) samples on its own, on a CPU-pinned
//! bpf_timer re-armed at absolute deadlines, and pushes each sample into a
//! ring buffer without waking anyone. This thread drains the ring every
//! DRAIN_EVERY into the same batches the writer takes from the user-space
//! sampler: user space never wakes at the sampling rate.
//!
//! Every package's counters are sampled on that package's CPU of the PMU
//! cpumask. Each sample updates the domains of its CPU; a sample of the
//! first CPU (the lead) writes one line per domain, the other packages at
//! their latest values (one period old where every trigger fires). A sample
//! whose `err` is not 0, or whose time does not advance over its CPU's
//! previous one, and a lead sample taken before every package has sampled,
//! are counted and never written as data.

use rbench::ebpf::{BpfSampler, RbSample};
use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};
use std::time::Duration;

use crate::batch::{Batch, ProducerEnds};
use crate::ticker::TickerStats;

/// How often the ring buffer is drained.
pub const DRAIN_EVERY: Duration = Duration::from_millis(100);

/// Where the values of each domain come from.
pub struct ValueMap {
    /// Per domain: the CPU whose samples carry it, and the index in the
    /// sample's values.
    pub domains: Vec<(u32, usize)>,
    /// The CPU whose samples are written.
    pub lead: u32,
}

struct Drain {
    /// None once hung up.
    ends: Option<ProducerEnds>,
    current: Option<Batch>,
    map: ValueMap,
    /// The latest value of each domain, None before its first sample.
    latest: Vec<Option<u64>>,
    /// Per CPU: its previous sample's time and missed count.
    previous: Vec<(u32, u64, u64)>,
    missed: u64,
    stats: TickerStats,
}

impl Drain {
    /// Nothing drained yet: no latest value, no previous sample.
    fn new(ends: ProducerEnds, map: ValueMap) -> Drain {
        Drain {
            ends: Some(ends),
            current: None,
            latest: vec![None; map.domains.len()],
            map,
            previous: Vec::new(),
            missed: 0,
            stats: TickerStats::default(),
        }
    }

    fn push(&mut self, s: &RbSample) {
        let Some(prev) = self.previous.iter_mut().find(|p| p.0 == s.cpu) else {
            self.previous.push((s.cpu, s.time_ns, s.missed));
            return self.take(s, true);
        };
        let advanced = s.time_ns > prev.1;
        if s.cpu == self.map.lead {
            self.missed += s.missed.saturating_sub(prev.2);
        }
        (prev.1, prev.2) = (prev.1.max(s.time_ns), s.missed);
        self.take(s, advanced);
    }

    fn take(&mut self, s: &RbSample, advanced: bool) {
        if s.err != 0 {
            self.stats.read_errors += 1;
            if self.stats.first_error.is_none() {
                self.stats.first_error = Some(format!(
                    "bpf_perf_event_read_value failed in the kernel on CPU {}: {}",
                    s.cpu,
                    std::io::Error::from_raw_os_error(-s.err)
                ));
            }
            return;
        }
        if !advanced {
            self.stats.stale += 1;
            return;
        }
        for (latest, &(cpu, index)) in self.latest.iter_mut().zip(&self.map.domains) {
            if cpu == s.cpu {
                *latest = Some(s.value[index]);
            }
        }
        if s.cpu != self.map.lead {
            return;
        }
        if self.latest.iter().any(Option::is_none) {
            self.stats.incomplete += 1;
            return;
        }
        if self.current.is_none() {
            self.current = self.ends.as_ref().and_then(|e| e.empty.try_recv().ok());
        }
        let Some(batch) = self.current.as_mut() else {
            self.stats.dropped += 1;
            return;
        };
        let at = batch.len;
        let n = self.latest.len();
        batch.times[at] = s.time_ns;
        for (slot, latest) in batch.values[at * n..(at + 1) * n]
            .iter_mut()
            .zip(&self.latest)
        {
            *slot = latest.unwrap_or(0);
        }
        batch.len += 1;
        if batch.is_full() {
            self.hand_over();
        }
    }

    fn hand_over(&mut self) {
        if let (Some(mut batch), Some(ends)) = (self.current.take(), self.ends.as_ref()) {
            batch.missed = std::mem::take(&mut self.missed);
            let _ = ends.full.send(batch);
        }
    }
}

/// Drains `sampler`'s samples into lines of the domains of `map` until
/// `stop` is set. `started` receives Ok once the ring buffer is attached.
pub fn run(
    sampler: &BpfSampler,
    map: ValueMap,
    stop: &AtomicBool,
    ends: ProducerEnds,
    started: std::sync::mpsc::SyncSender<Result<(), String>>,
    done: Arc<Barrier>,
) -> TickerStats {
    let drain = RefCell::new(Drain::new(ends, map));
    let ring = match sampler.samples_ring_buffer(|s| drain.borrow_mut().push(s)) {
        Ok(ring) => {
            let _ = started.send(Ok(()));
            ring
        }
        Err(e) => {
            let _ = started.send(Err(e.to_string()));
            drain.borrow_mut().ends = None; // hang up
            done.wait();
            return TickerStats::default();
        }
    };
    while !stop.load(Ordering::Relaxed) {
        // parked, not asleep: the phase unparks it when it ends, so it
        // stops at once, not up to DRAIN_EVERY late (a window of a --report
        // run is as short as 0.1 s)
        std::thread::park_timeout(DRAIN_EVERY);
        let _ = ring.consume();
    }
    let _ = ring.consume();
    drop(ring);
    let mut drain = drain.into_inner();
    // samples the program had no ring buffer room for: lost in the kernel,
    // counted as dropped (this window's program started with 0)
    drain.stats.dropped += sampler
        .cpus()
        .iter()
        .filter_map(|&cpu| sampler.tick_counts(cpu).ok())
        .map(|t| t.ring_drops)
        .sum::<u64>();
    drain.hand_over();
    drain.ends = None; // hang up
    done.wait();
    drain.stats
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::batch::pool;

    fn sample(cpu: u32, time_ns: u64, values: &[u64]) -> RbSample {
        let mut s = RbSample {
            cpu,
            time_ns,
            ..Default::default()
        };
        s.value[..values.len()].copy_from_slice(values);
        s
    }

    /// Two packages, lead CPU 0 and CPU 2: energy-pkg (index 0) and
    /// energy-ram (index 1) of each, in domain order.
    fn drain() -> (Drain, crate::batch::WriterEnds) {
        let map = ValueMap {
            domains: vec![(0, 0), (0, 1), (2, 0), (2, 1)],
            lead: 0,
        };
        let (ends, writer) = pool(map.domains.len());
        (Drain::new(ends, map), writer)
    }

    #[test]
    fn each_package_fills_its_own_domains_and_the_lead_writes_the_line() {
        let (mut d, writer) = drain();
        d.push(&sample(0, 10, &[100, 7])); // package 1 has not sampled: not written
        d.push(&sample(2, 11, &[200, 9]));
        d.push(&sample(0, 20, &[101, 8]));
        d.push(&sample(2, 21, &[205, 9]));
        d.push(&sample(0, 30, &[103, 8]));
        d.hand_over();
        let batch = writer.full.try_recv().unwrap();
        assert_eq!(batch.len, 2);
        assert_eq!(batch.times[..2], [20, 30]);
        assert_eq!(batch.values[..8], [101, 8, 200, 9, 103, 8, 205, 9]);
        assert_eq!(d.stats.incomplete, 1);
    }

    #[test]
    fn errors_and_repeated_ticks_are_counted_never_written() {
        let (mut d, writer) = drain();
        d.push(&sample(2, 5, &[200, 9]));
        let mut failed = sample(0, 10, &[0, 0]);
        failed.err = -2;
        d.push(&failed);
        d.push(&sample(0, 10, &[100, 7])); // same time as the failed one: stale
        d.push(&sample(0, 20, &[101, 7]));
        d.hand_over();
        let batch = writer.full.try_recv().unwrap();
        assert_eq!(batch.len, 1);
        assert_eq!(batch.values[..4], [101, 7, 200, 9]);
        assert_eq!((d.stats.read_errors, d.stats.stale), (1, 1));
        assert!(d.stats.first_error.unwrap().contains("on CPU 0"));
    }
}
