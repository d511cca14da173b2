//! What the Criterion harness measures on this machine: for every access
//! path, the rows ubench registers (same ops, targets, placements and
//! stand_in words, so rows of the two harnesses pair up), each with what to
//! read, or the reason it cannot run. The benchmark only runs the plan.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::cpu::{
    cpu_signature, package_placements, packages_or_first, placements, CpuSignature, Package,
    Placement,
};
use crate::discovery::{
    counter_cpus, msr_counters, perf_counters, powercap_counters, Counter, Counters, Route,
};
use crate::ebpf::{BpfConfig, BpfSampler, RbSlot, SlotRead};
use crate::liveness::{Liveness, LIVENESS_WINDOW};
use crate::manifest::RowMeta;
use crate::msr::{register_read, RegisterRead};
use crate::perf::{events_label, PerfEventSpec, PerfMode};
use crate::powercap::{CounterFile, PowercapMode};
use crate::roots::Roots;
use crate::Error;

/// What one benchmark reads, through the library's read path.
#[derive(Debug, Clone, PartialEq)]
pub enum Probe {
    /// A powercap file (or its stand-in), kept open or reopened.
    Powercap {
        /// The file.
        file: CounterFile,
        /// pread or open-read-close.
        mode: PowercapMode,
    },
    /// One register of a per-CPU device (an MSR, or the cpuid stand-in).
    Msr {
        /// Device and register.
        read: RegisterRead,
    },
    /// perf events on one CPU, one by one (first event only) or as a group.
    Perf {
        /// The events.
        events: Vec<PerfEventSpec>,
        /// The CPU they count on.
        cpu: usize,
        /// read or group-read.
        mode: PerfMode,
    },
    /// A CPU's slot of the running [`BpfSampler`] of the plan.
    Bpf {
        /// Whose slot.
        cpu: usize,
        /// lookup or load.
        via: SlotRead,
    },
}

/// One row of the plan: a benchmark to run, or why it cannot.
#[derive(Debug, Clone, PartialEq)]
pub struct Planned {
    /// The row's place in the results schema.
    pub meta: RowMeta,
    /// What to read, or the reason the row is unavailable.
    pub probe: Result<Probe, String>,
}

impl Planned {
    fn run(meta: RowMeta, probe: Probe) -> Planned {
        Planned {
            meta,
            probe: Ok(probe),
        }
    }

    fn unavailable(meta: RowMeta, reason: impl Into<String>) -> Planned {
        Planned {
            meta,
            probe: Err(reason.into()),
        }
    }

    /// The Criterion parameter "<target>@<placement label>".
    pub fn parameter(&self) -> String {
        let placement = Placement {
            cpu: self.meta.cpu.unwrap_or(0),
            target_cpu: self.meta.target_cpu,
        };
        format!(
            "{}@{}",
            self.meta.target.as_deref().unwrap_or(""),
            placement.label()
        )
    }

    /// The Criterion full id "<path>/<op>/<target>@<placement label>".
    pub fn full_id(&self) -> String {
        format!("{}/{}/{}", self.meta.path, self.meta.op, self.parameter())
    }
}

/// The whole plan, and the running BPF sampler its eBPF rows read.
pub struct Plan {
    /// Every row, path by path.
    pub rows: Vec<Planned>,
    /// Running while the plan lives, when the eBPF paths can run.
    pub sampler: Option<BpfSampler>,
    /// The counters the sampler samples.
    pub bpf_counters: Vec<PerfEventSpec>,
}

impl Plan {
    /// Every path on this machine (probes the counters' liveness and
    /// starts the BPF sampler).
    pub fn for_this_machine() -> Plan {
        let roots = Roots::from_env();
        let mut rows = powercap_rows(&roots.powercap, LIVENESS_WINDOW);
        rows.extend(msr_rows(
            &roots.dev_cpu,
            &cpu_signature(),
            &packages_or_first(),
            LIVENESS_WINDOW,
        ));
        let perf = perf_counters(&roots.pmu, &roots.cpu).map(|mut found| {
            found.probe(LIVENESS_WINDOW);
            found
        });
        rows.extend(perf_rows(&perf));
        let (sampler, bpf_counters, ebpf) = ebpf_rows(&perf, SLOT_CHECK);
        rows.extend(ebpf);
        Plan {
            rows,
            sampler,
            bpf_counters,
        }
    }
}

