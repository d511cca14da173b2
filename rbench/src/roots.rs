//! Where rbench finds the kernel's interfaces, and the test hooks that move
//! them to a fixture tree: the same variables as ubench, so one test can
//! plan both harnesses on the same fixtures. Unset or empty: the real path.
//!
//! * `RAPLBENCH_POWERCAP_ROOT` replaces /sys/class/powercap (the zones);
//! * `RAPLBENCH_DEV_CPU_ROOT` replaces /dev/cpu (`<N>/msr` and the
//!   `<N>/cpuid` stand-in);
//! * `RAPLBENCH_PMU_ROOT` replaces /sys/bus/event_source/devices (the
//!   `power` PMU and the `msr` stand-in);
//! * `RAPLBENCH_CPU_ROOT` replaces /sys/devices/system/cpu (`online` and
//!   `cpu<N>/topology/physical_package_id`, which the placements read);
//! * `RAPLBENCH_KSAMPLE_ROOT` replaces /proc/ksample (the ksample module's
//!   `control` and `records`; the sampler's alone, ubench has no such path).

use std::ffi::OsStr;
use std::path::PathBuf;

/// A directory the kernel provides, and the variable that replaces it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Root {
    /// The environment variable naming a replacement.
    pub var: &'static str,
    /// The real directory.
    pub default: &'static str,
}

impl Root {
    /// The directory for the variable's value `value` (pure: the lookup
    /// without the environment): the value, or the default where it is
    /// unset or empty.
    pub fn resolve(&self, value: Option<&OsStr>) -> PathBuf {
        match value {
            Some(value) if !value.is_empty() => PathBuf::from(value),
            _ => PathBuf::from(self.default),
        }
    }

    /// The directory, as the environment says now.
    pub fn path(&self) -> PathBuf {
        self.resolve(std::env::var_os(self.var).as_deref())
    }
}

/// The powercap zones.
pub const POWERCAP: Root = Root {
    var: "RAPLBENCH_POWERCAP_ROOT",
    default: crate::powercap::DEFAULT_POWERCAP_ROOT,
};

/// The per-CPU msr and cpuid devices.
pub const DEV_CPU: Root = Root {
    var: "RAPLBENCH_DEV_CPU_ROOT",
    default: crate::msr::DEV_CPU_ROOT,
};

/// The perf PMUs.
pub const PMU: Root = Root {
    var: "RAPLBENCH_PMU_ROOT",
    default: crate::perf::PMU_ROOT,
};

/// The CPUs: which are online, and their topology.
pub const CPU: Root = Root {
    var: "RAPLBENCH_CPU_ROOT",
    default: crate::cpu::CPU_ROOT,
};

/// The ksample module's files.
pub const KSAMPLE: Root = Root {
    var: "RAPLBENCH_KSAMPLE_ROOT",
    default: crate::ksample::DEFAULT_ROOT,
};

/// The roots a plan discovers its counters and places its rows under,
/// resolved once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Roots {
    /// /sys/class/powercap or its replacement.
    pub powercap: PathBuf,
    /// /dev/cpu or its replacement.
    pub dev_cpu: PathBuf,
    /// /sys/bus/event_source/devices or its replacement.
    pub pmu: PathBuf,
    /// /sys/devices/system/cpu or its replacement (online CPUs, packages:
    /// the rows' placements and the counters' CPUs).
    pub cpu: PathBuf,
}

impl Roots {
    /// The roots as the environment says now.
    pub fn from_env() -> Roots {
        Roots {
            powercap: POWERCAP.path(),
            dev_cpu: DEV_CPU.path(),
            pmu: PMU.path(),
            cpu: CPU.path(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unset_or_empty_means_the_real_directory() {
        assert_eq!(DEV_CPU.resolve(None), PathBuf::from("/dev/cpu"));
        assert_eq!(
            DEV_CPU.resolve(Some(OsStr::new(""))),
            PathBuf::from("/dev/cpu")
        );
        assert_eq!(
            PMU.resolve(Some(OsStr::new("/tmp/fixture/devices"))),
            PathBuf::from("/tmp/fixture/devices")
        );
        assert_eq!(CPU.resolve(None), PathBuf::from("/sys/devices/system/cpu"));
        assert_eq!(POWERCAP.resolve(None), PathBuf::from("/sys/class/powercap"));
    }

    #[test]
    fn the_variables_are_ubench_s() {
        let vars = [POWERCAP.var, DEV_CPU.var, PMU.var, CPU.var];
        assert_eq!(
            vars,
            [
                "RAPLBENCH_POWERCAP_ROOT",
                "RAPLBENCH_DEV_CPU_ROOT",
                "RAPLBENCH_PMU_ROOT",
                "RAPLBENCH_CPU_ROOT"
            ]
        );
        assert_eq!(
            PMU.default, "/sys/bus/event_source/devices",
            "the real PMU directory"
        );
    }
}
