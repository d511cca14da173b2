//! raplbench-plan: the plan of this machine as JSON (rbench::plan::Plan::to_json),
//! every row any latency harness times. ubench reads it
//! (--raplbench_plan=FILE) and times exactly its rows; bench-all writes it
//! once per run (raw/plan.json).
//!
//! Usage: raplbench-plan [FILE] (default: standard output). The fixture
//! hooks (results/fixture_hooks.json) plan a fixture machine instead.
//! Cross-CPU rows come in the target states of the run's mode
//! (`RAPLBENCH_QUICK=1`: QUICK's; rbench::target_load).

use std::io::Write;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() > 1 || args.first().is_some_and(|a| a.starts_with('-')) {
        eprintln!("usage: raplbench-plan [FILE]");
        return ExitCode::from(2);
    }
    let json = rbench::paths::plan_this_machine()
        .to_json(&rbench::target_load::RunStates::from_env())
        + "\n";
    let written = match args.first() {
        Some(file) => std::fs::write(file, json).map_err(|e| format!("{file}: {e}")),
        None => std::io::stdout()
            .write_all(json.as_bytes())
            .map_err(|e| format!("standard output: {e}")),
    };
    match written {
        Ok(()) => ExitCode::SUCCESS,
        Err(why) => {
            eprintln!("raplbench-plan: cannot write the plan: {why}");
            ExitCode::FAILURE
        }
    }
}