fn meta(
    path: &str,
    op: &str,
    target: Option<&str>,
    placement: Option<Placement>,
    stand_in: Option<&str>,
    liveness: Option<Liveness>,
) -> RowMeta {
    RowMeta {
        path: path.to_string(),
        op: op.to_string(),
        target: target.filter(|t| !t.is_empty()).map(str::to_string),
        cpu: placement.map(|p| p.cpu),
        target_cpu: placement.and_then(|p| p.target_cpu),
        stand_in: stand_in.map(str::to_string),
        liveness: None,
        liveness_note: None,
    }
    .with_liveness(liveness)
}

/// Both powercap ops of one counter file at each placement of its CPU.
fn powercap_file_rows(counter: &Counter, stand_in: Option<&str>) -> Vec<Planned> {
    let mut rows = Vec::new();
    for placement in placements(counter.cpu) {
        for mode in [PowercapMode::Pread, PowercapMode::OpenReadClose] {
            let meta = meta(
                "powercap",
                mode.op(),
                Some(&counter.name),
                Some(placement),
                stand_in,
                counter.liveness.clone(),
            );
            rows.push(match (&counter.readable, CounterFile::of(counter)) {
                (Ok(()), Some(file)) => Planned::run(meta, Probe::Powercap { file, mode }),
                (Err(e), _) => Planned::unavailable(meta, e),
                (Ok(()), None) => Planned::unavailable(meta, "not a file"),
            });
        }
    }
    rows
}

/// Path "powercap": every zone under `root`, or the stand-in file; each
/// zone probed for liveness for up to `window`.
pub fn powercap_rows(root: &Path, window: Duration) -> Vec<Planned> {
    let mut found = match powercap_counters(root) {
        Ok(found) => found,
        Err(e) => {
            return [PowercapMode::Pread, PowercapMode::OpenReadClose]
                .into_iter()
                .map(|mode| {
                    Planned::unavailable(
                        meta("powercap", mode.op(), Some("energy_uj"), None, None, None),
                        e.to_string(),
                    )
                })
                .collect();
        }
    };
    found.probe(window);
    found
        .counters
        .iter()
        .flat_map(|c| powercap_file_rows(c, found.stand_in.as_deref()))
        .collect()
}

/// The row target of a register: "0x611", "cpuid:0x0".
/// Path "msr-dev": every vendor energy MSR of the first package's lead CPU
/// (one that faults is unavailable), probed for liveness for up to
/// `window`, or the cpuid stand-in.
pub fn msr_rows(
    dev_root: &Path,
    cpu: &CpuSignature,
    packages: &[Package],
    window: Duration,
) -> Vec<Planned> {
    let first = &packages[..packages.len().min(1)];
    let target = first.first().map_or(0, |p| p.lead_cpu);
    let mut found = match msr_counters(dev_root, cpu, first) {
        Ok(found) => found,
        Err(e) => {
            return placements(Some(target))
                .into_iter()
                .map(|p| {
                    Planned::unavailable(
                        meta("msr-dev", "pread", None, Some(p), None, None),
                        e.to_string(),
                    )
                })
                .collect();
        }
    };
    found.probe(window);
    let mut rows = Vec::new();
    for counter in &found.counters {
        let Some(read) = register_read(counter) else {
            continue;
        };
        for p in placements(Some(target)) {
            let meta = meta(
                "msr-dev",
                "pread",
                Some(&read.register.target()),
                Some(p),
                found.stand_in.as_deref(),
                counter.liveness.clone(),
            );
            rows.push(match &counter.readable {
                Err(e) => Planned::unavailable(meta, e),
                Ok(()) => Planned::run(meta, Probe::Msr { read: read.clone() }),
            });
        }
    }
    rows
}

/// The counters on `cpu`, and their events.
fn on_cpu(found: &Counters, cpu: usize) -> (Vec<&Counter>, Vec<PerfEventSpec>) {
    let counters: Vec<&Counter> = found
        .counters
        .iter()
        .filter(|c| c.cpu == Some(cpu))
        .collect();
    let events = counters
        .iter()
        .filter_map(|c| match &c.route {
            Route::PerfEvent { event, .. } => Some(event.clone()),
            _ => None,
        })
        .collect();
    (counters, events)
}

