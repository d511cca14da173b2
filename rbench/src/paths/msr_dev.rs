//! Path "msr-dev": one 8-byte pread of a RAPL energy MSR from
//! /dev/cpu/N/msr, from CPU N itself and from another CPU (the driver then
//! reads the MSR on CPU N through an IPI); or the /dev/cpu/N/cpuid
//! stand-in where the msr device is missing (ubench/paths/msr_dev.cc).

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{json, Value};

use crate::cpu::{cpu_signature, CpuSignature, Cpus, Package};
use crate::discovery::msr_counters;
use crate::msr::{MsrSource, Register, RegisterRead};
use crate::target_load::OnTarget;
use crate::plan::{meta, Machine, Plan, Planned, Reader, Reads, SourceReader};
use crate::{Domain, Error};

/// One register of a per-CPU device (an MSR, or the cpuid stand-in).
#[derive(Debug, Clone, PartialEq)]
pub struct MsrReads {
    /// Device and register.
    pub read: RegisterRead,
}

impl Reads for MsrReads {
    fn open(&self) -> Result<Box<dyn Reader + '_>, Error> {
        MsrSource::open(std::slice::from_ref(&self.read)).map(SourceReader::boxed)
    }

    /// A pread of `bytes` at `offset`: 8 at the MSR's address, or the 16
    /// of a cpuid leaf's record.
    fn spec(&self) -> Value {
        let (offset, bytes) = match self.read.register {
            Register::Msr(addr) => (addr, 8),
            Register::CpuidLeaf(leaf) => (leaf, 16),
        };
        json!({"device": self.read.device, "offset": offset, "bytes": bytes})
    }

    /// The msr and cpuid drivers run the instruction on the device's CPU
    /// (smp_call_function_single).
    fn on_target(&self) -> OnTarget {
        OnTarget::Ipi
    }
}

impl MsrReads {
    /// The reads `open` describes ([`Reads::spec`]), or None.
    pub fn from_spec(open: &Value) -> Option<MsrReads> {
        let offset = u32::try_from(open["offset"].as_u64()?).ok()?;
        let register = match open["bytes"].as_u64()? {
            8 => Register::Msr(offset),
            16 => Register::CpuidLeaf(offset),
            _ => return None,
        };
        let device = PathBuf::from(open.get("device")?.as_str()?);
        let domain = Domain::default();
        Some(MsrReads {
            read: RegisterRead {
                device,
                register,
                domain,
            },
        })
    }
}

/// The rows of path "msr-dev" on `machine`.
pub fn plan(machine: &Machine, plan: &mut Plan) {
    let cpus = machine.cpus();
    plan.rows.extend(msr_rows(
        &machine.roots.dev_cpu,
        &cpu_signature(),
        &cpus.packages_or_first(),
        &cpus,
        machine.window,
    ));
}

