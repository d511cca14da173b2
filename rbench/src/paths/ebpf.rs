//! Paths "ebpf-lookup" and "ebpf-mmap": polling the slot that the BPF
//! sampler (bpf/counters.bpf.c) fills at 1 kHz on every CPU of the energy
//! events' cpumask: one bpf() lookup syscall (op "lookup") or a load from
//! the mmapped array (op "load"), from that CPU and from another one of its
//! package (ubench/paths/ebpf.cc). The sampler runs as long as its rows.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::cpu::Cpus;
use crate::discovery::{counter_cpus, Counters};
use crate::ebpf::slot_check::{check_slots, slot_error_text, SLOT_CHECK, SLOT_POLL};
use crate::ebpf::{BpfConfig, BpfSampler, RbSlot, SlotRead, TickCounts};
use crate::hint::do_not_optimize;
use crate::perf::events_label;
use crate::plan::{meta, Plan, Planned, Reader, Reads};
use crate::Error;

use super::perf::on_cpu;
use super::Machine;

/// A CPU's slot of the plan's running [`BpfSampler`].
#[derive(Clone)]
pub struct EbpfReads {
    /// The sampler, running as long as a row reads it.
    pub sampler: Arc<BpfSampler>,
    /// Whose slot.
    pub cpu: usize,
    /// lookup or load.
    pub via: SlotRead,
}

impl std::fmt::Debug for EbpfReads {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EbpfReads")
            .field("cpu", &self.cpu)
            .field("via", &self.via)
            .finish_non_exhaustive()
    }
}

impl Reads for EbpfReads {
    fn open(&self) -> Result<Box<dyn Reader + '_>, Error> {
        Ok(Box::new(SlotReader {
            sampler: &self.sampler,
            cpu: self.cpu,
            via: self.via,
            slot: RbSlot::default(),
            before: self.sampler.tick_counts(self.cpu).ok(),
            started: Instant::now(),
        }))
    }
}

/// One copy of a CPU's slot per operation, by lookup or by load.
struct SlotReader<'a> {
    sampler: &'a BpfSampler,
    cpu: usize,
    via: SlotRead,
    /// The last copy.
    slot: RbSlot,
    /// The slot's tick accounting when it was opened.
    before: Option<TickCounts>,
    /// When it was opened.
    started: Instant,
}

impl Reader for SlotReader<'_> {
    fn read(&mut self) -> Result<(), Error> {
        self.read_n(1)
    }

    /// The timed loop copies into a slot on the stack, as a poller would,
    /// and keeps the last copy.
    fn read_n(&mut self, n: u64) -> Result<(), Error> {
        let (sampler, cpu) = (self.sampler, self.cpu);
        let mut slot = self.slot;
        let result = match self.via {
            SlotRead::Lookup => (0..n).try_for_each(|_| {
                let result = sampler.lookup(cpu, &mut slot);
                do_not_optimize(&slot);
                result
            }),
            // the slot is found once, as a poller holds it
            SlotRead::Load => sampler.slot(cpu).and_then(|found| {
                (0..n).try_for_each(|_| {
                    let result = found.load(&mut slot);
                    do_not_optimize(&slot);
                    result
                })
            }),
        };
        self.slot = slot;
        result
    }

    /// A slot that failed or stopped ticking held no data: not a
    /// measurement. Judged from the tick accounting before and after
    /// (err_ticks counts every failed read, not just the last), and only
    /// when the run lasted some periods (else Criterion listed or filtered
    /// the benchmark out).
    fn no_data(&mut self) -> Option<String> {
        let (cpu, slot) = (self.cpu, &self.slot);
        let before = self.before?;
        let after = self.sampler.tick_counts(cpu).ok()?;
        let periods =
            self.started.elapsed().as_nanos() / u128::from(self.sampler.period_ns().max(1));
        if periods < 10 {
            return None;
        }
        let failed = after.err_ticks.saturating_sub(before.err_ticks);
        if failed > 0 {
            Some(format!(
                "BPF slot of CPU {cpu}: {failed} failed reads during the timing (last {}): not data",
                slot_error_text(slot.err)
            ))
        } else if after.ticks == before.ticks {
            Some(format!(
                "BPF slot of CPU {cpu}: no tick during the timing: not data"
            ))
        } else {
            None
        }
    }
}