/// Path "perf", for every CPU of the PMU's cpumask (one per package): op
/// "read" of the first energy event and op "group-read" of all, at both
/// placements of that CPU. `perf` is the discovery (probed or not).
pub fn perf_rows(perf: &Result<Counters, Error>) -> Vec<Planned> {
    let ops = [PerfMode::EachEvent, PerfMode::Group];
    let found = match perf {
        Ok(found) => found,
        Err(e) => {
            return ops
                .iter()
                .map(|m| {
                    Planned::unavailable(
                        meta("perf", m.op(), None, None, None, None),
                        e.to_string(),
                    )
                })
                .collect();
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
            for p in package_placements(cpu) {
                let meta = meta(
                    "perf",
                    mode.op(),
                    Some(&events_label(events)),
                    Some(p),
                    found.stand_in.as_deref(),
                    liveness.clone(),
                );
                rows.push(match &unreadable {
                    Some(e) => Planned::unavailable(meta, e),
                    None => Planned::run(
                        meta,
                        Probe::Perf {
                            events: events.to_vec(),
                            cpu,
                            mode,
                        },
                    ),
                });
            }
        }
    }
    rows
}

/// How long the plan waits for a CPU's slot to tick before its eBPF rows
/// become unavailable (the cpu-clock fallback may fire far below 1 kHz).
pub const SLOT_CHECK: Duration = Duration::from_millis(500);

/// Why CPU `cpu`'s slot cannot be measured, or None: its tick count must
/// advance within `window`, and its last read must not have failed.
pub fn slot_problem(sampler: &BpfSampler, cpu: usize, window: Duration) -> Option<String> {
    let mut slot = RbSlot::default();
    if let Err(e) = sampler.load(cpu, &mut slot) {
        return Some(e.to_string());
    }
    let first = slot.ticks;
    let t0 = Instant::now();
    while slot.ticks == first {
        if t0.elapsed() >= window {
            return Some(format!(
                "the BPF program's slot of CPU {cpu} did not tick in {} ms ({}): no data to read",
                window.as_millis(),
                sampler.trigger()
            ));
        }
        std::thread::sleep(Duration::from_millis(2));
        if let Err(e) = sampler.load(cpu, &mut slot) {
            return Some(e.to_string());
        }
    }
    (slot.err != 0).then(|| {
        format!(
            "the BPF program's reads fail on CPU {cpu}: err {} ({}) at tick {}: its slot holds no data",
            slot.err,
            std::io::Error::from_raw_os_error(-slot.err),
            slot.ticks
        )
    })
}

