//! The perf discovery: the RAPL `power` PMU's energy events on every CPU of
//! its cpumask (one CPU per package), or the `msr/tsc/` stand-in on one
//! CPU. The eBPF program reads the same events through
//! bpf_perf_event_read_value, so it shares this discovery.

use std::path::Path;

use super::perf_events::discover_pmu_events;
use super::{Counter, Counters, Route};
use crate::cpu::Cpus;
use crate::liveness::perf_unit_problem;
use crate::perf::{events_label, open_counter, PerfEventSpec};
use crate::Error;

/// The energy counters a perf-based path reads, and whether they are a stand-in.
#[derive(Debug, Clone, PartialEq)]
pub struct EnergyEvents {
    /// RAPL energy-* events (energy-pkg first), or the msr/tsc/ stand-in.
    pub events: Vec<PerfEventSpec>,
    /// None for real RAPL events; else why a substitute is measured.
    pub stand_in: Option<String>,
}

/// The RAPL PMU's name under /sys/bus/event_source/devices.
pub const RAPL_PMU: &str = "power";

/// The RAPL `power` PMU's energy-* events (energy-pkg first) under `root`,
/// or, where there are none, the `msr` PMU's tsc event as a labeled
/// stand-in; only events that open are kept (ubench's energy_counters()).
/// A RAPL event must open on every CPU of its cpumask: the first that does
/// not makes them all unavailable, the error naming `"<event> on CPU <n>"`.
/// A PMU without a cpumask counts on the online CPUs under `cpu_root`.
pub fn energy_events(root: &Path, cpu_root: &Path) -> Result<EnergyEvents, Error> {
    let no_rapl = match discover_pmu_events(RAPL_PMU, "energy-", root, cpu_root) {
        Ok(mut events) => {
            // stable: energy-pkg first, the others in name order
            events.sort_by_key(|e| e.name != "power/energy-pkg/");
            for event in &events {
                for &cpu in &event.cpus {
                    let name = format!("{} on CPU {cpu}", event.name);
                    open_counter(event, &name, cpu, None, 0)?;
                }
            }
            return Ok(EnergyEvents {
                events,
                stand_in: None,
            });
        }
        Err(missing) => format!("{missing}: no RAPL energy events on this machine"),
    };
    // msr/tsc/ only: it reads the TSC, which does not trap in a VM, where the
    // other msr events (smi, aperf, ...) would add a trapping rdmsr per read
    let msr = discover_pmu_events("msr", "tsc", root, cpu_root);
    let mut why = msr.as_ref().err().cloned().unwrap_or_default();
    let mut events = Vec::new();
    for event in msr.unwrap_or_default() {
        let cpu = event.cpus.first().copied().unwrap_or(0);
        match open_counter(&event, &event.name, cpu, None, 0) {
            Ok(_) => events.push(event),
            Err(e) => why = e.to_string(),
        }
    }
    if events.is_empty() {
        return Err(Error::Unavailable(format!(
            "{no_rapl}; stand-in msr PMU unusable: {why}"
        )));
    }
    let stand_in = format!(
        "{no_rapl}: measured msr PMU events ({}) through the same perf_event read route",
        events_label(&events)
    );
    Ok(EnergyEvents {
        events,
        stand_in: Some(stand_in),
    })
}

/// The counters of `found` (pure: nothing is opened): for real RAPL events,
/// each event on each CPU of the cpumask, the CSV source `package-P` with P
/// from the CPU topology under `cpu_root` (/sys/devices/system/cpu, else
/// the CPU's position in the cpumask); for the stand-in, its events on
/// their first CPU, source `cpuN`.
pub fn perf_counters_of(found: &EnergyEvents, cpu_root: &Path) -> Counters {
    let real = found.stand_in.is_none();
    let ncpus = if real { usize::MAX } else { 1 };
    let topology = Cpus::at(cpu_root);
    let mut counters = Vec::new();
    for (position, &cpu) in found.events[0].cpus.iter().take(ncpus).enumerate() {
        let package = topology.package_of(cpu).unwrap_or(position as u32);
        for event in &found.events {
            counters.push(Counter {
                domain: event.domain(if real {
                    format!("package-{package}")
                } else {
                    format!("cpu{cpu}")
                }),
                route: Route::PerfEvent {
                    event: event.clone(),
                    cpu,
                },
                package: real.then_some(package),
                cpu: Some(cpu),
                name: format!("{} on CPU {cpu}", event.name),
                readable: Ok(()),
                unit_problem: perf_unit_problem(&event.unit, event.scale).filter(|_| real),
                liveness: None,
            });
        }
    }
    Counters {
        counters,
        stand_in: found.stand_in.clone(),
    }
}

