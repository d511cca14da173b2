//! raplbench-victim: the victim probe (rbench::victim) on one CPU: what the
//! rest of the machine steals from it, per second, as gaps in a pinned loop
//! of TSC reads.
//!
//! Threads: the main thread waits for SIGINT/SIGTERM (rbench::signals);
//! the probe thread pins itself to --cpu, calibrates and spins. A stop
//! signal sets a flag the loop reads every iteration, so the run ends
//! within one iteration and what it measured is still reported.

mod cli;

use clap::Parser;
use rbench::cpu::Cpus;
use rbench::victim::{self, Setup};
use rbench::{say, signals};
use std::io::Write;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use cli::Args;

/// How often the main thread looks whether the probe has finished.
const POLL_NS: u64 = 20_000_000;

/// Exit status and message.
fn run(args: Args) -> Result<(), (i32, String)> {
    let cpus = Cpus::from_env();
    if let Some(why) = rbench::cpu::cpu_problem("--cpu", args.cpu, &cpus.online(), &cpus.allowed())
    {
        return Err((2, why));
    }
    let mut json = (args.json.as_ref())
        .map(|p| std::fs::File::create(p).map_err(|e| (p, e)))
        .transpose()
        .map_err(|(p, e)| (2, format!("cannot write --json {}: {e}", p.display())))?;
    // blocked in the probe thread too; the main thread takes them
    signals::take().map_err(|e| (2, e))?;

    let setup = Setup {
        cpu: args.cpu,
        duration_s: args.duration,
        threshold_ns: args.threshold_ns,
        calibration: victim::CALIBRATION_WINDOW,
    };
    let stop = Arc::new(AtomicBool::new(false));
    let probe = {
        let stop = Arc::clone(&stop);
        std::thread::Builder::new()
            .name("victim".into())
            .spawn(move || victim::run(&setup, &stop))
            .map_err(|e| (1, format!("cannot start the probe thread: {e}")))?
    };
    let stopped_by = signals::watch(POLL_NS, || !probe.is_finished(), &stop);
    let mut report = match probe.join() {
        Ok(Ok(report)) => report,
        Ok(Err(e)) => return Err((1, format!("the probe failed: {e}"))),
        Err(_) => return Err((1, "the probe thread panicked".into())),
    };
    // a stop that came after the loop had ended by itself cut nothing short
    report.stopped_by = stopped_by.filter(|_| report.stopped).map(signals::name);
    for line in report.summary() {
        say!("{line}");
    }
    if let (Some(file), Some(path)) = (json.as_mut(), &args.json) {
        let text = serde_json::to_string_pretty(&report).expect("a report serializes");
        writeln!(file, "{text}")
            .and_then(|()| file.sync_all())
            .map_err(|e| (1, format!("writing --json {} failed: {e}", path.display())))?;
    }
    Ok(())
}

fn main() {
    let args = Args::parse(); // bad options: clap's message, exit status 2
    if let Err((code, why)) = run(args) {
        say!("{why}");
        std::process::exit(code);
    }
}
