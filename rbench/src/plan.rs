//! What the Criterion harness measures on this machine: for every access
//! path, the rows ubench registers (same ops, targets, placements and
//! stand_in words, so rows of the two harnesses pair up), each with what to
//! read, or the reason it cannot run. The benchmark only runs the plan.

use std::path::Path;

use crate::cpu::{cpu_signature, online_cpus, placements, CpuSignature, Placement};
use crate::ebpf::{BpfConfig, BpfSampler, SlotRead};
use crate::manifest::RowMeta;
use crate::msr::{
    cpuid_stand_in_read, cpuid_stand_in_text, domain_joules_per_unit, msr_device_path, msr_hex,
    rapl_energy_msrs, unit_msr, MsrDevice, Register, RegisterRead, DEV_CPU_ROOT,
    ENERGY_COUNTER_MAX,
};
use crate::perf::{energy_events, events_label, PerfEventSpec, PerfMode, PMU_ROOT};
use crate::powercap::{
    discover_powercap_zones, no_zone_reason, powercap_root, stand_in_text, unreadable_reason,
    zone_target, zone_target_cpu, CounterFile, PowercapMode, STAND_IN_FILE,
};
use crate::Domain;

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
    /// Every path on this machine (starts the BPF sampler).
    pub fn for_this_machine() -> Plan {
        let mut rows = powercap_rows(&powercap_root());
        rows.extend(msr_rows(Path::new(DEV_CPU_ROOT), &cpu_signature()));
        rows.extend(perf_rows(Path::new(PMU_ROOT)));
        let (sampler, bpf_counters, ebpf) = ebpf_rows(Path::new(PMU_ROOT));
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
) -> RowMeta {
    RowMeta {
        path: path.to_string(),
        op: op.to_string(),
        target: target.filter(|t| !t.is_empty()).map(str::to_string),
        cpu: placement.map(|p| p.cpu),
        target_cpu: placement.and_then(|p| p.target_cpu),
        stand_in: stand_in.map(str::to_string),
    }
}

/// Both powercap ops of one file at each placement of its counter's CPU.
fn powercap_file_rows(
    file: &CounterFile,
    target: &str,
    target_cpu: Option<usize>,
    stand_in: Option<&str>,
) -> Vec<Planned> {
    let why = unreadable_reason(&file.path);
    let mut rows = Vec::new();
    for placement in placements(target_cpu) {
        for mode in [PowercapMode::Pread, PowercapMode::OpenReadClose] {
            let meta = meta(
                "powercap",
                mode.op(),
                Some(target),
                Some(placement),
                stand_in,
            );
            rows.push(match &why {
                Some(e) => Planned::unavailable(meta, e.to_string()),
                None => Planned::run(
                    meta,
                    Probe::Powercap {
                        file: file.clone(),
                        mode,
                    },
                ),
            });
        }
    }
    rows
}

/// Path "powercap": every zone under `root`, or the stand-in file.
pub fn powercap_rows(root: &Path) -> Vec<Planned> {
    let zones = discover_powercap_zones(root);
    if !zones.is_empty() {
        return zones
            .iter()
            .flat_map(|z| {
                powercap_file_rows(
                    &CounterFile::for_zone(z),
                    &zone_target(z),
                    zone_target_cpu(z),
                    None,
                )
            })
            .collect();
    }
    if let Some(e) = unreadable_reason(STAND_IN_FILE) {
        let reason = format!(
            "{}; stand-in {STAND_IN_FILE} unreadable too: {e}",
            no_zone_reason(root)
        );
        return [PowercapMode::Pread, PowercapMode::OpenReadClose]
            .into_iter()
            .map(|mode| {
                Planned::unavailable(
                    meta("powercap", mode.op(), Some("energy_uj"), None, None),
                    &reason,
                )
            })
            .collect();
    }
    powercap_file_rows(
        &CounterFile::stand_in(),
        STAND_IN_FILE,
        None,
        Some(&stand_in_text(root)),
    )
}

