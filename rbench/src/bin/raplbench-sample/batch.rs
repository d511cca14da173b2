//! Batches of raw samples, handed from the sampling thread to the writer
//! thread and back: a fixed pool allocated before sampling starts, so the
//! sampling thread never allocates.

use std::sync::mpsc::{sync_channel, Receiver, SyncSender};

/// Samples per batch: 100 ms at 1 kHz.
pub const BATCH_SAMPLES: usize = 100;
/// Batches in the pool: about 6 s of slack at 1 kHz before the sampler
/// has to drop samples because the writer fell behind.
pub const POOL_BATCHES: usize = 64;

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

impl Batch {
    fn with_capacity(ndomains: usize) -> Batch {
        Batch {
            len: 0,
            times: vec![0; BATCH_SAMPLES],
            values: vec![0; BATCH_SAMPLES * ndomains.max(1)],
            missed: 0,
        }
    }

    /// Whether no more samples fit.
    pub fn is_full(&self) -> bool {
        self.len == self.times.len()
    }
}

/// The producer's ends: full batches out, empty ones back.
pub struct ProducerEnds {
    /// Where full batches go.
    pub full: SyncSender<Batch>,
    /// Where empty batches come back from.
    pub empty: Receiver<Batch>,
}

/// The writer's ends.
pub struct WriterEnds {
    /// Full batches to write.
    pub full: Receiver<Batch>,
    /// Where written batches go back (emptied).
    pub empty: SyncSender<Batch>,
}

/// The pool of POOL_BATCHES batches and the two channels that circulate them.
pub fn pool(ndomains: usize) -> (ProducerEnds, WriterEnds) {
    let (full_tx, full_rx) = sync_channel(POOL_BATCHES);
    let (empty_tx, empty_rx) = sync_channel(POOL_BATCHES);
    for _ in 0..POOL_BATCHES {
        empty_tx
            .send(Batch::with_capacity(ndomains))
            .expect("receiver alive");
    }
    (
        ProducerEnds {
            full: full_tx,
            empty: empty_rx,
        },
        WriterEnds {
            full: full_rx,
            empty: empty_tx,
        },
    )
}
