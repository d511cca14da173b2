//! The liveness probe's view of the ksample module: a [`CounterSource`]
//! whose read returns each counter's latest value from the records the
//! module's timers queued, so [`crate::liveness::probe`] judges the counters
//! by what the module itself reads (a counter is live if a record's value
//! changed). The timers run from open to drop at the probe's poll rate.

use std::time::{Duration, Instant};

use crate::ksample::{value_slots, Mode, Module, Record, Running};
use crate::liveness::{LIVENESS_POLL, LIVENESS_WINDOW};
use crate::{CounterSource, Domain, Error};

/// The probe's sampling rate: one record per package per poll.
const PROBE_HZ: u32 = (Duration::from_secs(1).as_nanos() / LIVENESS_POLL.as_nanos()) as u32;

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
        let running = module.start(Mode::Read, PROBE_HZ)?; // stopped on drop, whatever fails next
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
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_probe_samples_at_its_poll_rate() {
        assert_eq!(PROBE_HZ, 1000);
    }
}
