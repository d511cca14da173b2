//! Paths "ebpf-lookup" and "ebpf-mmap": polling the slot that the BPF
//! sampler (bpf/counters.bpf.c) fills at 1 kHz on every CPU of the energy
//! events' cpumask: one bpf() lookup syscall (op "lookup") or a load from
//! the mmapped array (op "load"), from that CPU and from another one of its
//! package (ubench/paths/ebpf.cc). The sampler runs as long as its rows.
//! For ubench alone, rows of op "tick" (metric rate_hz): the program's
//! firing rate on every CPU this process may run on, where ubench runs it.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::cpu::Cpus;
use crate::discovery::{counter_cpus, Counters};
use crate::ebpf::slot_check::{check_slots, slot_error_text, SLOT_CHECK, SLOT_POLL};
use crate::ebpf::{BpfConfig, BpfSampler, RbSlot, SlotRead, TickCounts};
use crate::hint::do_not_optimize;
use crate::perf::events_label;
use crate::target_load::OnTarget;
use crate::plan::{meta, ForOthers, Machine, Plan, Planned, Reader, Reads};
use crate::row_meta::RowMeta;
use crate::Error;

use super::perf::{events_of_spec, events_spec, on_cpu};
/// A CPU's slot of the plan's running [`BpfSampler`].
#[derive(Clone)]
pub struct EbpfReads {
    /// The sampler, running as long as a row reads it.
    pub sampler: Arc<BpfSampler>,
    /// Whose slot.
    pub cpu: usize,
    /// lookup or load.
    pub via: SlotRead,
    /// The sampler as the plan's JSON describes it: its events, CPUs and
    /// period.
    pub bpf: Value,
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

    fn spec(&self) -> Value {
        let (_, via, _) = SLOT_READS
            .iter()
            .find(|r| r.2 == self.via)
            .expect("a slot read");
        json!({"bpf": self.bpf, "cpu": self.cpu, "via": via})
    }

    /// A load of what the BPF program published runs nothing on the
    /// target, but that program's own 1 kHz timer ticks there: the target
    /// is never idle.
    fn on_target(&self) -> OnTarget {
        OnTarget::Ticks
    }
}

impl EbpfReads {
    /// The reads `open` describes ([`Reads::spec`]), or None: on the
    /// sampler of `started` that has the same "bpf", else on one started
    /// now and kept there (the error if it does not start).
    pub fn from_spec(
        open: &Value,
        started: &mut Vec<(Value, Arc<BpfSampler>)>,
    ) -> Option<Result<EbpfReads, Error>> {
        let bpf = open.get("bpf")?;
        let (_, _, via) = SLOT_READS.into_iter().find(|r| r.1 == open["via"])?;
        let cpu = usize::try_from(open["cpu"].as_u64()?).ok()?;
        let sampler = match started.iter().find(|(b, _)| b == bpf) {
            Some((_, sampler)) => sampler.clone(),
            None => {
                let events = events_of_spec(&bpf["events"])?;
                let config = BpfConfig {
                    period_ns: bpf["period_ns"].as_u64()?,
                    cpus: Some(serde_json::from_value(bpf["cpus"].clone()).ok()?),
                    ..BpfConfig::default()
                };
                let sampler = match BpfSampler::start(&events, &config) {
                    Ok(sampler) => Arc::new(sampler),
                    Err(e) => return Some(Err(e)),
                };
                started.push((bpf.clone(), sampler.clone()));
                sampler
            }
        };
        Some(Ok(EbpfReads {
            sampler,
            cpu,
            via,
            bpf: bpf.clone(),
        }))
    }
}

/// How each path reads a slot: its path, its op (also its "via" in the
/// plan's JSON) and the read.
const SLOT_READS: [(&str, &str, SlotRead); 2] = [
    ("ebpf-lookup", "lookup", SlotRead::Lookup),
    ("ebpf-mmap", "load", SlotRead::Load),
];

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
/// discovery).
pub fn plan(machine: &Machine, plan: &mut Plan) {
    plan.rows
        .extend(ebpf_rows(machine.perf(), &machine.cpus(), SLOT_CHECK));
}

/// The rows of the program's firing rate (op "tick", ubench's alone): one
/// per CPU of `on`, where ubench runs the sampler `bpf` (its events on
/// those CPUs), with the trigger the plan's sampler got.
fn tick_rows(
    on: &[usize],
    bpf: &Value,
    sampler: &BpfSampler,
    stand_in: Option<&str>,
) -> Vec<Planned> {
    let hz = 1_000_000_000 / sampler.period_ns().max(1);
    let target = format!("{}, {hz} Hz requested", sampler.trigger());
    let mut bpf = bpf.clone();
    bpf["cpus"] = json!(on);
    on.iter()
        .map(|&cpu| {
            let meta = RowMeta {
                target_cpu: Some(cpu),
                ..meta("ebpf-mmap", "tick", Some(&target), None, stand_in, None)
            };
            let open = json!({"bpf": bpf, "cpu": cpu, "via": "tick"});
            Planned::run(meta, ForOthers(open)).only_for(&["gbench"], RATE)
        })
        .collect()
}

/// The tick rows' metric and unit.
const RATE: (&str, &str) = ("rate_hz", "Hz");

/// Paths "ebpf-lookup" and "ebpf-mmap": starts the sampler on the energy
/// events on every CPU of their cpumask and reads each CPU's slot at both
/// placements among `cpus`; a slot that is no data ([`check_slots`], watched for
/// `check`) makes its rows unavailable with the reason. The runnable rows
/// share the sampler: it stops when the last of them is dropped (at once
/// if none runs).
pub fn ebpf_rows(perf: &Result<Counters, Error>, cpus: &Cpus, check: Duration) -> Vec<Planned> {
    let unavailable = |label: &str, stand_in: Option<&str>, reason: &str| {
        let row = |path, op, target| {
            Planned::unavailable(meta(path, op, Some(target), None, stand_in, None), reason)
        };
        vec![
            row("ebpf-lookup", "lookup", label),
            row("ebpf-mmap", "load", label),
            row("ebpf-mmap", "tick", "").only_for(&["gbench"], RATE),
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
    let bpf = json!({"events": events_spec(&events), "cpus": slot_cpus,
                     "period_ns": config.period_ns});
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
            for (path, op, via) in SLOT_READS {
                let meta = meta(path, op, Some(&label), Some(p), stand_in, liveness.clone());
                let reads = EbpfReads {
                    sampler: sampler.clone(),
                    cpu,
                    via,
                    bpf: bpf.clone(),
                };
                rows.push(Planned::run_unless(meta, problem.clone(), reads));
            }
        }
    }
    rows.extend(tick_rows(&cpus.allowed(), &bpf, &sampler, stand_in));
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
        assert_eq!(
            ids,
            [
                ("ebpf-lookup", "lookup"),
                ("ebpf-mmap", "load"),
                ("ebpf-mmap", "tick")
            ]
        );
        assert!(rows.iter().all(|r| r.reason() == Some("no PMU")));
        // the tick rate: ubench's alone
        assert!(rows[2].timed_by("gbench") && !rows[2].timed_by("criterion"));
        assert_eq!(rows[2].metric, ("rate_hz", "Hz"));
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
        // a row opened again from its spec runs a sampler of its own
        let spec = runs.reads.as_ref().unwrap().spec();
        let mut started = Vec::new();
        let again = EbpfReads::from_spec(&spec, &mut started).unwrap().unwrap();
        assert_eq!(again.spec(), spec);
        assert!(!Arc::ptr_eq(&again.sampler, &reads.sampler));
        again.open().unwrap().read().unwrap();
    }
}
