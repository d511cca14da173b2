//! The powercap discovery: every zone's energy_uj (microjoules by the
//! powercap ABI, so its unit needs no check), or the lo rx_bytes stand-in.

use std::path::Path;

use super::powercap_zones::discover_powercap_zones;
use super::{Counter, Counters, Route};
use crate::cpu::Cpus;
use crate::powercap::unreadable_reason;
use crate::{Domain, Error};

/// The stand-in where there is no powercap zone: a live sysfs counter.
pub const POWERCAP_STAND_IN_FILE: &str = "/sys/class/net/lo/statistics/rx_bytes";

/// Why there is no zone under `root` (the first half of the stand-in text).
fn no_zone_reason(root: &Path) -> String {
    format!(
        "no powercap zone under {} (no RAPL here, or the intel_rapl_msr driver is not loaded: \
         modprobe intel_rapl_msr)",
        root.display()
    )
}

/// The stand_in text of the stand-in rows (byte-identical to ubench's).
pub fn powercap_stand_in_text(root: &Path) -> String {
    format!(
        "{}: measured the live sysfs counter {POWERCAP_STAND_IN_FILE} through the same kernfs \
         read route (without the MSR read and IPI that energy_uj costs)",
        no_zone_reason(root)
    )
}

/// The zones under `root` (each readable or not, with why; the CPU of a
/// package's zones is its lead CPU in the topology under `cpu_root`), or
/// the stand-in file where there is none; an error if the stand-in cannot
/// be read either.
pub fn powercap_counters(root: &Path, cpu_root: &Path) -> Result<Counters, Error> {
    let counters = discover_powercap_zones(root, &Cpus::at(cpu_root));
    if counters.is_empty() {
        if let Some(e) = unreadable_reason(POWERCAP_STAND_IN_FILE) {
            return Err(Error::Unavailable(format!(
                "{}; stand-in {POWERCAP_STAND_IN_FILE} unreadable too: {e}",
                no_zone_reason(root)
            )));
        }
        return Ok(Counters {
            counters: vec![Counter {
                // bytes received on lo: not energy
                domain: Domain {
                    source: "lo".into(),
                    name: "rx_bytes".into(),
                    joules_per_unit: 0.0,
                    max: u64::MAX,
                },
                route: Route::File {
                    path: POWERCAP_STAND_IN_FILE.to_string(),
                },
                package: None,
                cpu: None,
                name: POWERCAP_STAND_IN_FILE.to_string(),
                readable: Ok(()),
                unit_problem: None,
                liveness: None,
            }],
            stand_in: Some(powercap_stand_in_text(root)),
        });
    }
    Ok(Counters {
        counters,
        stand_in: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::liveness::{Liveness, Verdict};
    use crate::roots::CPU;
    use crate::testutil::{copy_tree, rewrite_energy_uj, testdata_sys, two_packages_sys, TempDir};
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    use std::time::Duration;

    const SHORT: Duration = Duration::from_millis(30);

    #[test]
    fn the_static_fixture_is_frozen() {
        let root = testdata_sys().join("class/powercap");
        let mut found = powercap_counters(&root, Path::new(CPU.real())).unwrap();
        found.probe(SHORT);
        assert_eq!(found.stand_in, None);
        let names: Vec<&str> = found.counters.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "intel-rapl:0/energy_uj",
                "intel-rapl:0:0/energy_uj",
                "intel-rapl:0:1/energy_uj",
                "intel-rapl:1/energy_uj",
                "intel-rapl-mmio:0/energy_uj"
            ]
        );
        for c in &found.counters {
            let l = c.liveness.as_ref().unwrap();
            assert_eq!(l.verdict, Verdict::Frozen, "{}", c.name);
            let note = l.note.as_deref().unwrap();
            assert!(
                note.starts_with(&format!("{}: did not change in 30 ms (", c.name)),
                "{note}"
            );
        }
        let set = Counters::liveness_of(&found.counters).unwrap();
        assert_eq!(set.note.unwrap().matches("; ").count(), 4);
    }

    #[test]
    fn a_copy_whose_energy_uj_a_thread_rewrites_is_live() {
        let dir = TempDir::new("live-powercap");
        let root = dir.path().join("powercap");
        copy_tree(&two_packages_sys().join("class/powercap"), &root);
        let rewrite = |root: &Path, uj: u64| {
            for zone in ["intel-rapl:0", "intel-rapl:0:0", "intel-rapl:1"] {
                rewrite_energy_uj(&root.join(zone).join("energy_uj"), uj);
            }
        };
        rewrite(&root, 1000);
        let stop = Arc::new(AtomicBool::new(false));
        let writer = {
            let (stop, root) = (stop.clone(), root.clone());
            std::thread::spawn(move || {
                let mut uj = 1000u64;
                while !stop.load(Ordering::Relaxed) {
                    uj += 61;
                    rewrite(&root, uj);
                    std::thread::sleep(Duration::from_millis(1));
                }
            })
        };
        let mut found = powercap_counters(&root, Path::new(CPU.real())).unwrap();
        found.counters.truncate(3); // intel-rapl:1:0 is not rewritten
                                    // a long window: the probe ends as soon as all three moved, and the
                                    // writer thread may be slow to run on a loaded machine
        found.probe(Duration::from_secs(60));
        stop.store(true, Ordering::Relaxed);
        writer.join().unwrap();
        let verdicts: Vec<(String, Verdict)> = found
            .counters
            .iter()
            .map(|c| (c.domain.name.clone(), c.liveness.as_ref().unwrap().verdict))
            .collect();
        assert_eq!(
            verdicts,
            [
                ("package-0".to_string(), Verdict::Live),
                ("dram".to_string(), Verdict::Live),
                ("package-1".to_string(), Verdict::Live),
            ]
        );
        assert_eq!(
            Counters::liveness_of(&found.counters),
            Some(Liveness::live())
        );
    }

    #[test]
    fn two_packages_have_their_zones() {
        let found = powercap_counters(
            &two_packages_sys().join("class/powercap"),
            &two_packages_sys().join("devices/system/cpu"),
        )
        .unwrap();
        let packages: Vec<(Option<u32>, &str)> = found
            .counters
            .iter()
            .map(|c| (c.package, c.domain.name.as_str()))
            .collect();
        assert_eq!(
            packages,
            [
                (Some(0), "package-0"),
                (Some(0), "dram"),
                (Some(1), "package-1"),
                (Some(1), "dram")
            ]
        );
        // each package's lead CPU in the fixture's topology
        let cpus: Vec<Option<usize>> = found.counters.iter().map(|c| c.cpu).collect();
        assert_eq!(cpus, [Some(0), Some(0), Some(2), Some(2)]);
    }

    #[test]
    fn no_zone_means_the_stand_in_which_gets_no_verdict() {
        let empty = TempDir::new("powercap-none");
        match powercap_counters(empty.path(), Path::new(CPU.real())) {
            Ok(mut found) => {
                found.probe(SHORT);
                assert!(found.stand_in.is_some());
                assert_eq!(found.counters[0].liveness, None);
            }
            Err(e) => assert!(e.to_string().contains("unreadable too"), "{e}"),
        }
    }

    #[test]
    fn the_stand_in_says_why_in_the_rows_words() {
        assert_eq!(
            powercap_stand_in_text(Path::new("/x/powercap")),
            "no powercap zone under /x/powercap (no RAPL here, or the intel_rapl_msr driver is \
             not loaded: modprobe intel_rapl_msr): measured the live sysfs counter \
             /sys/class/net/lo/statistics/rx_bytes through the same kernfs read route (without \
             the MSR read and IPI that energy_uj costs)"
        );
    }

    #[test]
    fn zone_files_targets_and_cpus() {
        let root = testdata_sys().join("class/powercap");
        let found = powercap_counters(&root, Path::new(CPU.real())).unwrap();
        let package = &found.counters[0].domain;
        assert_eq!(
            (package.max, package.joules_per_unit),
            (262_143_328_850, 1e-6)
        );
        assert_eq!(
            found.counters[1].route,
            Route::File {
                path: root
                    .join("intel-rapl:0:0/energy_uj")
                    .to_string_lossy()
                    .into_owned()
            }
        );
        assert_eq!(found.counters[1].name, "intel-rapl:0:0/energy_uj");
        let cpus = Cpus::at(CPU.real());
        assert_eq!(found.counters[0].cpu, cpus.package_lead_cpu(0));
        assert_eq!(found.counters[3].cpu, None); // psys
        assert_eq!(found.counters[4].cpu, None); // mmio
    }
}
