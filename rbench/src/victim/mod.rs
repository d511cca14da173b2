//! The victim probe: what a neighbour's reads cost the CPU they target.
//!
//! A thread pinned to the target CPU spins on TSC reads and records every
//! gap between consecutive reads above a threshold, as hiccup and jitter
//! detectors do (sysjitter, hwlatdetect, cyclictest's measuring loop): an
//! interrupt, an IPI, a VM exit or a preemption on that CPU shows up as a
//! gap; the loop itself never leaves user space. The threshold is in
//! [`calibrate`], the accounting in [`gaps`]; the report: rbench/README.md,
//! "The victim probe: `raplbench-victim`".
//!
//! **RDTSC, not RDTSCP or LFENCE;RDTSC.** The loop times itself: between
//! two reads there is nothing to keep in order but the reads, so a
//! serialized read buys nothing and lengthens every iteration (LFENCE waits
//! for the pipeline to drain: tens of cycles), which coarsens the loop's
//! resolution. An unserialized RDTSC may execute a few tens of cycles early
//! or late, far below the threshold (≥ 200 ns); sysjitter spins on a plain
//! RDTSC for the same reason. A read that appears to go backwards is taken
//! as a zero delta.

pub mod calibrate;
pub mod gaps;

use core::arch::x86_64::_rdtsc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use calibrate::Calibration;
use gaps::{GapStats, Gaps, Measured};

/// How long the calibration loop runs.
pub const CALIBRATION_WINDOW: Duration = Duration::from_millis(150);
/// Gaps kept for the percentiles (8 MiB); more are counted, not kept.
pub const MAX_GAPS: usize = 1 << 20;

/// What to run.
#[derive(Debug, Clone, Copy)]
pub struct Setup {
    /// The CPU to measure (the calling thread is pinned there).
    pub cpu: usize,
    /// How long to measure, seconds (> 0).
    pub duration_s: f64,
    /// The threshold, ns, instead of the calibrated rule.
    pub threshold_ns: Option<f64>,
    /// How long to calibrate ([`CALIBRATION_WINDOW`] but in tests).
    pub calibration: Duration,
}

/// Pins the calling thread to `setup.cpu`, calibrates, then measures
/// ([`spin`]) for `setup.duration_s` or until `stop` is set, and reports
/// what it measured (`stopped_by` left for the caller).
pub fn run(setup: &Setup, stop: &AtomicBool) -> Result<Report, crate::Error> {
    crate::cpu::pin_to_cpu(setup.cpu)?;
    let calibration = calibrate::calibrate(setup.calibration);
    let threshold_ns = setup.threshold_ns.unwrap_or(calibration.rule_threshold_ns);
    let hz = calibration.tsc_ghz * 1e9;
    let normal = calibration.cycles(calibration.iteration_p50_ns);
    let run_cycles = (setup.duration_s * hz) as u64;
    let max_seconds = setup.duration_s.ceil() as usize + 1;
    let gaps = Gaps::new(
        calibration.cycles(threshold_ns),
        normal,
        hz.round() as u64,
        MAX_GAPS,
        max_seconds,
    );
    let (measured, stopped) = spin(gaps, run_cycles, stop, &AtomicU64::new(0));
    let (seconds, total) = measured.stats(calibration.ns_per_cycle());
    Ok(Report {
        cpu: setup.cpu,
        duration_s: setup.duration_s,
        calibration,
        threshold_ns,
        threshold_source: match setup.threshold_ns {
            Some(_) => "--threshold-ns".into(),
            None => format!("rule: {}", calibrate::rule_text()),
        },
        normal_iteration_ns: normal as f64 * calibration.ns_per_cycle(),
        gaps_not_kept: total.not_kept,
        seconds,
        total,
        stopped_by: None,
        stopped,
    })
}

/// The measuring loop on the calling thread (pinned and calibrated
/// already): from its first TSC read, which opens the first window and is
/// published in `started` (a release store, before the loop), for
/// `run_cycles` TSC cycles or until `stop` is set (checked every
/// iteration: a relaxed load of a line no one writes until then). Whether
/// `stop` ended it comes back with what it measured. Nothing in the loop
/// allocates, formats or enters the kernel.
pub fn spin(
    mut gaps: Gaps,
    run_cycles: u64,
    stop: &AtomicBool,
    started: &AtomicU64,
) -> (Measured, bool) {
    let mut stopped = stop.load(Ordering::Relaxed);
    // SAFETY (every _rdtsc): RDTSC exists on every x86_64 CPU.
    let mut prev = unsafe { _rdtsc() };
    gaps.start(prev);
    started.store(prev, Ordering::Release);
    let end = prev.saturating_add(run_cycles);
    while !stopped {
        let now = unsafe { _rdtsc() };
        gaps.step(prev, now);
        prev = now;
        if now >= end {
            break;
        }
        stopped = stop.load(Ordering::Relaxed);
    }
    (gaps.finish(prev), stopped)
}

