//! Path "perf": read() of the RAPL `power` PMU's energy events (stand-in:
//! the `msr` PMU's tsc event) on every CPU of the PMU's cpumask (one per
//! package): op "read" of the first event, op "group-read" of all, from
//! that CPU and from another one of its package (ubench/paths/perf.cc).

use serde_json::{json, Value};

use crate::cpu::Cpus;
use crate::discovery::{counter_cpus, Counter, Counters, RAPL_PMU};
use crate::perf::{events_label, PerfEventSpec, PerfMode, PerfSource};
use crate::target_load::OnTarget;
use crate::plan::{meta, Machine, Plan, Planned, Reader, Reads, SourceReader};
use crate::Error;

/// perf events on one CPU, one by one (op "read": the first event only) or
/// as a group.
#[derive(Debug, Clone, PartialEq)]
pub struct PerfReads {
    /// The events.
    pub events: Vec<PerfEventSpec>,
    /// The CPU they count on.
    pub cpu: usize,
    /// read or group-read.
    pub mode: PerfMode,
}

impl Reads for PerfReads {
    fn open(&self) -> Result<Box<dyn Reader + '_>, Error> {
        PerfSource::open(&self.events, self.cpu, self.mode).map(SourceReader::boxed)
    }

    fn spec(&self) -> Value {
        json!({"perf": events_spec(&self.events), "cpu": self.cpu,
               "group": self.mode == PerfMode::Group})
    }

    /// RAPL `power` events are package-scoped (PERF_EV_CAP_READ_ACTIVE_PKG):
    /// read locally from any CPU of the package; a CPU-bound event such as
    /// the `msr/tsc/` stand-in is read on its CPU, through an IPI.
    fn on_target(&self) -> OnTarget {
        let rapl = format!("{RAPL_PMU}/");
        if self.events.iter().all(|e| e.name.starts_with(&rapl)) {
            OnTarget::Nothing
        } else {
            OnTarget::Ipi
        }
    }
}

impl PerfReads {
    /// The reads `open` describes ([`Reads::spec`]), or None.
    pub fn from_spec(open: &Value) -> Option<PerfReads> {
        let mode = match open["group"].as_bool()? {
            true => PerfMode::Group,
            false => PerfMode::EachEvent,
        };
        Some(PerfReads {
            events: events_of_spec(open.get("perf")?)?,
            cpu: usize::try_from(open["cpu"].as_u64()?).ok()?,
            mode,
        })
    }
}

/// The events [`events_spec`] describes (with no scale or unit: it leaves
/// them out), or None.
pub(super) fn events_of_spec(spec: &Value) -> Option<Vec<PerfEventSpec>> {
    let event = |e: &Value| {
        Some(PerfEventSpec {
            name: e["name"].as_str()?.to_string(),
            type_: u32::try_from(e["type"].as_u64()?).ok()?,
            config: e["config"].as_u64()?,
            scale: 0.0,
            unit: String::new(),
            cpus: serde_json::from_value(e["cpus"].clone()).ok()?,
        })
    };
    spec.as_array()?.iter().map(event).collect()
}

/// perf events as the plan's JSON names them for perf_event_open: their
/// name, attr type and config, and the CPUs they count on.
pub(super) fn events_spec(events: &[PerfEventSpec]) -> Value {
    events
        .iter()
        .map(|e| json!({"name": e.name, "type": e.type_, "config": e.config, "cpus": e.cpus}))
        .collect()
}

/// The rows of path "perf" on `machine` (its perf discovery, probed).
pub fn plan(machine: &Machine, plan: &mut Plan) {
    plan.rows.extend(perf_rows(machine.perf(), &machine.cpus()));
}

/// The counters on `cpu`, and their events.
pub(super) fn on_cpu(found: &Counters, cpu: usize) -> (Vec<&Counter>, Vec<PerfEventSpec>) {
    let counters: Vec<&Counter> = found
        .counters
        .iter()
        .filter(|c| c.cpu == Some(cpu))
        .collect();
    let events = counters
        .iter()
        .filter_map(|c| c.perf_event().cloned())
        .collect();
    (counters, events)
}

