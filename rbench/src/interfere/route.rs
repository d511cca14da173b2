//! Route experiments: every planned row of the [`route_paths`] at each
//! rate, read by the calling thread (pinned to the row's CPU) while the
//! victim measures its CPU.
//!
//! The plan is built path by path (each path's planner of
//! [`crate::paths::PATHS`] on one [`Machine`], as
//! [`crate::paths::plan_this_machine`] does) and each path's rows are
//! dropped once measured: the BPF sampler that the eBPF rows keep running
//! (its timer fires on every CPU) runs only during their own experiments.
//! Rows are not `Send`, so the reader is the calling thread.

use std::sync::atomic::{AtomicBool, Ordering};

use super::placement::victim_cpu;
use super::reader::drive;
use super::report::{self, Experiment, Neighbour, Pair};
use super::schedule::route_windows;
use super::ticks::TscClock;
use super::victim_side::{Calibrations, Victim};
use crate::cpu::{pin_to_cpu, AffinityGuard};
use crate::paths::PATHS;
use crate::plan::{Machine, Plan, Planned, Reads};
use crate::row_meta::Status;

/// The paths whose rows are neighbours: the registry's paths that the
/// victim harness times, but the sampler (`--sampler`), as results/victim.py
/// takes them.
pub fn route_paths() -> Vec<&'static str> {
    crate::registry::paths_of("victim")
        .into_iter()
        .filter(|p| *p != "sampler")
        .collect()
}

/// A `--only` item: a path, or a path and an op.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Only {
    /// The path.
    pub path: String,
    /// The op, if given.
    pub op: Option<String>,
}

impl Only {
    /// Parses `PATH` or `PATH/OP`; the path must be one of [`route_paths`].
    pub fn parse(text: &str) -> Result<Only, String> {
        let (path, op) = match text.split_once('/') {
            Some((p, o)) => (p, Some(o.to_string())),
            None => (text, None),
        };
        let paths = route_paths();
        if !paths.contains(&path) {
            return Err(format!(
                "'{path}' is not a route path (one of {}; the sampler is --sampler MECH)",
                paths.join(", ")
            ));
        }
        Ok(Only {
            path: path.into(),
            op,
        })
    }
}

/// Whether `only` (empty: every row) selects the row of `path` and `op`,
/// one the victim harness times.
pub fn selected(only: &[Only], path: &str, op: &str) -> bool {
    let selects = |o: &Only| o.path == path && o.op.as_deref().is_none_or(|o_op| o_op == op);
    only.is_empty() || only.iter().any(selects)
}

/// What to run.
#[derive(Debug, Clone)]
pub struct RouteSettings {
    /// Rates (None: flat out), one experiment each per row.
    pub rates: Vec<Option<u32>>,
    /// Pairs of windows per experiment.
    pub pairs: usize,
    /// One window, s.
    pub window_s: f64,
    /// `--only` (empty: every row).
    pub only: Vec<Only>,
}

/// Runs every selected row at every rate, calling `done` with each
/// experiment as it ends; returns how many rows `only` selected. Stops
/// (before the next experiment, or within one window) once `stop` is set.
pub fn run_routes(
    settings: &RouteSettings,
    calibrations: &mut Calibrations,
    stop: &AtomicBool,
    done: &mut dyn FnMut(Experiment),
) -> usize {
    let machine = Machine::from_env();
    let allowed = crate::cpu::allowed_cpus();
    // Every victim CPU is calibrated now, before any path is planned: the
    // eBPF paths' plan arms a bpf_timer, which must not run during a
    // calibration (150 ms per CPU). A failure is not stored: each experiment
    // that needs that CPU calibrates it again, by then perhaps with the timer
    // running, and reports its own failure.
    for &cpu in &allowed {
        let _ = calibrations.of(cpu);
    }
    let mut selected_rows = 0;
    for planner in PATHS {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        let mut plan = Plan::default();
        planner(&machine, &mut plan);
        plan.rows
            .retain(|r| r.timed_by("victim") && selected(&settings.only, &r.meta.path, &r.meta.op));
        selected_rows += plan.rows.len();
        for row in &plan.rows {
            for &rate in &settings.rates {
                if stop.load(Ordering::Relaxed) {
                    return selected_rows;
                }
                // the next path's plan reads this thread's CPU mask
                let _restore = AffinityGuard::save();
                let e = experiment(row, rate, settings, &allowed, calibrations, stop);
                done(e);
            }
        }
    }
    selected_rows
}

