//! The self-report: the windows of a --report run written raw (JSON), for
//! results/sampler.py to build the rows from, and a human summary on
//! stderr that needs no Python. The windows, their order and the rows are
//! in rbench/README.md, "The self-report".

use rbench::liveness::Liveness;
use rbench::summary::median;
use serde::Serialize;
use serde_json::{json, Value};

use crate::phase::Ran;
use crate::sample_times::Inside;

/// Which loop a window runs; its name in the report: "sampler", "null".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// The sampler: the mechanism's reads on every tick.
    Sampler,
    /// The null sampler: the same timer loop, nothing read.
    Null,
}

/// The windows of a report, in the order they run: (pair, kind). Pair i runs
/// the sampler first when i is even and the null loop first when i is odd
/// (AB BA AB ...), so a linear drift cancels over each two pairs; without
/// the null loop, `pairs` sampler windows.
pub fn schedule(pairs: usize, with_null: bool) -> Vec<(usize, Kind)> {
    (0..pairs)
        .flat_map(|i| match (with_null, i % 2) {
            (false, _) => vec![(i, Kind::Sampler)],
            (true, 0) => vec![(i, Kind::Sampler), (i, Kind::Null)],
            (true, _) => vec![(i, Kind::Null), (i, Kind::Sampler)],
        })
        .collect()
}

/// The length of each window, ns: `total_ns` (the sampler's time, as long
/// again for the null loop) split into `pairs` windows of each kind.
pub fn window_ns(total_ns: u64, pairs: usize) -> u64 {
    total_ns / pairs.max(1) as u64
}

/// One window of a run: which loop ran, in which pair, and what it measured.
#[derive(Debug, Clone)]
pub struct Window {
    pub kind: Kind,
    /// The pair it belongs to (0-based).
    pub pair: usize,
    /// What its phase measured.
    pub ran: Ran,
}

impl Window {
    fn inside(&self) -> Inside {
        self.ran
            .times
            .inside(self.ran.start_ns, self.ran.start_ns + self.ran.wall_ns)
    }

    /// Samples per second: the samples taken within the window over its
    /// wall time.
    pub fn rate_hz(&self) -> f64 {
        self.inside().samples as f64 * 1e9 / self.ran.wall_ns.max(1) as f64
    }

    /// CPU µs per sample taken since the window's clock started (the CPU
    /// time runs from then until the last sample is written, so it holds
    /// the sampling of those, and of no earlier one); None without one.
    pub fn cpu_us_per_sample(&self) -> Option<f64> {
        let n = self.ran.times.len() - self.ran.times.before(self.ran.start_ns);
        (n > 0).then(|| self.ran.cpu_ns as f64 / n as f64 / 1e3)
    }

    /// The median interval error within the window, µs (numpy's median,
    /// to 0.05%: sample_times.rs); None with fewer than two samples.
    pub fn jitter_us(&self) -> Option<f64> {
        self.inside().errors.quantile(0.5).map(|ns| ns / 1e3)
    }

    /// The window as the report holds it: what results/sampler.py builds
    /// a row's sample from, and what was lost.
    pub fn json(&self) -> Value {
        let inside = self.inside();
        let p = &self.ran.producer;
        json!({
            "kind": self.kind,
            "pair": self.pair,
            "wall_ns": self.ran.wall_ns,
            "samples": inside.samples,
            "samples_since_start": self.ran.times.len() - self.ran.times.before(self.ran.start_ns),
            "cpu_ns": self.ran.cpu_ns,
            "missed_ticks": self.ran.missed,
            "interval_error_p50_ns": inside.errors.quantile(0.5),
            "dropped": p.dropped,
            "read_errors": p.read_errors,
            "stale": p.stale,
            "incomplete": p.incomplete,
            "throttled": p.throttled,
            "wrap_gaps": self.ran.wrap_gaps,
            "first_error": p.first_error,
        })
    }
}

/// The sampler's and the null's window of each pair that ran both, in pair
/// order.
pub fn pairs(windows: &[Window]) -> Vec<(&Window, &Window)> {
    let find = |pair, kind| windows.iter().find(|w| w.pair == pair && w.kind == kind);
    let last = windows.iter().map(|w| w.pair + 1).max().unwrap_or(0);
    (0..last)
        .filter_map(|i| Some((find(i, Kind::Sampler)?, find(i, Kind::Null)?)))
        .collect()
}

