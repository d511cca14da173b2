//! The self-report: schema rows (harness "sampler", path "sampler", op the
//! mechanism) for the sampler and for the null sampler beside it, and a
//! human summary on stderr.

use rbench::liveness::Liveness;
use rbench::schema_row::{row, RowMeta, RowSpec, RunInfo};
use rbench::summary::quantile_sorted;
use serde_json::Value;

use crate::ticker::TickerStats;
use crate::writer::PhaseStats;

/// One measured phase: the sampler, or the bare timer loop.
pub struct Phase {
    /// "perf", "null", ...: for the human summary.
    pub title: String,
    /// The row fields that do not depend on the metric.
    pub op: String,
    /// What was read ("msr/tsc/ @ 1000 Hz", "null: bare timerfd loop @ 1000 Hz").
    pub target: String,
    /// The sampling thread's CPU (the BPF timer's, for ebpf).
    pub cpu: Option<usize>,
    /// The counters' CPU.
    pub target_cpu: Option<usize>,
    /// Why a substitute was read.
    pub stand_in: Option<String>,
    /// The worst verdict of the counters read (None: stand-in, null sampler).
    pub liveness: Option<Liveness>,
    /// Wall time of the phase, ns.
    pub wall_ns: u64,
    /// What the writer counted.
    pub stats: PhaseStats,
    /// What the producer counted.
    pub producer: TickerStats,
}

impl Phase {
    /// Samples per second of wall time.
    pub fn rate_hz(&self) -> f64 {
        self.stats.samples as f64 * 1e9 / self.wall_ns.max(1) as f64
    }

    /// CPU µs per sample over the phase.
    pub fn cpu_us_per_sample(&self) -> f64 {
        self.stats.cpu_ns as f64 / self.stats.samples.max(1) as f64 / 1e3
    }

    /// One line for a person.
    pub fn summary(&self) -> String {
        let mut dev = self.stats.deviations_us.clone();
        dev.sort_by(f64::total_cmp);
        let q = |p: f64| {
            if dev.is_empty() {
                f64::NAN
            } else {
                quantile_sorted(&dev, p)
            }
        };
        let mut line = format!(
            "{}: {} samples in {:.2} s = {:.1} Hz; missed {} ticks; |interval - period| p50 {:.1} us, \
             p99 {:.1} us, max {:.1} us; CPU {:.2} us per sample",
            self.title, self.stats.samples, self.wall_ns as f64 / 1e9, self.rate_hz(),
            self.stats.missed, q(0.5), q(0.99), q(1.0), self.cpu_us_per_sample()
        );
        if self.producer.dropped > 0 {
            line += &format!(
                "; DROPPED {} samples (the writer fell behind)",
                self.producer.dropped
            );
        }
        if self.producer.stale > 0 {
            line += &format!(
                "; {} samples without a new tick, not written",
                self.producer.stale
            );
        }
        if self.producer.incomplete > 0 {
            line += &format!(
                "; {} samples not written: another package's CPU had not sampled yet",
                self.producer.incomplete
            );
        }
        if self.producer.read_errors > 0 {
            line += &format!(
                "; {} failed reads, not written (first: {})",
                self.producer.read_errors,
                self.producer.first_error.as_deref().unwrap_or("?")
            );
        }
        line
    }

    /// Its rows: rate_hz, jitter_us, missed_ticks and cpu_us_per_sample.
    pub fn rows(&self, run: &RunInfo) -> Vec<Value> {
        let spec = |metric: &'static str| RowSpec {
            harness: "sampler".into(),
            meta: RowMeta {
                path: "sampler".into(),
                op: self.op.clone(),
                target: Some(self.target.clone()),
                cpu: self.cpu,
                target_cpu: self.target_cpu,
                stand_in: self.stand_in.clone(),
                liveness: None,
                liveness_note: None,
            }
            .with_liveness(self.liveness.clone()),
            metric,
        };
        let w = &self.stats.windows;
        let why = self
            .producer
            .first_error
            .clone()
            .unwrap_or_else(|| "no sample was taken".to_string());
        let per_window = |f: fn(&crate::writer::Window) -> f64| w.iter().map(f).collect::<Vec<_>>();
        vec![
            row(
                run,
                &spec("rate_hz"),
                &per_window(|w| w.rate_hz),
                None,
                Some(&why),
            ),
            row(
                run,
                &spec("jitter_us"),
                &self.stats.deviations_us,
                None,
                Some(&why),
            ),
            row(
                run,
                &spec("missed_ticks"),
                &per_window(|w| w.missed as f64),
                None,
                Some(&why),
            ),
            row(
                run,
                &spec("cpu_us_per_sample"),
                &per_window(|w| w.cpu_us_per_sample),
                None,
                Some(&why),
            ),
        ]
    }
}
