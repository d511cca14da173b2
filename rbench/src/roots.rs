//! Where rbench finds the kernel's interfaces, and the test hooks that move
//! them to a fixture tree. Each root, its variable and its real directory
//! are listed once, in results/fixture_hooks.json, which bench-all reads
//! too (it refuses to run while a hook is set).

use std::ffi::OsStr;
use std::path::PathBuf;
use std::sync::OnceLock;

use serde::Deserialize;

/// One hook of results/fixture_hooks.json.
#[derive(Debug, Deserialize)]
struct Hook {
    /// The name a [`Root`] goes by.
    root: String,
    /// The environment variable naming a replacement.
    var: String,
    /// The real directory.
    default: String,
}

/// Every hook, in the file's order.
fn hooks() -> &'static [Hook] {
    #[derive(Deserialize)]
    struct File {
        hooks: Vec<Hook>,
    }
    static HOOKS: OnceLock<Vec<Hook>> = OnceLock::new();
    HOOKS.get_or_init(|| {
        let text = include_str!("../../results/fixture_hooks.json");
        let file: File = serde_json::from_str(text).expect("results/fixture_hooks.json parses");
        file.hooks
    })
}

/// A directory the kernel provides, and the variable that replaces it (by
/// its `root` name in results/fixture_hooks.json).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Root(&'static str);

impl Root {
    fn hook(self) -> &'static Hook {
        hooks()
            .iter()
            .find(|h| h.root == self.0)
            .unwrap_or_else(|| panic!("no root {:?} in results/fixture_hooks.json", self.0))
    }

    /// The environment variable naming a replacement.
    pub fn var(self) -> &'static str {
        &self.hook().var
    }

    /// The real directory.
    pub fn real(self) -> &'static str {
        &self.hook().default
    }

    /// The directory for the variable's value `value` (pure: the lookup
    /// without the environment): the value, or the real one where it is
    /// unset or empty.
    pub fn resolve(self, value: Option<&OsStr>) -> PathBuf {
        match value {
            Some(value) if !value.is_empty() => PathBuf::from(value),
            _ => PathBuf::from(self.real()),
        }
    }

    /// The directory, as the environment says now.
    pub fn path(self) -> PathBuf {
        self.resolve(std::env::var_os(self.var()).as_deref())
    }
}

/// The powercap zones (/sys/class/powercap).
pub const POWERCAP: Root = Root("powercap");

/// The per-CPU msr and cpuid devices (/dev/cpu).
pub const DEV_CPU: Root = Root("dev_cpu");

/// The perf PMUs (/sys/bus/event_source/devices).
pub const PMU: Root = Root("pmu");

/// The CPUs: which are online, and their topology (/sys/devices/system/cpu).
pub const CPU: Root = Root("cpu");

/// The ksample module's files (/proc/ksample).
pub const KSAMPLE: Root = Root("ksample");

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
    }

    #[test]
    fn every_hook_of_the_list_is_a_root_here() {
        let here: Vec<&str> = [POWERCAP, DEV_CPU, PMU, CPU, KSAMPLE]
            .iter()
            .map(|r| r.var())
            .collect();
        let listed: Vec<&str> = hooks().iter().map(|h| h.var.as_str()).collect();
        assert_eq!(here, listed);
    }
}
