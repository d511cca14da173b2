//! One discovery per mechanism: what counters powercap, msr and perf (and
//! the eBPF program, which reads the perf events), and the ksample module
//! would read on this machine, each with its route, package, unit,
//! stand-in and liveness.
//!
//! The benchmarks' plan ([`crate::plan`]) and the sampler (its mechanisms
//! and `--list`) both start here, so they read the same counters and give
//! the same advice. Discovery sits above the sources ([`crate::powercap`],
//! [`crate::msr`], [`crate::perf`], [`crate::ksample`]), which only open
//! and read what it found.
//!
//! Discovery itself only looks (sysfs, a first read of each MSR); the
//! liveness probe ([`Counters::probe`]) opens the counters and reads them
//! for up to a window, once per mechanism, never in a timed loop.

mod ksample;
mod ksample_probe;
mod msr;
mod perf;
mod perf_events;
mod powercap;
mod powercap_zones;

pub use ksample::ksample_counters;
pub use msr::{msr_counters, no_rapl_msr_message};
#[cfg(test)]
pub(crate) use perf::tests::fixture_energy_events;
pub use perf::{energy_events, perf_counters, perf_counters_of, EnergyEvents, RAPL_PMU};
pub use powercap::{powercap_counters, powercap_stand_in_text, POWERCAP_STAND_IN_FILE};

use std::path::PathBuf;
use std::time::Duration;

use crate::ksample::Module;
use crate::liveness::{probe, worst_of, Liveness};
use crate::msr::{msr_hex, MsrSource, Register, RegisterRead};
use crate::perf::{PerfEventSpec, PerfMode, PerfSource};
use crate::powercap::{CounterFile, PowercapMode, PowercapSource};
use crate::source::Joined;
use crate::{CounterSource, Domain, Error};
use ksample_probe::ProbeSource;

/// How a counter is reached.
#[derive(Debug, Clone, PartialEq)]
pub enum Route {
    /// A sysfs file read with pread (powercap energy_uj, or the stand-in).
    File {
        /// The file.
        path: String,
    },
    /// A register of a per-CPU device (/dev/cpu/N/msr, or /dev/cpu/N/cpuid).
    Register {
        /// The device.
        device: PathBuf,
        /// The register.
        register: Register,
    },
    /// A perf event counting on one CPU (read with read(), or by the eBPF
    /// program with bpf_perf_event_read_value).
    PerfEvent {
        /// The event.
        event: PerfEventSpec,
        /// The CPU it counts on.
        cpu: usize,
    },
    /// An energy MSR the ksample module's hrtimer reads on a package's lead
    /// CPU, handed over in its records.
    Ksample {
        /// The module's directory (/proc/ksample).
        root: PathBuf,
        /// The module's package index (the records' `package`).
        package: u32,
        /// The MSR.
        msr: u32,
        /// The lead CPU the timer runs on.
        cpu: usize,
    },
}

impl Route {
    /// The route for a person: the file, "MSR 0x611 on /dev/cpu/0/msr",
    /// "perf event power/energy-pkg/ on CPU 0", or with `in_kernel`
    /// "bpf_perf_event_read_value(power/energy-pkg/) on CPU 0", "rdmsr 0x611
    /// in the ksample hrtimer on CPU 0 (/proc/ksample/records)".
    pub fn describe(&self, in_kernel: bool) -> String {
        match self {
            Route::File { path } => path.clone(),
            Route::Register { device, register } => match register {
                Register::Msr(addr) => format!("MSR {} on {}", msr_hex(*addr), device.display()),
                Register::CpuidLeaf(leaf) => {
                    format!("cpuid leaf {leaf:#x} on {}", device.display())
                }
            },
            Route::PerfEvent { event, cpu } if in_kernel => {
                format!("bpf_perf_event_read_value({}) on CPU {cpu}", event.name)
            }
            Route::PerfEvent { event, cpu } => format!("perf event {} on CPU {cpu}", event.name),
            Route::Ksample { root, msr, cpu, .. } => format!(
                "rdmsr {} in the ksample hrtimer on CPU {cpu} ({})",
                msr_hex(*msr),
                root.join("records").display()
            ),
        }
    }
}

/// One counter a mechanism would read here.
#[derive(Debug, Clone, PartialEq)]
pub struct Counter {
    /// Source, name, joules per raw unit, wrap point (the CSV's columns).
    pub domain: Domain,
    /// How it is reached.
    pub route: Route,
    /// The physical package it measures; None for platform-wide counters.
    pub package: Option<u32>,
    /// The CPU whose counter it is (reading it elsewhere may cost an IPI);
    /// None if it belongs to no CPU.
    pub cpu: Option<usize>,
    /// How notes name it: "intel-rapl:0:1/energy_uj", "MSR 0x611 on CPU 0",
    /// "power/energy-psys/ on CPU 0".
    pub name: String,
    /// Ok, or why this counter cannot be read (a faulting MSR, an
    /// unreadable file, a read error during the probe).
    pub readable: Result<(), String>,
    /// Why its unit is not energy (a no-unit counter), found by discovery.
    pub unit_problem: Option<String>,
    /// The verdict once probed; None for stand-ins and before the probe.
    pub liveness: Option<Liveness>,
}

impl Counter {
    /// The file to read, if it is one (powercap's energy_uj or its stand-in).
    pub fn file(&self) -> Option<CounterFile> {
        match &self.route {
            Route::File { path } => Some(CounterFile {
                path: path.clone(),
                domain: self.domain.clone(),
            }),
            _ => None,
        }
    }

