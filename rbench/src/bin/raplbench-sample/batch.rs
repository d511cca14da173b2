//! Batches of raw samples, handed from the sampling thread to the writer
//! thread and back: a fixed pool allocated before sampling starts, so the
//! sampling thread never allocates.

use std::sync::mpsc::{sync_channel, Receiver, SyncSender};

/// Seconds of samples a batch holds, whatever the rate: the writer wakes
/// twice a second. At 1 kHz an in-kernel mechanism then makes about 14
/// system calls a second (10 drains, 2 hand-overs, 2 writer waits) where
/// 100-sample batches made 31 (issue 35's target: about 20).
pub const BATCH_S: f64 = 0.5;
/// Batches in the pool: 8 s of slack before the sampler has to drop
/// samples because the writer fell behind.
pub const POOL_BATCHES: usize = 16;

/// Samples per batch at one sample every `period_ns`: BATCH_S of them.
pub fn batch_samples(period_ns: u64) -> usize {
    ((BATCH_S * 1e9 / period_ns.max(1) as f64).ceil() as usize).max(1)
}

/// Raw samples: timestamps and, per sample, one raw value per domain.
pub struct Batch {
    /// Valid samples.
    pub len: usize,
    /// CLOCK_MONOTONIC ns when each sample was read.
    pub times: Vec<u64>,
    /// len × ndomains raw values, sample by sample.
    pub values: Vec<u64>,
    /// Ticks missed (deadlines skipped) since the previous batch.
    pub missed: u64,
}

/// The producer's ends: full batches out, empty ones back, and the batch
/// being filled (the sampling thread and the drains fill them alike).
pub struct ProducerEnds {
    full: SyncSender<Batch>,
    empty: Receiver<Batch>,
    current: Option<Batch>,
    ndomains: usize,
    /// Ticks missed since the last batch handed over.
    pub missed: u64,
}

impl ProducerEnds {
    /// Adds a sample taken at `t` whose raw values `fill` writes, one per
    /// domain: Ok(false) when there is no empty batch (the writer fell
    /// behind: the sample is dropped), `fill`'s error when it failed
    /// (nothing is added). A batch that is full goes to the writer.
    pub fn push<E>(
        &mut self,
        t: u64,
        fill: impl FnOnce(&mut [u64]) -> Result<(), E>,
    ) -> Result<bool, E> {
        if self.current.is_none() {
            self.current = self.empty.try_recv().ok();
        }
        let Some(batch) = self.current.as_mut() else {
            return Ok(false);
        };
        let (at, n) = (batch.len, self.ndomains);
        fill(&mut batch.values[at * n..(at + 1) * n])?;
        batch.times[at] = t;
        batch.len += 1;
        if batch.len == batch.times.len() {
            self.hand_over();
        }
        Ok(true)
    }

    /// Sends the batch being filled (if any) to the writer, with the ticks
    /// missed since the previous one.
    pub fn hand_over(&mut self) {
        if let Some(mut batch) = self.current.take() {
            batch.missed = std::mem::take(&mut self.missed);
            let _ = self.full.send(batch);
        }
    }
}

/// The writer's ends.
pub struct WriterEnds {
    /// Full batches to write.
    pub full: Receiver<Batch>,
    /// Where written batches go back (emptied).
    pub empty: SyncSender<Batch>,
}

/// The pool of POOL_BATCHES batches of `samples` samples and the two
/// channels that circulate them.
pub fn pool(ndomains: usize, samples: usize) -> (ProducerEnds, WriterEnds) {
    let (full_tx, full_rx) = sync_channel(POOL_BATCHES);
    let (empty_tx, empty_rx) = sync_channel(POOL_BATCHES);
    for _ in 0..POOL_BATCHES {
        let batch = Batch {
            len: 0,
            times: vec![0; samples],
            values: vec![0; samples * ndomains.max(1)],
            missed: 0,
        };
        empty_tx.send(batch).expect("receiver alive");
    }
    (
        ProducerEnds {
            full: full_tx,
            empty: empty_rx,
            current: None,
            ndomains,
            missed: 0,
        },
        WriterEnds {
            full: full_rx,
            empty: empty_tx,
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_holds_half_a_second_at_any_rate() {
        assert_eq!(batch_samples(1_000_000), 500); // 1 kHz
        assert_eq!(batch_samples(100_000), 5_000); // 10 kHz
        assert_eq!(batch_samples(1_000_000_000), 1); // 1 Hz: one sample, not none
    }

    #[test]
    fn a_full_batch_goes_to_the_writer_and_a_partial_one_on_hand_over() {
        let (mut ends, writer) = pool(2, 3);
        for t in 0..4u64 {
            let pushed = ends.push(t, |v| {
                v.copy_from_slice(&[t, t + 1]);
                Ok::<(), ()>(())
            });
            assert_eq!(pushed, Ok(true));
        }
        let full = writer.full.try_recv().expect("the first 3 samples");
        assert_eq!(
            (full.len, &full.times[..], &full.values[..]),
            (3, &[0, 1, 2][..], &[0, 1, 1, 2, 2, 3][..])
        );
        assert!(writer.full.try_recv().is_err(), "the 4th waits for more");
        ends.hand_over();
        assert_eq!(writer.full.try_recv().expect("handed over").len, 1);
    }
}
