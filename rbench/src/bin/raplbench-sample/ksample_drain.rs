//! The user-space side of the ksample module (--mechanism kernel): the
//! module's hrtimer on each package's lead CPU reads the package's energy
//! MSRs and queues a record; this thread drains /proc/ksample/records every
//! DRAIN_EVERY (drain.rs: the lines, the other packages, what is counted).
//!
//! A read returns package 0's queue before package 1's, so each drain's
//! records are put in time order before they are taken: a lead record then
//! meets the other packages' values of the same moment. When the phase
//! stops, the timers are stopped first and what they queued until then is
//! drained, then the losses are reconciled with the module's count.

use rbench::ksample::{Record, Running, Status};
use rbench::msr::msr_hex;
use std::sync::atomic::AtomicBool;

use crate::batch::ProducerEnds;
use crate::drain::{until_stopped, Drain, KernelSample, ValueMap};
use crate::phase::Started;
use crate::ticker::TickerStats;

/// A record as the drain takes it.
fn sample(record: &Record) -> KernelSample<'_> {
    KernelSample {
        key: u32::from(record.package),
        time_ns: record.time_ns,
        missed: record.missed,
        seq: Some(record.seq),
        values: &record.value, // slots of the package's msrs (value_slots)
        failed: record.faults != 0,
    }
}

/// Why `record`'s read failed, in words: which of its package's MSRs
/// (`msrs[p]`: package p's, in value order) faulted.
fn failure(record: &Record, msrs: &[Vec<u32>]) -> String {
    let msrs = msrs
        .get(usize::from(record.package))
        .map_or(&[][..], Vec::as_slice);
    let faulted: Vec<String> = (msrs.iter().enumerate())
        .filter(|(i, _)| record.faults & (1 << i) != 0)
        .map(|(_, &m)| msr_hex(m))
        .collect();
    format!(
        "rdmsr {} faulted in the ksample hrtimer on CPU {} (package {}; faults {:#x})",
        faulted.join(","),
        record.cpu,
        record.package,
        record.faults
    )
}

/// Takes `records` into `drain` in time order (packages interleaved).
fn take(drain: &mut Drain, records: &mut [Record], msrs: &[Vec<u32>]) {
    records.sort_unstable_by_key(|r| (r.time_ns, r.package, r.seq));
    for record in records.iter() {
        drain.push(&sample(record), || failure(record, msrs));
    }
}

/// Reads what is queued and takes it; a failed read is the phase's first
/// error if there is none yet (what was read before it is taken).
fn drain_queued(
    running: &mut Running,
    drain: &mut Drain,
    records: &mut Vec<Record>,
    msrs: &[Vec<u32>],
) {
    records.clear();
    if let Err(e) = running.records().read_all(records) {
        drain.stats.first_error.get_or_insert(e.to_string());
    }
    take(drain, records, msrs);
}

/// The records lost after the last one read (the control file's next_seq
/// says how many were numbered), then the cross-check: the seq numbers and
/// the module's overruns should count the same losses; where they do not,
/// the larger is counted, and said.
fn reconcile(drain: &mut Drain, status: &Status) {
    let tail: u64 = (status.packages.iter())
        .map(|p| p.counters.next_seq.saturating_sub(drain.next_seq(p.index)))
        .sum();
    drain.seq_gaps += tail;
    drain.stats.dropped += tail;
    let overruns: u64 = status.packages.iter().map(|p| p.counters.overruns).sum();
    if overruns != drain.seq_gaps {
        rbench::say!(
            "ksample counted {overruns} records dropped on a full ring (overruns), but {} are \
             missing from the seq numbers read; {} counted as dropped",
            drain.seq_gaps,
            overruns.max(drain.seq_gaps)
        );
        drain.stats.dropped += overruns.saturating_sub(drain.seq_gaps);
    }
}

