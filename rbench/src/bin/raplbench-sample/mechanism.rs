//! Opening the counters of a mechanism, restricted to --domains, through
//! the library's one discovery per mechanism (rbench::discovery), so the
//! sampler reads exactly the counters the suite times, probed for liveness
//! the same way.

use rbench::cpu::{cpu_signature, Cpus};
use rbench::discovery::{
    ksample_counters, msr_counters, open_counters, perf_counters, powercap_counters, Counter,
    Counters, Route,
};
use rbench::ksample::Module;
use rbench::liveness::{Liveness, LIVENESS_WINDOW};
use rbench::msr::msr_hex;
use rbench::perf::ring::Design;
use rbench::perf::{events_label, PerfEventSpec};
use rbench::roots;
use rbench::{CounterSource, Domain};
use std::path::Path;

use crate::cli::{Args, Mechanism};

/// What samples the counters.
pub enum Sampler {
    /// The sampling thread (powercap, msr, perf), reading this open source.
    Ticked(Box<dyn CounterSource + Send>),
    /// The BPF program (ebpf), reading these perf events, each once.
    Bpf(Vec<PerfEventSpec>),
    /// The ksample module's timers (kernel), through its files.
    Ksample(Module),
    /// A cpu-clock sampling a group of the package's events per package,
    /// drained from its perf ring (perf-ring): the group designs to try, in
    /// order, until the kernel takes one.
    PerfRing(Vec<Design>),
}

/// What a mechanism opened.
pub struct Opened {
    /// What samples the counters.
    pub sampler: Sampler,
    /// What is read, for the report's target: "msr/tsc/", "0x611,0x619", ...
    pub label: String,
    /// Why a substitute is read, if it is.
    pub stand_in: Option<String>,
    /// The counters read, in domain order, with their verdicts.
    pub counters: Vec<Counter>,
}

impl Opened {
    /// The null sampler's kind: "bare timerfd loop", "bare bpf_timer
    /// program", "bare hrtimer (ksample, no read)".
    pub fn null_kind(&self) -> &'static str {
        match self.sampler {
            Sampler::Ticked(_) => "bare timerfd loop",
            Sampler::Bpf(_) => "bare bpf_timer program",
            Sampler::Ksample(_) => "bare hrtimer (ksample, no read)",
            Sampler::PerfRing(_) => "bare cpu-clock sampling leader (perf ring, no member)",
        }
    }
}

/// What `mechanism` would read here (powercap under `powercap_root`, or
/// $RAPLBENCH_POWERCAP_ROOT, or /sys/class/powercap), not yet probed:
/// [`Counters::probe`] the ones that will be read.
pub fn discover(
    mechanism: Mechanism,
    powercap_root_arg: Option<&Path>,
) -> Result<Counters, rbench::Error> {
    match mechanism {
        Mechanism::Powercap => {
            let root = powercap_root_arg.map_or_else(|| roots::POWERCAP.path(), Path::to_path_buf);
            powercap_counters(&root, &roots::CPU.path())
        }
        Mechanism::Msr => msr_counters(
            &roots::DEV_CPU.path(),
            &cpu_signature(),
            &Cpus::from_env().packages_or_first(),
        ),
        Mechanism::Perf | Mechanism::Ebpf | Mechanism::PerfRing => {
            perf_counters(&roots::PMU.path(), &roots::CPU.path())
        }
        Mechanism::Kernel => ksample_counters(&roots::KSAMPLE.path(), &cpu_signature()),
    }
}

/// Keeps the candidates that --domains names (by name or by source); an
/// unknown name is an error listing what exists. An empty list keeps all.
fn select<T>(
    candidates: Vec<T>,
    domain: impl Fn(&T) -> (String, String),
    wanted: &[String],
) -> Result<Vec<T>, String> {
    if wanted.is_empty() {
        return Ok(candidates);
    }
    let names: Vec<(String, String)> = candidates.iter().map(&domain).collect();
    for w in wanted {
        if !names.iter().any(|(source, name)| w == name || w == source) {
            let known: Vec<String> = names
                .iter()
                .map(|(source, name)| format!("{name} ({source})"))
                .collect();
            return Err(format!(
                "unknown domain '{w}'; this machine has: {}",
                known.join(", ")
            ));
        }
    }
    Ok(candidates
        .into_iter()
        .zip(names)
        .filter(|(_, (source, name))| wanted.iter().any(|w| w == name || w == source))
        .map(|(c, _)| c)
        .collect())
}

fn domain_of(c: &Counter) -> (String, String) {
    (c.domain.source.clone(), c.domain.name.clone())
}

/// The counters to read: msr and kernel leave out MSRs that fault (an error
/// if every one does); elsewhere a counter that cannot be read is an error.
fn readable(mechanism: Mechanism, found: &Counters) -> Result<Vec<Counter>, String> {
    if matches!(mechanism, Mechanism::Msr | Mechanism::Kernel) {
        let ok: Vec<Counter> = found.readable().cloned().collect();
        if ok.is_empty() {
            return Err(rbench::discovery::no_rapl_msr_message(&cpu_signature()));
        }
        return Ok(ok);
    }
    all_readable(mechanism, &found.counters)?;
    Ok(found.counters.clone())
}

/// Err: why the first of `counters` that cannot be read cannot (refused).
fn all_readable(mechanism: Mechanism, counters: &[Counter]) -> Result<(), String> {
    match counters.iter().find_map(|c| c.readable.clone().err()) {
        Some(why) => Err(refused(mechanism, why)),
        None => Ok(()),
    }
}