    /// The register to read, if it is one (an MSR, or the cpuid stand-in).
    pub fn register_read(&self) -> Option<RegisterRead> {
        match &self.route {
            Route::Register { device, register } => Some(RegisterRead {
                device: device.clone(),
                register: *register,
                domain: self.domain.clone(),
            }),
            _ => None,
        }
    }

    /// The perf event to open, if it is one.
    pub fn perf_event(&self) -> Option<&PerfEventSpec> {
        match &self.route {
            Route::PerfEvent { event, .. } => Some(event),
            _ => None,
        }
    }
}

/// What one mechanism would read here.
#[derive(Debug, Clone, PartialEq)]
pub struct Counters {
    /// The counters, in the order a source reads them.
    pub counters: Vec<Counter>,
    /// None for real energy counters, else why a substitute is read (the
    /// same words as ubench).
    pub stand_in: Option<String>,
}

impl Counters {
    /// Probes every readable energy counter for up to `window` (see
    /// [`crate::liveness`]) and records the verdicts. Stand-ins get none.
    /// The counters are read together, as the sampler reads them: if any
    /// cannot be opened or read during the probe, none gets a verdict and
    /// every probed counter gets that error in `readable`.
    pub fn probe(&mut self, window: Duration) {
        if self.stand_in.is_some() {
            return;
        }
        let chosen: Vec<Counter> = self.readable().cloned().collect();
        if chosen.is_empty() {
            return;
        }
        let names: Vec<String> = chosen.iter().map(|c| c.name.clone()).collect();
        let problems: Vec<Option<String>> = chosen.iter().map(|c| c.unit_problem.clone()).collect();
        let verdicts = open_counters(&chosen, None)
            .and_then(|mut source| probe(&mut *source, &names, &problems, window));
        let probed = self.counters.iter_mut().filter(|c| c.readable.is_ok());
        match verdicts {
            Ok(verdicts) => {
                for (c, v) in probed.zip(verdicts) {
                    c.liveness = Some(v);
                }
            }
            Err(e) => {
                for c in probed {
                    c.readable = Err(e.to_string());
                }
            }
        }
    }

    /// The counters that can be read.
    pub fn readable(&self) -> impl Iterator<Item = &Counter> {
        self.counters.iter().filter(|c| c.readable.is_ok())
    }

    /// The worst verdict of `counters` and the note naming each dead one.
    pub fn liveness_of<'a>(counters: impl IntoIterator<Item = &'a Counter>) -> Option<Liveness> {
        worst_of(counters.into_iter().map(|c| &c.liveness))
    }
}

/// The CPUs of `counters`, each once, in order (for perf: one per package).
pub fn counter_cpus(counters: &[Counter]) -> Vec<usize> {
    let mut cpus: Vec<usize> = Vec::new();
    for cpu in counters.iter().filter_map(|c| c.cpu) {
        if !cpus.contains(&cpu) {
            cpus.push(cpu);
        }
    }
    cpus
}

/// The key of a run of counters one source reads: the route's kind, and
/// for perf events the CPU (one group per CPU).
fn source_key(route: &Route) -> (u8, usize) {
    match route {
        Route::File { .. } => (0, 0),
        Route::Register { .. } => (1, 0),
        Route::PerfEvent { cpu, .. } => (2, *cpu),
        Route::Ksample { .. } => (3, 0),
    }
}

/// Opens one source for a run of counters of the same key.
fn open_run(run: &[Counter]) -> Result<Box<dyn CounterSource + Send>, Error> {
    match &run[0].route {
        Route::File { .. } => {
            let files: Vec<CounterFile> = run.iter().filter_map(Counter::file).collect();
            Ok(Box::new(PowercapSource::open(&files, PowercapMode::Pread)?))
        }
        Route::Register { .. } => {
            let reads: Vec<RegisterRead> = run.iter().filter_map(Counter::register_read).collect();
            Ok(Box::new(MsrSource::open(&reads)?))
        }
        Route::PerfEvent { cpu, .. } => {
            let events: Vec<PerfEventSpec> =
                run.iter().filter_map(|c| c.perf_event().cloned()).collect();
            Ok(Box::new(PerfSource::open(&events, *cpu, PerfMode::Group)?))
        }
        Route::Ksample { root, .. } => {
            let wanted: Vec<(u32, u32)> = run
                .iter()
                .filter_map(|c| match &c.route {
                    Route::Ksample { package, msr, .. } => Some((*package, *msr)),
                    _ => None,
                })
                .collect();
            let domains = run.iter().map(|c| c.domain.clone()).collect();
            let module = Module::at(root);
            Ok(Box::new(ProbeSource::open(&module, &wanted, domains)?))
        }
    }
}

/// Opens `counters` for reading together, in order (files kept open,
/// registers by device, perf events as one group per CPU), with their
/// discovered domains.
pub fn open_counters(
    counters: &[Counter],
    stand_in: Option<String>,
) -> Result<Box<dyn CounterSource + Send>, Error> {
    let parts = counters
        .chunk_by(|a, b| source_key(&a.route) == source_key(&b.route))
        .map(open_run)
        .collect::<Result<_, _>>()?;
    let domains = counters.iter().map(|c| c.domain.clone()).collect();
    Ok(Box::new(Joined::new(parts, domains, stand_in)))
}
