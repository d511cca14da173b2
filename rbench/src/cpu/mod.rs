//! Which CPUs exist ([`Cpus`], in topology.rs), pinning the calling thread,
//! the CPU vendor and model, and where a benchmark runs relative to the
//! counter it reads (the same placements and labels as ubench/cpu.cc).

use nix::sched::{sched_getaffinity, sched_setaffinity, CpuSet};
use nix::unistd::Pid;

use crate::Error;

mod topology;

pub use topology::Cpus;

/// CPU numbers from this one up are no CPU: far above any kernel's NR_CPUS
/// (x86's largest, MAXSMP, is 8192). A list that names them is malformed.
pub const CPU_LIMIT: usize = 1 << 16;

/// Parses a kernel CPU list such as "0-3,8,10-11" (ascending as written).
/// Parts that are not numbers, or reach CPU_LIMIT, are skipped (a
/// malformed "0-4294967295" must not list four billion CPUs); so is every
/// part of a list whose CPUs would outnumber CPU_LIMIT.
pub fn parse_cpu_list(list: &str) -> Vec<usize> {
    let mut cpus = Vec::new();
    for part in list.trim().split(',').filter(|p| !p.is_empty()) {
        let (lo, hi) = part.split_once('-').unwrap_or((part, part));
        if let (Ok(lo), Ok(hi)) = (lo.trim().parse::<usize>(), hi.trim().parse::<usize>()) {
            if hi < CPU_LIMIT && cpus.len() + hi.saturating_sub(lo) < CPU_LIMIT {
                cpus.extend(lo..=hi);
            }
        }
    }
    cpus
}

/// The online CPUs this process may run on, under the CPU root the
/// environment names ([`Cpus::allowed`] of [`Cpus::from_env`]).
pub fn allowed_cpus() -> Vec<usize> {
    Cpus::from_env().allowed()
}

/// A CPU number given on the command line (`--cpu`, `--victim-cpu`), for
/// clap's value_parser; whether it is online and allowed is
/// [`cpu_problem`]'s to say.
pub fn parse_cpu_arg(text: &str) -> Result<usize, String> {
    text.parse::<usize>()
        .map_err(|_| format!("'{text}' is not a CPU number: an integer, 0 or more"))
}

/// Why `cpu`, given by the option `flag` (`--cpu`, `--victim-cpu`), cannot
/// be pinned to: not online, or outside this process's affinity mask;
/// None when it can.
pub fn cpu_problem(flag: &str, cpu: usize, online: &[usize], allowed: &[usize]) -> Option<String> {
    let list = |cpus: &[usize]| {
        cpus.iter()
            .map(usize::to_string)
            .collect::<Vec<_>>()
            .join(",")
    };
    if !online.contains(&cpu) {
        Some(format!(
            "{flag} {cpu}: not an online CPU (online: {})",
            list(online)
        ))
    } else if !allowed.contains(&cpu) {
        Some(format!(
            "{flag} {cpu}: not in this process's affinity mask (allowed: {}; see taskset or the cgroup's cpuset)",
            list(allowed)
        ))
    } else {
        None
    }
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

/// One physical package (socket) and the CPU through which its RAPL
/// registers are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Package {
    /// topology/physical_package_id.
    pub id: u32,
    /// Its lowest-numbered online CPU.
    pub lead_cpu: usize,
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

/// Vendor, family and model of the CPU this runs on (cpuid leaves 0 and 1,
/// each one trapping instruction in a VM: call once).
pub fn cpu_signature() -> CpuSignature {
    let leaf0 = core::arch::x86_64::__cpuid(0);
    let vendor = [leaf0.ebx, leaf0.edx, leaf0.ecx]
        .map(u32::to_le_bytes)
        .concat();
    let leaf1 = core::arch::x86_64::__cpuid(1);
    CpuSignature::from_leaf1_eax(CpuVendor::from_vendor_string(&vendor), leaf1.eax)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cpu_must_be_online_and_allowed() {
        assert_eq!(cpu_problem("--cpu", 1, &[0, 1], &[0, 1]), None);
        let offline = cpu_problem("--cpu", 5, &[0, 1], &[0, 1]).unwrap();
        assert!(
            offline.contains("--cpu 5: not an online CPU (online: 0,1)"),
            "{offline}"
        );
        let masked = cpu_problem("--victim-cpu", 1, &[0, 1], &[0]).unwrap();
        assert!(
            masked.contains("--victim-cpu 1: not in this process's affinity mask (allowed: 0;"),
            "{masked}"
        );
    }

    #[test]
    fn parses_kernel_cpu_lists() {
        assert_eq!(parse_cpu_list("0"), vec![0]);
        assert_eq!(parse_cpu_list("0-3,8,10-11\n"), vec![0, 1, 2, 3, 8, 10, 11]);
        assert!(parse_cpu_list("").is_empty());
    }

    #[test]
    fn a_range_beyond_any_cpu_is_skipped() {
        assert_eq!(parse_cpu_list("0-1,2-4294967295,3"), vec![0, 1, 3]);
        assert!(parse_cpu_list("18446744073709551615").is_empty());
    }

    mod properties {
        use super::super::*;
        use crate::testutil::fixed_cases;
        use proptest::prelude::*;

        /// A kernel-style list of `cpus` (sorted, distinct): runs as "a-b".
        fn format_list(cpus: &[usize]) -> String {
            let mut parts = Vec::new();
            let mut i = 0;
            while i < cpus.len() {
                let mut j = i;
                while j + 1 < cpus.len() && cpus[j + 1] == cpus[j] + 1 {
                    j += 1;
                }
                parts.push(if i == j {
                    cpus[i].to_string()
                } else {
                    format!("{}-{}", cpus[i], cpus[j])
                });
                i = j + 1;
            }
            parts.join(",")
        }

        proptest! {
            #![proptest_config(fixed_cases(2000))]

            #[test]
            fn a_formatted_list_parses_back(set in proptest::collection::btree_set(0usize..9000, 0..200)) {
                let cpus: Vec<usize> = set.into_iter().collect();
                prop_assert_eq!(parse_cpu_list(&format!("{}\n", format_list(&cpus))), cpus);
            }

            #[test]
            fn any_text_gives_a_bounded_list(text in "[0-9,\\- \n]{0,40}|\\PC{0,40}") {
                let cpus = parse_cpu_list(&text);
                prop_assert!(cpus.len() <= CPU_LIMIT);
                prop_assert!(cpus.iter().all(|&c| c < CPU_LIMIT));
            }
        }
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
}
