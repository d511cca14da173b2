//! The msr discovery: every vendor energy MSR of every package, read once
//! on the package's lead CPU (one that faults is not readable), calibrated
//! by the unit MSR (which must be plausible); or the /dev/cpu/N/cpuid
//! stand-in where /dev/cpu/N/msr cannot be opened.

use std::path::Path;

use nix::errno::Errno;

use super::{Counter, Counters, Route};
use crate::cpu::{CpuSignature, Package};
use crate::liveness::msr_unit_problem;
use crate::msr::{
    domain_joules_per_unit, msr_device_path, msr_hex, rapl_energy_msrs, unit_msr, MsrDevice,
    Register, ENERGY_COUNTER_MAX,
};
use crate::{Domain, Error};

/// What an unprivileged reader of /dev/cpu/N/cpuid is told to do.
pub const CPUID_DEVICE_IS_ROOTS: &str =
    " (the device is root's, mode 0400: run as root, or give this user read access to it)";

/// The stand_in text of the cpuid stand-in.
fn cpuid_stand_in_text(missing: &Error, cpuid_path: &Path) -> String {
    format!(
        "{missing}: measured {} (pread of leaf 0), the same per-CPU character device and IPI route",
        cpuid_path.display()
    )
}

/// The cpuid stand-in on `cpu`: leaf 0 through /dev/cpu/<cpu>/cpuid, or
/// why it cannot be used either.
fn cpuid_stand_in(dev_root: &Path, cpu: usize, missing: Error) -> Result<Counters, Error> {
    let device = dev_root.join(cpu.to_string()).join("cpuid");
    if let Err(e) = MsrDevice::open(&device) {
        // after "stand-in <path>: ", what went wrong (the path once, and
        // none of the msr device's advice: the cpuid device needs no
        // CAP_SYS_RAWIO)
        let why = match e {
            Error::MsrMissing { .. } => {
                "missing too (load the cpuid module: modprobe cpuid)".to_string()
            }
            Error::MsrPermission { errno, .. } | Error::Os { errno, .. } => {
                let denied = matches!(errno, Errno::EACCES | Errno::EPERM);
                let advice = if denied { CPUID_DEVICE_IS_ROOTS } else { "" };
                format!("{}{advice}", errno.desc())
            }
            Error::CpuOffline { .. } => "CPU offline (ENXIO)".to_string(),
            other => other.to_string(),
        };
        return Err(Error::Unavailable(format!(
            "{missing}; stand-in {}: {why}",
            device.display()
        )));
    }
    Ok(Counters {
        stand_in: Some(cpuid_stand_in_text(&missing, &device)),
        counters: vec![Counter {
            name: format!("cpuid leaf 0x0 on CPU {cpu}"),
            route: Route::Register {
                device,
                register: Register::CpuidLeaf(0),
            },
            domain: Domain {
                source: format!("cpu{cpu}"),
                name: "cpuid:0x0".into(),
                joules_per_unit: 0.0,
                max: 0xFFFF_FFFF,
            },
            package: None,
            cpu: Some(cpu),
            readable: Ok(()),
            unit_problem: None,
            liveness: None,
        }],
    })
}

/// The energy MSRs of `package` (each readable or faulting).
fn package_counters(
    dev_root: &Path,
    cpu: &CpuSignature,
    package: &Package,
) -> Result<Vec<Counter>, Error> {
    let device_path = msr_device_path(dev_root, package.lead_cpu);
    let device = MsrDevice::open(&device_path)?;
    // a unit register that faults or reads 0 (or ESU 0) means "not RAPL"
    let (unit, unit_problem) = match unit_msr(cpu.vendor) {
        Some(addr) => match device.read_msr(addr) {
            Ok(value) => (Some(value), msr_unit_problem(addr, value)),
            Err(e) => (
                None,
                Some(format!(
                    "energy unit MSR {} cannot be read ({e}): no energy unit",
                    msr_hex(addr)
                )),
            ),
        },
        None => (None, None),
    };
    let unit = unit.filter(|_| unit_problem.is_none());
    Ok(rapl_energy_msrs(cpu.vendor)
        .iter()
        .map(|msr| Counter {
            domain: Domain {
                source: format!("package-{}", package.id),
                name: msr.domain.to_string(),
                joules_per_unit: unit.map_or(0.0, |u| domain_joules_per_unit(cpu, msr.addr, u)),
                max: ENERGY_COUNTER_MAX,
            },
            route: Route::Register {
                device: device_path.clone(),
                register: Register::Msr(msr.addr),
            },
            package: Some(package.id),
            cpu: Some(package.lead_cpu),
            name: format!("MSR {} on CPU {}", msr_hex(msr.addr), package.lead_cpu),
            readable: device
                .read_msr(msr.addr)
                .map(drop)
                .map_err(|e| e.to_string()),
            unit_problem: unit_problem.clone(),
            liveness: None,
        })
        .collect())
}