/// The rows of paths "ebpf-lookup" and "ebpf-mmap" on `machine` (its perf
/// discovery); the sampler they read runs as long as they do.
pub fn plan(machine: &Machine, plan: &mut Plan) {
    plan.rows
        .extend(ebpf_rows(machine.perf(), &machine.cpus(), SLOT_CHECK));
}

/// Paths "ebpf-lookup" and "ebpf-mmap": starts the sampler on the energy
/// events on every CPU of their cpumask and reads each CPU's slot at both
/// placements among `cpus`; a slot that is no data ([`check_slots`], watched for
/// `check`) makes its rows unavailable with the reason. The runnable rows
/// share the sampler: it stops when the last of them is dropped (at once
/// if none runs).
pub fn ebpf_rows(perf: &Result<Counters, Error>, cpus: &Cpus, check: Duration) -> Vec<Planned> {
    let unavailable = |label: &str, stand_in: Option<&str>, reason: &str| {
        vec![
            Planned::unavailable(
                meta("ebpf-lookup", "lookup", Some(label), None, stand_in, None),
                reason,
            ),
            Planned::unavailable(
                meta("ebpf-mmap", "load", Some(label), None, stand_in, None),
                reason,
            ),
        ]
    };
    let found = match perf {
        Ok(found) => found,
        Err(e) => return unavailable("", None, &e.to_string()),
    };
    let slot_cpus = counter_cpus(&found.counters);
    let (_, events) = on_cpu(found, slot_cpus[0]);
    let label = events_label(&events);
    let stand_in = found.stand_in.as_deref();
    let config = BpfConfig {
        cpus: Some(slot_cpus.clone()),
        ..BpfConfig::default()
    };
    let sampler = match BpfSampler::start(&events, &config) {
        Ok(sampler) => Arc::new(sampler),
        Err(e) => return unavailable(&label, stand_in, &e.to_string()),
    };
    let problems = check_slots(
        &slot_cpus,
        sampler.cpus(),
        |cpu, slot| sampler.load(cpu, slot),
        sampler.trigger(),
        check,
        SLOT_POLL,
    );
    let mut rows = Vec::new();
    for (cpu, problem) in slot_cpus.into_iter().zip(problems) {
        let (counters, _) = on_cpu(found, cpu);
        let liveness = Counters::liveness_of(counters);
        for p in cpus.package_placements(cpu) {
            for (path, op, via) in [
                ("ebpf-lookup", "lookup", SlotRead::Lookup),
                ("ebpf-mmap", "load", SlotRead::Load),
            ] {
                let meta = meta(path, op, Some(&label), Some(p), stand_in, liveness.clone());
                rows.push(match &problem {
                    Some(why) => Planned::unavailable(meta, why),
                    None => Planned::run(
                        meta,
                        EbpfReads {
                            sampler: sampler.clone(),
                            cpu,
                            via,
                        },
                    ),
                });
            }
        }
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::discovery::perf_counters;
    use crate::roots::{CPU, PMU};
    use std::path::Path;

    #[test]
    fn ebpf_rows_without_events_are_unavailable_with_the_reason() {
        let missing: Result<Counters, Error> = Err(Error::Unavailable("no PMU".into()));
        let rows = ebpf_rows(&missing, &Cpus::at(CPU.real()), Duration::from_millis(10));
        let ids: Vec<(&str, &str)> = rows
            .iter()
            .map(|r| (r.meta.path.as_str(), r.meta.op.as_str()))
            .collect();
        assert_eq!(ids, [("ebpf-lookup", "lookup"), ("ebpf-mmap", "load")]);
        assert!(rows.iter().all(|r| r.reason() == Some("no PMU")));
    }

    #[test]
    fn ebpf_rows_on_this_machine_read_a_running_sampler_or_say_why() {
        let found = perf_counters(Path::new(PMU.real()), Path::new(CPU.real()));
        let rows = ebpf_rows(&found, &Cpus::at(CPU.real()), SLOT_CHECK);
        let Some(runs) = rows.iter().find(|r| r.reads.is_ok()) else {
            let why = rows[0].reason().unwrap();
            return eprintln!("skipped: no eBPF row runs here: {why}");
        };
        let reads = runs.reads_as::<EbpfReads>().unwrap();
        assert_eq!(runs.meta.target_cpu, Some(reads.cpu));
        let mut reader = runs.reads.as_ref().unwrap().open().unwrap();
        reader.read().unwrap();
    }
}
