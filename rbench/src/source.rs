//! The one trait every counter-reading mechanism implements (powercap, msr,
//! perf, and the eBPF slots), so the benchmarks and the 1 kHz sampler drive
//! them the same way.

use crate::Error;

/// One energy counter a source reads.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Domain {
    /// The counter instance: a powercap zone id ("intel-rapl:0:1"), a
    /// package ("package-0"), a CPU ("cpu0").
    pub source: String,
    /// What it measures: "package-0", "core", "dram", "energy-pkg", ... (for
    /// a stand-in, what is read instead: "rx_bytes", "cpuid:0x0", "tsc").
    pub name: String,
    /// Joules per raw unit; 0.0 when the counter is not energy (stand-ins).
    pub joules_per_unit: f64,
    /// The largest raw value before the counter wraps to 0: 0xFFFF_FFFF for
    /// an MSR, max_energy_range_uj for powercap, u64::MAX for perf.
    pub max: u64,
}

/// A set of counters read together, kept open between reads.
pub trait CounterSource {
    /// The counters, in the order [`CounterSource::read`] fills its output.
    fn domains(&self) -> &[Domain];

    /// Reads every domain into `out[..domains().len()]`: no allocation, no
    /// formatting, no float (except when building the error of a failed read).
    ///
    /// `out` must be at least `domains().len()` long.
    fn read(&mut self, out: &mut [u64]) -> Result<(), Error>;

    /// None (the default) for the real thing, or why a substitute is measured
    /// (the same words as ubench, so rows of both harnesses pair up).
    fn stand_in(&self) -> Option<&str> {
        None
    }
}

/// Several sources read one after the other as one (the counters of every
/// package: one perf group per CPU), under the domains their discovery gave.
pub struct Joined {
    /// The sources, in domain order.
    parts: Vec<Box<dyn CounterSource + Send>>,
    /// Every part's domains, in order.
    domains: Vec<Domain>,
    /// Why a substitute is read, if it is.
    stand_in: Option<String>,
}

impl Joined {
    /// `parts` read in order; `domains` must have as many entries as the
    /// parts' domains together.
    pub fn new(
        parts: Vec<Box<dyn CounterSource + Send>>,
        domains: Vec<Domain>,
        stand_in: Option<String>,
    ) -> Joined {
        let total: usize = parts.iter().map(|p| p.domains().len()).sum();
        assert_eq!(total, domains.len(), "one domain per counter of the parts");
        Joined {
            parts,
            domains,
            stand_in,
        }
    }
}

impl CounterSource for Joined {
    fn domains(&self) -> &[Domain] {
        &self.domains
    }

    fn read(&mut self, out: &mut [u64]) -> Result<(), Error> {
        let mut at = 0;
        for part in &mut self.parts {
            let n = part.domains().len();
            part.read(&mut out[at..at + n])?;
            at += n;
        }
        Ok(())
    }

    fn stand_in(&self) -> Option<&str> {
        self.stand_in.as_deref()
    }
}
