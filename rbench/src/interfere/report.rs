//! The JSON document of raplbench-interfere (the contract with
//! results/victim.py) and the line per experiment on stderr.

use std::collections::BTreeMap;

use serde::Serialize;

use super::placement::Placement;
use super::reader::Count;
use super::schedule::{Order, PairAt};
use super::victim_side::CpuCalibration;
use crate::row_meta::{RowMeta, Status};
use crate::summary::median;
use crate::victim::calibrate::rule_text;
use crate::victim::gaps::GapStats;

/// The document.
#[derive(Debug, Clone, Serialize)]
pub struct Document {
    /// "raplbench-interfere".
    pub tool: &'static str,
    /// One window, s.
    pub window_s: f64,
    /// Pairs of windows asked for per experiment.
    pub pairs: usize,
    /// The victim's gap threshold rule.
    pub threshold_rule: String,
    /// Per victim CPU (its number as the key).
    pub calibrations: BTreeMap<String, CpuCalibration>,
    /// In the order they ran.
    pub experiments: Vec<Experiment>,
    /// The signal that ended the run early, or None.
    pub stopped_by: Option<String>,
}

impl Document {
    /// An empty document.
    pub fn new(window_s: f64, pairs: usize) -> Document {
        Document {
            tool: "raplbench-interfere",
            window_s,
            pairs,
            threshold_rule: rule_text(),
            calibrations: BTreeMap::new(),
            experiments: Vec::new(),
            stopped_by: None,
        }
    }
}

/// Who reads.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Neighbour {
    /// A row of the Criterion plan, as its meta.
    Route(RowMeta),
    /// A raplbench-sample child process.
    Sampler(SamplerNeighbour),
}

/// A sampler neighbour.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SamplerNeighbour {
    /// Its --mechanism.
    pub mechanism: String,
    /// The CPU its sampling thread is pinned to (from its banner); None
    /// for the in-kernel mechanisms (the registry's) or before it sampled.
    pub cpu: Option<usize>,
    /// Its command line (the CSV path of each pair stands as `<tmp csv>`).
    pub sampler_args: Vec<String>,
    /// Its target as its own rows have it, `"<label> @ <rate> Hz"` (from
    /// its banner), or None if it never sampled.
    pub target: Option<String>,
}

/// One neighbour at one rate against one victim CPU.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Experiment {
    /// Who reads.
    pub neighbour: Neighbour,
    /// Reads (or samples) per second asked for; None: flat out.
    pub rate_hz: Option<u32>,
    /// The victim's CPU (None where no placement was possible).
    pub victim_cpu: Option<usize>,
    /// Where the victim is relative to the read.
    pub placement: Option<Placement>,
    /// ok, unavailable or error.
    pub status: Status,
    /// Why it is not ok.
    pub reason: Option<String>,
    /// The pairs of windows measured.
    pub pairs: Vec<Pair>,
}

impl Experiment {
    /// The experiment of `neighbour` at `rate_hz` with the victim where
    /// `victim` says (None where no placement was possible): ok with its
    /// pairs, or not run with the reason.
    pub fn new(
        neighbour: Neighbour,
        rate_hz: Option<u32>,
        victim: Option<(usize, Placement)>,
        pairs: Result<Vec<Pair>, (Status, String)>,
    ) -> Experiment {
        let (status, reason, pairs) = match pairs {
            Ok(pairs) => (Status::Ok, None, pairs),
            Err((status, reason)) => (status, Some(reason), Vec::new()),
        };
        Experiment {
            neighbour,
            rate_hz,
            victim_cpu: victim.map(|v| v.0),
            placement: victim.map(|v| v.1),
            status,
            reason,
            pairs,
        }
    }
}

/// A pair of windows.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Pair {
    /// Which came first.
    pub order: Order,
    /// The window without the neighbour.
    pub off: GapStats,
    /// The window with it.
    pub on: OnWindow,
}

/// The window with the neighbour reading.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct OnWindow {
    /// The victim's statistics.
    #[serde(flatten)]
    pub stats: GapStats,
    /// Reads issued (sampler: ticks taken) in the window.
    pub reads: u64,
    /// Deadlines missed (at a rate); 0 flat out.
    pub missed: u64,
}

