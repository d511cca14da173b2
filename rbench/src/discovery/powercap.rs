//! The powercap discovery: every zone's energy_uj (microjoules by the
//! powercap ABI, so its unit needs no check), or the lo rx_bytes stand-in.

use std::path::Path;

use super::{Counter, Counters, Route};
use crate::cpu::Cpus;
use crate::powercap::{
    discover_powercap_zones, no_zone_reason, stand_in_text, unreadable_reason, zone_target,
    zone_target_cpu, CounterFile, STAND_IN_FILE,
};
use crate::Error;

/// The zones under `root` (each readable or not, with why; the CPU of a
/// package's zones is its lead CPU in the topology under `cpu_root`), or
/// the stand-in file where there is none; an error if the stand-in cannot
/// be read either.
pub fn powercap_counters(root: &Path, cpu_root: &Path) -> Result<Counters, Error> {
    let cpus = Cpus::at(cpu_root);
    let zones = discover_powercap_zones(root);
    if zones.is_empty() {
        if let Some(e) = unreadable_reason(STAND_IN_FILE) {
            return Err(Error::Unavailable(format!(
                "{}; stand-in {STAND_IN_FILE} unreadable too: {e}",
                no_zone_reason(root)
            )));
        }
        let file = CounterFile::stand_in();
        return Ok(Counters {
            counters: vec![Counter {
                domain: file.domain,
                route: Route::File { path: file.path },
                package: None,
                cpu: None,
                name: STAND_IN_FILE.to_string(),
                readable: Ok(()),
                unit_problem: None,
                liveness: None,
            }],
            stand_in: Some(stand_in_text(root)),
        });
    }
    let counters = zones
        .iter()
        .map(|zone| {
            let file = CounterFile::for_zone(zone);
            Counter {
                readable: unreadable_reason(&file.path).map_or(Ok(()), |e| Err(e.to_string())),
                domain: file.domain,
                route: Route::File { path: file.path },
                package: zone.package,
                cpu: zone_target_cpu(zone, &cpus),
                name: zone_target(zone),
                unit_problem: None,
                liveness: None,
            }
        })
        .collect();
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
}