/// The rows of path "perf" from `perf`, the discovery (probed or not), at
/// both placements of each CPU among `cpus`.
pub fn perf_rows(perf: &Result<Counters, Error>, cpus: &Cpus) -> Vec<Planned> {
    let ops = [PerfMode::EachEvent, PerfMode::Group];
    let found = match perf {
        Ok(found) => found,
        Err(e) => {
            let row = |m: PerfMode| {
                Planned::unavailable(meta("perf", m.op(), None, None, None, None), e.to_string())
            };
            return ops.into_iter().map(row).collect();
        }
    };
    let mut rows = Vec::new();
    for cpu in counter_cpus(&found.counters) {
        let (counters, events) = on_cpu(found, cpu);
        for mode in ops {
            let n = match mode {
                PerfMode::EachEvent => 1,
                PerfMode::Group => events.len(),
            };
            let (counters, events) = (&counters[..n], &events[..n]);
            let liveness = Counters::liveness_of(counters.iter().copied());
            let unreadable = counters.iter().find_map(|c| c.readable.clone().err());
            for p in cpus.package_placements(cpu) {
                let meta = meta(
                    "perf",
                    mode.op(),
                    Some(&events_label(events)),
                    Some(p),
                    found.stand_in.as_deref(),
                    liveness.clone(),
                );
                let reads = PerfReads {
                    events: events.to_vec(),
                    cpu,
                    mode,
                };
                rows.push(Planned::run_unless(meta, unreadable.clone(), reads));
            }
        }
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::discovery::{fixture_energy_events, perf_counters, perf_counters_of};
    use crate::liveness::{Liveness, Verdict};
    use crate::roots::{CPU, PMU};
    use crate::testutil::two_packages_sys;
    use std::path::Path;
    use std::time::Duration;

    /// The two-package fixture's CPUs.
    fn fixture_cpus() -> Cpus {
        Cpus::at(two_packages_sys().join("devices/system/cpu"))
    }

    /// The two-package fixture's RAPL events, as discovery would find them
    /// on a machine where they open.
    fn two_packages() -> Result<Counters, Error> {
        let sys = two_packages_sys();
        let found = fixture_energy_events(&sys);
        Ok(perf_counters_of(&found, &sys.join("devices/system/cpu")))
    }

    #[test]
    fn perf_rows_cover_every_package_of_the_cpumask() {
        let cpus = fixture_cpus();
        let rows = perf_rows(&two_packages(), &cpus);
        let mut expected = Vec::new();
        for cpu in [0, 2] {
            for (op, target) in [
                ("read", "power/energy-pkg/"),
                ("group-read", "power/{energy-pkg,energy-ram}/"),
            ] {
                for p in cpus.package_placements(cpu) {
                    expected.push(format!("perf/{op}/{target}@{}", p.label()));
                }
            }
        }
        let ids: Vec<String> = rows.iter().map(|r| r.id(None)).collect();
        assert_eq!(ids, expected);
        assert!(rows.iter().all(|r| r.reads.is_ok()));
        let package_1: Vec<Option<usize>> = rows
            .iter()
            .filter(|r| r.reads_as::<PerfReads>().is_some_and(|p| p.cpu == 2))
            .map(|r| r.meta.target_cpu)
            .collect();
        assert_eq!(package_1.len(), 2 * cpus.package_placements(2).len());
        assert!(package_1.iter().all(|&t| t == Some(2)));
        let group = rows[cpus.package_placements(0).len()]
            .reads_as::<PerfReads>()
            .unwrap();
        assert_eq!((group.mode, group.events.len()), (PerfMode::Group, 2));
    }

    #[test]
    fn perf_rows_carry_the_worst_verdict_of_what_they_read() {
        let mut found = two_packages().unwrap();
        // as if probed: energy-ram of package 1 is frozen
        for c in &mut found.counters {
            c.liveness = Some(Liveness::live());
        }
        found.counters[3].liveness = Some(Liveness::frozen(
            "power/energy-ram/ on CPU 2",
            Duration::from_millis(10),
            9,
        ));
        let rows = perf_rows(&Ok(found), &fixture_cpus());
        let verdict = |op: &str, cpu: usize| {
            rows.iter()
                .find(|r| r.meta.op == op && r.meta.target_cpu == Some(cpu))
                .map(|r| (r.meta.liveness, r.meta.liveness_note.is_some()))
                .unwrap()
        };
        assert_eq!(verdict("read", 2), (Some(Verdict::Live), false));
        assert_eq!(verdict("group-read", 2), (Some(Verdict::Frozen), true));
        assert_eq!(verdict("group-read", 0), (Some(Verdict::Live), false));
    }

    #[test]
    fn perf_rows_without_events_are_unavailable_with_the_reason() {
        let missing: Result<Counters, Error> = Err(Error::Unavailable("no PMU".into()));
        let rows = perf_rows(&missing, &fixture_cpus());
        let ops: Vec<&str> = rows.iter().map(|r| r.meta.op.as_str()).collect();
        assert_eq!(ops, ["read", "group-read"]);
        assert!(rows.iter().all(|r| r.reason() == Some("no PMU")));
    }

    #[test]
    fn perf_rows_on_this_machine_read_the_first_event_and_group_read_all() {
        let found = perf_counters(Path::new(PMU.real()), Path::new(CPU.real()));
        let cpus = Cpus::at(CPU.real());
        let rows = perf_rows(&found, &cpus);
        if let Err(e) = &found {
            return eprintln!("skipped: {e}");
        }
        let first = rows[0].meta.target_cpu;
        let n = cpus.placements(first).len();
        let ops: Vec<&str> = rows
            .iter()
            .take(2 * n)
            .map(|r| r.meta.op.as_str())
            .collect();
        assert!(
            ops[..n].iter().all(|&op| op == "read")
                && ops[n..].iter().all(|&op| op == "group-read")
        );
        if rows[0].meta.stand_in.is_some() {
            assert_eq!(rows.len(), 2 * n); // the stand-in: one CPU
            assert!(rows[0].id(None).starts_with("perf/read/msr/tsc/@"));
        }
    }
}