impl Pair {
    /// The time the reads stole from the victim per read, ns: the on
    /// window's stolen time less the off window's at the same rate of
    /// wall time, over the reads. None without reads or wall time.
    pub fn stolen_ns_per_read(&self) -> Option<f64> {
        let (on, off) = (&self.on.stats, &self.off);
        if self.on.reads == 0 || on.wall_ns == 0 || off.wall_ns == 0 {
            return None;
        }
        let baseline = off.stolen_ns as f64 / off.wall_ns as f64 * on.wall_ns as f64;
        Some((on.stolen_ns as f64 - baseline) / self.on.reads as f64)
    }
}

/// The pairs whose two windows the victim measured cleanly, from its
/// windows' statistics and the reader's counts, by grid window.
pub fn pairs(at: &[PairAt], victim: &[Option<GapStats>], counts: &[Count]) -> Vec<Pair> {
    at.iter()
        .filter_map(|p| {
            let off = (*victim.get(p.off)?)?;
            let on = (*victim.get(p.on)?)?;
            let count = counts.get(p.on).copied().unwrap_or_default();
            Some(Pair {
                order: p.order,
                off,
                on: OnWindow {
                    stats: on,
                    reads: count.reads,
                    missed: count.missed,
                },
            })
        })
        .collect()
}

