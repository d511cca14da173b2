//! The writer thread: everything off the sampling thread's hot path. It
//! turns raw batches into CSV lines (unit conversion and wrap correction
//! happen here), and keeps the statistics of the self-report: every interval
//! between samples, and per window of WINDOW_NS the samples, missed ticks
//! and CPU time of the whole process.

use rbench::delta::CounterDiff;
use rbench::Domain;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::sync::{Arc, Barrier};

use crate::batch::WriterEnds;
use crate::cputime::process_threads_ns;

/// Length of a statistics window.
pub const WINDOW_NS: u64 = 500_000_000;

/// One window of the run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Window {
    /// Samples per second in the window.
    pub rate_hz: f64,
    /// Ticks missed in the window.
    pub missed: u64,
    /// CPU time of the process (plus any extra source) per sample, µs.
    pub cpu_us_per_sample: f64,
}

/// What the writer saw of one phase.
#[derive(Debug, Default)]
pub struct PhaseStats {
    /// Samples written.
    pub samples: u64,
    /// Ticks missed.
    pub missed: u64,
    /// |interval − period| between consecutive samples, µs.
    pub deviations_us: Vec<f64>,
    /// The windows.
    pub windows: Vec<Window>,
    /// CPU ns of the process (plus extra) from the first sample to the end.
    pub cpu_ns: u64,
    /// The first write error, if the output failed.
    pub io_error: Option<String>,
}

/// What the writer needs to know.
pub struct WriterSetup {
    /// The domains, in the order of the raw values.
    pub domains: Vec<Domain>,
    /// Per domain, whether its delta_j is energy (else the column stays
    /// empty: a stand-in, a frozen or no-unit counter).
    pub yields_energy: Vec<bool>,
    /// CSV output, or none.
    pub output: Option<BufWriter<File>>,
    /// The sampling period.
    pub period_ns: u64,
    /// CPU time spent outside this process's threads on its behalf (the BPF
    /// program's callback time), cumulative ns; None when there is none.
    pub extra_cpu_ns: Option<Box<dyn Fn() -> u64 + Send>>,
    /// Met by the producer and the writer once the last CPU reading is
    /// taken: a thread that has exited vanishes from /proc/self/task.
    pub done: Arc<Barrier>,
}

/// Per-window accounting.
struct WindowClock {
    start_ns: u64,
    samples: u64,
    missed: u64,
    cpu_at_start: u64,
}

fn cpu_now(extra: &Option<Box<dyn Fn() -> u64 + Send>>) -> u64 {
    process_threads_ns() + extra.as_ref().map_or(0, |f| f())
}

fn close_window(w: &WindowClock, length_ns: u64, cpu: u64) -> Window {
    let cpu_ns = cpu.saturating_sub(w.cpu_at_start);
    Window {
        rate_hz: w.samples as f64 * 1e9 / length_ns as f64,
        missed: w.missed,
        cpu_us_per_sample: if w.samples > 0 {
            cpu_ns as f64 / w.samples as f64 / 1e3
        } else {
            0.0
        },
    }
}

/// The CSV header.
pub const CSV_HEADER: &str = "time_ns,source,domain,raw,delta_j\n";

/// Runs until the producer hangs up; returns the statistics.
pub fn run(mut setup: WriterSetup, ends: WriterEnds) -> PhaseStats {
    let mut stats = PhaseStats::default();
    let mut diffs: Vec<CounterDiff> = setup
        .domains
        .iter()
        .map(|d| CounterDiff::with_max(d.max))
        .collect();
    let ndom = setup.domains.len();
    let mut prev_time: Option<u64> = None;
    let mut window: Option<WindowClock> = None;
    let mut cpu_first = 0;
    let mut line = String::with_capacity(128);
    if let Some(out) = setup.output.as_mut() {
        if let Err(e) = out.write_all(CSV_HEADER.as_bytes()) {
            stats.io_error = Some(e.to_string());
        }
    }

    while let Ok(mut batch) = ends.full.recv() {
        for i in 0..batch.len {
            let t = batch.times[i];
            // windows and intervals
            let w = window.get_or_insert_with(|| {
                cpu_first = cpu_now(&setup.extra_cpu_ns);
                WindowClock {
                    start_ns: t,
                    samples: 0,
                    missed: 0,
                    cpu_at_start: cpu_first,
                }
            });
            while t >= w.start_ns + WINDOW_NS {
                let cpu = cpu_now(&setup.extra_cpu_ns);
                stats.windows.push(close_window(w, WINDOW_NS, cpu));
                *w = WindowClock {
                    start_ns: w.start_ns + WINDOW_NS,
                    samples: 0,
                    missed: 0,
                    cpu_at_start: cpu,
                };
            }
            w.samples += 1;
            if let Some(p) = prev_time {
                let deviation = t.abs_diff(p).abs_diff(setup.period_ns);
                stats.deviations_us.push(deviation as f64 / 1e3);
            }
            prev_time = Some(t);
            stats.samples += 1;
            // CSV: one line per domain
            if let Some(out) = setup.output.as_mut().filter(|_| stats.io_error.is_none()) {
                let raws = &batch.values[i * ndom..(i + 1) * ndom];
                for (((domain, diff), &raw), &energy) in setup
                    .domains
                    .iter()
                    .zip(&mut diffs)
                    .zip(raws)
                    .zip(&setup.yields_energy)
                {
                    line.clear();
                    // None on the first sample: there is no difference yet
                    let delta = diff.update(raw).difference();
                    use std::fmt::Write as _;
                    let _ = write!(line, "{t},{},{},{raw},", domain.source, domain.name);
                    if let (Some(delta), true) = (delta, energy) {
                        let _ = write!(line, "{}", delta as f64 * domain.joules_per_unit);
                    }
                    line.push('\n');
                    if let Err(e) = out.write_all(line.as_bytes()) {
                        stats.io_error = Some(e.to_string());
                        break;
                    }
                }
            }
        }
        stats.missed += batch.missed;
        if let Some(w) = window.as_mut() {
            w.missed += batch.missed;
        }
        batch.len = 0;
        batch.missed = 0;
        let _ = ends.empty.send(batch); // the producer may be gone
    }

    // the producer hung up: account the last (partial) window, then let it exit
    let cpu_end = cpu_now(&setup.extra_cpu_ns);
    setup.done.wait();
    if let (Some(w), Some(last)) = (window.as_ref(), prev_time) {
        let length = last - w.start_ns + setup.period_ns;
        if length >= WINDOW_NS / 2 || stats.windows.is_empty() {
            stats.windows.push(close_window(w, length, cpu_end));
        }
        stats.cpu_ns = cpu_end.saturating_sub(cpu_first);
    }
    if let Some(out) = setup.output.as_mut() {
        if let Err(e) = out.flush() {
            stats.io_error.get_or_insert(e.to_string());
        }
    }
    stats
}