/// The vendor energy MSRs of every package in `packages` under `dev_root`
/// (a faulting one is listed, not readable), or the cpuid stand-in on the
/// first package's lead CPU where its msr device cannot be opened.
pub fn msr_counters(
    dev_root: &Path,
    cpu: &CpuSignature,
    packages: &[Package],
) -> Result<Counters, Error> {
    let first = packages.first().map_or(0, |p| p.lead_cpu);
    if let Err(missing) = MsrDevice::open(&msr_device_path(dev_root, first)) {
        return cpuid_stand_in(dev_root, first, missing);
    }
    if rapl_energy_msrs(cpu.vendor).is_empty() {
        return Err(Error::Unavailable(format!(
            "no known RAPL MSRs for this CPU vendor ({})",
            cpu.vendor.name()
        )));
    }
    let mut counters = Vec::new();
    for package in packages {
        counters.extend(package_counters(dev_root, cpu, package)?);
    }
    Ok(Counters {
        counters,
        stand_in: None,
    })
}

/// Why there is nothing to read where every energy MSR faults.
pub fn no_rapl_msr_message(cpu: &CpuSignature) -> String {
    format!(
        "every RAPL energy MSR of this {} CPU faults (EIO): no RAPL here (a VM?)",
        cpu.vendor.name()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::CpuVendor;
    use crate::discovery::open_counters;
    use crate::liveness::Verdict;
    use crate::testutil::{write_msr_fixture, TempDir};
    use crate::CounterSource;
    use std::time::Duration;

    const SKX: CpuSignature = CpuSignature {
        vendor: CpuVendor::Intel,
        family: 6,
        model: 0x55,
    };
    const INTEL_CLIENT: CpuSignature = CpuSignature {
        vendor: CpuVendor::Intel,
        family: 6,
        model: 0x5E,
    };
    const INTEL_SPR: CpuSignature = CpuSignature {
        vendor: CpuVendor::Intel,
        family: 6,
        model: 0x8F,
    };

    /// The readable counters of `found`, opened together as a source.
    fn open_readable(found: &Counters) -> Box<dyn CounterSource + Send> {
        let readable: Vec<Counter> = found.readable().cloned().collect();
        open_counters(&readable, found.stand_in.clone()).unwrap()
    }

    #[test]
    fn discovers_intel_domains_per_package_and_leaves_faulting_ones_out() {
        let root = TempDir::new("msr-intel");
        // package 0 on CPU 0; PSYS (0x64d) lies beyond the end: it faults
        let values = [
            (0x606, 0x000A_0E03),
            (0x611, 0x1111_0000_8A2B_3C4D),
            (0x639, 0x0123_4567),
            (0x619, 42),
            (0x641, 7),
        ];
        write_msr_fixture(root.path(), 0, &values);
        write_msr_fixture(root.path(), 2, &values);
        let packages = [
            Package { id: 0, lead_cpu: 0 },
            Package { id: 1, lead_cpu: 2 },
        ];
        let found = msr_counters(root.path(), &INTEL_SPR, &packages).unwrap();
        let mut source = open_readable(&found);
        assert_eq!(source.stand_in(), None);
        let names: Vec<String> = source
            .domains()
            .iter()
            .map(|d| format!("{}/{}", d.source, d.name))
            .collect();
        assert_eq!(
            names,
            [
                "package-0/package",
                "package-0/core",
                "package-0/uncore",
                "package-0/dram",
                "package-1/package",
                "package-1/core",
                "package-1/uncore",
                "package-1/dram",
            ]
        );
        let pkg = &source.domains()[0];
        assert_eq!((pkg.joules_per_unit, pkg.max), (1.0 / 16384.0, 0xFFFF_FFFF));
        assert_eq!(source.domains()[3].joules_per_unit, 1.0 / 65536.0); // the server DRAM unit
        let mut out = [0u64; 8];
        source.read(&mut out).unwrap();
        assert_eq!(out[..4], [0x8A2B_3C4D, 0x0123_4567, 7, 42]); // reserved bits 63:32 masked

        // a client part: DRAM follows ESU
        let client =
            open_readable(&msr_counters(root.path(), &INTEL_CLIENT, &packages[..1]).unwrap());
        assert_eq!(client.domains()[3].joules_per_unit, 1.0 / 16384.0);
    }

    #[test]
    fn discovers_amd_domains_at_their_high_addresses() {
        let root = TempDir::new("msr-amd");
        // the unit, core and package MSRs are 1 byte apart, so their 8-byte
        // values overlap in a file: bytes 03 10 0a at 0xc0010299.. give
        // unit 0x0a1003 (ESU 16), core 0x0a10 and package 0x0a
        // (the zero at 0xc00102a0 extends the file to cover all three)
        write_msr_fixture(
            root.path(),
            0,
            &[(0xC001_0299, 0x000A_1003), (0xC001_02A0, 0)],
        );
        let amd = CpuSignature {
            vendor: CpuVendor::Amd,
            family: 0x19,
            model: 1,
        };
        let found = msr_counters(root.path(), &amd, &[Package { id: 0, lead_cpu: 0 }]).unwrap();
        let mut source = open_readable(&found);
        let names: Vec<&str> = source.domains().iter().map(|d| d.name.as_str()).collect();
        assert_eq!(names, ["core", "package"]);
        assert_eq!(source.domains()[1].joules_per_unit, 1.0 / 65536.0);
        let mut out = [0u64; 2];
        source.read(&mut out).unwrap();
        assert_eq!(out, [0x0A10, 0x0A]);
    }

    #[test]
    fn unknown_vendor_is_unavailable() {
        let root = TempDir::new("msr-other");
        write_msr_fixture(root.path(), 0, &[(0x611, 1)]);
        let other = CpuSignature {
            vendor: CpuVendor::Other,
            family: 0,
            model: 0,
        };
        let err = msr_counters(root.path(), &other, &[Package { id: 0, lead_cpu: 0 }])
            .err()
            .unwrap();
        assert_eq!(
            err.to_string(),
            "no known RAPL MSRs for this CPU vendor (other)"
        );
    }

    #[test]
    fn a_unit_register_of_0_makes_every_msr_no_unit() {
        let root = TempDir::new("msr-no-unit");
        write_msr_fixture(root.path(), 0, &[(0x606, 0), (0x611, 5), (0x64d, 0)]);
        let mut found = msr_counters(root.path(), &SKX, &[Package { id: 0, lead_cpu: 0 }]).unwrap();
        found.probe(Duration::from_millis(10));
        let pkg = &found.counters[0];
        assert_eq!(pkg.domain.joules_per_unit, 0.0);
        let l = pkg.liveness.as_ref().unwrap();
        assert_eq!(l.verdict, Verdict::NoUnit);
        assert_eq!(
            l.note.as_deref(),
            Some("MSR 0x611 on CPU 0: energy unit MSR 0x606 reads 0x0: not RAPL, no energy unit")
        );
        assert!(found.counters.iter().all(|c| c.readable.is_ok()));
    }

    #[test]
    fn a_plausible_unit_and_a_static_file_make_frozen_msrs() {
        let root = TempDir::new("msr-frozen");
        write_msr_fixture(
            root.path(),
            0,
            &[
                (0x606, 0xA0E03),
                (0x611, 5),
                (0x619, 1),
                (0x639, 2),
                (0x641, 3),
            ],
        );
        let mut found = msr_counters(root.path(), &SKX, &[Package { id: 0, lead_cpu: 0 }]).unwrap();
        found.probe(Duration::from_millis(10));
        let readable: Vec<&str> = found.readable().map(|c| c.domain.name.as_str()).collect();
        assert_eq!(readable, ["package", "core", "uncore", "dram"]); // psys faults
        assert!(found
            .readable()
            .all(|c| c.liveness.as_ref().unwrap().verdict == Verdict::Frozen));
        assert_eq!(
            found.counters[4].readable,
            Err("rdmsr 0x64d faults on this CPU (EIO): this model does not implement it".into())
        );
    }

    #[test]
    fn a_cpuid_stand_in_that_fails_otherwise_names_its_path_once() {
        let root = TempDir::new("msr-notdir");
        std::fs::write(root.path().join("0"), "").unwrap(); // <root>/0 is no directory
        let err = msr_counters(root.path(), &SKX, &[Package { id: 0, lead_cpu: 0 }])
            .err()
            .unwrap()
            .to_string();
        let dev = root.path().join("0");
        assert_eq!(
            err,
            format!(
                "{}/msr: Not a directory; stand-in {}/cpuid: Not a directory",
                dev.display(),
                dev.display()
            )
        );
    }

    /// Run by `make test` as an unprivileged user (root opens any file).
    #[test]
    fn an_unreadable_cpuid_stand_in_says_whose_it_is() {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } == 0 {
            eprintln!("skipped: root opens a mode-0 file anyway");
            return;
        }
        use std::os::unix::fs::PermissionsExt;
        let root = TempDir::new("msr-cpuid-denied");
        let dev = root.path().join("0");
        std::fs::create_dir(&dev).unwrap();
        std::fs::write(dev.join("cpuid"), "x").unwrap();
        std::fs::set_permissions(dev.join("cpuid"), std::fs::Permissions::from_mode(0o000))
            .unwrap();
        let err = msr_counters(root.path(), &SKX, &[Package { id: 0, lead_cpu: 0 }])
            .err()
            .unwrap()
            .to_string();
        assert!(
            err.ends_with(&format!(
                "; stand-in {}/cpuid: Permission denied{CPUID_DEVICE_IS_ROOTS}",
                dev.display()
            )),
            "{err}"
        );
    }

    #[test]
    fn a_missing_device_without_cpuid_says_both() {
        let root = TempDir::new("msr-none");
        let err = msr_counters(root.path(), &SKX, &[Package { id: 0, lead_cpu: 0 }])
            .err()
            .unwrap()
            .to_string();
        assert!(
            err.contains("missing: load the msr module")
                && err.ends_with("/0/cpuid: missing too (load the cpuid module: modprobe cpuid)"),
            "{err}"
        );
    }

    #[test]
    fn the_cpuid_stand_in_says_why_in_the_rows_words() {
        let missing = Error::MsrMissing {
            path: "/dev/cpu/0/msr".into(),
        };
        assert_eq!(
            cpuid_stand_in_text(&missing, Path::new("/dev/cpu/0/cpuid")),
            "/dev/cpu/0/msr missing: load the msr module (modprobe msr; kernel needs CONFIG_X86_MSR): \
             measured /dev/cpu/0/cpuid (pread of leaf 0), the same per-CPU character device and IPI route"
        );
    }

    #[test]
    fn the_cpuid_stand_in_reads_leaf_0_where_the_device_opens() {
        // /dev/cpu/0/cpuid is root-only: probe by opening it
        let root = Path::new(crate::roots::DEV_CPU.real());
        let missing = Error::Unavailable("no msr".into());
        let found = match cpuid_stand_in(root, 0, missing) {
            Ok(found) => found,
            Err(e) => return eprintln!("skipped: {e}"),
        };
        let mut source = match open_counters(&found.counters, found.stand_in) {
            Ok(source) => source,
            Err(e) => return eprintln!("skipped: {e}"),
        };
        let mut out = [0u64; 1];
        source.read(&mut out).unwrap();
        let max_leaf = core::arch::x86_64::__cpuid(0).eax;
        assert_eq!(out[0], u64::from(max_leaf));
    }
}
