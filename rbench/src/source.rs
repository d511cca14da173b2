//! The one trait every counter-reading mechanism implements (powercap, msr,
//! perf, and the eBPF slots), so the benchmarks and the 1 kHz sampler drive
//! them the same way.

use crate::Error;

/// One energy counter a source reads.
#[derive(Debug, Clone, PartialEq)]
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

    /// None for the real thing, or why a substitute is measured (the same
    /// words as ubench, so rows of both harnesses pair up).
    fn stand_in(&self) -> Option<&str>;
}