/// The energy events under `pmu_root` that open here (or the stand-in), on
/// every package of the topology under `cpu_root`; see [`perf_counters_of`].
pub fn perf_counters(pmu_root: &Path, cpu_root: &Path) -> Result<Counters, Error> {
    let found = energy_events(pmu_root, cpu_root)?;
    Ok(perf_counters_of(&found, cpu_root))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::liveness::Verdict;
    use crate::perf::{PerfMode, PerfSource};
    use crate::roots::{CPU, PMU};
    use crate::testutil::{testdata_sys, two_packages_sys};
    use crate::CounterSource;

    /// The `power` PMU's energy events of the fixture tree `sys` (its
    /// bus/event_source/devices and devices/system/cpu), package first, as
    /// discovery finds them where they open.
    pub(crate) fn fixture_energy_events(sys: &Path) -> EnergyEvents {
        let mut events = discover_pmu_events(
            RAPL_PMU,
            "energy-",
            &sys.join("bus/event_source/devices"),
            &sys.join("devices/system/cpu"),
        )
        .unwrap_or_default();
        events.sort_by_key(|e| e.name != "power/energy-pkg/");
        EnergyEvents {
            events,
            stand_in: None,
        }
    }

    #[test]
    fn fixture_rapl_events_come_energy_pkg_first_or_fail_to_open_here() {
        // the fixture's `power` PMU (type 23) does not exist on this
        // machine: discovery finds it, opening says why it cannot be used
        let root = testdata_sys().join("bus/event_source/devices");
        match energy_events(&root, Path::new(CPU.real())) {
            Ok(found) => assert_eq!(found.events[0].name, "power/energy-pkg/"),
            Err(e) => assert!(
                e.to_string()
                    .starts_with("perf_event_open(power/energy-pkg/ on CPU 0) "),
                "{e}"
            ),
        }
    }

    #[test]
    fn reads_this_machines_energy_events_one_by_one_and_as_a_group() {
        let found = match energy_events(Path::new(PMU.real()), Path::new(CPU.real())) {
            Ok(found) => found,
            Err(e) => return eprintln!("skipped: {e}"),
        };
        if let Some(stand_in) = &found.stand_in {
            assert!(stand_in.ends_with(
                ": measured msr PMU events (msr/tsc/) through the same perf_event read route"
            ));
        }
        let cpu = found.events[0].cpus[0];
        for mode in [PerfMode::EachEvent, PerfMode::Group] {
            let mut source = PerfSource::open(&found.events, cpu, mode).unwrap();
            let names: Vec<&str> = source.domains().iter().map(|d| d.name.as_str()).collect();
            let events: Vec<&str> = found.events.iter().map(PerfEventSpec::short_name).collect();
            assert_eq!(names, events);
            assert_eq!(source.domains()[0].max, u64::MAX);
            let n = source.domains().len();
            let (mut first, mut second) = (vec![0; n], vec![0; n]);
            source.read(&mut first).unwrap();
            source.read(&mut second).unwrap();
            assert!(second[0] >= first[0], "{mode:?}: {first:?} then {second:?}");
        }
    }

    #[test]
    fn every_cpu_of_the_cpumask_reads_its_package() {
        let sys = two_packages_sys();
        let found = perf_counters_of(
            &fixture_energy_events(&sys),
            &sys.join("devices/system/cpu"),
        );
        let seen: Vec<(String, String, Option<usize>, Option<u32>)> = found
            .counters
            .iter()
            .map(|c| {
                (
                    c.domain.source.clone(),
                    c.domain.name.clone(),
                    c.cpu,
                    c.package,
                )
            })
            .collect();
        let row = |s: &str, n: &str, cpu, pkg| (s.to_string(), n.to_string(), Some(cpu), Some(pkg));
        assert_eq!(
            seen,
            [
                row("package-0", "energy-pkg", 0, 0),
                row("package-0", "energy-ram", 0, 0),
                row("package-1", "energy-pkg", 2, 1),
                row("package-1", "energy-ram", 2, 1),
            ]
        );
        assert_eq!(found.counters[2].name, "power/energy-pkg/ on CPU 2");
        assert_eq!(
            found.counters[2].route.describe(false),
            "perf event power/energy-pkg/ on CPU 2"
        );
        assert_eq!(
            found.counters[2].route.describe(true),
            "bpf_perf_event_read_value(power/energy-pkg/) on CPU 2"
        );
        assert_eq!(
            found.counters[0].domain.joules_per_unit,
            2.328_306_436_538_696_3e-10
        );
        assert!(found.counters.iter().all(|c| c.unit_problem.is_none()));
    }

    #[test]
    fn without_topology_the_package_is_the_position_in_the_cpumask() {
        let sys = two_packages_sys();
        let found = perf_counters_of(&fixture_energy_events(&sys), Path::new("/nonexistent"));
        let sources: Vec<&str> = found
            .counters
            .iter()
            .map(|c| c.domain.source.as_str())
            .collect();
        assert_eq!(
            sources,
            ["package-0", "package-0", "package-1", "package-1"]
        );
    }

    #[test]
    fn an_event_in_watts_is_no_unit_and_stand_ins_get_no_unit_check() {
        let sys = testdata_sys();
        let mut found = fixture_energy_events(&sys);
        found.events.truncate(1);
        found.events[0].unit = "Watts".into();
        found.events[0].scale = 1.0;
        let counters = perf_counters_of(&found, &sys.join("devices/system/cpu"));
        assert_eq!(
            counters.counters[0].unit_problem.as_deref(),
            Some("unit 'Watts', scale 1: not an energy counter")
        );
        found.stand_in = Some("why".into());
        let stand_in = perf_counters_of(&found, &sys.join("devices/system/cpu"));
        assert_eq!(stand_in.counters[0].unit_problem, None);
        assert_eq!(stand_in.counters[0].package, None);
    }

    #[test]
    fn this_machine_probes_its_real_events_or_leaves_the_stand_in_without_verdict() {
        let mut found = match perf_counters(Path::new(PMU.real()), Path::new(CPU.real())) {
            Ok(found) => found,
            Err(e) => return eprintln!("skipped: {e}"),
        };
        found.probe(std::time::Duration::from_millis(20));
        for c in &found.counters {
            match (&found.stand_in, &c.readable) {
                (Some(_), _) => assert_eq!(c.liveness, None),
                (None, Ok(())) => assert!(matches!(
                    c.liveness.as_ref().map(|l| l.verdict),
                    Some(Verdict::Live | Verdict::Frozen | Verdict::NoUnit)
                )),
                (None, Err(e)) => eprintln!("{}: {e}", c.name),
            }
        }
    }
}
