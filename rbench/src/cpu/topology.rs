//! The CPUs a CPU root lists (/sys/devices/system/cpu, or a fixture's):
//! which are online and may run this process, their packages, and the
//! placements of a counter's rows (ubench/cpu.cc's).

use std::path::{Path, PathBuf};

use nix::sched::{sched_getaffinity, CpuSet};
use nix::unistd::Pid;

use super::{parse_cpu_list, Package, Placement};
use crate::sysfs::read_first_line;

/// The CPUs as a CPU root lists them ([`crate::roots::CPU`], or a
/// fixture's). Which CPUs this process may run on (its affinity mask) is
/// always this machine's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cpus {
    /// Where `online` and `cpu<N>/topology/physical_package_id` are read.
    root: PathBuf,
}

/// The CPUs of this thread's affinity mask, ascending; None if unreadable.
fn affinity_cpus() -> Option<Vec<usize>> {
    let set = sched_getaffinity(Pid::from_raw(0)).ok()?;
    Some(
        (0..CpuSet::count())
            .filter(|&c| set.is_set(c).unwrap_or(false))
            .collect(),
    )
}

/// The placements of a counter on `target`: same CPU (target->target) and,
/// where there is one, `other`->target.
fn same_and_other(target: usize, other: Option<usize>) -> Vec<Placement> {
    let on = |cpu| Placement {
        cpu,
        target_cpu: Some(target),
    };
    std::iter::once(on(target)).chain(other.map(on)).collect()
}

impl Cpus {
    /// The CPUs listed under `root`.
    pub fn at(root: impl Into<PathBuf>) -> Cpus {
        Cpus { root: root.into() }
    }

    /// The CPUs listed under the root the environment names now
    /// ([`crate::roots::CPU`]).
    pub fn from_env() -> Cpus {
        Cpus::at(crate::roots::CPU.path())
    }

    /// The CPU root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Online CPUs, ascending: `online` under the root, else the affinity
    /// mask of this thread.
    pub fn online(&self) -> Vec<usize> {
        if let Some(line) = read_first_line(self.root.join("online")) {
            let cpus = parse_cpu_list(&line);
            if !cpus.is_empty() {
                return cpus;
            }
        }
        affinity_cpus().unwrap_or_default()
    }

    /// The online CPUs this process may run on (sched_getaffinity),
    /// ascending: where a thread can be pinned (ubench's usable_cpus()).
    /// Every online CPU if the mask cannot be read.
    pub fn allowed(&self) -> Vec<usize> {
        match affinity_cpus() {
            Some(mask) => self
                .online()
                .into_iter()
                .filter(|c| mask.contains(c))
                .collect(),
            None => self.online(),
        }
    }

    /// The physical package of `cpu`, from the topology under the root.
    pub fn package_of(&self, cpu: usize) -> Option<u32> {
        let path = self
            .root
            .join(format!("cpu{cpu}/topology/physical_package_id"));
        read_first_line(path)?.trim().parse().ok()
    }

    /// The "other CPU" of a same-CPU/other-CPU pair: the highest-numbered
    /// CPU this process may run on that is not `target`, or None when there
    /// is none.
    pub fn other_cpu(&self, target: usize) -> Option<usize> {
        self.allowed().into_iter().rev().find(|&c| c != target)
    }

    /// The "other CPU" for a package-scoped counter on `target` (a RAPL
    /// perf event, a BPF slot): the highest-numbered allowed CPU of the
    /// same package where the topology names one, else
    /// [`Cpus::other_cpu`]. Read from its own package such a counter needs
    /// no IPI, so the pair compares like with like; ubench's
    /// package_placements() picks the same CPU, so rows pair.
    pub fn other_cpu_in_package(&self, target: usize) -> Option<usize> {
        let package = self.package_of(target);
        let same_package = self
            .allowed()
            .into_iter()
            .rev()
            .find(|&c| c != target && package.is_some() && self.package_of(c) == package);
        same_package.or_else(|| self.other_cpu(target))
    }

    /// [`Cpus::placements`] of a package-scoped counter on `target`: same
    /// CPU and [`Cpus::other_cpu_in_package`].
    pub fn package_placements(&self, target: usize) -> Vec<Placement> {
        same_and_other(target, self.other_cpu_in_package(target))
    }

    /// Same CPU (target->target) and, when there is one, another CPU
    /// (other_cpu(target)->target). A counter that belongs to no CPU is
    /// read from the first CPU this process may run on only.
    pub fn placements(&self, target: Option<usize>) -> Vec<Placement> {
        let Some(target) = target else {
            let first = self.allowed().first().copied().unwrap_or(0);
            return vec![Placement {
                cpu: first,
                target_cpu: None,
            }];
        };
        same_and_other(target, self.other_cpu(target))
    }

