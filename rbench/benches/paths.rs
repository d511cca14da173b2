//! The Criterion harness of raplbench: one benchmark per row of the plan
//! that Criterion times (rbench::plan): the run's plan named by
//! $RAPLBENCH_PLAN, or without it (`cargo bench` by hand) this machine's,
//! planned here. Each row is opened from what the plan says to open
//! (rbench::paths::reads_of; the eBPF rows start their own BPF sampler),
//! pinned to the row's CPU, once; then every row is timed in rounds
//! (rbench::schedule), one Criterion measurement per row and round, and the
//! row's samples are the rounds' means, as a Google Benchmark repetition is
//! one block's mean in ubench. Criterion's filter (`cargo bench --bench
//! paths -- <filter>`) only skips the timing: every runnable row is still
//! pinned, opened and read once.
//!
//! A cross-CPU row in a target state (rbench::target_load, issue 34) has
//! its target CPU put in that state for each of its blocks. The eBPF rows
//! are opened and timed after all others, alone: their BPF program ticks
//! on every CPU, and no target meant to be idle may see it (ubench runs
//! them in a process of their own for the same reason).
//!
//! Benchmark ids, the plan it times and the plan it timed (Criterion has no
//! channel for a row that did not time, hence its "not_timed"): see
//! rbench/README.md, "The benchmark's output". The rounds and their knobs
//! (RAPLBENCH_QUICK, RAPLBENCH_ROUNDS, ...): its "Rounds"; here also 10
//! Criterion samples and 1001 resamples per measurement, never plots.
//! RAPLBENCH_POWERCAP_ROOT and the other roots (rbench::roots) move the
//! plan made here to fixture trees.

use std::path::{Path, PathBuf};
use std::time::Instant;

use criterion::{BenchmarkId, Criterion};
use rbench::cpu::pin_to_cpu;
use rbench::paths::{plan_this_machine, reads_of};
use rbench::plan::{Reader, Reads, PLAN_VERSION};
use rbench::schedule::{round_dir, round_order, Schedule, Shuffler};
use rbench::target_load::{TargetLoad, TargetState};
use serde_json::{json, Map, Value};

/// Criterion for one round of `schedule`, writing under `dir`, then the
/// command line.
fn configured_criterion(schedule: &Schedule, dir: &Path) -> Criterion {
    Criterion::default()
        .without_plots()
        .warm_up_time(schedule.warm_up)
        .measurement_time(schedule.block)
        .sample_size(10)
        .nresamples(1001) // raplbench uses none of its estimates; at 1000 and below Criterion warns
        .output_directory(dir)
        .configure_from_args()
}

/// A row of the plan that Criterion times.
struct Row {
    /// The row as the plan's JSON has it ("id", "path", "op", "cpu", ...).
    json: Value,
    /// What it reads, from its "open", or why that does not open; None: the
    /// plan says it cannot run.
    reads: Option<Result<Box<dyn Reads>, String>>,
    /// The load its target CPU gets while it is timed (the plan's
    /// "target_load"), and that CPU.
    target: Option<(TargetState, usize)>,
}

impl Row {
    fn field(&self, key: &str) -> &str {
        self.json[key].as_str().unwrap_or("")
    }

    /// The row of the plan's JSON `json`, opened as `reads` says.
    fn new(json: &Value, reads: Option<Result<Box<dyn Reads>, String>>) -> Result<Row, String> {
        let target = match (json["target_load"].as_str(), json["target_cpu"].as_u64()) {
            (Some(state), Some(cpu)) => Some((TargetState::parse(state)?, cpu as usize)),
            _ => None,
        };
        Ok(Row {
            json: json.clone(),
            reads,
            target,
        })
    }

    /// The Criterion parameter: the id after "<path>/<op>/".
    fn parameter(&self) -> &str {
        let prefix = format!("{}/{}/", self.field("path"), self.field("op"));
        let id = self.field("id");
        id.strip_prefix(&prefix).unwrap_or(id)
    }
}

/// How a benchmark that was planned ended.
enum Outcome {
    /// Measured.
    Measured,
    /// Could not start (pinning, opening, a first read): the machine lacks something.
    Unavailable(String),
    /// Failed while being measured, or read no data.
    Failed(String),
}

