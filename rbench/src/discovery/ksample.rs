//! The ksample discovery: every energy MSR the module reads on each
//! package's lead CPU (from /proc/ksample/control), calibrated by the unit
//! MSR value the module read there (which must be plausible), like the msr
//! discovery; an MSR the module left out because it faulted is listed, not
//! readable. The liveness probe then runs the module itself
//! ([`ProbeSource`](super::ksample_probe::ProbeSource)).

use std::path::Path;

use super::{Counter, Counters, Route};
use crate::cpu::CpuSignature;
use crate::ksample::{Module, PackageState};
use crate::liveness::msr_unit_problem;
use crate::msr::{domain_joules_per_unit, msr_hex, rapl_energy_msr, ENERGY_COUNTER_MAX};
use crate::{Domain, Error};

/// Why `package`'s unit is not energy, or None.
fn unit_problem(package: &PackageState) -> Option<String> {
    match package.unit {
        Some(value) => msr_unit_problem(package.unit_msr, value),
        None => Some(format!(
            "energy unit MSR {} faulted when ksample read it on CPU {}: no energy unit",
            msr_hex(package.unit_msr),
            package.cpu
        )),
    }
}

/// The counters of one package: the MSRs it reads, then those that faulted.
fn package_counters(root: &Path, cpu: &CpuSignature, package: &PackageState) -> Vec<Counter> {
    let problem = unit_problem(package);
    let unit = package.unit.filter(|_| problem.is_none());
    let read = package.msrs.iter().map(|&m| (m, Ok(())));
    let faulting =
        (package.faulting.iter()).map(|&m| (m, Err(Error::MsrFault { addr: m }.to_string())));
    read.chain(faulting)
        .map(|(msr, readable)| Counter {
            domain: Domain {
                source: format!("package-{}", package.index),
                name: rapl_energy_msr(msr).map_or_else(|| msr_hex(msr), |m| m.domain.to_string()),
                joules_per_unit: unit.map_or(0.0, |unit| domain_joules_per_unit(cpu, msr, unit)),
                max: ENERGY_COUNTER_MAX,
            },
            route: Route::Ksample {
                root: root.to_path_buf(),
                package: package.index,
                msr,
                cpu: package.cpu,
            },
            package: Some(package.index),
            cpu: Some(package.cpu),
            name: format!("MSR {} on CPU {} (ksample)", msr_hex(msr), package.cpu),
            readable,
            unit_problem: problem.clone(),
            liveness: None,
        })
        .collect()
}

/// Every energy MSR the ksample module under `root` reads, per package;
/// an error if the module is not loaded or its control file cannot be read.
pub fn ksample_counters(root: &Path, cpu: &CpuSignature) -> Result<Counters, Error> {
    let status = Module::at(root).status()?;
    Ok(Counters {
        counters: status
            .packages
            .iter()
            .flat_map(|p| package_counters(root, cpu, p))
            .collect(),
        stand_in: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::CpuVendor;
    use crate::testutil::TempDir;

    const SKX: CpuSignature = CpuSignature {
        vendor: CpuVendor::Intel,
        family: 6,
        model: 0x55,
    };

    #[test]
    fn each_package_s_msrs_with_their_units_and_the_faulting_ones_unreadable() {
        let root = TempDir::new("ksample-discovery");
        std::fs::write(root.path().join("control"), crate::ksample::TWO_PACKAGES).unwrap();
        let found = ksample_counters(root.path(), &SKX).unwrap();
        let names: Vec<String> = found
            .counters
            .iter()
            .map(|c| format!("{}/{}", c.domain.source, c.domain.name))
            .collect();
        assert_eq!(
            names,
            [
                "package-0/package",
                "package-0/core",
                "package-0/uncore",
                "package-0/dram",
                "package-0/psys",
                "package-1/package",
                "package-1/core"
            ]
        );
        let pkg = &found.counters[0];
        assert_eq!(pkg.domain.joules_per_unit, 1.0 / 16384.0); // ESU 14
        assert_eq!(found.counters[3].domain.joules_per_unit, 1.0 / 65536.0); // server DRAM
        assert_eq!((pkg.cpu, pkg.package), (Some(0), Some(0)));
        assert_eq!(
            pkg.route.describe(true),
            format!(
                "rdmsr 0x611 in the ksample hrtimer on CPU 0 ({}/records)",
                root.path().display()
            )
        );
        // package 1: its unit faulted, both MSRs faulted at the start
        let p1 = &found.counters[5];
        assert_eq!(p1.domain.joules_per_unit, 0.0);
        assert_eq!(
            p1.unit_problem.as_deref(),
            Some("energy unit MSR 0x606 faulted when ksample read it on CPU 28: no energy unit")
        );
        assert_eq!(
            p1.readable,
            Err("rdmsr 0x611 faults on this CPU (EIO): this model does not implement it".into())
        );
        assert_eq!(found.readable().count(), 5);
    }

    #[test]
    fn a_unit_of_0_or_esu_0_is_no_unit_before_any_probe() {
        for unit in ["0x0", "0xa0003"] {
            let text = crate::ksample::TWO_PACKAGES.replace("0xa0e03", unit);
            let root = TempDir::new("ksample-no-unit");
            std::fs::write(root.path().join("control"), text).unwrap();
            let found = ksample_counters(root.path(), &SKX).unwrap();
            let c = &found.counters[0];
            assert_eq!(c.domain.joules_per_unit, 0.0);
            assert_eq!(
                c.unit_problem.clone().unwrap(),
                format!("energy unit MSR 0x606 reads {unit}: not RAPL, no energy unit")
            );
        }
    }

    #[test]
    fn a_missing_module_is_an_error_saying_how_to_load_it() {
        let root = TempDir::new("ksample-absent");
        let err = ksample_counters(&root.path().join("ksample"), &SKX)
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("the ksample module is not loaded ("),
            "{err}"
        );
    }
}