    /// Every package with an online CPU, ordered by lead CPU.
    pub fn packages(&self) -> Vec<Package> {
        let mut out: Vec<Package> = Vec::new();
        for cpu in self.online() {
            if let Some(id) = self.package_of(cpu) {
                if !out.iter().any(|p| p.id == id) {
                    out.push(Package { id, lead_cpu: cpu });
                }
            }
        }
        out
    }

    /// [`Cpus::packages`], or where sysfs tells no topology, package 0 led
    /// by the first online CPU.
    pub fn packages_or_first(&self) -> Vec<Package> {
        let mut out = self.packages();
        if out.is_empty() {
            out.push(Package {
                id: 0,
                lead_cpu: self.online().first().copied().unwrap_or(0),
            });
        }
        out
    }

    /// Lowest-numbered online CPU of physical package `package` (the CPU
    /// through which the RAPL driver reads that package's MSRs), or None.
    pub fn package_lead_cpu(&self, package: u32) -> Option<usize> {
        self.online()
            .into_iter()
            .find(|&cpu| self.package_of(cpu) == Some(package))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::roots::CPU;

    #[test]
    fn package_placements_pair_the_same_cpu_with_one_of_its_package() {
        let cpus = Cpus::at(CPU.real());
        let package_of = |cpu| cpus.package_of(cpu);
        let allowed = cpus.allowed();
        let Some(&target) = allowed.first() else {
            return eprintln!("skipped: sched_getaffinity gave no CPU");
        };
        let pair = cpus.package_placements(target);
        assert_eq!(pair[0].label(), format!("{target}->{target}"));
        let package = package_of(target);
        let has_sibling = package.is_some()
            && allowed
                .iter()
                .any(|&c| c != target && package_of(c) == package);
        match pair.get(1) {
            Some(other) => {
                assert_ne!(other.cpu, target);
                assert!(allowed.contains(&other.cpu));
                if has_sibling {
                    assert_eq!(package_of(other.cpu), package);
                }
            }
            None => assert_eq!(allowed.len(), 1, "{pair:?}"),
        }
    }

    #[test]
    fn placements_pair_same_and_other_cpu() {
        let placements = |target| Cpus::at(CPU.real()).placements(target);
        let cpus = Cpus::at(CPU.real()).allowed();
        let first = cpus[0];
        let p = placements(Some(first));
        assert_eq!(
            p[0],
            Placement {
                cpu: first,
                target_cpu: Some(first)
            }
        );
        assert_eq!(p[0].label(), format!("{first}->{first}"));
        if cpus.len() > 1 {
            assert_eq!(p.len(), 2);
            assert_eq!(p[1].cpu, *cpus.last().unwrap());
            assert_eq!(p[1].label(), format!("{}->{first}", p[1].cpu));
        }
        let none = placements(None);
        assert_eq!(
            none,
            vec![Placement {
                cpu: first,
                target_cpu: None
            }]
        );
        assert_eq!(none[0].label(), first.to_string());
    }

    #[test]
    fn packages_from_a_fixture_topology() {
        let cpus = crate::testutil::two_packages_sys().join("devices/system/cpu");
        let ids: Vec<Option<u32>> = (0..5).map(|c| Cpus::at(&cpus).package_of(c)).collect();
        assert_eq!(ids, [Some(0), Some(0), Some(1), Some(1), None]);
    }

    #[test]
    fn this_machine_has_a_package_with_a_lead_cpu() {
        let cpus = Cpus::at(CPU.real());
        let packages = cpus.packages();
        assert!(!packages.is_empty());
        assert_eq!(
            cpus.package_lead_cpu(packages[0].id),
            Some(packages[0].lead_cpu)
        );
    }

    #[test]
    fn a_fixture_topology_gives_its_packages_and_placements() {
        let cpus = Cpus::at(crate::testutil::two_packages_sys().join("devices/system/cpu"));
        assert_eq!(cpus.online(), [0, 1, 2, 3]);
        let ids: Vec<u32> = cpus.packages().iter().map(|p| p.id).collect();
        assert_eq!(ids, [0, 1]);
        assert_eq!(cpus.package_lead_cpu(1), Some(2));
        // a CPU of package 1 this process may run on is the other CPU of 2
        let allowed = cpus.allowed();
        if allowed.contains(&2) && allowed.contains(&3) {
            assert_eq!(cpus.package_placements(2)[1].cpu, 3);
        }
    }
}