/// Per pair, the sampler window's `f` minus its null window's; pairs where
/// either has none are left out.
pub fn differences(pairs: &[(&Window, &Window)], f: impl Fn(&Window) -> Option<f64>) -> Vec<f64> {
    pairs
        .iter()
        .filter_map(|(s, n)| Some(f(s)? - f(n)?))
        .collect()
}

/// What one loop reads, as its rows will say.
#[derive(Default)]
pub struct Subject {
    /// "perf (msr/tsc/)", "null (bare timerfd loop)": for the human summary.
    pub title: String,
    /// What it reads ("msr/tsc/"), or for the null sampler its kind ("bare
    /// timerfd loop").
    pub target: String,
    /// The sampling thread's CPU (the BPF timer's, for ebpf).
    pub cpu: Option<usize>,
    /// The counters' CPU.
    pub target_cpu: Option<usize>,
    /// Why a substitute was read.
    pub stand_in: Option<String>,
    /// The worst verdict of the counters read (None: stand-in, null sampler).
    pub liveness: Option<Liveness>,
}

impl Subject {
    /// The subject as the report holds it.
    pub fn json(&self) -> Value {
        json!({
            "target": self.target,
            "cpu": self.cpu,
            "target_cpu": self.target_cpu,
            "stand_in": self.stand_in,
            "liveness": self.liveness.as_ref().map(|l| l.verdict.as_str()),
            "liveness_note": self.liveness.as_ref().and_then(|l| l.note.clone()),
        })
    }

    /// One line for a person on the one window of a run without --report.
    pub fn summary(&self, w: &Window) -> String {
        let errors = w.ran.times.errors();
        let q = |p: f64| errors.quantile(p).map_or(f64::NAN, |ns| ns / 1e3);
        let max = (w.ran.times.max_error()).map_or(f64::NAN, |ns| ns as f64 / 1e3);
        let samples = w.ran.times.len();
        format!(
            "{}: {} samples in {:.2} s = {:.1} Hz; missed {} ticks; |interval - period| p50 {:.1} us, \
             p99 {:.1} us, max {:.1} us; CPU {:.2} us per sample{}",
            self.title, samples, w.ran.wall_ns as f64 / 1e9,
            samples as f64 * 1e9 / w.ran.wall_ns.max(1) as f64, w.ran.missed, q(0.5), q(0.99), max,
            w.cpu_us_per_sample().unwrap_or(0.0), problems(&[w])
        )
    }

    /// One line for a person on its windows of a --report run: medians over
    /// the windows.
    pub fn windows_summary(&self, windows: &[&Window]) -> String {
        let med = |f: fn(&Window) -> Option<f64>| {
            median(&windows.iter().filter_map(|w| f(w)).collect::<Vec<_>>()).unwrap_or(f64::NAN)
        };
        let wall: u64 = windows.iter().map(|w| w.ran.wall_ns).sum();
        format!(
            "{}: {}, {:.2} s in all: {} samples, missed {} ticks; per window (median): \
             {:.1} Hz, median |interval - period| {:.1} us, CPU {:.2} us per sample{}",
            self.title,
            counted(windows.len(), "window"),
            wall as f64 / 1e9,
            windows.iter().map(|w| w.ran.times.len()).sum::<u64>(),
            windows.iter().map(|w| w.ran.missed).sum::<u64>(),
            med(|w| Some(w.rate_hz())),
            med(Window::jitter_us),
            med(Window::cpu_us_per_sample),
            problems(windows)
        )
    }
}

/// "1 pair", "10 pairs".
fn counted(n: usize, what: &str) -> String {
    format!("{n} {what}{}", if n == 1 { "" } else { "s" })
}