/// One row at one rate.
fn experiment(
    row: &Planned,
    rate: Option<u32>,
    settings: &RouteSettings,
    allowed: &[usize],
    calibrations: &mut Calibrations,
    stop: &AtomicBool,
) -> Experiment {
    let reader_cpu = row.meta.cpu.or(allowed.first().copied()).unwrap_or(0);
    let victim = victim_cpu(reader_cpu, row.meta.target_cpu, allowed);
    let pairs = match (&row.reads, &victim) {
        (Err(reason), _) | (_, Err(reason)) => Err((Status::Unavailable, reason.clone())),
        (Ok(reads), Ok((victim_cpu, _))) => measure(
            &**reads,
            reader_cpu,
            *victim_cpu,
            rate,
            settings,
            calibrations,
            stop,
        ),
    };
    Experiment::new(Neighbour::Route(row.meta.clone()), rate, victim.ok(), pairs)
}

/// The pairs of `reads` read on `reader_cpu` at `rate` against the victim
/// on `victim_cpu`, or why there are none.
fn measure(
    reads: &dyn Reads,
    reader_cpu: usize,
    victim_cpu: usize,
    rate: Option<u32>,
    settings: &RouteSettings,
    calibrations: &mut Calibrations,
    stop: &AtomicBool,
) -> Result<Vec<Pair>, (Status, String)> {
    let error = |e: String| (Status::Error, e);
    let calibration =
        (calibrations.of(victim_cpu)).map_err(|e| error(format!("calibrating the victim: {e}")))?;
    pin_to_cpu(reader_cpu).map_err(|e| (Status::Unavailable, e.to_string()))?;
    let mut reader =
        (reads.open()).map_err(|e| (Status::Unavailable, format!("cannot open it: {e}")))?;
    (reader.read()).map_err(|e| (Status::Unavailable, format!("its first read fails: {e}")))?;
    let (roles, at) = route_windows(settings.pairs);
    let victim = Victim::start(
        victim_cpu,
        calibration,
        settings.window_s,
        Some(roles.len()),
        0,
    )
    .map_err(error)?;
    let clock = TscClock::now(calibration.calibration.tsc_ghz);
    let driven = drive(&mut *reader, &roles, &victim.grid, &clock, rate, stop);
    if driven.error.is_some() || driven.stopped {
        victim.stop();
    }
    let no_data = reader.no_data();
    drop(reader);
    let windows = victim.join(roles.len()).map_err(error)?;
    if let Some(e) = driven.error {
        return Err(error(format!("a read failed while measured: {e}")));
    }
    if let Some(e) = no_data {
        return Err(error(e));
    }
    Ok(report::pairs(&at, &windows, &driven.counts))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_selects_paths_and_ops() {
        let only = [
            Only::parse("msr-dev").unwrap(),
            Only::parse("perf/read").unwrap(),
        ];
        assert!(selected(&only, "msr-dev", "pread"));
        assert!(selected(&only, "perf", "read"));
        assert!(!selected(&only, "perf", "group-read"));
        assert!(!selected(&only, "powercap", "pread"));
        assert!(selected(&[], "ebpf-mmap", "load"));
        let err = Only::parse("sampler").unwrap_err();
        assert!(err.contains("--sampler"), "{err}");
        assert_eq!(
            Only::parse("ebpf-mmap/load").unwrap(),
            Only {
                path: "ebpf-mmap".into(),
                op: Some("load".into())
            }
        );
    }
}