/// Why the counters of `mechanism` cannot be opened: `why`, or for ebpf
/// lacking a capability, that (perf's refusal advises perf_event_paranoid,
/// which the BPF program cannot use).
fn refused(mechanism: Mechanism, why: String) -> String {
    let caps = matches!(mechanism, Mechanism::Ebpf).then(rbench::ebpf::lacks_capabilities);
    caps.flatten().unwrap_or(why)
}

/// The report's label of the counters: zone ids (or the stand-in file),
/// MSR addresses (for kernel each once: every package reads the same),
/// perf event label.
fn label(counters: &[Counter], stand_in: bool) -> String {
    let events = unique_events(counters);
    if !events.is_empty() {
        return events_label(&events);
    }
    let mut parts: Vec<String> = Vec::new();
    for c in counters {
        let part = match &c.route {
            Route::File { path } if stand_in => path.clone(),
            Route::Register { register, .. } => register.target(),
            Route::Ksample { msr, .. } if parts.contains(&msr_hex(*msr)) => continue,
            Route::Ksample { msr, .. } => msr_hex(*msr),
            _ => c.domain.source.clone(),
        };
        parts.push(part);
    }
    parts.join(",")
}

/// The perf events of `counters`, each once, in order.
fn unique_events(counters: &[Counter]) -> Vec<PerfEventSpec> {
    let mut events: Vec<PerfEventSpec> = Vec::new();
    for c in counters {
        if let Route::PerfEvent { event, .. } = &c.route {
            if !events.contains(event) {
                events.push(event.clone());
            }
        }
    }
    events
}

/// Opens the counters of `args.mechanism`; the error is for the user (exit 2).
pub fn open(args: &Args) -> Result<Opened, String> {
    let mechanism = args.mechanism();
    let found = discover(mechanism, args.powercap_root.as_deref())
        .map_err(|e| refused(mechanism, e.to_string()))?;
    // probe only what --domains keeps: a left-out frozen counter costs nothing
    let mut chosen = Counters {
        counters: select(readable(mechanism, &found)?, domain_of, &args.domains)?,
        stand_in: found.stand_in,
    };
    chosen.probe(LIVENESS_WINDOW);
    all_readable(mechanism, &chosen.counters)?;
    let Counters { counters, stand_in } = chosen;
    let label = label(&counters, stand_in.is_some());
    let sampler = match mechanism {
        Mechanism::Ebpf => Sampler::Bpf(unique_events(&counters)),
        Mechanism::Kernel => Sampler::Ksample(Module::at(&roots::KSAMPLE.path())),
        Mechanism::PerfRing => Sampler::PerfRing(
            args.perf_ring_design
                .map_or(Design::ORDER.to_vec(), |d| vec![d]),
        ),
        _ => {
            Sampler::Ticked(open_counters(&counters, stand_in.clone()).map_err(|e| e.to_string())?)
        }
    };
    Ok(Opened {
        sampler,
        label,
        stand_in,
        counters,
    })
}

/// Whether each counter's delta_j is energy: a unit, and a live verdict
/// (a stand-in has no unit; a frozen or no-unit counter yields none).
pub fn yields_energy(counters: &[Counter]) -> Vec<bool> {
    counters
        .iter()
        .map(|c| {
            c.domain.joules_per_unit > 0.0 && c.liveness.as_ref().is_none_or(Liveness::is_live)
        })
        .collect()
}

/// One stderr line per counter that is not live: what it means and what to do.
pub fn dead_counter_lines(mechanism: Mechanism, counters: &[Counter]) -> Vec<String> {
    counters
        .iter()
        .filter_map(|c| {
            let l = c.liveness.as_ref().filter(|l| !l.is_live())?;
            Some(format!(
                "{} counter {}/{} is {}: {}; its delta_j stays empty. What to do: run on bare \
                 metal (VMs rarely pass RAPL through), check `dmesg | grep -i rapl` and that the \
                 RAPL driver (intel_rapl_msr / intel_rapl_common, or amd_energy) is loaded",
                mechanism.name(),
                c.domain.source,
                c.domain.name,
                l.verdict,
                l.note.as_deref().unwrap_or("")
            ))
        })
        .collect()
}

/// A source with no domain: the bare timer loop (the null sampler).
pub struct NullSource;

impl CounterSource for NullSource {
    fn domains(&self) -> &[Domain] {
        &[]
    }
    fn read(&mut self, _out: &mut [u64]) -> Result<(), rbench::Error> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn select_by_name_or_source_and_refuse_unknown() {
        let c = vec![
            ("intel-rapl:0".to_string(), "package-0".to_string()),
            ("intel-rapl:0:2".to_string(), "dram".to_string()),
            ("intel-rapl-mmio:0".to_string(), "package-0".to_string()),
        ];
        let id = |x: &(String, String)| x.clone();
        assert_eq!(select(c.clone(), id, &[]).unwrap().len(), 3);
        assert_eq!(select(c.clone(), id, &["dram".into()]).unwrap().len(), 1);
        assert_eq!(
            select(c.clone(), id, &["package-0".into()]).unwrap().len(),
            2
        );
        assert_eq!(
            select(c.clone(), id, &["intel-rapl:0".into()])
                .unwrap()
                .len(),
            1
        );
        let err = select(c, id, &["gpu".into()]).unwrap_err();
        assert!(
            err.contains("unknown domain 'gpu'") && err.contains("dram (intel-rapl:0:2)"),
            "{err}"
        );
    }
}
