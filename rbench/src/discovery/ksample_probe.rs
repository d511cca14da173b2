//! The liveness probe's view of the module: a [`CounterSource`] whose read
//! returns each counter's latest value from the records the module's timers
//! queued, so [`crate::liveness::probe`] judges the counters by what the
//! module itself reads (a counter is live if a record's value changed).
//! The timers run from open to drop at the probe's poll rate.

use std::time::{Duration, Instant};

use super::{Mode, Module, Record, Running, Status, MAX_VALUES};
use crate::liveness::{LIVENESS_POLL, LIVENESS_WINDOW};
use crate::msr::msr_hex;
use crate::{CounterSource, Domain, Error};

/// The probe's sampling rate: one record per package per poll.
fn probe_hz() -> u32 {
    (Duration::from_secs(1).as_nanos() / LIVENESS_POLL.as_nanos()) as u32
}

/// Per wanted (package, MSR), the package and the index of the MSR in its
/// records' value[], as the last start laid them out; an error naming an
/// MSR the module does not read (it faulted at that start).
pub fn value_slots(status: &Status, wanted: &[(u32, u32)]) -> Result<Vec<(u32, usize)>, Error> {
    wanted
        .iter()
        .map(|&(package, msr)| {
            status
                .package(package)
                .and_then(|p| p.msrs.iter().position(|&m| m == msr))
                .filter(|&slot| slot < MAX_VALUES)
                .map(|slot| (package, slot))
                .ok_or_else(|| {
                    Error::Unavailable(format!(
                        "ksample does not read MSR {} of package {package} since its last start \
                         (it faulted there, or the package is gone): leave it out with --domains",
                        msr_hex(msr)
                    ))
                })
        })
        .collect()
}

/// The module sampling every package, read back as counters.
pub struct ProbeSource {
    running: Running,
    domains: Vec<Domain>,
    /// Per domain: its package and value slot.
    slots: Vec<(u32, usize)>,
    latest: Vec<Option<u64>>,
    records: Vec<Record>,
}

impl ProbeSource {
    /// Starts the module's timers and maps `wanted` (package, MSR), one per
    /// domain, onto its records.
    pub fn open(
        module: &Module,
        wanted: &[(u32, u32)],
        domains: Vec<Domain>,
    ) -> Result<ProbeSource, Error> {
        let running = module.start(Mode::Read, probe_hz())?; // stopped on drop, whatever fails next
        let slots = value_slots(&module.status()?, wanted)?;
        Ok(ProbeSource {
            running,
            latest: vec![None; domains.len()],
            domains,
            slots,
            records: Vec::new(),
        })
    }

    /// Takes the queued records' values, the newest last.
    fn take_queued(&mut self) -> Result<(), Error> {
        self.records.clear();
        self.running.records().read_all(&mut self.records)?;
        for r in &self.records {
            for (latest, &(package, slot)) in self.latest.iter_mut().zip(&self.slots) {
                let faulted = r.faults & (1 << slot) != 0;
                if u32::from(r.package) == package && slot < r.values().len() && !faulted {
                    *latest = Some(r.value[slot]);
                }
            }
        }
        Ok(())
    }
}

impl CounterSource for ProbeSource {
    fn domains(&self) -> &[Domain] {
        &self.domains
    }

    /// The latest value of each domain; the first read waits (up to the
    /// liveness window) for every package's first record.
    fn read(&mut self, out: &mut [u64]) -> Result<(), Error> {
        let t0 = Instant::now();
        loop {
            self.take_queued()?;
            if self.latest.iter().all(Option::is_some) {
                for (o, l) in out.iter_mut().zip(&self.latest) {
                    *o = l.unwrap_or(0);
                }
                return Ok(());
            }
            if t0.elapsed() >= LIVENESS_WINDOW {
                let silent: Vec<String> = self
                    .latest
                    .iter()
                    .zip(&self.domains)
                    .filter(|(l, _)| l.is_none())
                    .map(|(_, d)| format!("{}/{}", d.source, d.name))
                    .collect();
                return Err(Error::Unavailable(format!(
                    "ksample queued no readable value of {} within {} ms of its start",
                    silent.join(", "),
                    LIVENESS_WINDOW.as_millis()
                )));
            }
            std::thread::sleep(LIVENESS_POLL);
        }
    }

    fn stand_in(&self) -> Option<&str> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ksample::parse;

    #[test]
    fn slots_follow_the_packages_msrs_order() {
        let status = parse(crate::ksample::TWO_PACKAGES).unwrap();
        assert_eq!(
            value_slots(&status, &[(0, 0x619), (0, 0x611)]).unwrap(),
            [(0, 3), (0, 0)]
        );
        let err = value_slots(&status, &[(1, 0x611)]).unwrap_err().to_string();
        assert!(
            err.starts_with("ksample does not read MSR 0x611 of package 1"),
            "{err}"
        );
        assert_eq!(probe_hz(), 1000);
    }
}
