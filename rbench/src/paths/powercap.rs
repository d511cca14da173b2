//! Path "powercap": one read of a zone's energy_uj, kept open (op "pread")
//! or opened, read and closed (op "open-read-close"), from the zone's CPU
//! and from another one; or the lo rx_bytes stand-in where there is no
//! zone (ubench/paths/powercap.cc).

use std::path::Path;
use std::time::Duration;

use serde_json::{json, Value};

use crate::cpu::Cpus;
use crate::discovery::powercap_counters;
use crate::target_load::OnTarget;
use crate::plan::{meta, Machine, Plan, Planned, Reader, Reads, SourceReader};
use crate::powercap::{CounterFile, PowercapMode, PowercapSource};
use crate::{Domain, Error};

/// A powercap file (or its stand-in), kept open or reopened.
#[derive(Debug, Clone, PartialEq)]
pub struct PowercapReads {
    /// The file.
    pub file: CounterFile,
    /// pread or open-read-close.
    pub mode: PowercapMode,
}

impl Reads for PowercapReads {
    fn open(&self) -> Result<Box<dyn Reader + '_>, Error> {
        PowercapSource::open(std::slice::from_ref(&self.file), self.mode).map(SourceReader::boxed)
    }

    fn spec(&self) -> Value {
        json!({"file": self.file.path, "reopen": self.mode == PowercapMode::OpenReadClose})
    }

    /// A zone of a CPU is MSR-backed (intel_rapl reads it with
    /// rdmsr_safe_on_cpu: an IPI from any other CPU); MMIO zones and the
    /// stand-in belong to no CPU and are never read across.
    fn on_target(&self) -> OnTarget {
        OnTarget::Ipi
    }
}

impl PowercapReads {
    /// The reads `open` describes ([`Reads::spec`]), or None.
    pub fn from_spec(open: &Value) -> Option<PowercapReads> {
        let file = CounterFile {
            path: open.get("file")?.as_str()?.to_string(),
            domain: Domain::default(),
        };
        let mode = match open["reopen"].as_bool()? {
            true => PowercapMode::OpenReadClose,
            false => PowercapMode::Pread,
        };
        Some(PowercapReads { file, mode })
    }
}

/// The rows of path "powercap" on `machine`.
pub fn plan(machine: &Machine, plan: &mut Plan) {
    plan.rows.extend(powercap_rows(
        &machine.roots.powercap,
        &machine.cpus(),
        machine.window,
    ));
}

/// Path "powercap": every zone under `root`, or the stand-in file, at the
/// placements among `cpus`; each zone probed for liveness for up to
/// `window`; both ops of each file at each placement of its CPU.
pub fn powercap_rows(root: &Path, cpus: &Cpus, window: Duration) -> Vec<Planned> {
    let modes = [PowercapMode::Pread, PowercapMode::OpenReadClose];
    let mut found = match powercap_counters(root, cpus.root()) {
        Ok(found) => found,
        Err(e) => {
            let row = |m: PowercapMode| {
                let meta = meta("powercap", m.op(), Some("energy_uj"), None, None, None);
                Planned::unavailable(meta, e.to_string())
            };
            return modes.into_iter().map(row).collect();
        }
    };
    found.probe(window);
    let mut rows = Vec::new();
    for counter in &found.counters {
        for placement in cpus.placements(counter.cpu) {
            for mode in modes {
                let meta = meta(
                    "powercap",
                    mode.op(),
                    Some(&counter.name),
                    Some(placement),
                    found.stand_in.as_deref(),
                    counter.liveness.clone(),
                );
                rows.push(match (&counter.readable, counter.file()) {
                    (Ok(()), Some(file)) => Planned::run(meta, PowercapReads { file, mode }),
                    (Err(e), _) => Planned::unavailable(meta, e),
                    (Ok(()), None) => Planned::unavailable(meta, "not a file"),
                });
            }
        }
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::discovery::{
        powercap_stand_in_text as stand_in_text, POWERCAP_STAND_IN_FILE as STAND_IN_FILE,
    };
    use crate::liveness::Verdict;
    use crate::roots::CPU;
    use crate::testutil::{testdata_sys, two_packages_sys, TempDir};

    const SHORT: Duration = Duration::from_millis(10);

    #[test]
    fn powercap_fixture_rows_pair_each_zone_with_its_placements() {
        let cpus = Cpus::at(two_packages_sys().join("devices/system/cpu"));
        let rows = powercap_rows(&testdata_sys().join("class/powercap"), &cpus, SHORT);
        let first = cpus.allowed()[0];
        let lead = cpus.package_lead_cpu(0);
        assert_eq!(lead, Some(0));
        // intel-rapl:0 is per-package (placements of its lead CPU), psys and mmio are not
        let ids: Vec<String> = rows.iter().map(|r| r.id(None)).collect();
        if let Some(lead) = lead {
            assert_eq!(
                ids[0],
                format!("powercap/pread/intel-rapl:0/energy_uj@{lead}->{lead}")
            );
            assert_eq!(
                ids[1],
                format!("powercap/open-read-close/intel-rapl:0/energy_uj@{lead}->{lead}")
            );
        }
        assert!(ids.contains(&format!("powercap/pread/intel-rapl:1/energy_uj@{first}")));
        assert!(ids.contains(&format!(
            "powercap/open-read-close/intel-rapl-mmio:0/energy_uj@{first}"
        )));
        assert!(rows
            .iter()
            .all(|r| r.meta.stand_in.is_none() && r.reads.is_ok()));
        // the fixture's files never change: every row says its counter is dead
        assert!(rows
            .iter()
            .all(|r| r.meta.liveness == Some(Verdict::Frozen)));
        assert!(rows[0]
            .meta
            .liveness_note
            .as_deref()
            .unwrap()
            .starts_with("intel-rapl:0/energy_uj: did not change in 10 ms ("));
        let reads = rows[1].reads_as::<PowercapReads>().unwrap();
        assert_eq!(reads.mode, PowercapMode::OpenReadClose);
        assert!(reads.file.path.ends_with("intel-rapl:0/energy_uj"));
        // opened lazily, it reads the fixture's value
        let mut reader = rows[0].reads.as_ref().unwrap().open().unwrap();
        reader.read().unwrap();
        assert_eq!(reader.no_data(), None);
    }

    #[test]
    fn powercap_without_zones_plans_the_stand_in() {
        let empty = TempDir::new("plan-powercap");
        let cpus = Cpus::at(CPU.real());
        let rows = powercap_rows(empty.path(), &cpus, SHORT);
        let first = cpus.allowed()[0];
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[1].meta.op, "open-read-close");
        assert_eq!(rows[0].meta.stand_in.is_some(), rows[0].reads.is_ok());
        if let Some(why) = rows[0].reason() {
            return eprintln!("skipped: {STAND_IN_FILE} unreadable here: {why}");
        }
        assert_eq!(
            rows[0].id(None),
            format!("powercap/pread//sys/class/net/lo/statistics/rx_bytes@{first}")
        );
        assert_eq!(rows[0].meta.target.as_deref(), Some(STAND_IN_FILE));
        assert_eq!(rows[0].meta.target_cpu, None);
        assert_eq!(rows[0].meta.stand_in, Some(stand_in_text(empty.path())));
        assert_eq!(rows[0].meta.liveness, None); // a stand-in: no verdict
    }
}