/// "; DROPPED 3 samples ..." for what went wrong in the windows, or "".
fn problems(windows: &[&Window]) -> String {
    let sum = |count: fn(&Window) -> u64| windows.iter().map(|w| count(w)).sum::<u64>();
    let mut line = String::new();
    let dropped = sum(|w| w.ran.producer.dropped);
    if dropped > 0 {
        line += &format!("; DROPPED {dropped} samples (the writer or the ring buffer fell behind)");
    }
    let stale = sum(|w| w.ran.producer.stale);
    if stale > 0 {
        line += &format!("; {stale} samples without a new tick, not written");
    }
    let incomplete = sum(|w| w.ran.producer.incomplete);
    if incomplete > 0 {
        line += &format!(
            "; {incomplete} samples not written: another package's CPU had not sampled yet"
        );
    }
    let throttled = sum(|w| w.ran.producer.throttled);
    if throttled > 0 {
        line += &format!("; the kernel throttled the sampling leader {throttled} times");
    }
    let read_errors = sum(|w| w.ran.producer.read_errors);
    if read_errors > 0 {
        let first = windows
            .iter()
            .find_map(|w| w.ran.producer.first_error.as_deref());
        line += &format!(
            "; {read_errors} failed reads, not written (first: {})",
            first.unwrap_or("?")
        );
    }
    let wrap_gaps = sum(|w| w.ran.wrap_gaps);
    if wrap_gaps > 0 {
        line += &format!(
            "; {wrap_gaps} intervals long enough for a counter to wrap twice unseen (their \
             delta_j may be short by a whole range)"
        );
    }
    line
}

/// The report of a --report run, one line of JSON (results/sampler.py
/// reads it; rbench/README.md, "The self-report", lists its keys).
pub fn document(
    mechanism: &str,
    frequency_hz: u32,
    loops: [&Subject; 2],
    trigger: Option<&str>,
    windows: &[Window],
) -> String {
    let [sampler, bare] = loops;
    let doc = json!({
        "tool": "raplbench-sample",
        "mechanism": mechanism,
        "frequency_hz": frequency_hz,
        "trigger": trigger,
        "sampler": sampler.json(),
        "null": bare.json(),
        "windows": windows.iter().map(Window::json).collect::<Vec<_>>(),
    });
    format!("{doc}\n")
}

/// "+2.31 us per sample (median; pairs from -0.40 to +4.10)" for per-pair
/// differences; None without any.
fn spread(values: &[f64], unit: &str, digits: usize) -> Option<String> {
    let m = median(values)?;
    let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    Some(format!(
        "{m:+.digits$} {unit} (median; pairs from {lo:+.digits$} to {hi:+.digits$})"
    ))
}