/// Drains the module's records into lines of the domains of `map` until
/// `stop` is set, then stops its timers (`running`'s guard would on any
/// other way out) and drains the rest. `msrs[p]`: package p's MSRs, in
/// value order. `started` receives Ok at once: the timers already run.
pub fn run(
    mut running: Running,
    msrs: Vec<Vec<u32>>,
    map: ValueMap,
    stop: &AtomicBool,
    ends: ProducerEnds,
    started: Started,
) -> TickerStats {
    let mut drain = Drain::new(ends, map);
    // a drain's worth at 1 kHz on two packages before the vector grows
    let mut records: Vec<Record> = Vec::with_capacity(2 * rbench::ksample::READ_RECORDS);
    let _ = started.send(Ok(()));
    until_stopped(stop, || {
        drain_queued(&mut running, &mut drain, &mut records, &msrs)
    });
    if let Err(e) = running.stop() {
        rbench::say!("stopping the ksample timers failed: {e}");
    }
    drain_queued(&mut running, &mut drain, &mut records, &msrs);
    match running.module().status() {
        Ok(status) => reconcile(&mut drain, &status),
        Err(e) => {
            drain.stats.first_error.get_or_insert(e.to_string());
        }
    }
    drain.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::batch::pool;
    use rbench::ksample::{parse, PackageCounters};

    fn record(package: u16, seq: u64, time_ns: u64, values: &[u64]) -> Record {
        let mut r = Record {
            seq,
            time_ns,
            package,
            cpu: package * 28,
            nvalues: values.len() as u32,
            ..Record::default()
        };
        r.value[..values.len()].copy_from_slice(values);
        r
    }

    /// Two packages, package 0 the lead: 0x611 (slot 0) and 0x619 (slot 1)
    /// of each.
    fn drain() -> (Drain, crate::batch::WriterEnds, Vec<Vec<u32>>) {
        let map = ValueMap {
            domains: vec![(0, 0), (0, 1), (1, 0), (1, 1)],
            lead: 0,
        };
        let (ends, writer) = pool(map.domains.len(), 100);
        (Drain::new(ends, map), writer, vec![vec![0x611, 0x619]; 2])
    }

    #[test]
    fn one_read_s_packages_are_taken_in_time_order() {
        let (mut d, writer, msrs) = drain();
        // as a read returns them: package 0's queue, then package 1's
        let mut read = vec![
            record(0, 0, 100, &[10, 1]),
            record(0, 1, 200, &[11, 1]),
            record(0, 2, 300, &[12, 2]),
            record(1, 0, 101, &[50, 5]),
            record(1, 1, 201, &[51, 5]),
            record(1, 2, 301, &[52, 6]),
        ];
        take(&mut d, &mut read, &msrs);
        d.hand_over();
        let batch = writer.full.try_recv().unwrap();
        // the first lead record came before package 1 had sampled
        assert_eq!(batch.len, 2);
        assert_eq!(batch.times[..2], [200, 300]);
        assert_eq!(batch.values[..8], [11, 1, 50, 5, 12, 2, 51, 5]);
        assert_eq!(d.stats.incomplete, 1);
    }

    #[test]
    fn faults_are_read_errors_and_missed_is_the_lead_s_delta() {
        let (mut d, writer, msrs) = drain();
        let mut faulted = record(0, 1, 200, &[0, 1]);
        faulted.faults = 0b01;
        let mut late = record(0, 2, 400, &[13, 2]);
        late.missed = 1;
        let mut other = record(1, 1, 201, &[51, 5]);
        other.missed = 5;
        let mut read = vec![
            record(0, 0, 100, &[10, 1]),
            faulted,
            late,
            record(1, 0, 101, &[50, 5]),
            other,
        ];
        take(&mut d, &mut read, &msrs);
        d.hand_over();
        let batch = writer.full.try_recv().unwrap();
        assert_eq!((batch.len, batch.missed), (1, 1));
        assert_eq!(batch.values[..4], [13, 2, 51, 5]);
        assert_eq!(d.stats.read_errors, 1);
        assert_eq!(
            d.stats.first_error.as_deref(),
            Some("rdmsr 0x611 faulted in the ksample hrtimer on CPU 0 (package 0; faults 0x1)")
        );
    }

    fn status(counters: [PackageCounters; 2]) -> Status {
        let mut s = parse(
            "# ksample 1\nstate: stopped\nmode: read\nrate_hz: 1000\nrecord_size: 88\n\
             ring_records: 64\npackages: 2\n\
             package 0 cpu 0 unit_msr 0x606 unit 0xa0e03 msrs 0x611,0x619 faulting -\n\
             package 1 cpu 28 unit_msr 0x606 unit 0xa0e03 msrs 0x611,0x619 faulting -\n",
        )
        .unwrap();
        for (p, c) in s.packages.iter_mut().zip(counters) {
            p.counters = c;
        }
        s
    }

    #[test]
    fn records_lost_in_gaps_and_after_the_last_read_agree_with_the_overruns() {
        let (mut d, _writer, msrs) = drain();
        let mut read = vec![
            record(0, 0, 100, &[10, 1]),
            record(0, 3, 400, &[13, 1]), // 1 and 2 dropped
            record(1, 0, 101, &[50, 5]),
        ];
        take(&mut d, &mut read, &msrs);
        assert_eq!(d.stats.dropped, 2);
        // package 0 numbered 5 (3 and 4 dropped after the last read), package 1 numbered 2
        let counted = |next_seq, overruns| PackageCounters {
            next_seq,
            overruns,
            ..PackageCounters::default()
        };
        reconcile(&mut d, &status([counted(5, 3), counted(2, 1)]));
        assert_eq!((d.seq_gaps, d.stats.dropped), (4, 4));
        // the module counting more than the seq numbers show: the larger counts
        let (mut d, _writer, msrs) = drain();
        take(&mut d, &mut [record(0, 0, 100, &[10, 1])], &msrs);
        reconcile(&mut d, &status([counted(1, 2), counted(0, 0)]));
        assert_eq!(d.stats.dropped, 2);
    }
}