/// Path "msr-dev": every vendor energy MSR of the first package's lead CPU
/// (one that faults is unavailable) at its placements among `cpus`, probed
/// for liveness for up to `window`, or the cpuid stand-in. Row targets:
/// "0x611", "cpuid:0x0".
pub fn msr_rows(
    dev_root: &Path,
    cpu: &CpuSignature,
    packages: &[Package],
    cpus: &Cpus,
    window: Duration,
) -> Vec<Planned> {
    let first = &packages[..packages.len().min(1)];
    let target = first.first().map_or(0, |p| p.lead_cpu);
    let mut found = match msr_counters(dev_root, cpu, first) {
        Ok(found) => found,
        Err(e) => {
            let row = |p| {
                let meta = meta("msr-dev", "pread", None, Some(p), None, None);
                Planned::unavailable(meta, e.to_string())
            };
            return cpus.placements(Some(target)).into_iter().map(row).collect();
        }
    };
    found.probe(window);
    let mut rows = Vec::new();
    for counter in &found.counters {
        let Some(read) = counter.register_read() else {
            continue;
        };
        for p in cpus.placements(Some(target)) {
            let meta = meta(
                "msr-dev",
                "pread",
                Some(&read.register.target()),
                Some(p),
                found.stand_in.as_deref(),
                counter.liveness.clone(),
            );
            let why = counter.readable.clone().err();
            let reads = MsrReads { read: read.clone() };
            rows.push(Planned::run_unless(meta, why, reads));
        }
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::CpuVendor;
    use crate::liveness::Verdict;
    use crate::msr::{msr_device_path, MsrDevice};
    use crate::roots::{CPU, DEV_CPU};
    use crate::testutil::{write_msr_fixture, TempDir};

    const SHORT: Duration = Duration::from_millis(10);

    #[test]
    fn msr_rows_on_a_fixture_device_leave_faulting_msrs_unavailable() {
        let root = TempDir::new("plan-msr");
        let cpus = Cpus::at(CPU.real());
        let target = cpus.allowed()[0];
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
        let rows = msr_rows(root.path(), &intel, &[package], &cpus, SHORT);
        let per_msr = cpus.placements(Some(target)).len();
        assert_eq!(rows.len(), 5 * per_msr);
        let targets: Vec<&str> = rows
            .iter()
            .step_by(per_msr)
            .map(|r| r.meta.target.as_deref().unwrap())
            .collect();
        assert_eq!(targets, ["0x611", "0x639", "0x641", "0x619", "0x64d"]);
        assert_eq!(
            rows[0].id(None),
            format!("msr-dev/pread/0x611@{target}->{target}")
        );
        assert_eq!(rows[0].meta.liveness, Some(Verdict::Frozen));
        let psys = rows.last().unwrap();
        assert_eq!(
            psys.reason(),
            Some("rdmsr 0x64d faults on this CPU (EIO): this model does not implement it")
        );
        assert_eq!(psys.meta.liveness, None);
        let dram = rows[3 * per_msr].reads_as::<MsrReads>().unwrap();
        assert_eq!(dram.read.domain.joules_per_unit, 1.0 / 65536.0); // DRAM on Skylake-X
        let mut reader = rows[0].reads.as_ref().unwrap().open().unwrap();
        reader.read().unwrap();
    }

    #[test]
    fn msr_rows_without_a_device_use_the_cpuid_stand_in_or_say_why() {
        let root = TempDir::new("plan-msr-missing");
        let cpus = Cpus::at(CPU.real());
        let first = cpus.allowed()[0];
        let package = [Package {
            id: 0,
            lead_cpu: first,
        }];
        let rows = msr_rows(root.path(), &cpu_signature(), &package, &cpus, SHORT);
        assert_eq!(rows.len(), cpus.placements(Some(first)).len());
        // the fixture root has no cpuid device either: unavailable, target null
        assert!(rows.iter().all(|r| r.meta.target.is_none()));
        let reason = rows[0].reason().unwrap();
        assert!(
            reason.contains("missing: load the msr module")
                && reason.contains("; stand-in ")
                && reason.ends_with("missing too (load the cpuid module: modprobe cpuid)"),
            "{reason}"
        );
        // where this machine's msr device is missing and its cpuid device opens
        let dev = Path::new(DEV_CPU.real());
        if MsrDevice::open(&msr_device_path(dev, first)).is_ok() {
            return eprintln!("skipped: this machine has /dev/cpu/{first}/msr");
        }
        let cpuid = dev.join(first.to_string()).join("cpuid");
        if let Err(e) = MsrDevice::open(&cpuid) {
            return eprintln!("skipped: the cpuid stand-in cannot be opened here: {e}");
        }
        let rows = msr_rows(dev, &cpu_signature(), &package, &cpus, SHORT);
        assert_eq!(rows[0].meta.target.as_deref(), Some("cpuid:0x0"));
        assert_eq!(rows[0].meta.liveness, None);
        assert!(rows[0]
            .meta
            .stand_in
            .as_deref()
            .unwrap()
            .starts_with(&format!("/dev/cpu/{first}/msr missing")));
    }
}