/// Times `reader` (one operation per iteration) as benchmark `row`, one
/// block of a round; a read that fails during the measurement, or a
/// measurement that read no data, turns the row into an error.
fn time_block(criterion: &mut Criterion, row: &Row, reader: &mut dyn Reader) -> Outcome {
    let mut failure = None;
    let mut group = criterion.benchmark_group(row.field("path"));
    group.bench_function(BenchmarkId::new(row.field("op"), row.parameter()), |b| {
        // what Criterion's iter() times, with the loop inside the reader
        b.iter_custom(|iters| {
            let start = Instant::now();
            let result = reader.read_n(iters);
            let elapsed = start.elapsed();
            if let Err(e) = result {
                failure.get_or_insert(e);
            }
            elapsed
        })
    });
    group.finish();
    match (failure, reader.no_data()) {
        (Some(e), _) => Outcome::Failed(e.to_string()),
        (None, Some(why)) => Outcome::Failed(why),
        (None, None) => Outcome::Measured,
    }
}

/// Pins the thread to the row's CPU (every row has one).
fn pin(row: &Row) -> Result<(), String> {
    match row.json["cpu"].as_u64() {
        Some(cpu) => pin_to_cpu(cpu as usize).map_err(|e| e.to_string()),
        None => Ok(()),
    }
}

/// Opens what a runnable row reads, pinned to its CPU, and reads it once.
fn open<'a>(
    row: &Row,
    reads: &'a Result<Box<dyn Reads>, String>,
) -> Result<Box<dyn Reader + 'a>, String> {
    let reads = reads.as_ref().map_err(String::clone)?;
    pin(row)?;
    let mut reader = reads.open().map_err(|e| e.to_string())?;
    reader.read().map_err(|e| e.to_string())?;
    Ok(reader)
}

/// Times one block of `row` with its target CPU under the row's load.
fn time_in_state(
    criterion: &mut Criterion,
    row: &Row,
    reader: &mut dyn Reader,
    tick_hz: u32,
) -> Outcome {
    let _load = match row
        .target
        .map(|(state, cpu)| TargetLoad::start(state, cpu, tick_hz))
    {
        Some(Err(e)) => return Outcome::Unavailable(e.to_string()),
        load => load,
    };
    time_block(criterion, row, reader)
}

/// Times every runnable row in the rounds of `schedule`; one outcome per
/// row (None: not runnable, the plan says why).
fn run(rows: &[Row], schedule: &Schedule, home: &Path, tick_hz: u32) -> Vec<Option<Outcome>> {
    let (mut readers, mut outcomes): (Vec<_>, Vec<_>) = rows
        .iter()
        .map(|row| match row.reads.as_ref().map(|r| open(row, r)) {
            None => (None, None),
            Some(Ok(reader)) => (Some(reader), Some(Outcome::Measured)),
            Some(Err(why)) => (None, Some(Outcome::Unavailable(why))),
        })
        .unzip();
    let mut shuffler = Shuffler::from_entropy();
    let mut last = None;
    for round in 0..schedule.rounds {
        let mut criterion = configured_criterion(schedule, &round_dir(home, round));
        let runnable: Vec<usize> = (0..rows.len())
            .filter(|&i| matches!(outcomes[i], Some(Outcome::Measured)))
            .collect();
        eprintln!(
            "raplbench: round {}/{}: {} rows",
            round + 1,
            schedule.rounds,
            runnable.len()
        );
        for i in round_order(&runnable, &mut shuffler) {
            let (row, reader) = (&rows[i], readers[i].as_deref_mut().expect("opened"));
            let outcome = match pin(row) {
                Ok(()) => time_in_state(&mut criterion, row, reader, tick_hz),
                Err(why) => Outcome::Failed(why),
            };
            if !matches!(outcome, Outcome::Measured) {
                outcomes[i] = Some(outcome);
                readers[i] = None;
            }
        }
        last = Some(criterion);
    }
    if let Some(criterion) = last {
        criterion.final_summary();
    }
    outcomes
}

/// Criterion's output directory as Criterion finds it: $CRITERION_HOME,
/// else $CARGO_TARGET_DIR/criterion, else `<target>/criterion` where
/// `<target>` holds the running bench binary's profile directory
/// (target/release/deps/paths-* -> target).
fn criterion_home() -> PathBuf {
    if let Some(home) = std::env::var_os("CRITERION_HOME") {
        return PathBuf::from(home);
    }
    if let Some(target) = std::env::var_os("CARGO_TARGET_DIR") {
        return PathBuf::from(target).join("criterion");
    }
    std::env::current_exe()
        .ok()
        .and_then(|exe| exe.ancestors().nth(3).map(Path::to_path_buf))
        .unwrap_or_else(|| PathBuf::from("target"))
        .join("criterion")
}

