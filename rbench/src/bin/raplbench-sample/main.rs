//! raplbench-sample: the 1 kHz RAPL energy sampler, raplbench's reference
//! workload (the tool whose cost the suite measures).
//!
//! Threads: the main thread starts everything, then waits (for --duration,
//! or for COMMAND) with SIGINT/SIGTERM unblocked; the sampling thread
//! (ticker.rs; for ebpf the in-kernel program and a drain thread,
//! ebpf_drain.rs) fills preallocated batches; the writer thread (writer.rs)
//! converts, wrap-corrects and writes them and keeps the statistics. With
//! --report, a null sampler (the same loop reading nothing) then runs for
//! the same time, and both go into the report side by side.

mod batch;
mod cli;
mod cputime;
mod ebpf_drain;
mod list;
mod mechanism;
mod phase;
mod report;
mod signals;
mod ticker;
mod writer;

use clap::Parser;
use rbench::discovery::Counters;
use rbench::schema_row::{new_run_id, utc_timestamp, Machine, RunInfo};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::time::SystemTime;

use cli::{Args, Mechanism};
use mechanism::{NullSource, Opened};
use phase::{run_in_kernel, run_ticked, InKernelSetup, Until};
use report::Phase;
use ticker::TickerSetup;

/// Why the program stops early.
enum Fail {
    /// Before sampling started: bad options, a counter or file that cannot
    /// be opened. Exit status 2.
    Setup(String),
    /// After sampling started. Exit status 1.
    Run(String),
}

fn create(path: &Path, what: &str) -> Result<File, Fail> {
    File::create(path)
        .map_err(|e| Fail::Setup(format!("cannot write {what} {}: {e}", path.display())))
}