/// Path "msr-dev": every vendor energy MSR of the first online CPU (probed
/// once: one that faults is unavailable), or the cpuid stand-in.
pub fn msr_rows(dev_root: &Path, cpu: &CpuSignature) -> Vec<Planned> {
    let target = online_cpus().first().copied().unwrap_or(0);
    let device_path = msr_device_path(dev_root, target);
    let msrs = rapl_energy_msrs(cpu.vendor);
    let device = match MsrDevice::open(&device_path) {
        Ok(device) => device,
        Err(missing) => {
            let read = cpuid_stand_in_read(dev_root, target);
            let stand_in = cpuid_stand_in_text(&missing, &read.device);
            let cpuid_error = MsrDevice::open(&read.device).err();
            return placements(Some(target))
                .into_iter()
                .map(|p| match &cpuid_error {
                    Some(e) => Planned::unavailable(
                        meta("msr-dev", "pread", None, Some(p), None),
                        format!("{missing}; stand-in {}: {e}", read.device.display()),
                    ),
                    None => Planned::run(
                        meta(
                            "msr-dev",
                            "pread",
                            Some("cpuid:0x0"),
                            Some(p),
                            Some(&stand_in),
                        ),
                        Probe::Msr { read: read.clone() },
                    ),
                })
                .collect();
        }
    };
    if msrs.is_empty() {
        let reason = format!(
            "no known RAPL MSRs for this CPU vendor ({})",
            cpu.vendor.name()
        );
        let p = Placement {
            cpu: target,
            target_cpu: Some(target),
        };
        return vec![Planned::unavailable(
            meta("msr-dev", "pread", None, Some(p), None),
            reason,
        )];
    }
    let unit = unit_msr(cpu.vendor).and_then(|addr| device.read_msr(addr).ok());
    let mut rows = Vec::new();
    for msr in msrs {
        let probe = device.read_msr(msr.addr); // once: a faulting MSR is unavailable
        let read = RegisterRead {
            device: device_path.clone(),
            register: Register::Msr(msr.addr),
            domain: Domain {
                source: format!("cpu{target}"),
                name: msr.domain.to_string(),
                joules_per_unit: unit.map_or(0.0, |u| domain_joules_per_unit(cpu, msr.addr, u)),
                max: ENERGY_COUNTER_MAX,
            },
        };
        for p in placements(Some(target)) {
            let meta = meta("msr-dev", "pread", Some(&msr_hex(msr.addr)), Some(p), None);
            rows.push(match &probe {
                Err(e) => Planned::unavailable(meta, e.to_string()),
                Ok(_) => Planned::run(meta, Probe::Msr { read: read.clone() }),
            });
        }
    }
    rows
}

/// Path "perf": op "read" of the first energy event and op "group-read" of
/// all, on the PMU's first CPU, at both placements.
pub fn perf_rows(pmu_root: &Path) -> Vec<Planned> {
    let ops = [PerfMode::EachEvent, PerfMode::Group];
    let found = match energy_events(pmu_root) {
        Ok(found) => found,
        Err(e) => {
            return ops
                .iter()
                .map(|m| {
                    Planned::unavailable(meta("perf", m.op(), None, None, None), e.to_string())
                })
                .collect();
        }
    };
    let target = found.events[0].cpus.first().copied().unwrap_or(0);
    let mut rows = Vec::new();
    for mode in ops {
        let events = match mode {
            PerfMode::EachEvent => found.events[..1].to_vec(),
            PerfMode::Group => found.events.clone(),
        };
        let label = events_label(&events);
        for p in placements(Some(target)) {
            let meta = meta(
                "perf",
                mode.op(),
                Some(&label),
                Some(p),
                found.stand_in.as_deref(),
            );
            rows.push(Planned::run(
                meta,
                Probe::Perf {
                    events: events.clone(),
                    cpu: target,
                    mode,
                },
            ));
        }
    }
    rows
}

