//! The victim's side of an experiment: its calibration (once per CPU per
//! process, with no neighbour reading), and the victim loop on its own
//! thread, pinned, cutting windows on the grid its first read opens.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use serde::Serialize;

use super::schedule::Grid;
use crate::victim::calibrate::{self, Calibration};
use crate::victim::gaps::{GapStats, Gaps, Measured};
use crate::victim::{CALIBRATION_WINDOW, MAX_GAPS};

/// A victim CPU's calibration and what follows from it (the JSON's
/// `calibrations` values).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct CpuCalibration {
    /// As raplbench-victim reports it.
    #[serde(flatten)]
    pub calibration: Calibration,
    /// The gap threshold (the rule's), ns.
    pub threshold_ns: f64,
    /// One normal iteration (the calibrated median), subtracted from
    /// each gap, ns.
    pub normal_iteration_ns: f64,
}

/// The calibrations of this process, one per victim CPU.
#[derive(Debug, Default)]
pub struct Calibrations {
    /// By CPU.
    pub by_cpu: BTreeMap<usize, CpuCalibration>,
}

impl Calibrations {
    /// `cpu`'s calibration, made now if it is the first time (a thread
    /// pinned there, for [`CALIBRATION_WINDOW`]). A failure is not kept:
    /// the next call tries again.
    pub fn of(&mut self, cpu: usize) -> Result<CpuCalibration, String> {
        if let Some(c) = self.by_cpu.get(&cpu) {
            return Ok(*c);
        }
        let thread = std::thread::Builder::new()
            .name("victim-calibration".into())
            .spawn(move || -> Result<Calibration, String> {
                crate::cpu::pin_to_cpu(cpu).map_err(|e| e.to_string())?;
                Ok(calibrate::calibrate(CALIBRATION_WINDOW))
            })
            .map_err(|e| format!("cannot start the calibration thread: {e}"))?;
        let calibration: Calibration = thread
            .join()
            .map_err(|_| "the calibration thread panicked".to_string())??;
        let normal = calibration.cycles(calibration.iteration_p50_ns);
        let c = CpuCalibration {
            calibration,
            threshold_ns: calibration.rule_threshold_ns,
            normal_iteration_ns: normal as f64 * calibration.ns_per_cycle(),
        };
        self.by_cpu.insert(cpu, c);
        Ok(c)
    }
}

/// The victim loop running on its thread.
pub struct Victim {
    thread: JoinHandle<Result<(Measured, bool), String>>,
    stop: Arc<AtomicBool>,
    /// Its windows.
    pub grid: Grid,
    /// Its calibration.
    pub calibration: CpuCalibration,
}

impl Victim {
    /// Starts the victim loop on `cpu` with windows of `window_s`, for
    /// `windows` windows (None: until stopped; room for `max_windows`,
    /// past which the last one runs on); returns once its first read has
    /// opened the grid.
    pub fn start(
        cpu: usize,
        calibration: CpuCalibration,
        window_s: f64,
        windows: Option<usize>,
        max_windows: usize,
    ) -> Result<Victim, String> {
        let c = calibration.calibration;
        let window_cycles = ((window_s * c.tsc_ghz * 1e9).round() as u64).max(1);
        let run_cycles = windows.map_or(u64::MAX, |n| window_cycles.saturating_mul(n as u64));
        let stop = Arc::new(AtomicBool::new(false));
        let started = Arc::new(AtomicU64::new(0));
        let thread = {
            let (stop, started) = (stop.clone(), started.clone());
            let max = windows.map_or(max_windows, |n| n + 1);
            std::thread::Builder::new()
                .name("victim".into())
                .spawn(move || {
                    crate::cpu::pin_to_cpu(cpu)
                        .map_err(|_| format!("cannot pin the victim to CPU {cpu}"))?;
                    let gaps = Gaps::new(
                        c.cycles(calibration.threshold_ns),
                        c.cycles(c.iteration_p50_ns),
                        window_cycles,
                        MAX_GAPS,
                        max,
                    );
                    Ok(crate::victim::spin(gaps, run_cycles, &stop, &started))
                })
                .map_err(|e| format!("cannot start the victim thread: {e}"))?
        };
        let start_tsc = loop {
            let s = started.load(Ordering::Acquire);
            if s != 0 {
                break s;
            }
            if thread.is_finished() {
                return Err(match thread.join() {
                    Ok(Err(why)) => why,
                    _ => "the victim thread ended before it started".into(),
                });
            }
            std::thread::sleep(Duration::from_micros(200));
        };
        Ok(Victim {
            thread,
            stop,
            grid: Grid {
                start_tsc,
                window_cycles,
            },
            calibration,
        })
    }

    /// Ends the loop (within one iteration).
    pub fn stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
    }

    /// Waits for the loop to end (stop it first unless it runs for a
    /// number of windows) and gives each grid window's statistics (None
    /// where the victim has no clean window for it: see
    /// [`Grid::window_of`]), `windows` of them.
    pub fn join(self, windows: usize) -> Result<Vec<Option<GapStats>>, String> {
        let (measured, _) = self
            .thread
            .join()
            .map_err(|_| "the victim thread panicked".to_string())??;
        let (stats, _) = measured.stats(self.calibration.calibration.ns_per_cycle());
        let mut out = vec![None; windows];
        for (second, s) in measured.seconds.iter().zip(stats) {
            match self.grid.window_of(second.start_tsc, second.end_tsc) {
                Some(k) if k < windows => out[k] = Some(s),
                _ => {}
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_victim_cuts_windows_on_its_grid() {
        let Some(&cpu) = crate::cpu::allowed_cpus().first() else {
            return eprintln!("skipped: no CPU to pin to");
        };
        let mut cals = Calibrations::default();
        let cal = cals.of(cpu).unwrap();
        assert_eq!(cals.of(cpu).unwrap(), cal, "calibrated once");
        let v = Victim::start(cpu, cal, 0.02, Some(3), 0).unwrap();
        let grid = v.grid;
        let w = v.join(3).unwrap();
        assert!(grid.window_cycles > 0);
        // windows 0 and 1 closed on their deadlines; the last one ends the
        // run exactly at its deadline, so it closed too. They tile the grid:
        // a window closed late (the thread preempted across its deadline, as
        // on a loaded machine) leaves the next one shorter, not the sum
        let clean: Vec<_> = w
            .iter()
            .take(2)
            .map(|s| s.expect("a clean window"))
            .collect();
        for s in &clean {
            assert!(s.wall_ns > 0 && s.stolen_ns <= s.wall_ns, "{s:?}");
        }
        let tiled: u64 = clean.iter().map(|s| s.wall_ns).sum();
        assert!(tiled >= 38_000_000, "{clean:?}");
        let stopped = Victim::start(cpu, cal, 0.02, None, 100).unwrap();
        stopped.stop();
        assert_eq!(stopped.join(2).unwrap(), [None, None]);
    }
}
