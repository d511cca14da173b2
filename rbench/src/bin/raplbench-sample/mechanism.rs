//! Opening the counters of a mechanism, restricted to --domains, with the
//! same discovery and stand-ins as the benchmarks (the rbench library), so
//! the sampler runs exactly the code the suite times.

use rbench::cpu::{cpu_signature, online_cpus, packages, Package};
use rbench::msr::{
    cpuid_stand_in_read, cpuid_stand_in_text, energy_msr_reads, msr_device_path, msr_hex,
    MsrDevice, MsrSource, Register, RegisterRead, DEV_CPU_ROOT,
};
use rbench::perf::{energy_events, events_label, PerfEventSpec, PerfMode, PerfSource, PMU_ROOT};
use rbench::powercap::{
    discover_powercap_zones, powercap_root, stand_in_text, zone_target_cpu, CounterFile,
    PowercapMode, PowercapSource,
};
use rbench::{CounterSource, Domain};
use std::path::Path;

use crate::cli::{Args, Mechanism};

/// Counters read by the sampling thread (powercap, msr, perf).
pub struct Ticked {
    /// The open source.
    pub source: Box<dyn CounterSource + Send>,
    /// What is read, for the report's target: "msr/tsc/", "0x611,0x619", ...
    pub label: String,
    /// The CPU whose counters these are (reading them there needs no IPI).
    pub counter_cpu: Option<usize>,
    /// Why a substitute is read, if it is.
    pub stand_in: Option<String>,
}

/// Counters sampled in the kernel by the BPF program (ebpf).
pub struct InKernel {
    /// The perf events the program reads.
    pub events: Vec<PerfEventSpec>,
    /// Their label.
    pub label: String,
    /// The CPU they live on, where the program's timer runs.
    pub cpu: usize,
    /// Why a substitute is read, if it is.
    pub stand_in: Option<String>,
}

/// What a mechanism opened.
pub enum Opened {
    /// A [`Ticked`] source.
    Ticked(Ticked),
    /// An [`InKernel`] set of events.
    InKernel(InKernel),
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

fn domain_of(d: &Domain) -> (String, String) {
    (d.source.clone(), d.name.clone())
}

fn open_powercap(args: &Args) -> Result<Ticked, String> {
    let root = args.powercap_root.clone().unwrap_or_else(powercap_root);
    let zones = discover_powercap_zones(&root);
    let (files, stand_in, counter_cpu) = if zones.is_empty() {
        (
            vec![CounterFile::stand_in()],
            Some(stand_in_text(&root)),
            None,
        )
    } else {
        let files = zones.iter().map(CounterFile::for_zone).collect();
        (files, None, zone_target_cpu(&zones[0]))
    };
    let files = select(files, |f: &CounterFile| domain_of(&f.domain), &args.domains)?;
    let label = files
        .iter()
        .map(|f| {
            if stand_in.is_some() {
                f.path.clone()
            } else {
                f.domain.source.clone()
            }
        })
        .collect::<Vec<_>>()
        .join(",");
    let source = PowercapSource::open(&files, PowercapMode::Pread, stand_in.clone())
        .map_err(|e| e.to_string())?;
    Ok(Ticked {
        source: Box::new(source),
        label,
        counter_cpu,
        stand_in,
    })
}

fn open_msr(args: &Args) -> Result<Ticked, String> {
    let dev_root = Path::new(DEV_CPU_ROOT);
    let mut pkgs = packages();
    if pkgs.is_empty() {
        pkgs.push(Package {
            id: 0,
            lead_cpu: online_cpus().first().copied().unwrap_or(0),
        });
    }
    let first = pkgs[0].lead_cpu;
    let (reads, stand_in) = match MsrDevice::open(&msr_device_path(dev_root, first)) {
        Ok(_) => {
            let signature = cpu_signature();
            let mut reads = Vec::new();
            for package in &pkgs {
                reads.extend(
                    energy_msr_reads(dev_root, &signature, package).map_err(|e| e.to_string())?,
                );
            }
            if reads.is_empty() {
                return Err(format!(
                    "every RAPL energy MSR of this {} CPU faults (EIO): no RAPL here",
                    signature.vendor.name()
                ));
            }
            (reads, None)
        }
        Err(missing) => {
            let read = cpuid_stand_in_read(dev_root, first);
            let text = cpuid_stand_in_text(&missing, &read.device);
            (vec![read], Some(text))
        }
    };
    let reads = select(
        reads,
        |r: &RegisterRead| domain_of(&r.domain),
        &args.domains,
    )?;
    let label = reads
        .iter()
        .map(|r| match r.register {
            Register::Msr(addr) => msr_hex(addr),
            Register::CpuidLeaf(leaf) => format!("cpuid:{leaf:#x}"),
        })
        .collect::<Vec<_>>()
        .join(",");
    let source = MsrSource::open(&reads, stand_in.clone()).map_err(|e| e.to_string())?;
    Ok(Ticked {
        source: Box::new(source),
        label,
        counter_cpu: Some(first),
        stand_in,
    })
}

fn perf_events(args: &Args) -> Result<(Vec<PerfEventSpec>, Option<String>), String> {
    let found = energy_events(Path::new(PMU_ROOT)).map_err(|e| e.to_string())?;
    let events = select(
        found.events,
        |e: &PerfEventSpec| (e.name.clone(), e.short_name().to_string()),
        &args.domains,
    )?;
    Ok((events, found.stand_in))
}

fn open_perf(args: &Args) -> Result<Ticked, String> {
    let (events, stand_in) = perf_events(args)?;
    let cpu = events[0].cpus.first().copied().unwrap_or(0);
    let source = PerfSource::open(&events, cpu, PerfMode::Group, stand_in.clone())
        .map_err(|e| e.to_string())?;
    Ok(Ticked {
        source: Box::new(source),
        label: events_label(&events),
        counter_cpu: Some(cpu),
        stand_in,
    })
}

/// Opens the counters of `args.mechanism`; the error is for the user (exit 2).
pub fn open(args: &Args) -> Result<Opened, String> {
    match args.mechanism {
        Mechanism::Powercap => open_powercap(args).map(Opened::Ticked),
        Mechanism::Msr => open_msr(args).map(Opened::Ticked),
        Mechanism::Perf => open_perf(args).map(Opened::Ticked),
        Mechanism::Ebpf => {
            let (events, stand_in) = perf_events(args)?;
            let cpu = events[0].cpus.first().copied().unwrap_or(0);
            Ok(Opened::InKernel(InKernel {
                label: events_label(&events),
                events,
                cpu,
                stand_in,
            }))
        }
    }
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
    fn stand_in(&self) -> Option<&str> {
        None
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
