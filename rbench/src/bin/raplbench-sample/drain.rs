//! The drain of an in-kernel sampler (ebpf_drain.rs: the BPF program;
//! ksample_drain.rs: the ksample module): the kernel samples on its own, a
//! timer on each package's lead CPU, and queues each sample without waking
//! anyone; a drain thread takes the queue every DRAIN_EVERY into the same
//! batches the writer takes from the user-space sampler, so user space
//! never wakes at the sampling rate.
//!
//! Each sample updates the domains of its key (a CPU for ebpf, a package
//! for ksample); a sample of the lead key writes one line per domain, the
//! other packages at their latest values (one period old where every timer
//! fires). A sample whose read failed, or whose time does not advance over
//! its key's previous one, and a lead sample taken before every package has
//! sampled, are counted and never written as data. Where the kernel numbers
//! the samples, a gap in the numbers is samples it dropped (a full queue),
//! counted as dropped.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::batch::ProducerEnds;
use crate::ticker::TickerStats;

/// How often the queue is drained.
pub const DRAIN_EVERY: Duration = Duration::from_millis(100);

/// Calls `drain_once` every DRAIN_EVERY until `stop` is set (the caller
/// drains what is left). Parked, not asleep: the phase unparks the thread
/// when it ends, so it stops at once, not up to DRAIN_EVERY late (a window
/// of a --report run is as short as 0.1 s).
pub fn until_stopped(stop: &AtomicBool, mut drain_once: impl FnMut()) {
    while !stop.load(Ordering::Relaxed) {
        std::thread::park_timeout(DRAIN_EVERY);
        drain_once();
    }
}

/// One sample as an in-kernel sampler hands it over.
pub struct KernelSample<'a> {
    /// Whose sample: the CPU (ebpf) or the package (ksample).
    pub key: u32,
    /// CLOCK_MONOTONIC ns when it was read.
    pub time_ns: u64,
    /// Periods its timer skipped since the sampler started (cumulative).
    pub missed: u64,
    /// Its number among its key's samples, from 0 at the start; None where
    /// the sampler does not number them.
    pub seq: Option<u64>,
    /// Its raw values.
    pub values: &'a [u64],
    /// Whether its read failed (its values are not data).
    pub failed: bool,
}

/// Where the values of each domain come from.
pub struct ValueMap {
    /// Per domain: the key whose samples carry it, and the index of its
    /// value in them.
    pub domains: Vec<(u32, usize)>,
    /// The key whose samples are written.
    pub lead: u32,
}

/// A key's previous sample.
#[derive(Default)]
struct Previous {
    key: u32,
    time_ns: Option<u64>,
    missed: u64,
    next_seq: u64,
}

/// Samples into batches of lines.
pub struct Drain {
    /// None once hung up.
    pub ends: Option<ProducerEnds>,
    map: ValueMap,
    /// The latest value of each domain, None before its first sample.
    latest: Vec<Option<u64>>,
    previous: Vec<Previous>,
    /// Samples the kernel numbered but never handed over (gaps in seq).
    pub seq_gaps: u64,
    /// What was counted.
    pub stats: TickerStats,
}

impl Drain {
    /// Nothing drained yet: no latest value, no previous sample.
    pub fn new(ends: ProducerEnds, map: ValueMap) -> Drain {
        Drain {
            ends: Some(ends),
            latest: vec![None; map.domains.len()],
            map,
            previous: Vec::new(),
            seq_gaps: 0,
            stats: TickerStats::default(),
        }
    }

    /// The seq `key`'s next sample should carry: one past the last seen.
    pub fn next_seq(&self, key: u32) -> u64 {
        self.previous
            .iter()
            .find(|p| p.key == key)
            .map_or(0, |p| p.next_seq)
    }

    /// Takes one sample: its missed periods (the lead's), the samples lost
    /// before it, its values, and a line if it is the lead's. `failure`
    /// says why its read failed, in words (asked only for the first).
    pub fn push(&mut self, s: &KernelSample, failure: impl FnOnce() -> String) {
        let at = (self.previous.iter().position(|p| p.key == s.key)).unwrap_or_else(|| {
            // the sampler started this window from 0
            self.previous.push(Previous {
                key: s.key,
                ..Previous::default()
            });
            self.previous.len() - 1
        });
        let prev = &mut self.previous[at];
        let advanced = prev.time_ns.is_none_or(|t| s.time_ns > t);
        if let Some(ends) = self.ends.as_mut().filter(|_| s.key == self.map.lead) {
            ends.missed += s.missed.saturating_sub(prev.missed);
        }
        prev.time_ns = Some(prev.time_ns.map_or(s.time_ns, |t| t.max(s.time_ns)));
        prev.missed = prev.missed.max(s.missed);
        let mut repeated = false;
        if let Some(seq) = s.seq {
            repeated = seq < prev.next_seq;
            let gap = seq.saturating_sub(prev.next_seq);
            self.seq_gaps += gap;
            self.stats.dropped += gap;
            prev.next_seq = prev.next_seq.max(seq + 1);
        }
        self.take(s, advanced && !repeated, failure);
    }