/// Paths "ebpf-lookup" and "ebpf-mmap": starts the sampler on the energy
/// events and reads the slot of their CPU at both placements.
pub fn ebpf_rows(pmu_root: &Path) -> (Option<BpfSampler>, Vec<PerfEventSpec>, Vec<Planned>) {
    let unavailable = |label: &str, stand_in: Option<&str>, reason: &str| {
        vec![
            Planned::unavailable(
                meta("ebpf-lookup", "lookup", Some(label), None, stand_in),
                reason,
            ),
            Planned::unavailable(
                meta("ebpf-mmap", "load", Some(label), None, stand_in),
                reason,
            ),
        ]
    };
    let found = match energy_events(pmu_root) {
        Ok(found) => found,
        Err(e) => return (None, Vec::new(), unavailable("", None, &e.to_string())),
    };
    let label = events_label(&found.events);
    let stand_in = found.stand_in.as_deref();
    let sampler = match BpfSampler::start(&found.events, &BpfConfig::default()) {
        Ok(sampler) => sampler,
        Err(e) => {
            return (
                None,
                found.events.clone(),
                unavailable(&label, stand_in, &e.to_string()),
            )
        }
    };
    let target = found.events[0].cpus.first().copied().unwrap_or(0);
    let mut rows = Vec::new();
    for p in placements(Some(target)) {
        rows.push(Planned::run(
            meta("ebpf-lookup", "lookup", Some(&label), Some(p), stand_in),
            Probe::Bpf {
                cpu: target,
                via: SlotRead::Lookup,
            },
        ));
        rows.push(Planned::run(
            meta("ebpf-mmap", "load", Some(&label), Some(p), stand_in),
            Probe::Bpf {
                cpu: target,
                via: SlotRead::Load,
            },
        ));
    }
    (Some(sampler), found.events, rows)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::CpuVendor;
    use crate::testutil::{testdata_sys, TempDir};

    #[test]
    fn powercap_fixture_rows_pair_each_zone_with_its_placements() {
        let rows = powercap_rows(&testdata_sys().join("class/powercap"));
        let first = online_cpus()[0];
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
    }

    #[test]
    fn powercap_without_zones_plans_the_stand_in() {
        let empty = TempDir::new("plan-powercap");
        let rows = powercap_rows(empty.path());
        let first = online_cpus()[0];
        assert_eq!(rows.len(), 2);
        assert_eq!(
            rows[0].full_id(),
            format!("powercap/pread//sys/class/net/lo/statistics/rx_bytes@{first}")
        );
        assert_eq!(rows[1].meta.op, "open-read-close");
        assert_eq!(rows[0].meta.target.as_deref(), Some(STAND_IN_FILE));
        assert_eq!(rows[0].meta.target_cpu, None);
        assert_eq!(rows[0].meta.stand_in, Some(stand_in_text(empty.path())));
    }

    #[test]
    fn msr_rows_on_a_fixture_device_leave_faulting_msrs_unavailable() {
        let root = TempDir::new("plan-msr");
        let target = online_cpus()[0];
        std::fs::create_dir_all(root.path().join(target.to_string())).unwrap();
        let file = std::fs::File::create(msr_device_path(root.path(), target)).unwrap();
        // the fixture ends after 0x641: 0x64d (PSYS) faults
        for (addr, value) in [
            (0x606u32, 0xA0E03u64),
            (0x611, 1),
            (0x639, 2),
            (0x641, 3),
            (0x619, 4),
        ] {
            std::os::unix::fs::FileExt::write_all_at(&file, &value.to_ne_bytes(), u64::from(addr))
                .unwrap();
        }
        let intel = CpuSignature {
            vendor: CpuVendor::Intel,
            family: 6,
            model: 0x55,
        };
        let rows = msr_rows(root.path(), &intel);
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
        let psys = rows.last().unwrap();
        assert_eq!(
            psys.probe,
            Err("rdmsr 0x64d faults on this CPU (EIO): this model does not implement it".into())
        );
        match &rows[3 * per_msr].probe {
            Ok(Probe::Msr { read }) => assert_eq!(read.domain.joules_per_unit, 1.0 / 65536.0), // DRAM on Skylake-X
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn msr_rows_without_a_device_use_the_cpuid_stand_in_or_say_why() {
        let root = TempDir::new("plan-msr-missing");
        let rows = msr_rows(root.path(), &cpu_signature());
        assert_eq!(rows.len(), placements(Some(online_cpus()[0])).len());
        // the fixture root has no cpuid device either: unavailable, target null
        assert!(rows.iter().all(|r| r.meta.target.is_none()));
        let reason = rows[0].probe.as_ref().unwrap_err();
        assert!(
            reason.contains("missing: load the msr module") && reason.contains("; stand-in "),
            "{reason}"
        );
        // on this machine /dev/cpu/0/msr is missing and /dev/cpu/0/cpuid present
        if !Path::new("/dev/cpu/0/msr").exists() && Path::new("/dev/cpu/0/cpuid").exists() {
            let rows = msr_rows(Path::new(DEV_CPU_ROOT), &cpu_signature());
            assert_eq!(rows[0].meta.target.as_deref(), Some("cpuid:0x0"));
            assert!(rows[0]
                .meta
                .stand_in
                .as_deref()
                .unwrap()
                .starts_with("/dev/cpu/0/msr missing"));
        }
    }

    #[test]
    fn perf_rows_read_the_first_event_and_group_read_all() {
        let rows = perf_rows(Path::new(PMU_ROOT));
        let ops: Vec<&str> = rows.iter().map(|r| r.meta.op.as_str()).collect();
        let n = placements(Some(0)).len();
        if rows[0].probe.is_err() {
            assert_eq!(ops, ["read", "group-read"]);
            return;
        }
        assert_eq!(ops.len(), 2 * n);
        assert!(
            ops[..n].iter().all(|&op| op == "read")
                && ops[n..].iter().all(|&op| op == "group-read")
        );
        if rows[0].meta.stand_in.is_some() {
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
