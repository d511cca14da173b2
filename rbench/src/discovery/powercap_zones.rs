//! Discovery of the powercap (RAPL) zones of this machine.
//!
//! Under /sys/class/powercap every zone is a directory (or a symlink to one)
//! named after its control type and position: "intel-rapl:0" (package 0),
//! "intel-rapl:0:0" (its first subzone, e.g. core), "intel-rapl:1" (package
//! 1, or psys on a one-socket laptop), "intel-rapl-mmio:0" (the same package
//! read over MMIO). AMD parts use the same "intel-rapl" names. A zone has a
//! `name` ("package-0", "core", "uncore", "dram", "psys") and an `energy_uj`
//! counter in microjoules that wraps at `max_energy_range_uj`. Control-type
//! directories such as "intel-rapl" have no energy_uj and are skipped.

use std::cmp::Ordering;
use std::path::Path;

use super::{Counter, Route};
use crate::cpu::Cpus;
use crate::powercap::{parse_energy_uj, unreadable_reason};
use crate::sysfs::{entry_names, read_first_line};
use crate::Domain;

/// "intel-rapl:0:1" -> ["intel-rapl", "0", "1"].
fn split_id(id: &str) -> Vec<&str> {
    id.split(':').collect()
}

/// C's atoi: the leading decimal digits, 0 if none.
fn atoi(s: &str) -> u64 {
    s.bytes().take_while(u8::is_ascii_digit).fold(0, |v, b| {
        v.saturating_mul(10).saturating_add(u64::from(b - b'0'))
    })
}

/// Natural order: control type by name, then positions as numbers, parents
/// before their subzones (intel-rapl:0 < intel-rapl:0:0 < intel-rapl:1).
fn natural_order(a: &str, b: &str) -> Ordering {
    let (pa, pb) = (split_id(a), split_id(b));
    pa[0].cmp(pb[0]).then_with(|| {
        for (x, y) in pa[1..].iter().zip(&pb[1..]) {
            if x != y {
                return atoi(x).cmp(&atoi(y));
            }
        }
        pa.len().cmp(&pb.len())
    })
}

/// "package-3" or "package-3-die-1" -> 3.
fn package_number(zone_name: &str) -> Option<u32> {
    let rest = zone_name.strip_prefix("package-")?;
    let (number, die) = match rest.split_once("-die-") {
        Some((n, die)) => (n, Some(die)),
        None => (rest, None),
    };
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !digits(number) || die.is_some_and(|die| !digits(die)) {
        return None;
    }
    number.parse().ok()
}

