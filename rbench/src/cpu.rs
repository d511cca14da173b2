//! Which CPUs exist, pinning the calling thread, the CPU vendor and model,
//! and where a benchmark runs relative to the counter it reads (the same
//! placements and labels as ubench/cpu.cc).

use nix::sched::{sched_getaffinity, sched_setaffinity, CpuSet};
use nix::unistd::Pid;

use crate::sysfs::read_first_line;
use crate::Error;

/// Parses a kernel CPU list such as "0-3,8,10-11" (ascending as written).
/// Parts that are not numbers are skipped.
pub fn parse_cpu_list(list: &str) -> Vec<usize> {
    let mut cpus = Vec::new();
    for part in list.trim().split(',').filter(|p| !p.is_empty()) {
        let (lo, hi) = part.split_once('-').unwrap_or((part, part));
        if let (Ok(lo), Ok(hi)) = (lo.trim().parse::<usize>(), hi.trim().parse::<usize>()) {
            cpus.extend(lo..=hi);
        }
    }
    cpus
}

/// Where the kernel lists the CPUs (`online`, `cpu<N>/topology`); see
/// [`crate::roots::CPU`] for the variable that replaces it.
pub const CPU_ROOT: &str = "/sys/devices/system/cpu";

/// Online CPUs, ascending: `online` under the CPU root
/// (/sys/devices/system/cpu, or `$RAPLBENCH_CPU_ROOT`), else the affinity
/// mask of this thread.
pub fn online_cpus() -> Vec<usize> {
    if let Some(line) = read_first_line(crate::roots::CPU.path().join("online")) {
        let cpus = parse_cpu_list(&line);
        if !cpus.is_empty() {
            return cpus;
        }
    }
    affinity_cpus().unwrap_or_default()
}

/// Pins the calling thread to `cpu`.
pub fn pin_to_cpu(cpu: usize) -> Result<(), Error> {
    let mut set = CpuSet::new();
    set.set(cpu)
        .and_then(|()| sched_setaffinity(Pid::from_raw(0), &set))
        .map_err(|errno| {
            Error::Unavailable(format!(
                "cannot pin to CPU {cpu}: {} (is it online and in this process's cpuset?)",
                errno.desc()
            ))
        })
}

/// Restores the calling thread's CPU affinity when dropped (after pinning
/// it to CPU after CPU, as the eBPF loader does).
pub struct AffinityGuard {
    /// The affinity to restore; None if it could not be read.
    saved: Option<CpuSet>,
}

impl AffinityGuard {
    /// Remembers the calling thread's current affinity.
    pub fn save() -> AffinityGuard {
        AffinityGuard {
            saved: sched_getaffinity(Pid::from_raw(0)).ok(),
        }
    }
}

impl Drop for AffinityGuard {
    fn drop(&mut self) {
        if let Some(set) = &self.saved {
            let _ = sched_setaffinity(Pid::from_raw(0), set);
        }
    }
}

/// The "other CPU" of a same-CPU/other-CPU pair: the highest-numbered CPU
/// this process may run on that is not `target`, or None when there is none.
pub fn other_cpu(target: usize) -> Option<usize> {
    allowed_cpus().into_iter().rev().find(|&c| c != target)
}

/// The "other CPU" for a package-scoped counter on `target` (a RAPL perf
/// event, a BPF slot): the highest-numbered allowed CPU of the same package
/// where the topology names one, else [`other_cpu`]. Read from its own
/// package such a counter needs no IPI, so the pair compares like with
/// like; ubench's package_placements() picks the same CPU, so rows pair.
pub fn other_cpu_in_package(target: usize) -> Option<usize> {
    let package = package_of(target);
    let same_package = allowed_cpus()
        .into_iter()
        .rev()
        .find(|&c| c != target && package.is_some() && package_of(c) == package);
    same_package.or_else(|| other_cpu(target))
}

/// Where a benchmark thread runs relative to the CPU whose counter it reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Placement {
    /// The benchmark thread's CPU.
    pub cpu: usize,
    /// The counter's CPU; None if the counter belongs to no CPU.
    pub target_cpu: Option<usize>,
}

impl Placement {
    /// "0->0" (same CPU), "1->0" (CPU 1 reads CPU 0's counter), or "0"
    /// (a counter of no CPU, read from CPU 0).
    pub fn label(&self) -> String {
        match self.target_cpu {
            Some(target) => format!("{}->{}", self.cpu, target),
            None => self.cpu.to_string(),
        }
    }
}