/// Paths "ebpf-lookup" and "ebpf-mmap": starts the sampler on the energy
/// events on every CPU of their cpumask and reads each CPU's slot at both
/// placements; a slot that fails or does not tick within `check` is
/// unavailable with the reason.
pub fn ebpf_rows(
    perf: &Result<Counters, Error>,
    check: Duration,
) -> (Option<BpfSampler>, Vec<PerfEventSpec>, Vec<Planned>) {
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
        Err(e) => return (None, Vec::new(), unavailable("", None, &e.to_string())),
    };
    let cpus = counter_cpus(&found.counters);
    let (_, events) = on_cpu(found, cpus[0]);
    let label = events_label(&events);
    let stand_in = found.stand_in.as_deref();
    let config = BpfConfig {
        cpus: Some(cpus.clone()),
        ..BpfConfig::default()
    };
    let sampler = match BpfSampler::start(&events, &config) {
        Ok(sampler) => sampler,
        Err(e) => return (None, events, unavailable(&label, stand_in, &e.to_string())),
    };
    let mut rows = Vec::new();
    for cpu in cpus {
        let (counters, _) = on_cpu(found, cpu);
        let liveness = Counters::liveness_of(counters);
        let problem = slot_problem(&sampler, cpu, check);
        for p in package_placements(cpu) {
            for (path, op, via) in [
                ("ebpf-lookup", "lookup", SlotRead::Lookup),
                ("ebpf-mmap", "load", SlotRead::Load),
            ] {
                let meta = meta(path, op, Some(&label), Some(p), stand_in, liveness.clone());
                rows.push(match &problem {
                    Some(why) => Planned::unavailable(meta, why),
                    None => Planned::run(meta, Probe::Bpf { cpu, via }),
                });
            }
        }
    }
    (Some(sampler), events, rows)
}
#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::{allowed_cpus, CpuVendor};
    use crate::discovery::perf_counters_of;
    use crate::liveness::Verdict;
    use crate::msr::{msr_device_path, MsrDevice, DEV_CPU_ROOT};
    use crate::perf::{discover_pmu_events, EnergyEvents, PMU_ROOT};
    use crate::powercap::{stand_in_text, STAND_IN_FILE};
    use crate::testutil::{testdata_sys, two_packages_sys, write_msr_fixture, TempDir};

    const SHORT: Duration = Duration::from_millis(10);

    #[test]
    fn powercap_fixture_rows_pair_each_zone_with_its_placements() {
        let rows = powercap_rows(&testdata_sys().join("class/powercap"), SHORT);
        let first = allowed_cpus()[0];
        let lead = crate::cpu::package_lead_cpu(0);
        // intel-rapl:0 is per-package (placements of its lead CPU), psys and mmio are not
        let ids: Vec<String> = rows.iter().map(Planned::full_id).collect();
        if let Some(lead) = lead {
            assert_eq!(
                ids[0],
                format!("powercap/pread/intel-rapl:0/energy_uj@{lead}->{lead}")
            );
            assert_eq!(
                ids[1],
                format!("powercap/open-read-close/intel-rapl:0/energy_uj@{lead}->{lead}")
            );
        }
        assert!(ids.contains(&format!("powercap/pread/intel-rapl:1/energy_uj@{first}")));
        assert!(ids.contains(&format!(
            "powercap/open-read-close/intel-rapl-mmio:0/energy_uj@{first}"
        )));
        assert!(rows
            .iter()
            .all(|r| r.meta.stand_in.is_none() && r.probe.is_ok()));
        // the fixture's files never change: every row says its counter is dead
        assert!(rows
            .iter()
            .all(|r| r.meta.liveness == Some(Verdict::Frozen)));
        assert!(rows[0]
            .meta
            .liveness_note
            .as_deref()
            .unwrap()
            .starts_with("intel-rapl:0/energy_uj: did not change in 10 ms ("));
    }

    #[test]
    fn powercap_without_zones_plans_the_stand_in() {
        let empty = TempDir::new("plan-powercap");
        let rows = powercap_rows(empty.path(), SHORT);
        let first = allowed_cpus()[0];
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[1].meta.op, "open-read-close");
        assert_eq!(rows[0].meta.stand_in.is_some(), rows[0].probe.is_ok());
        if rows[0].probe.is_err() {
            return eprintln!("skipped: {STAND_IN_FILE} unreadable here");
        }
        assert_eq!(
            rows[0].full_id(),
            format!("powercap/pread//sys/class/net/lo/statistics/rx_bytes@{first}")
        );
        assert_eq!(rows[0].meta.target.as_deref(), Some(STAND_IN_FILE));
        assert_eq!(rows[0].meta.target_cpu, None);
        assert_eq!(rows[0].meta.stand_in, Some(stand_in_text(empty.path())));
        assert_eq!(rows[0].meta.liveness, None); // a stand-in: no verdict
    }

    #[test]
    fn msr_rows_on_a_fixture_device_leave_faulting_msrs_unavailable() {
        let root = TempDir::new("plan-msr");
        let target = allowed_cpus()[0];
        // the fixture ends after 0x641: 0x64d (PSYS) faults
        write_msr_fixture(
            root.path(),
            target,
            &[
                (0x606u32, 0xA0E03u64),
                (0x611, 1),
                (0x639, 2),
                (0x641, 3),
                (0x619, 4),
            ],
        );
        let intel = CpuSignature {
            vendor: CpuVendor::Intel,
            family: 6,
            model: 0x55,
        };
        let package = Package {
            id: 0,
            lead_cpu: target,
        };
        let rows = msr_rows(root.path(), &intel, &[package], SHORT);
        let per_msr = placements(Some(target)).len();
        assert_eq!(rows.len(), 5 * per_msr);
        let targets: Vec<&str> = rows
            .iter()
            .step_by(per_msr)
            .map(|r| r.meta.target.as_deref().unwrap())
            .collect();
        assert_eq!(targets, ["0x611", "0x639", "0x641", "0x619", "0x64d"]);
        assert_eq!(
            rows[0].full_id(),
            format!("msr-dev/pread/0x611@{target}->{target}")
        );
        assert_eq!(rows[0].meta.liveness, Some(Verdict::Frozen));
        let psys = rows.last().unwrap();
        assert_eq!(
            psys.probe,
            Err("rdmsr 0x64d faults on this CPU (EIO): this model does not implement it".into())
        );
        assert_eq!(psys.meta.liveness, None);
        match &rows[3 * per_msr].probe {
            Ok(Probe::Msr { read }) => assert_eq!(read.domain.joules_per_unit, 1.0 / 65536.0), // DRAM on Skylake-X
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn msr_rows_without_a_device_use_the_cpuid_stand_in_or_say_why() {
        let root = TempDir::new("plan-msr-missing");
        let first = allowed_cpus()[0];
        let package = [Package {
            id: 0,
            lead_cpu: first,
        }];
        let rows = msr_rows(root.path(), &cpu_signature(), &package, SHORT);
        assert_eq!(rows.len(), placements(Some(first)).len());
        // the fixture root has no cpuid device either: unavailable, target null
        assert!(rows.iter().all(|r| r.meta.target.is_none()));
        let reason = rows[0].probe.as_ref().unwrap_err();
        assert!(
            reason.contains("missing: load the msr module")
                && reason.contains("; stand-in ")
                && reason.ends_with("missing too (load the cpuid module: modprobe cpuid)"),
            "{reason}"
        );
        // where this machine's msr device is missing and its cpuid device opens
        let dev = Path::new(DEV_CPU_ROOT);
        if MsrDevice::open(&msr_device_path(dev, first)).is_ok() {
            return eprintln!("skipped: this machine has /dev/cpu/{first}/msr");
        }
        let cpuid = dev.join(first.to_string()).join("cpuid");
        if let Err(e) = MsrDevice::open(&cpuid) {
            return eprintln!("skipped: the cpuid stand-in cannot be opened here: {e}");
        }
        let rows = msr_rows(dev, &cpu_signature(), &package, SHORT);
        assert_eq!(rows[0].meta.target.as_deref(), Some("cpuid:0x0"));
        assert_eq!(rows[0].meta.liveness, None);
        assert!(rows[0]
            .meta
            .stand_in
            .as_deref()
            .unwrap()
            .starts_with(&format!("/dev/cpu/{first}/msr missing")));
    }

    /// The two-package fixture's RAPL events, as discovery would find them
    /// on a machine where they open.
    fn two_packages() -> Result<Counters, Error> {
        let sys = two_packages_sys();
        let mut power =
            discover_pmu_events("power", "energy-", &sys.join("bus/event_source/devices"));
        power.events.sort_by_key(|e| e.name != "power/energy-pkg/");
        let found = EnergyEvents {
            events: power.events,
            stand_in: None,
        };
        Ok(perf_counters_of(&found, &sys.join("devices/system/cpu")))
    }

    #[test]
    fn perf_rows_cover_every_package_of_the_cpumask() {
        let rows = perf_rows(&two_packages());
        let mut expected = Vec::new();
        for cpu in [0, 2] {
            for (op, target) in [
                ("read", "power/energy-pkg/"),
                ("group-read", "power/{energy-pkg,energy-ram}/"),
            ] {
                for p in package_placements(cpu) {
                    expected.push(format!("perf/{op}/{target}@{}", p.label()));
                }
            }
        }
        let ids: Vec<String> = rows.iter().map(Planned::full_id).collect();
        assert_eq!(ids, expected);
        assert!(rows.iter().all(|r| r.probe.is_ok()));
        let package_1: Vec<Option<usize>> = rows
            .iter()
            .filter_map(|r| match &r.probe {
                Ok(Probe::Perf { cpu: 2, .. }) => Some(r.meta.target_cpu),
                _ => None,
            })
            .collect();
        assert_eq!(package_1.len(), 2 * package_placements(2).len());
        assert!(package_1.iter().all(|&t| t == Some(2)));
    }

    #[test]
    fn perf_rows_carry_the_worst_verdict_of_what_they_read() {
        let mut found = two_packages().unwrap();
        // as if probed: energy-ram of package 1 is frozen
        for c in &mut found.counters {
            c.liveness = Some(Liveness::live());
        }
        found.counters[3].liveness = Some(Liveness::frozen("power/energy-ram/ on CPU 2", SHORT, 9));
        let rows = perf_rows(&Ok(found));
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
    fn perf_and_ebpf_rows_without_events_are_unavailable_with_the_reason() {
        let missing: Result<Counters, Error> = Err(Error::Unavailable("no PMU".into()));
        let rows = perf_rows(&missing);
        let ops: Vec<&str> = rows.iter().map(|r| r.meta.op.as_str()).collect();
        assert_eq!(ops, ["read", "group-read"]);
        let (sampler, _, rows) = ebpf_rows(&missing, SHORT);
        assert!(sampler.is_none());
        assert_eq!(rows.len(), 2);
        assert!(rows.iter().all(|r| r.probe == Err("no PMU".to_string())));
    }

    #[test]
    fn perf_rows_on_this_machine_read_the_first_event_and_group_read_all() {
        let found = perf_counters(Path::new(PMU_ROOT), Path::new(crate::cpu::CPU_ROOT));
        let rows = perf_rows(&found);
        if let Err(e) = &found {
            return eprintln!("skipped: {e}");
        }
        let first = rows[0].meta.target_cpu;
        let n = placements(first).len();
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
            assert_eq!(
                rows[0].full_id(),
                format!(
                    "perf/read/msr/tsc/@{}",
                    rows[0].parameter().split('@').nth(1).unwrap()
                )
            );
        }
    }
}