/// The energy_uj counters of the zones under `root` in natural order
/// (intel-rapl:0, intel-rapl:0:0, ..., intel-rapl:1, intel-rapl-mmio:0),
/// each readable or not, with why; a package's zones are on its lead CPU
/// among `cpus`. Empty when the root is missing.
pub fn discover_powercap_zones(root: &Path, cpus: &Cpus) -> Vec<Counter> {
    let mut ids: Vec<String> = entry_names(root)
        .filter(|id| !id.starts_with('.') && root.join(id).join("energy_uj").exists())
        .collect();
    ids.sort_by(|a, b| natural_order(a, b));

    ids.into_iter()
        .map(|id| {
            let dir = root.join(&id);
            let parts = split_id(&id);
            // the package of a zone is named by its top-level zone "<type>:<N>"
            let package = (parts.len() >= 2)
                .then(|| {
                    read_first_line(root.join(format!("{}:{}", parts[0], parts[1])).join("name"))
                })
                .flatten()
                .and_then(|top_name| package_number(&top_name));
            let path = dir.join("energy_uj").to_string_lossy().into_owned();
            Counter {
                readable: unreadable_reason(&path).map_or(Ok(()), |e| Err(e.to_string())),
                // microjoules, wrapping at max_energy_range_uj
                domain: Domain {
                    source: id.clone(),
                    name: read_first_line(dir.join("name")).unwrap_or_default(),
                    joules_per_unit: 1e-6,
                    max: read_first_line(dir.join("max_energy_range_uj"))
                        .and_then(|text| parse_energy_uj(text.as_bytes()).ok())
                        .unwrap_or(u64::MAX),
                },
                route: Route::File { path },
                package,
                // the CPU whose MSR the driver reads: the package's lead CPU;
                // none for platform-wide zones and intel-rapl-mmio ones
                // (read without an MSR access or IPI)
                cpu: package
                    .filter(|_| parts[0] != "intel-rapl-mmio")
                    .and_then(|package| cpus.package_lead_cpu(package)),
                name: format!("{id}/energy_uj"),
                unit_problem: None,
                liveness: None,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{testdata_sys, two_packages_sys};
    use std::path::PathBuf;

    fn fixture_root() -> PathBuf {
        testdata_sys().join("class/powercap")
    }

    /// The zones of the fixture root, on a topology of two packages (CPUs
    /// 0-1 and 2-3).
    fn fixture_zones() -> Vec<Counter> {
        let cpus = Cpus::at(two_packages_sys().join("devices/system/cpu"));
        discover_powercap_zones(&fixture_root(), &cpus)
    }

    #[test]
    fn finds_every_zone_in_natural_order_and_skips_control_types() {
        let ids: Vec<String> = fixture_zones()
            .into_iter()
            .map(|z| z.domain.source)
            .collect();
        assert_eq!(
            ids,
            [
                "intel-rapl:0",
                "intel-rapl:0:0",
                "intel-rapl:0:1",
                "intel-rapl:1",
                "intel-rapl-mmio:0"
            ]
        );
    }

    #[test]
    fn natural_order_compares_numbers_as_numbers() {
        let mut ids = vec![
            "intel-rapl:10",
            "intel-rapl:2",
            "intel-rapl:1:10",
            "intel-rapl:1:9",
            "intel-rapl:1",
        ];
        ids.sort_by(|a, b| natural_order(a, b));
        assert_eq!(
            ids,
            [
                "intel-rapl:1",
                "intel-rapl:1:9",
                "intel-rapl:1:10",
                "intel-rapl:2",
                "intel-rapl:10"
            ]
        );
    }

    #[test]
    fn reads_name_range_package_and_cpu() {
        let root = fixture_root();
        let zones = fixture_zones();
        assert_eq!(zones.len(), 5);
        let pkg = &zones[0];
        assert_eq!(pkg.cpu, Some(0)); // package 0's lead CPU
        assert_eq!(pkg.domain.name, "package-0");
        assert_eq!(pkg.name, "intel-rapl:0/energy_uj");
        assert_eq!(
            pkg.route,
            Route::File {
                path: root
                    .join("intel-rapl:0/energy_uj")
                    .to_string_lossy()
                    .into_owned()
            }
        );
        assert_eq!(
            (pkg.domain.max, pkg.domain.joules_per_unit),
            (262_143_328_850, 1e-6)
        );
        assert_eq!(pkg.package, Some(0));
        assert_eq!(
            (zones[1].domain.name.as_str(), zones[1].package),
            ("core", Some(0))
        ); // subzone: parent's package
        assert_eq!(zones[2].domain.name, "uncore");
        let psys = &zones[3];
        assert_eq!(
            (psys.domain.name.as_str(), psys.package, psys.cpu),
            ("psys", None, None)
        ); // platform-wide
        let mmio = &zones[4];
        assert_eq!(
            (mmio.domain.name.as_str(), mmio.package, mmio.cpu),
            ("package-0", Some(0), None)
        ); // read without an MSR access
    }

    #[test]
    fn missing_root_means_no_zones() {
        let cpus = Cpus::at(crate::roots::CPU.real());
        assert!(discover_powercap_zones(Path::new("/nonexistent/powercap"), &cpus).is_empty());
    }

    #[test]
    fn package_numbers_from_zone_names() {
        assert_eq!(package_number("package-0"), Some(0));
        assert_eq!(package_number("package-12-die-1"), Some(12));
        assert_eq!(package_number("psys"), None);
        assert_eq!(package_number("package-x"), None);
        assert_eq!(package_number("package-1-foo"), None);
    }
}