/// [`placements`] of a package-scoped counter on `target`: same CPU and
/// [`other_cpu_in_package`].
pub fn package_placements(target: usize) -> Vec<Placement> {
    let same = Placement {
        cpu: target,
        target_cpu: Some(target),
    };
    let other = other_cpu_in_package(target).map(|cpu| Placement {
        cpu,
        target_cpu: Some(target),
    });
    std::iter::once(same).chain(other).collect()
}

/// Same CPU (target->target) and, when there is one, another CPU
/// (other_cpu(target)->target). A counter that belongs to no CPU is read
/// from the first CPU this process may run on only.
pub fn placements(target: Option<usize>) -> Vec<Placement> {
    let Some(target) = target else {
        let first = allowed_cpus().first().copied().unwrap_or(0);
        return vec![Placement {
            cpu: first,
            target_cpu: None,
        }];
    };
    let mut out = vec![Placement {
        cpu: target,
        target_cpu: Some(target),
    }];
    if let Some(other) = other_cpu(target) {
        out.push(Placement {
            cpu: other,
            target_cpu: Some(target),
        });
    }
    out
}

/// One physical package (socket) and the CPU through which its RAPL
/// registers are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Package {
    /// topology/physical_package_id.
    pub id: u32,
    /// Its lowest-numbered online CPU.
    pub lead_cpu: usize,
}

/// The physical package of `cpu`, from the CPU topology under `cpu_root`
/// ([`CPU_ROOT`], or a fixture's `sys/devices/system/cpu`).
pub fn package_of_in(cpu_root: &std::path::Path, cpu: usize) -> Option<u32> {
    read_first_line(cpu_root.join(format!("cpu{cpu}/topology/physical_package_id")))?
        .trim()
        .parse()
        .ok()
}

/// The physical package of `cpu`, from the topology under the CPU root.
fn package_of(cpu: usize) -> Option<u32> {
    package_of_in(&crate::roots::CPU.path(), cpu)
}

/// The online CPUs this process may run on (sched_getaffinity), ascending:
/// where a thread can be pinned (ubench's usable_cpus()). Every online CPU
/// if the mask cannot be read.
pub fn allowed_cpus() -> Vec<usize> {
    match affinity_cpus() {
        Some(mask) => online_cpus()
            .into_iter()
            .filter(|c| mask.contains(c))
            .collect(),
        None => online_cpus(),
    }
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

/// Every package with an online CPU, ordered by lead CPU.
pub fn packages() -> Vec<Package> {
    let mut out: Vec<Package> = Vec::new();
    for cpu in online_cpus() {
        if let Some(id) = package_of(cpu) {
            if !out.iter().any(|p| p.id == id) {
                out.push(Package { id, lead_cpu: cpu });
            }
        }
    }
    out
}

/// [`packages`], or where sysfs tells no topology, package 0 led by the
/// first online CPU.
pub fn packages_or_first() -> Vec<Package> {
    let mut out = packages();
    if out.is_empty() {
        out.push(Package {
            id: 0,
            lead_cpu: online_cpus().first().copied().unwrap_or(0),
        });
    }
    out
}

/// Lowest-numbered online CPU of physical package `package` (the CPU
/// through which the RAPL driver reads that package's MSRs), or None.
pub fn package_lead_cpu(package: u32) -> Option<usize> {
    online_cpus()
        .into_iter()
        .find(|&cpu| package_of(cpu) == Some(package))
}

/// The CPU vendors that matter for RAPL.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CpuVendor {
    /// GenuineIntel.
    Intel,
    /// AuthenticAMD, and HygonGenuine (Hygon parts carry AMD's RAPL MSRs).
    Amd,
    /// Anything else.
    Other,
}

impl CpuVendor {
    /// "Intel", "AMD", "other" (as ubench's vendor_name).
    pub fn name(self) -> &'static str {
        match self {
            CpuVendor::Intel => "Intel",
            CpuVendor::Amd => "AMD",
            CpuVendor::Other => "other",
        }
    }

    /// From the 12-byte cpuid vendor string.
    pub fn from_vendor_string(vendor: &[u8]) -> CpuVendor {
        match vendor {
            b"GenuineIntel" => CpuVendor::Intel,
            b"AuthenticAMD" | b"HygonGenuine" => CpuVendor::Amd,
            _ => CpuVendor::Other,
        }
    }
}

/// Vendor, family and model of this CPU, as the kernel computes them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CpuSignature {
    /// From cpuid leaf 0.
    pub vendor: CpuVendor,
    /// Display family (base family, plus the extended family when base is 0xF).
    pub family: u32,
    /// Display model (base model, plus the extended model << 4 for families 6 and 0xF).
    pub model: u32,
}