    fn take(&mut self, s: &KernelSample, advanced: bool, failure: impl FnOnce() -> String) {
        if s.failed {
            self.stats.read_errors += 1;
            self.stats.first_error.get_or_insert_with(failure);
            return;
        }
        if !advanced {
            self.stats.stale += 1;
            return;
        }
        for (latest, &(key, index)) in self.latest.iter_mut().zip(&self.map.domains) {
            if key == s.key {
                *latest = Some(s.values[index]);
            }
        }
        if s.key != self.map.lead {
            return;
        }
        if self.latest.iter().any(Option::is_none) {
            self.stats.incomplete += 1;
            return;
        }
        let latest = &self.latest;
        let fill = |values: &mut [u64]| {
            let at_latest = values.iter_mut().zip(latest);
            at_latest.for_each(|(slot, latest)| *slot = latest.unwrap_or(0));
            Ok::<(), ()>(())
        };
        if self.ends.as_mut().map(|e| e.push(s.time_ns, fill)) != Some(Ok(true)) {
            self.stats.dropped += 1;
        }
    }

    /// Sends the batch being filled to the writer (ProducerEnds::hand_over).
    pub fn hand_over(&mut self) {
        if let Some(ends) = self.ends.as_mut() {
            ends.hand_over();
        }
    }

    /// The end of a drain: the last batch handed over, the writer told
    /// there is no more (hung up); what was counted.
    pub fn finish(mut self) -> TickerStats {
        self.hand_over();
        self.stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::batch::pool;

    /// A sample of the tests: a key, a time, values, optionally a seq, a
    /// missed count and a failure.
    #[derive(Default, Clone)]
    struct Fake {
        key: u32,
        time_ns: u64,
        missed: u64,
        seq: Option<u64>,
        values: Vec<u64>,
        failed: bool,
    }

    /// Pushes `f` into `d`, its failure in words "key K failed".
    fn push(d: &mut Drain, f: &Fake) {
        let s = KernelSample {
            key: f.key,
            time_ns: f.time_ns,
            missed: f.missed,
            seq: f.seq,
            values: &f.values,
            failed: f.failed,
        };
        d.push(&s, || format!("key {} failed", f.key));
    }

    fn sample(key: u32, time_ns: u64, values: &[u64]) -> Fake {
        Fake {
            key,
            time_ns,
            values: values.to_vec(),
            ..Fake::default()
        }
    }

    /// Two packages, lead key 0 and key 2: values 0 and 1 of each, in
    /// domain order.
    fn drain() -> (Drain, crate::batch::WriterEnds) {
        let map = ValueMap {
            domains: vec![(0, 0), (0, 1), (2, 0), (2, 1)],
            lead: 0,
        };
        let (ends, writer) = pool(map.domains.len(), 100);
        (Drain::new(ends, map), writer)
    }

    #[test]
    fn each_package_fills_its_own_domains_and_the_lead_writes_the_line() {
        let (mut d, writer) = drain();
        push(&mut d, &sample(0, 10, &[100, 7])); // package 1 has not sampled: not written
        push(&mut d, &sample(2, 11, &[200, 9]));
        push(&mut d, &sample(0, 20, &[101, 8]));
        push(&mut d, &sample(2, 21, &[205, 9]));
        push(&mut d, &sample(0, 30, &[103, 8]));
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
        push(&mut d, &sample(2, 5, &[200, 9]));
        let failed = Fake {
            failed: true,
            ..sample(0, 10, &[0, 0])
        };
        push(&mut d, &failed);
        push(&mut d, &sample(0, 10, &[100, 7])); // same time as the failed one: stale
        push(&mut d, &sample(0, 20, &[101, 7]));
        d.hand_over();
        let batch = writer.full.try_recv().unwrap();
        assert_eq!(batch.len, 1);
        assert_eq!(batch.values[..4], [101, 7, 200, 9]);
        assert_eq!((d.stats.read_errors, d.stats.stale), (1, 1));
        assert_eq!(d.stats.first_error.as_deref(), Some("key 0 failed"));
    }

    #[test]
    fn the_lead_s_missed_periods_count_from_the_start_others_do_not() {
        let (mut d, writer) = drain();
        let at = |key, time_ns, missed| Fake {
            missed,
            ..sample(key, time_ns, &[1, 1])
        };
        push(&mut d, &at(2, 5, 4)); // not the lead: its skipped periods are not the lines'
        push(&mut d, &at(0, 10, 2)); // two periods skipped before the first sample
        push(&mut d, &at(0, 20, 2));
        push(&mut d, &at(0, 40, 3));
        d.hand_over();
        assert_eq!(writer.full.try_recv().unwrap().missed, 3);
    }

    #[test]
    fn seq_gaps_are_samples_lost_and_a_repeated_seq_is_stale() {
        let (mut d, writer) = drain();
        let numbered = |key, seq: u64| Fake {
            seq: Some(seq),
            ..sample(key, 10 * (seq + 1), &[seq, 0])
        };
        push(&mut d, &numbered(2, 0));
        for seq in [0, 1, 4, 5, 5, 9] {
            push(&mut d, &numbered(0, seq));
        }
        push(&mut d, &numbered(2, 3)); // 1 and 2 of the other package lost
        d.hand_over();
        assert_eq!(d.seq_gaps, 2 + 3 + 2);
        assert_eq!(d.stats.dropped, 7);
        assert_eq!(d.stats.stale, 1);
        assert_eq!((d.next_seq(0), d.next_seq(2), d.next_seq(7)), (10, 4, 0));
        assert_eq!(writer.full.try_recv().unwrap().len, 5);
    }
}
