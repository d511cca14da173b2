//! The user-space side of the in-kernel sampler (--mechanism ebpf): the BPF
//! program (bpf/counters.bpf.c) samples on its own, on a CPU-pinned
//! bpf_timer re-armed at absolute deadlines, and pushes each sample into a
//! ring buffer without waking anyone. This thread drains the ring every
//! DRAIN_EVERY into the same batches the writer takes from the user-space
//! sampler: user space never wakes at the sampling rate.

use rbench::ebpf::{BpfSampler, RbSample};
use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};
use std::time::Duration;

use crate::batch::{Batch, ProducerEnds};
use crate::ticker::TickerStats;

/// How often the ring buffer is drained.
pub const DRAIN_EVERY: Duration = Duration::from_millis(100);

struct Drain {
    /// None once hung up.
    ends: Option<ProducerEnds>,
    current: Option<Batch>,
    ndomains: usize,
    cpu: u32,
    last_missed: Option<u64>,
    missed: u64,
    stats: TickerStats,
}

impl Drain {
    fn push(&mut self, s: &RbSample) {
        if s.cpu != self.cpu {
            return;
        }
        let seen = self.last_missed.replace(s.missed).unwrap_or(s.missed);
        self.missed += s.missed.saturating_sub(seen);
        if s.err != 0 {
            self.stats.read_errors += 1;
            if self.stats.first_error.is_none() {
                self.stats.first_error = Some(format!(
                    "bpf_perf_event_read_value failed in the kernel: {}",
                    std::io::Error::from_raw_os_error(-s.err)
                ));
            }
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
        batch.times[at] = s.time_ns;
        batch.values[at * self.ndomains..(at + 1) * self.ndomains]
            .copy_from_slice(&s.value[..self.ndomains]);
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

/// Drains `sampler`'s samples of `cpu` until `stop` is set. `started`
/// receives Ok once the ring buffer is attached.
pub fn run(
    sampler: &BpfSampler,
    cpu: usize,
    stop: &AtomicBool,
    ends: ProducerEnds,
    started: std::sync::mpsc::SyncSender<Result<(), String>>,
    done: Arc<Barrier>,
) -> TickerStats {
    let drain = RefCell::new(Drain {
        ends: Some(ends),
        current: None,
        ndomains: sampler.ncounters(),
        cpu: cpu as u32,
        last_missed: None,
        missed: 0,
        stats: TickerStats::default(),
    });
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
        std::thread::sleep(DRAIN_EVERY);
        let _ = ring.consume();
    }
    let _ = ring.consume();
    drop(ring);
    let mut drain = drain.into_inner();
    drain.hand_over();
    drain.ends = None; // hang up
    done.wait();
    drain.stats
}