impl CpuSignature {
    /// Decodes cpuid leaf 1 EAX (family/model/stepping) for `vendor`.
    pub fn from_leaf1_eax(vendor: CpuVendor, eax: u32) -> CpuSignature {
        let base_family = (eax >> 8) & 0xF;
        let family = if base_family == 0xF {
            base_family + ((eax >> 20) & 0xFF)
        } else {
            base_family
        };
        let mut model = (eax >> 4) & 0xF;
        if base_family == 0x6 || base_family == 0xF {
            model |= ((eax >> 16) & 0xF) << 4;
        }
        CpuSignature {
            vendor,
            family,
            model,
        }
    }
}

/// The vendor from cpuid leaf 0 (one trapping instruction in a VM: call once).
pub fn cpu_vendor() -> CpuVendor {
    let leaf0 = core::arch::x86_64::__cpuid(0);
    let mut vendor = [0u8; 12];
    vendor[0..4].copy_from_slice(&leaf0.ebx.to_le_bytes());
    vendor[4..8].copy_from_slice(&leaf0.edx.to_le_bytes());
    vendor[8..12].copy_from_slice(&leaf0.ecx.to_le_bytes());
    CpuVendor::from_vendor_string(&vendor)
}

/// Vendor, family and model of the CPU this runs on (cpuid leaves 0 and 1).
pub fn cpu_signature() -> CpuSignature {
    let leaf1 = core::arch::x86_64::__cpuid(1);
    CpuSignature::from_leaf1_eax(cpu_vendor(), leaf1.eax)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn package_placements_pair_the_same_cpu_with_one_of_its_package() {
        let allowed = allowed_cpus();
        let Some(&target) = allowed.first() else {
            return eprintln!("skipped: sched_getaffinity gave no CPU");
        };
        let pair = package_placements(target);
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
    fn parses_kernel_cpu_lists() {
        assert_eq!(parse_cpu_list("0"), vec![0]);
        assert_eq!(parse_cpu_list("0-3,8,10-11\n"), vec![0, 1, 2, 3, 8, 10, 11]);
        assert!(parse_cpu_list("").is_empty());
    }

    #[test]
    fn placements_pair_same_and_other_cpu() {
        let cpus = allowed_cpus();
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
    fn pinning_moves_the_thread_and_the_guard_restores_it() {
        let before = sched_getaffinity(Pid::from_raw(0)).unwrap();
        {
            let _guard = AffinityGuard::save();
            for cpu in allowed_cpus() {
                pin_to_cpu(cpu).unwrap();
                // SAFETY: sched_getcpu has no preconditions.
                assert_eq!(unsafe { libc::sched_getcpu() }, cpu as i32);
            }
        }
        assert_eq!(sched_getaffinity(Pid::from_raw(0)).unwrap(), before);
        let err = pin_to_cpu(100_000).unwrap_err().to_string();
        assert!(err.starts_with("cannot pin to CPU 100000"), "{err}");
    }

    #[test]
    fn decodes_family_and_model() {
        // Sapphire Rapids: family 6, model 0x8F (eax 0x000806F8)
        let spr = CpuSignature::from_leaf1_eax(CpuVendor::Intel, 0x0008_06F8);
        assert_eq!((spr.family, spr.model), (6, 0x8F));
        // Zen 3 EPYC: family 0x19, model 0x01 (eax 0x00A00F11)
        let zen3 = CpuSignature::from_leaf1_eax(CpuVendor::Amd, 0x00A0_0F11);
        assert_eq!((zen3.family, zen3.model), (0x19, 0x01));
        assert_eq!(
            CpuVendor::from_vendor_string(b"HygonGenuine"),
            CpuVendor::Amd
        );
        assert_eq!(
            CpuVendor::from_vendor_string(b"GenuineIntel").name(),
            "Intel"
        );
    }

    #[test]
    fn packages_from_a_fixture_topology() {
        let cpus = crate::testutil::two_packages_sys().join("devices/system/cpu");
        let ids: Vec<Option<u32>> = (0..5).map(|c| package_of_in(&cpus, c)).collect();
        assert_eq!(ids, [Some(0), Some(0), Some(1), Some(1), None]);
    }

    #[test]
    fn this_machine_has_a_package_with_a_lead_cpu() {
        let packages = packages();
        assert!(!packages.is_empty());
        assert_eq!(package_lead_cpu(packages[0].id), Some(packages[0].lead_cpu));
    }
}