/// The experiment's line on stderr: the medians over its pairs, or why it
/// did not run.
pub fn summary_line(e: &Experiment) -> String {
    let rate = (e.rate_hz).map_or(" @ flat out".into(), |r| format!(" @ {r} Hz"));
    let (who, unit) = match &e.neighbour {
        Neighbour::Route(m) => {
            let target = m.target.as_deref().unwrap_or("(no target)");
            (format!("{}/{} {target}{rate}", m.path, m.op), "reads")
        }
        // its target names its rate
        Neighbour::Sampler(s) => match &s.target {
            Some(t) => (format!("sampler {} ({t})", s.mechanism), "ticks"),
            None => (format!("sampler {}{rate}", s.mechanism), "ticks"),
        },
    };
    let victim = e
        .victim_cpu
        .map_or("no victim CPU".into(), |v| format!("victim CPU {v}"));
    let head = format!("{who}, {victim}");
    if let Some(reason) = &e.reason {
        let status = serde_json::to_value(e.status).unwrap_or_default();
        return format!("{head}: {}: {reason}", status.as_str().unwrap_or_default());
    }
    let per_s = |s: &GapStats| s.stolen_ns as f64 / s.wall_ns.max(1) as f64 * 1e3; // ms per s
    let med = |f: &dyn Fn(&Pair) -> Option<f64>| {
        median(&e.pairs.iter().filter_map(f).collect::<Vec<_>>())
    };
    let reads = med(&|p| Some(p.on.reads as f64 / (p.on.stats.wall_ns.max(1) as f64 / 1e9)));
    let on = med(&|p| Some(per_s(&p.on.stats)));
    let off = med(&|p| Some(per_s(&p.off)));
    let per_read = med(&Pair::stolen_ns_per_read);
    match (reads, on, off) {
        (Some(r), Some(on), Some(off)) => format!(
            "{head}: {r:.0} {unit}/s, stolen {on:.1} ms/s vs {off:.1} ms/s baseline: {} per read",
            per_read.map_or("-".into(), |ns| format!("{:.2} us", ns / 1e3))
        ),
        _ => format!("{head}: no pair measured"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(wall_ns: u64, stolen_ns: u64, count: u64) -> GapStats {
        GapStats {
            wall_ns,
            stolen_ns,
            count,
            p50_ns: (count > 0).then_some(500.0),
            p99_ns: (count > 0).then_some(900.0),
            max_ns: (count > 0).then_some(1000.0),
            not_kept: 0,
        }
    }

    fn meta() -> RowMeta {
        RowMeta {
            path: "msr-dev".into(),
            op: "pread".into(),
            target: Some("cpuid:0x0".into()),
            cpu: Some(1),
            target_cpu: Some(0),
            stand_in: Some("/dev/cpu/0/msr missing".into()),
            liveness: None,
            liveness_note: None,
        }
    }

    #[test]
    fn stolen_per_read_nets_out_the_baseline() {
        let p = Pair {
            order: Order::OffOn,
            off: stats(1_000_000_000, 10_000_000, 100),
            on: OnWindow {
                stats: stats(500_000_000, 105_000_000, 20_000),
                reads: 20_000,
                missed: 0,
            },
        };
        // 105 ms stolen in 0.5 s, 5 ms of it the baseline's: 100 ms / 20000
        assert_eq!(p.stolen_ns_per_read(), Some(5000.0));
        let idle = Pair {
            on: OnWindow { reads: 0, ..p.on },
            ..p
        };
        assert_eq!(idle.stolen_ns_per_read(), None);
    }

    #[test]
    fn pairs_keep_only_cleanly_measured_windows() {
        let at = [
            PairAt {
                order: Order::OffOn,
                off: 1,
                on: 2,
            },
            PairAt {
                order: Order::OnOff,
                off: 4,
                on: 3,
            },
        ];
        let w = stats(250_000_000, 1_000, 1);
        let victim = [None, Some(w), Some(w), Some(w), None];
        let counts = [
            Count::default(),
            Count::default(),
            Count {
                reads: 7,
                missed: 1,
            },
            Count::default(),
            Count::default(),
        ];
        let p = pairs(&at, &victim, &counts);
        assert_eq!(p.len(), 1);
        assert_eq!((p[0].on.reads, p[0].on.missed), (7, 1));
    }

    #[test]
    fn the_document_has_the_contract_fields() {
        let mut doc = Document::new(0.25, 1);
        let pair = Pair {
            order: Order::OnOff,
            off: stats(250_000_000, 2_000_000, 10),
            on: OnWindow {
                stats: stats(250_000_000, 52_000_000, 10_000),
                reads: 10_000,
                missed: 0,
            },
        };
        doc.experiments.push(Experiment::new(
            Neighbour::Route(meta()),
            None,
            Some((0, Placement::VictimIsTarget)),
            Ok(vec![pair]),
        ));
        doc.experiments.push(Experiment::new(
            Neighbour::Sampler(SamplerNeighbour {
                mechanism: "ebpf".into(),
                cpu: None,
                sampler_args: vec!["--mechanism".into(), "ebpf".into()],
                target: None,
            }),
            Some(1000),
            Some((1, Placement::VictimElsewhere)),
            Err((Status::Unavailable, "no BPF".into())),
        ));
        let v = serde_json::to_value(&doc).unwrap();
        let keys =
            |o: &serde_json::Value| o.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
        assert_eq!(
            keys(&v),
            [
                "tool",
                "window_s",
                "pairs",
                "threshold_rule",
                "calibrations",
                "experiments",
                "stopped_by"
            ]
        );
        assert_eq!(v["threshold_rule"], "max(4 x iteration p99, 200 ns)");
        let e = &v["experiments"][0];
        assert_eq!(
            keys(e),
            [
                "neighbour",
                "rate_hz",
                "victim_cpu",
                "placement",
                "status",
                "reason",
                "pairs"
            ]
        );
        assert_eq!(
            keys(&e["neighbour"]),
            [
                "kind",
                "path",
                "op",
                "target",
                "cpu",
                "target_cpu",
                "stand_in",
                "liveness",
                "liveness_note"
            ]
        );
        assert_eq!(e["neighbour"]["kind"], "route");
        assert_eq!(
            (&e["placement"], &e["status"]),
            (&"victim-is-target".into(), &"ok".into())
        );
        assert!(e["rate_hz"].is_null());
        let p = &e["pairs"][0];
        assert_eq!(p["order"], "on-off");
        assert_eq!(
            keys(&p["off"]),
            [
                "wall_ns",
                "stolen_ns",
                "count",
                "p50_ns",
                "p99_ns",
                "max_ns",
                "not_kept"
            ]
        );
        assert_eq!(
            keys(&p["on"]),
            [
                "wall_ns",
                "stolen_ns",
                "count",
                "p50_ns",
                "p99_ns",
                "max_ns",
                "not_kept",
                "reads",
                "missed"
            ]
        );
        let s = &v["experiments"][1];
        assert_eq!(s["neighbour"]["kind"], "sampler");
        assert_eq!(
            keys(&s["neighbour"]),
            ["kind", "mechanism", "cpu", "sampler_args", "target"]
        );
        assert_eq!(
            (&s["status"], &s["reason"], &s["rate_hz"]),
            (&"unavailable".into(), &"no BPF".into(), &1000.into())
        );
        let line = summary_line(&doc.experiments[0]);
        assert_eq!(
            line,
            "msr-dev/pread cpuid:0x0 @ flat out, victim CPU 0: 40000 reads/s, stolen 208.0 ms/s \
             vs 8.0 ms/s baseline: 5.00 us per read"
        );
        assert_eq!(
            summary_line(&doc.experiments[1]),
            "sampler ebpf @ 1000 Hz, victim CPU 1: unavailable: no BPF"
        );
    }
}