/// The plan to time as JSON, with its Criterion rows only: the file
/// $RAPLBENCH_PLAN names, or this machine's plan, made here (and dropped,
/// with the BPF sampler it started: the rows open their own).
fn plan_doc() -> Result<Value, String> {
    let (text, origin) = match std::env::var_os("RAPLBENCH_PLAN") {
        Some(path) if !path.is_empty() => {
            let origin = PathBuf::from(path).display().to_string();
            let text = std::fs::read_to_string(&origin).map_err(|e| format!("{origin}: {e}"))?;
            (text, origin)
        }
        _ => (
            plan_this_machine().to_json(&rbench::target_load::RunStates::from_env()),
            "the plan".to_string(),
        ),
    };
    let mut doc: Value =
        serde_json::from_str(&text).map_err(|e| format!("{origin}: not JSON: {e}"))?;
    if doc["plan_version"] != PLAN_VERSION {
        return Err(format!(
            "{origin}: not a raplbench plan of version {PLAN_VERSION}"
        ));
    }
    let rows = doc["rows"]
        .as_array_mut()
        .ok_or(format!("{origin}: no \"rows\""))?;
    rows.retain(|row| {
        row["harnesses"]
            .as_array()
            .is_some_and(|h| h.contains(&json!("criterion")))
    });
    Ok(doc)
}

/// `doc`, the plan that was timed, with "not_timed": {id: {status, reason}}
/// for the runnable rows that were not (see rbench/README.md).
fn timed_plan_json(mut doc: Value, outcomes: Vec<Option<Outcome>>) -> String {
    let mut not_timed = Map::new();
    let rows = doc["rows"].as_array().cloned().unwrap_or_default();
    for (row, outcome) in rows.iter().zip(outcomes) {
        let (status, reason) = match outcome {
            Some(Outcome::Unavailable(reason)) => ("unavailable", reason),
            Some(Outcome::Failed(reason)) => ("error", reason),
            Some(Outcome::Measured) | None => continue,
        };
        not_timed.insert(
            row["id"].as_str().unwrap_or("").to_string(),
            json!({"status": status, "reason": reason}),
        );
    }
    doc["not_timed"] = Value::Object(not_timed);
    serde_json::to_string_pretty(&doc).expect("a plan serializes") + "\n"
}

fn main() {
    let (schedule, doc) = match Schedule::from_env().and_then(|s| Ok((s, plan_doc()?))) {
        Ok(both) => both,
        Err(why) => {
            eprintln!("raplbench: {why}");
            std::process::exit(2);
        }
    };
    let jsons = doc["rows"].as_array().expect("rows").clone();
    let tick_hz = doc["target_tick_hz"].as_u64().unwrap_or(1000) as u32;
    let home = criterion_home();
    let mut outcomes: Vec<Option<Outcome>> = jsons.iter().map(|_| None).collect();
    for bpf in [false, true] {
        // the eBPF rows last, alone: their samplers start with them and stop after them
        let mut started = Vec::new();
        let (mut rows, mut at) = (Vec::new(), Vec::new());
        for (i, json) in jsons.iter().enumerate() {
            if json["open"].get("bpf").is_some() != bpf {
                continue;
            }
            let reads = (json["status"] == "ok").then(|| reads_of(&json["open"], &mut started));
            match Row::new(json, reads) {
                Ok(row) => {
                    rows.push(row);
                    at.push(i);
                }
                Err(why) => outcomes[i] = Some(Outcome::Failed(why)),
            }
        }
        for (i, outcome) in at.into_iter().zip(run(&rows, &schedule, &home, tick_hz)) {
            outcomes[i] = outcome;
        }
    }
    let out = match std::env::var_os("RAPLBENCH_CRITERION_PLAN") {
        Some(path) if !path.is_empty() => PathBuf::from(path),
        _ => home.join("raplbench-plan.json"),
    };
    let written = out
        .parent()
        .map_or(Ok(()), std::fs::create_dir_all)
        .and_then(|()| std::fs::write(&out, timed_plan_json(doc, outcomes)));
    match written {
        Ok(()) => eprintln!("raplbench: the plan timed: {}", out.display()),
        Err(e) => {
            eprintln!("raplbench: cannot write {}: {e}", out.display());
            std::process::exit(1);
        }
    }
}
