//! raplbench-interfere: what a neighbour's reads of an energy counter cost
//! another CPU, measured with the victim probe (rbench::interfere).
//!
//! Threads: the main thread runs the experiments one by one (for a route
//! it is the reader, pinned to the row's CPU: plan rows are not Send; for
//! the sampler it starts and stops the child); the victim runs on its own
//! pinned thread per experiment; a watcher thread takes SIGINT and SIGTERM
//! (rbench::signals) and sets the stop flag that every loop looks at.

mod cli;

use clap::Parser;
use rbench::clock::monotonic_ns;
use rbench::cpu::Cpus;
use rbench::interfere::report::{summary_line, Document, Experiment};
use rbench::interfere::route::{run_routes, Only, RouteSettings};
use rbench::interfere::sampler::{run_sampler, SamplerSettings};
use rbench::interfere::victim_side::Calibrations;
use rbench::{say, signals};
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use cli::Args;

/// How often the watcher looks whether the run is over.
const POLL_NS: u64 = 50_000_000;

/// The experiments, each reported on stderr as it ends.
fn experiments(args: &Args, doc: &mut Document, stop: &AtomicBool) -> Result<(), (i32, String)> {
    let mut calibrations = Calibrations::default();
    let mut report = |e: Experiment| {
        say!("{}", summary_line(&e));
        doc.experiments.push(e);
    };
    match &args.sampler {
        None => {
            let only = args
                .only
                .iter()
                .map(|o| Only::parse(o))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| (2, format!("--only: {e}")))?;
            let settings = RouteSettings {
                rates: args.rates.clone(),
                pairs: args.pairs as usize,
                window_s: args.window_s,
                only,
            };
            let rows = run_routes(&settings, &mut calibrations, stop, &mut report);
            if rows == 0 && !stop.load(Ordering::Relaxed) {
                let only = args.only.join(",");
                let why = format!("--only {only} selects no planned row of this machine");
                return Err((2, why));
            }
        }
        Some(mechanism) => {
            let bin = match &args.sampler_bin {
                Some(b) => b.clone(),
                None => std::env::current_exe()
                    .map_err(|e| (2, format!("cannot find this program: {e}")))?
                    .with_file_name("raplbench-sample"),
            };
            let tmp_dir = std::env::temp_dir().join(format!(
                "raplbench-interfere-{}-{}",
                // SAFETY: geteuid has no preconditions.
                unsafe { libc::geteuid() },
                std::process::id()
            ));
            std::fs::create_dir_all(&tmp_dir)
                .map_err(|e| (1, format!("cannot create {}: {e}", tmp_dir.display())))?;
            let settings = SamplerSettings {
                bin,
                mechanism: mechanism.clone(),
                rate_hz: args.rate,
                pairs: args.pairs as usize,
                window_s: args.window_s,
                tmp_dir: tmp_dir.clone(),
            };
            let victims = if args.victim_cpu.is_empty() {
                Cpus::from_env().allowed()
            } else {
                args.victim_cpu.clone()
            };
            for v in victims {
                if stop.load(Ordering::Relaxed) {
                    break;
                }
                report(run_sampler(&settings, v, &mut calibrations, stop));
            }
            let _ = std::fs::remove_dir_all(&tmp_dir);
        }
    }
    doc.calibrations = calibrations
        .by_cpu
        .iter()
        .map(|(cpu, c)| (cpu.to_string(), *c))
        .collect();
    Ok(())
}

/// Exit status and message.
fn run(args: Args) -> Result<i32, (i32, String)> {
    let cpus = Cpus::from_env();
    for &v in &args.victim_cpu {
        if let Some(why) =
            rbench::cpu::cpu_problem("--victim-cpu", v, &cpus.online(), &cpus.allowed())
        {
            return Err((2, why));
        }
    }
    let shown = args.json.display();
    let mut json = std::fs::File::create(&args.json)
        .map_err(|e| (1, format!("cannot write --json {shown}: {e}")))?;
    // blocked in every thread; the watcher sets `stop` on one, until `done`
    signals::take().map_err(|e| (2, e))?;
    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicBool::new(false));
    let watcher = {
        let (stop, done) = (stop.clone(), done.clone());
        std::thread::Builder::new()
            .name("signals".into())
            .spawn(move || signals::watch(POLL_NS, || !done.load(Ordering::Relaxed), &stop))
            .map_err(|e| (1, format!("cannot start the signal thread: {e}")))?
    };
    let mut doc = Document::new(args.window_s, args.pairs as usize);
    let started = monotonic_ns();
    let result = experiments(&args, &mut doc, &stop);
    done.store(true, Ordering::Relaxed);
    let signal = watcher.join().ok().flatten();
    result?;
    let code = match signal {
        None => 0,
        Some(s) => {
            doc.stopped_by = Some(signals::name(s));
            say!("stopped by {}: writing what was measured", signals::name(s));
            128 + s
        }
    };
    let text = serde_json::to_string_pretty(&doc)
        .map_err(|e| (1, format!("cannot serialize the document: {e}")))?;
    writeln!(json, "{text}")
        .and_then(|()| json.sync_all())
        .map_err(|e| (1, format!("writing --json {shown} failed: {e}")))?;
    say!(
        "{} experiments in {:.1} s, written to {shown}",
        doc.experiments.len(),
        (monotonic_ns() - started) as f64 / 1e9,
    );
    Ok(code)
}

fn main() {
    let args = Args::parse(); // bad options: clap's message, exit status 2
    std::process::exit(match run(args) {
        Ok(code) => code,
        Err((code, why)) => {
            say!("{why}");
            code
        }
    });
}