fn run(args: Args) -> Result<i32, Fail> {
    args.validate().map_err(Fail::Setup)?;
    if args.list {
        print!("{}", list::render(&list::lines(&args)));
        return Ok(0);
    }
    let period_ns = 1_000_000_000 / u64::from(args.frequency);
    let hz = args.frequency;
    // everything that can fail before sampling, fails now (exit 2)
    let machine = match &args.machine {
        Some(path) => Some(Machine::load(path).map_err(Fail::Setup)?),
        None => None,
    };
    let output = match &args.output {
        Some(path) => Some(BufWriter::with_capacity(1 << 16, create(path, "--output")?)),
        None => None,
    };
    let mut report_file = match &args.report {
        Some(path) => Some(create(path, "--report")?),
        None => None,
    };
    signals::install().map_err(|e| Fail::Setup(format!("cannot install signal handlers: {e}")))?;
    signals::block_in_this_thread().ok(); // threads inherit this; main unblocks while it waits
    let opened = mechanism::open(&args).map_err(Fail::Setup)?;
    let dead = mechanism::dead_counter_lines(args.mechanism(), opened.counters());
    for line in &dead {
        eprintln!("raplbench-sample: {line}");
    }
    if args.require_live && !dead.is_empty() {
        return Err(Fail::Setup(format!(
            "--require-live: {} counter(s) not live (see above)",
            dead.len()
        )));
    }
    let liveness = Counters::liveness_of(opened.counters());
    let yields_energy = mechanism::yields_energy(opened.counters());
    let until = match args.duration {
        Some(s) => Until::Elapsed((s * 1e9) as u64),
        None => Until::CommandExits(&args.command),
    };
    let mech = args.mechanism().name();

    // the null sampler runs where the sampler did: for ebpf, a timer on each
    // package CPU, so its floor is comparable (the callback time adds up)
    let (sampled, null_kind, null_cpu, in_kernel_cpus) = match opened {
        Opened::Ticked(t) => {
            let cpu = args.cpu.or(t.counter_cpu);
            let setup = TickerSetup {
                period_ns,
                cpu,
                fifo: args.fifo,
            };
            let banner = format!(
                "sampling {mech} ({}) at {hz} Hz{}",
                t.label,
                cpu.map_or(String::new(), |c| format!(" on CPU {c}"))
            );
            let (wall_ns, code, producer, stats) =
                run_ticked(t.source, yields_energy, output, setup, &until, banner)?;
            let phase = Phase {
                title: format!("{mech} ({})", t.label),
                op: mech.into(),
                target: format!("{} @ {hz} Hz", t.label),
                cpu,
                target_cpu: t.counter_cpu,
                stand_in: t.stand_in,
                liveness: liveness.clone(),
                wall_ns,
                stats,
                producer,
            };
            ((phase, code), "bare timerfd loop", cpu, Vec::new())
        }
        Opened::InKernel(k) => {
            let cpu = k.cpus.first().copied().unwrap_or(0);
            let cpus_text = k
                .cpus
                .iter()
                .map(usize::to_string)
                .collect::<Vec<_>>()
                .join(",");
            let banner = format!(
                "sampling {mech} ({}) at {hz} Hz on CPU {cpus_text}",
                k.label
            );
            let setup = InKernelSetup {
                events: &k.events,
                cpus: &k.cpus,
                domains: k.counters.iter().map(|c| c.domain.clone()).collect(),
                map: k.value_map(),
                yields_energy,
            };
            let (wall_ns, code, producer, stats, trigger) =
                run_in_kernel(setup, output, period_ns, &until, banner)?;
            let in_kernel_cpus = k.cpus.clone();
            let phase = Phase {
                title: format!("{mech} ({}, {trigger})", k.label),
                op: mech.into(),
                target: format!("{} @ {hz} Hz", k.label),
                cpu: Some(cpu),
                target_cpu: Some(cpu),
                stand_in: k.stand_in,
                liveness,
                wall_ns,
                stats,
                producer,
            };
            (
                (phase, code),
                "bare bpf_timer program",
                Some(cpu),
                in_kernel_cpus,
            )
        }
    };
    let (phase, code) = sampled;
    eprintln!("raplbench-sample: {}", phase.summary());
    let mut failure = phase
        .stats
        .io_error
        .as_ref()
        .map(|e| format!("writing --output failed: {e}"));
    if phase.stats.samples == 0 && signals::received().is_none() {
        failure.get_or_insert_with(|| {
            format!(
                "no sample was taken: {}",
                phase.producer.first_error.clone().unwrap_or_default()
            )
        });
    }

    if let Some(file) = report_file.as_mut() {
        let mut phases = vec![phase];
        if !args.no_null && signals::received().is_none() {
            // the null sampler: same deadlines, nothing read, same wall time
            let same_time = Until::Elapsed(phases[0].wall_ns);
            let (wall_ns, _, producer, stats) = if args.mechanism() == Mechanism::Ebpf {
                let banner = format!("null sampler ({null_kind}) at {hz} Hz");
                let setup = InKernelSetup {
                    events: &[],
                    cpus: &in_kernel_cpus,
                    domains: Vec::new(),
                    map: Vec::new(),
                    yields_energy: Vec::new(),
                };
                let (w, c, p, s, _) = run_in_kernel(setup, None, period_ns, &same_time, banner)?;
                (w, c, p, s)
            } else {
                let setup = TickerSetup {
                    period_ns,
                    cpu: null_cpu,
                    fifo: args.fifo,
                };
                let banner = format!("null sampler ({null_kind}) at {hz} Hz");
                run_ticked(
                    Box::new(NullSource),
                    Vec::new(),
                    None,
                    setup,
                    &same_time,
                    banner,
                )?
            };
            let null = Phase {
                title: format!("null ({null_kind})"),
                op: mech.into(),
                target: format!("null: {null_kind} @ {hz} Hz"),
                cpu: null_cpu,
                target_cpu: None,
                stand_in: None,
                liveness: None,
                wall_ns,
                stats,
                producer,
            };
            eprintln!("raplbench-sample: {}", null.summary());
            phases.push(null);
        }
        let now = SystemTime::now();
        let run = RunInfo {
            run_id: args.run_id.clone().unwrap_or_else(|| new_run_id(now)),
            timestamp: utc_timestamp(now),
            machine: machine.unwrap_or_else(Machine::collect_basic),
        };
        let mut text = String::new();
        for p in &phases {
            for r in p.rows(&run) {
                text += &r.to_string();
                text.push('\n');
            }
        }
        file.write_all(text.as_bytes())
            .map_err(|e| Fail::Run(format!("writing --report failed: {e}")))?;
    }
    match failure {
        Some(why) => Err(Fail::Run(why)),
        None => Ok(code),
    }
}

fn main() {
    let args = Args::parse(); // bad options: clap prints why and exits 2
    std::process::exit(match run(args) {
        Ok(code) => code,
        Err(Fail::Setup(why)) => {
            eprintln!("raplbench-sample: {why}");
            2
        }
        Err(Fail::Run(why)) => {
            eprintln!("raplbench-sample: {why}");
            1
        }
    });
}