/// The JSON document of a run (machine-independent fields).
#[derive(Debug, Clone, serde::Serialize)]
pub struct Report {
    /// The CPU measured.
    pub cpu: usize,
    /// The duration asked for, s.
    pub duration_s: f64,
    /// The calibration.
    pub calibration: Calibration,
    /// The threshold applied to the delta between reads, ns.
    pub threshold_ns: f64,
    /// "rule: " and [`calibrate::rule_text`], or "--threshold-ns".
    pub threshold_source: String,
    /// One normal iteration, subtracted from each gap, ns.
    pub normal_iteration_ns: f64,
    /// Per second of wall time (the last one may be shorter).
    pub seconds: Vec<GapStats>,
    /// Over the run.
    pub total: GapStats,
    /// Gaps counted but not kept for the percentiles (the buffer was full).
    pub gaps_not_kept: u64,
    /// The signal that ended the run early, if one did.
    pub stopped_by: Option<String>,
    /// Whether `stop` ended the run before its duration.
    #[serde(skip)]
    pub stopped: bool,
}

impl Report {
    /// The human summary: the calibration, one line per second, the total.
    pub fn summary(&self) -> Vec<String> {
        let c = &self.calibration;
        let opt = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.0}"));
        let mut lines = vec![
            format!(
                "CPU {}: TSC {:.4} GHz{}; loop iteration p50 {:.1} ns, p99 {:.1} ns, p99.9 {:.1} ns \
                 ({} iterations in {} ms); threshold {:.0} ns ({})",
                self.cpu,
                c.tsc_ghz,
                match c.invariant_tsc {
                    Some(false) => " (not invariant: constant_tsc/nonstop_tsc missing)",
                    _ => "",
                },
                c.iteration_p50_ns,
                c.iteration_p99_ns,
                c.iteration_p999_ns,
                c.iterations,
                c.window_ns / 1_000_000,
                self.threshold_ns,
                self.threshold_source
            ),
            "second  wall_ms  stolen_ns  gaps  p50_ns  p99_ns  max_ns".into(),
        ];
        let row = |label: String, s: &GapStats| {
            format!(
                "{label:>6}  {:>7.1}  {:>9}  {:>4}  {:>6}  {:>6}  {:>6}",
                s.wall_ns as f64 / 1e6,
                s.stolen_ns,
                s.count,
                opt(s.p50_ns),
                opt(s.p99_ns),
                opt(s.max_ns)
            )
        };
        if c.interrupted_share > 0.01 {
            lines.push(format!(
                "{:.1}% of the calibration's iterations were above the threshold: it was \
                 interrupted often enough to raise the threshold; calibrate on a quiet CPU \
                 or give --threshold-ns",
                100.0 * c.interrupted_share
            ));
        }
        for (i, s) in self.seconds.iter().enumerate() {
            lines.push(row(i.to_string(), s));
        }
        lines.push(row("total".into(), &self.total));
        if self.gaps_not_kept > 0 {
            lines.push(format!(
                "{} gaps did not fit the buffer: counted in stolen, count and max, missing from p50/p99",
                self.gaps_not_kept
            ));
        }
        if let Some(signal) = &self.stopped_by {
            lines.push(format!("stopped early by {signal}"));
        }
        lines
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_run_on_an_allowed_cpu_is_consistent() {
        let Some(&cpu) = crate::cpu::allowed_cpus().first() else {
            return eprintln!("skipped: no CPU to pin to");
        };
        let setup = Setup {
            cpu,
            duration_s: 0.05,
            threshold_ns: None,
            calibration: Duration::from_millis(20),
        };
        let r = run(&setup, &AtomicBool::new(false)).unwrap();
        assert!(!r.stopped);
        assert!(r.threshold_ns >= r.calibration.iteration_p99_ns);
        assert_eq!(r.threshold_source, "rule: max(4 x iteration p99, 200 ns)");
        assert!(r.total.wall_ns >= 50_000_000, "{:?}", r.total);
        assert!(r.total.stolen_ns <= r.total.wall_ns);
        assert_eq!(
            r.seconds.iter().map(|s| s.count).sum::<u64>(),
            r.total.count
        );
        assert!(r.summary().len() > 2 + r.seconds.len());
    }

    #[test]
    fn a_stop_set_before_the_run_measures_nothing() {
        let Some(&cpu) = crate::cpu::allowed_cpus().first() else {
            return eprintln!("skipped: no CPU to pin to");
        };
        let setup = Setup {
            cpu,
            duration_s: 10.0,
            threshold_ns: Some(1000.0),
            calibration: Duration::from_millis(5),
        };
        let r = run(&setup, &AtomicBool::new(true)).unwrap();
        assert!(r.stopped);
        assert!(r.seconds.is_empty());
        assert_eq!((r.threshold_ns, r.total.count), (1000.0, 0));
        assert_eq!(r.threshold_source, "--threshold-ns");
    }
}