/// The closing lines for a person on the sampler above the null loop: CPU
/// per sample and rate, each pair's sampler window minus its null window.
pub fn above_null_summary(op: &str, pairs: &[(&Window, &Window)]) -> Vec<String> {
    let k = counted(pairs.len(), "pair");
    let cpu = spread(
        &differences(pairs, Window::cpu_us_per_sample),
        "us per sample",
        2,
    );
    let rate = spread(&differences(pairs, |w| Some(w.rate_hz())), "Hz", 1);
    match (cpu, rate) {
        (Some(cpu), Some(rate)) => vec![
            format!("{op} above null, {k}: CPU {cpu}"),
            format!("{op} above null, {k}: rate {rate}"),
        ],
        _ => vec![format!(
            "{op} above null: no pair of a sampler and a null window completed"
        )],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sample_times::SampleTimes;
    use crate::ticker::TickerStats;

    /// A window of `kind` in `pair`: `n` samples 1 ms apart from its start,
    /// `cpu_us` µs of CPU per sample.
    fn window(kind: Kind, pair: usize, n: u64, cpu_us: f64) -> Window {
        let start_ns = 1_000_000_000 * (pair as u64 + 1);
        let ran = Ran {
            start_ns,
            wall_ns: 100_000_000,
            cpu_ns: (cpu_us * 1e3 * n as f64) as u64,
            code: 0,
            producer: TickerStats::default(),
            times: SampleTimes::of(1_000_000, (1..=n).map(|i| start_ns + i * 1_000_000)),
            missed: 0,
            wrap_gaps: 0,
            trigger: None,
        };
        Window { kind, pair, ran }
    }

    #[test]
    fn the_order_within_a_pair_alternates() {
        use Kind::{Null as N, Sampler as S};
        assert_eq!(
            schedule(4, true),
            [
                (0, S),
                (0, N),
                (1, N),
                (1, S),
                (2, S),
                (2, N),
                (3, N),
                (3, S)
            ]
        );
        assert_eq!(schedule(1, true), [(0, S), (0, N)]);
        assert_eq!(schedule(3, false), [(0, S), (1, S), (2, S)]);
        // a linear drift cancels: over two pairs each kind's mean position
        // in time is the same
        let order = schedule(10, true);
        let mean = |k| {
            let at: Vec<usize> = (0..order.len()).filter(|&i| order[i].1 == k).collect();
            at.iter().sum::<usize>() as f64 / at.len() as f64
        };
        assert_eq!(mean(S), mean(N));
    }

    #[test]
    fn the_duration_is_split_into_equal_windows() {
        assert_eq!(window_ns(10_000_000_000, 10), 1_000_000_000);
        assert_eq!(window_ns(1_000_000_000, 10), 100_000_000);
        assert_eq!(window_ns(400_000_000, 4), 100_000_000);
        assert_eq!(window_ns(1_000_000_000, 3), 333_333_333);
        assert_eq!(window_ns(5, 1), 5);
    }

    #[test]
    fn only_samples_within_the_window_count_for_the_rate_and_jitter() {
        let mut w = window(Kind::Sampler, 0, 100, 1.0);
        assert_eq!(w.rate_hz(), 1000.0);
        // a sample before the clock started and one after it was stopped
        let (start, end) = (w.ran.start_ns, w.ran.start_ns + w.ran.wall_ns);
        let times = std::iter::once(start - 10)
            .chain((1..=100).map(|i| start + i * 1_000_000))
            .chain(std::iter::once(end + 700_000));
        w.ran.times = SampleTimes::of(1_000_000, times);
        assert_eq!(w.rate_hz(), 1000.0);
        assert_eq!(w.jitter_us(), Some(0.0));
        // CPU per sample: the CPU time runs from the start until the last
        // sample is written, so it divides by every sample taken since
        assert_eq!(w.cpu_us_per_sample(), Some(100e3 / 101.0 / 1e3));
    }

    #[test]
    fn a_sampler_that_stopped_half_way_shows_half_the_rate() {
        // the rate is over the window's wall time, from its start until it
        // was told to stop, not until the last sample: 50 samples in the
        // first half of a 100 ms window at 1 kHz are 500 Hz
        let w = window(Kind::Sampler, 0, 50, 1.0);
        assert_eq!(w.ran.wall_ns, 100_000_000);
        assert_eq!(w.rate_hz(), 500.0);
    }

    #[test]
    fn jitter_is_the_median_interval_error_of_the_window() {
        let period = 1_000_000;
        // intervals 1000, 1004, 990, 1001, 1000 µs: errors 0, 4, 10, 1, 0
        let times = [0, 1_000_000, 2_004_000, 2_994_000, 3_995_000, 4_995_000];
        let mut w = window(Kind::Null, 0, 0, 0.0);
        let at = |n: usize| {
            times[..n]
                .iter()
                .map(|t| t + w.ran.start_ns)
                .collect::<Vec<_>>()
        };
        w.ran.times = SampleTimes::of(period, at(6));
        assert_eq!(w.jitter_us(), Some(1.0));
        // errors 0, 4, 10, 1: 2.5, to the histogram's 0.05% (sample_times.rs)
        w.ran.times = SampleTimes::of(period, at(5));
        let jitter = w.jitter_us().unwrap();
        assert!((jitter - 2.5).abs() <= 2.5 / 2048.0, "{jitter}");
        w.ran.times = SampleTimes::of(period, at(1));
        assert_eq!(w.jitter_us(), None); // no interval
        w.ran.times = SampleTimes::new(period);
        assert_eq!((w.rate_hz(), w.cpu_us_per_sample()), (0.0, None));
    }

    #[test]
    fn each_pair_gives_the_sampler_minus_its_own_null_window() {
        let windows: Vec<Window> = schedule(3, true)
            .into_iter()
            .map(|(pair, kind)| match kind {
                Kind::Sampler => window(kind, pair, 100, 10.0 + pair as f64),
                Kind::Null => window(kind, pair, 98, 8.0),
            })
            .collect();
        let p = pairs(&windows);
        assert_eq!(p.len(), 3);
        assert!(p
            .iter()
            .all(|(s, n)| s.kind == Kind::Sampler && n.kind == Kind::Null && s.pair == n.pair));
        let cpu = differences(&p, Window::cpu_us_per_sample);
        assert_eq!(cpu.len(), 3);
        for (d, want) in cpu.iter().zip([2.0, 3.0, 4.0]) {
            assert!((d - want).abs() < 1e-9, "{cpu:?}");
        }
        assert_eq!(differences(&p, |w| Some(w.rate_hz())), [20.0, 20.0, 20.0]);
        // an incomplete pair (stopped by a signal) is left out, and so is a
        // pair where one window has no value
        let mut cut = windows[..3].to_vec(); // pair 0, then pair 1's null only
        cut[1].ran.times = SampleTimes::new(1_000_000);
        let p = pairs(&cut);
        assert_eq!(p.len(), 1);
        assert_eq!(differences(&p, Window::cpu_us_per_sample), [] as [f64; 0]);
        assert_eq!(differences(&p, |w| Some(w.rate_hz())), [1000.0]);
        assert!(pairs(&[]).is_empty());
    }

    #[test]
    fn the_summary_names_losses_and_gaps_a_wrap_could_hide_in() {
        let mut w = window(Kind::Sampler, 0, 100, 1.0);
        assert_eq!(problems(&[&w]), "");
        w.ran.wrap_gaps = 2;
        w.ran.producer.dropped = 3;
        let said = problems(&[&w]);
        assert!(said.contains("DROPPED 3 samples"), "{said}");
        assert!(
            said.contains("2 intervals long enough for a counter to wrap twice unseen"),
            "{said}"
        );
    }

    #[test]
    fn the_summary_gives_each_pairs_difference_its_median_and_range() {
        let windows: Vec<Window> = schedule(10, true)
            .into_iter()
            .map(|(pair, kind)| match kind {
                Kind::Sampler => window(kind, pair, 100, 10.0 + pair as f64 * 0.1),
                Kind::Null => window(kind, pair, 100, 8.0),
            })
            .collect();
        let lines = above_null_summary("perf", &pairs(&windows));
        assert_eq!(
            lines,
            [
                "perf above null, 10 pairs: CPU +2.45 us per sample (median; pairs from +2.00 \
                 to +2.90)",
                "perf above null, 10 pairs: rate +0.0 Hz (median; pairs from +0.0 to +0.0)"
            ]
        );
        assert!(above_null_summary("msr", &[])[0].contains("no pair"));
    }

    #[test]
    fn the_report_holds_every_window_raw() {
        let windows = vec![
            window(Kind::Sampler, 0, 100, 2.0),
            window(Kind::Null, 0, 50, 1.0),
        ];
        let subject = |target: &str| Subject {
            title: String::new(),
            target: target.into(),
            cpu: Some(1),
            target_cpu: None,
            stand_in: None,
            liveness: None,
        };
        let (s, n) = (subject("msr/tsc/"), subject("bare timerfd loop"));
        let text = document("perf", 1000, [&s, &n], None, &windows);
        assert!(text.ends_with('\n') && text.lines().count() == 1, "{text}");
        let doc: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(
            (&doc["mechanism"], &doc["frequency_hz"]),
            (&json!("perf"), &json!(1000))
        );
        assert_eq!(doc["sampler"]["target"], "msr/tsc/");
        assert_eq!(doc["null"]["target"], "bare timerfd loop");
        assert!(doc["sampler"]["liveness"].is_null());
        let w = &doc["windows"];
        assert_eq!(
            (&w[0]["kind"], &w[1]["kind"]),
            (&json!("sampler"), &json!("null"))
        );
        assert_eq!(w[0]["samples"], 100);
        assert_eq!(w[0]["samples_since_start"], 100);
        assert_eq!(w[0]["cpu_ns"], 200_000);
        assert_eq!(w[0]["wall_ns"], 100_000_000);
        assert_eq!(w[0]["interval_error_p50_ns"], 0.0);
        assert_eq!(w[1]["samples"], 50);
    }
}
