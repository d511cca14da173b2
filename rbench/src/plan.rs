//! What the harnesses measure on this machine: for every access path, its
//! rows (op, target, placements, stand_in words, liveness), each with what
//! to open, or the reason it cannot run. This is the one discovery of the
//! suite: both harnesses read it as JSON ([`Plan::to_json`], written by
//! the `raplbench-plan` binary) and open what each row names (the Criterion
//! harness through [`crate::paths::reads_of`]); raplbench-interfere runs
//! it in-process.
//!
//! Each path plans its own rows ([`crate::paths`]) on a [`Machine`]; a
//! runnable [`Planned`] row carries what it [`Reads`], which opens into the
//! [`Reader`] that is timed.

use std::cell::OnceCell;
use std::fmt;
use std::time::Duration;

use serde_json::{json, Value};

use crate::cpu::{Cpus, Placement};
use crate::discovery::{perf_counters, Counters};
use crate::hint::do_not_optimize;
use crate::liveness::{Liveness, LIVENESS_WINDOW};
use crate::roots::Roots;
use crate::row_meta::RowMeta;
use crate::target_load::{OnTarget, RunStates, TargetState};
use crate::{CounterSource, Error};

/// The version of the plan's JSON ([`Plan::to_json`]).
pub const PLAN_VERSION: u32 = 1;

/// One operation of a row, ready to be timed.
pub trait Reader {
    /// One operation (one timed iteration).
    fn read(&mut self) -> Result<(), Error>;

    /// `n` operations in a row, stopping at the first that fails: the
    /// timed loop. Called through the trait object once per sample, it
    /// calls [`Reader::read`] statically, so no indirect call is timed.
    fn read_n(&mut self, n: u64) -> Result<(), Error> {
        for _ in 0..n {
            self.read()?;
        }
        Ok(())
    }

    /// Once the measurement ended: why its reads were no data (the row is
    /// then an error, not a figure), or None.
    fn no_data(&mut self) -> Option<String> {
        None
    }
}

/// What a runnable row reads, opened lazily: the benchmark pins its thread
/// to the row's CPU first. `Any`, so that the crate's tests can see what a
/// row reads ([`Planned::reads_as`]).
pub trait Reads: fmt::Debug + std::any::Any {
    /// Opens it (an error makes the row unavailable, with the reason).
    fn open(&self) -> Result<Box<dyn Reader + '_>, Error>;

    /// What to open, as the plan's JSON says it to ubench (the row's
    /// "open"): `{"file": .., "reopen": ..}`, `{"device": .., "offset": ..,
    /// "bytes": ..}`, `{"perf": [EVENT, ..], "cpu": .., "group": ..}`,
    /// `{"bpf": {..}, "cpu": .., "via": ..}` or `{"insn": ..}`.
    fn spec(&self) -> Value;

    /// What one read from another CPU makes the target CPU do, and so
    /// whether the target's state is part of a cross-CPU row (issue 34).
    fn on_target(&self) -> OnTarget;
}

/// What a row rbench does not time opens, for the harness that does (the
/// uinsn instructions, the BPF program's tick rate).
#[derive(Debug, Clone, PartialEq)]
pub struct ForOthers(pub Value);

impl Reads for ForOthers {
    fn open(&self) -> Result<Box<dyn Reader + '_>, Error> {
        Err(Error::Unavailable(format!(
            "rbench does not time {}",
            self.0
        )))
    }

    fn spec(&self) -> Value {
        self.0.clone()
    }

    /// An instruction runs on its own CPU; the tick rate is the BPF
    /// program's on the CPU it counts.
    fn on_target(&self) -> OnTarget {
        OnTarget::Uncontrolled
    }
}

/// A [`Reader`] of a [`CounterSource`]: one read of every domain per
/// operation, as the sampler reads.
pub struct SourceReader<S> {
    /// The open source.
    source: S,
    /// Its values, one per domain.
    out: Vec<u64>,
}

impl<S: CounterSource + 'static> SourceReader<S> {
    /// Reads `source`, boxed as a [`Reader`].
    pub fn boxed(source: S) -> Box<dyn Reader> {
        let out = vec![0u64; source.domains().len()];
        Box::new(SourceReader { source, out })
    }
}

impl<S: CounterSource> Reader for SourceReader<S> {
    #[inline(always)] // into read_n, the timed loop
    fn read(&mut self) -> Result<(), Error> {
        let result = self.source.read(&mut self.out);
        do_not_optimize(&self.out[..]);
        result
    }
}

/// One target state a row is timed in (issue 34): what the target CPU is
/// doing (`state`, the row's `target_state`), whether a read runs code there
/// (`ipi`), and the load the harness starts there for it (`load`: the same
/// state, or None where the suite's own program holds it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timed {
    /// The target's state; None for a row without one.
    pub state: Option<TargetState>,
    /// Whether a read runs code on the target; None for a same-CPU row.
    pub ipi: Option<bool>,
    /// The load the harness starts on the target CPU; None: none.
    pub load: Option<TargetState>,
}

/// One row of the plan: a benchmark to run, or why it cannot.
#[derive(Debug)]
pub struct Planned {
    /// The row's place in the results schema.
    pub meta: RowMeta,
    /// What one figure of the row is: "latency" in "ns", or "rate_hz" in "Hz".
    pub metric: (&'static str, &'static str),
    /// The harnesses that time it: its path's `x-harnesses` in the registry.
    pub harnesses: Vec<String>,
    /// What to read, or the reason the row is unavailable.
    pub reads: Result<Box<dyn Reads>, String>,
}

impl Planned {
    /// A row to measure.
    pub fn run(meta: RowMeta, reads: impl Reads + 'static) -> Planned {
        Planned::new(meta, Ok(Box::new(reads)))
    }

    /// A row to measure, unless there is a reason it cannot run (`why`).
    pub fn run_unless(
        meta: RowMeta,
        why: Option<impl Into<String>>,
        reads: impl Reads + 'static,
    ) -> Planned {
        match why {
            Some(reason) => Planned::unavailable(meta, reason),
            None => Planned::run(meta, reads),
        }
    }

    /// A row that cannot run here, with a reason a person can act on.
    pub fn unavailable(meta: RowMeta, reason: impl Into<String>) -> Planned {
        Planned::new(meta, Err(reason.into()))
    }

    fn new(meta: RowMeta, reads: Result<Box<dyn Reads>, String>) -> Planned {
        Planned {
            harnesses: harnesses_of(&meta.path),
            meta,
            metric: ("latency", "ns"),
            reads,
        }
    }

    /// The row with another metric and the harnesses that time it (a row
    /// its path's other harnesses do not owe).
    pub fn only_for(mut self, harnesses: &[&str], metric: (&'static str, &'static str)) -> Planned {
        self.harnesses = harnesses.iter().map(|h| h.to_string()).collect();
        self.metric = metric;
        self
    }

    /// Whether `harness` ("gbench", "criterion", "victim") times it.
    pub fn timed_by(&self, harness: &str) -> bool {
        self.harnesses.iter().any(|h| h == harness)
    }

    /// Whether the row reads another CPU's counter.
    fn crosses(&self) -> bool {
        self.meta
            .target_cpu
            .is_some_and(|t| Some(t) != self.meta.cpu)
    }

    /// The target states the row is timed in, of the run's `states`
    /// ([`Timed`]): `states.ipi` where a read runs code on the target (an
    /// IPI); `states.no_ipi` where it does not (idle, and busy to show
    /// whether the state changes it anyway), with ticking (held by the
    /// program itself) for idle where the suite's own program ticks there
    /// (the eBPF rows); none for a same-CPU row, a row that does not run,
    /// or a row that reads nothing across (the BPF program's tick rate).
    pub fn target_states(&self, states: &RunStates) -> Vec<Timed> {
        let none = Timed {
            state: None,
            ipi: None,
            load: None,
        };
        let on_target = match &self.reads {
            Ok(reads) if self.crosses() => reads.on_target(),
            _ => return vec![none],
        };
        let held = |states: &[TargetState], keep: &dyn Fn(TargetState) -> bool, ipi: bool| {
            let timed = |s| Timed {
                state: Some(s),
                ipi: Some(ipi),
                load: Some(s),
            };
            let kept = states.iter().copied().filter(|&s| keep(s));
            kept.map(timed).collect::<Vec<Timed>>()
        };
        let timed = match on_target {
            OnTarget::Ipi => held(&states.ipi, &|_| true, true),
            OnTarget::Nothing => held(&states.no_ipi, &|s| s != TargetState::Ticking, false),
            OnTarget::Ticks => {
                let own = Timed {
                    state: Some(TargetState::Ticking),
                    ipi: Some(false),
                    load: None,
                };
                std::iter::once(own)
                    .chain(held(&states.no_ipi, &|s| s == TargetState::Busy, false))
                    .collect()
            }
            OnTarget::Uncontrolled => return vec![none],
        };
        if timed.is_empty() {
            vec![none]
        } else {
            timed
        }
    }

    /// The row as the plan's JSON writes it, in `timed`'s target state (an
    /// unavailable row without a verdict: nothing is measured).
    pub fn to_json(&self, timed: &Timed) -> Value {
        let mut meta = self.meta.clone();
        if self.reads.is_err() {
            (meta.liveness, meta.liveness_note) = (None, None);
        }
        let mut row = json!({"id": self.id(timed.state)});
        let row_map = row.as_object_mut().expect("an object");
        let meta = serde_json::to_value(&meta).expect("a row meta serializes");
        row_map.extend(meta.as_object().expect("a row meta is an object").clone());
        let (status, reason, open) = match &self.reads {
            Ok(reads) => ("ok", None, reads.spec()),
            Err(reason) => ("unavailable", Some(reason.as_str()), Value::Null),
        };
        let fields = json!({
            "target_state": timed.state.map(TargetState::name), "ipi": timed.ipi,
            "target_load": timed.load.map(TargetState::name),
            "metric": self.metric.0, "unit": self.metric.1, "harnesses": self.harnesses,
            "status": status, "reason": reason, "open": open,
        });
        row_map.extend(fields.as_object().expect("an object").clone());
        row
    }

    /// Why the row cannot run, or None.
    pub fn reason(&self) -> Option<&str> {
        self.reads.as_ref().err().map(String::as_str)
    }

    /// What the row reads, if it runs and reads a `T` (for tests).
    #[cfg(test)]
    pub fn reads_as<T: Reads>(&self) -> Option<&T> {
        let reads: &dyn std::any::Any = &**self.reads.as_ref().ok()?;
        reads.downcast_ref()
    }

    /// The id the row's benchmark runs under in both harnesses,
    /// `"<path>/<op>/<target>@<placement label>"`, with `":<state>"` in a
    /// target state: ubench registers it as the Google Benchmark name, and
    /// it is the Criterion full id of group `<path>`, function `<op>`,
    /// parameter `<target>@<placement label>[:<state>]`. results/ joins
    /// each harness's output to the plan's rows by it.
    pub fn id(&self, state: Option<TargetState>) -> String {
        let placement = Placement {
            cpu: self.meta.cpu.unwrap_or(0),
            target_cpu: self.meta.target_cpu,
        };
        let target = self.meta.target.as_deref().unwrap_or("");
        let (path, op) = (&self.meta.path, &self.meta.op);
        let state = state.map_or(String::new(), |s| format!(":{s}"));
        format!("{path}/{op}/{target}@{}{state}", placement.label())
    }
}

/// The row meta of a latency row (an empty target is none).
pub fn meta(
    path: &str,
    op: &str,
    target: Option<&str>,
    placement: Option<Placement>,
    stand_in: Option<&str>,
    liveness: Option<Liveness>,
) -> RowMeta {
    RowMeta {
        path: path.to_string(),
        op: op.to_string(),
        target: target.filter(|t| !t.is_empty()).map(str::to_string),
        cpu: placement.map(|p| p.cpu),
        target_cpu: placement.and_then(|p| p.target_cpu),
        stand_in: stand_in.map(str::to_string),
        liveness: None,
        liveness_note: None,
    }
    .with_liveness(liveness)
}

/// The harnesses that time the rows of `path`: its `x-harnesses` in the
/// registry (results/schema.json); none for a path it lacks.
pub fn harnesses_of(path: &str) -> Vec<String> {
    crate::registry::schema()["$defs"]["path"]["oneOf"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|p| p["const"] == path)
        .flat_map(|p| p["x-harnesses"].as_array().cloned().unwrap_or_default())
        .filter_map(|h| h.as_str().map(str::to_string))
        .collect()
}

/// What the paths are planned on: where the kernel's interfaces are, how
/// long counters are probed, and the discoveries paths share (found once,
/// when the first path asks).
pub struct Machine {
    /// The powercap, msr device, PMU and CPU directories.
    pub roots: Roots,
    /// How long each counter set is probed for liveness (the eBPF slots are
    /// watched for [`crate::ebpf::slot_check::SLOT_CHECK`]).
    pub window: Duration,
    /// The perf discovery, probed (the perf and eBPF paths read the same
    /// events).
    perf: OnceCell<Result<Counters, Error>>,
}

impl Machine {
    /// A machine whose interfaces are under `roots`.
    pub fn new(roots: Roots, window: Duration) -> Machine {
        Machine {
            roots,
            window,
            perf: OnceCell::new(),
        }
    }

    /// This machine, or the fixtures the environment names
    /// ([`crate::roots`]), with the default probe windows.
    pub fn from_env() -> Machine {
        Machine::new(Roots::from_env(), LIVENESS_WINDOW)
    }

    /// The CPUs under the CPU root: the rows' placements.
    pub fn cpus(&self) -> Cpus {
        Cpus::at(&self.roots.cpu)
    }

    /// The energy perf events (or their stand-in) on every package, each
    /// probed for liveness for [`Machine::window`]; discovered on the first
    /// call.
    pub fn perf(&self) -> &Result<Counters, Error> {
        self.perf.get_or_init(|| {
            perf_counters(&self.roots.pmu, &self.roots.cpu).map(|mut found| {
                found.probe(self.window);
                found
            })
        })
    }
}

/// The whole plan. What its rows read and must keep running meanwhile is
/// held by the rows (the eBPF rows share the BPF sampler through an `Arc`:
/// it stops with the last of them).
#[derive(Default)]
pub struct Plan {
    /// Every row, path by path in the order of [`crate::paths::PATHS`].
    pub rows: Vec<Planned>,
}

impl Plan {
    /// The plan as JSON, every row of every harness in each of its target
    /// states among `states` ([`Planned::target_states`]):
    /// `{"plan_version": 1, "target_tick_hz": HZ, "rows": [ROW, ..]}`, ROW
    /// as [`Planned::to_json`], HZ the ticking state's rate.
    pub fn to_json(&self, states: &RunStates) -> String {
        let rows: Vec<Value> = self
            .rows
            .iter()
            .flat_map(|row| {
                let each = row.target_states(states);
                each.into_iter().map(move |timed| row.to_json(&timed))
            })
            .collect();
        let doc = json!({"plan_version": PLAN_VERSION,
                         "target_tick_hz": crate::target_load::tick_hz(), "rows": rows});
        serde_json::to_string_pretty(&doc).expect("a plan serializes")
    }

    /// The rows `harness` times, in plan order.
    pub fn timed_by(&self, harness: &str) -> impl Iterator<Item = &Planned> {
        let harness = harness.to_string();
        self.rows.iter().filter(move |r| r.timed_by(&harness))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(path: &str, op: &str) -> RowMeta {
        meta(
            path,
            op,
            Some("t"),
            Some(Placement {
                cpu: 1,
                target_cpu: Some(0),
            }),
            None,
            None,
        )
    }

    #[test]
    fn a_row_serializes_its_meta_harnesses_status_and_what_to_open() {
        let frozen = Liveness::frozen("MSR 0x611 on CPU 0", Duration::from_millis(100), 97);
        let mut plan = Plan::default();
        plan.rows.push(Planned::run(
            row("uinsn", "nop").with_liveness(Some(frozen.clone())),
            ForOthers(json!({"insn": "nop"})),
        ));
        plan.rows.push(Planned::unavailable(
            row("msr-dev", "pread").with_liveness(Some(frozen)),
            "no device",
        ));
        let doc: Value =
            serde_json::from_str(&plan.to_json(&RunStates::of_bench_all(false))).unwrap();
        assert_eq!(doc["plan_version"], PLAN_VERSION);
        let keys: Vec<&String> = doc["rows"][0].as_object().unwrap().keys().collect();
        assert_eq!(
            keys,
            [
                "id",
                "path",
                "op",
                "target",
                "cpu",
                "target_cpu",
                "stand_in",
                "liveness",
                "liveness_note",
                "target_state",
                "ipi",
                "target_load",
                "metric",
                "unit",
                "harnesses",
                "status",
                "reason",
                "open"
            ]
        );
        let (ok, unavailable) = (&doc["rows"][0], &doc["rows"][1]);
        assert_eq!(ok["harnesses"], json!(harnesses_of("uinsn")));
        assert_eq!(
            (&ok["status"], &ok["open"]),
            (&json!("ok"), &json!({"insn": "nop"}))
        );
        assert_eq!(ok["liveness"], "frozen");
        assert_eq!(ok["id"], "uinsn/nop/t@1->0");
        assert_eq!(unavailable["status"], "unavailable");
        assert_eq!(unavailable["reason"], "no device");
        assert_eq!(
            (&unavailable["liveness"], &unavailable["open"]),
            (&Value::Null, &Value::Null)
        );
    }

    /// Reads of nothing, with what a read does on the target.
    #[derive(Debug)]
    struct Across(OnTarget);

    impl Reads for Across {
        fn open(&self) -> Result<Box<dyn Reader + '_>, Error> {
            Err(Error::Unavailable("a test".into()))
        }
        fn spec(&self) -> Value {
            json!({})
        }
        fn on_target(&self) -> OnTarget {
            self.0
        }
    }

    #[test]
    fn cross_cpu_rows_come_in_target_states_as_their_reads_touch_the_target() {
        use TargetState::*;
        let at = |cpu, on| {
            Planned::run(
                meta(
                    "p",
                    "o",
                    None,
                    Some(Placement {
                        cpu,
                        target_cpu: Some(0),
                    }),
                    None,
                    None,
                ),
                Across(on),
            )
        };
        let states = |row: &Planned, run: &RunStates| -> Vec<_> {
            let each = row.target_states(run).into_iter();
            each.map(|t| (t.state, t.ipi, t.load)).collect()
        };
        let (full, quick) = (
            RunStates::of_bench_all(false),
            RunStates::of_bench_all(true),
        );
        let held = |s, ipi| (Some(s), Some(ipi), Some(s));
        assert_eq!(
            states(&at(1, OnTarget::Ipi), &full),
            [held(Idle, true), held(Ticking, true), held(Busy, true)]
        );
        assert_eq!(
            states(&at(1, OnTarget::Ipi), &quick),
            [held(Idle, true), held(Busy, true)]
        );
        // no IPI: idle, and in a full run busy, to show whether the state changes it anyway
        assert_eq!(
            states(&at(1, OnTarget::Nothing), &quick),
            [held(Idle, false)]
        );
        assert_eq!(
            states(&at(1, OnTarget::Nothing), &full),
            [held(Idle, false), held(Busy, false)]
        );
        // its own program ticks there: ticking with no load of ours, and busy
        let own = (Some(Ticking), Some(false), None);
        assert_eq!(
            states(&at(1, OnTarget::Ticks), &full),
            [own, held(Busy, false)]
        );
        assert_eq!(states(&at(1, OnTarget::Ticks), &quick), [own]);
        let none = (None, None, None);
        assert_eq!(states(&at(1, OnTarget::Uncontrolled), &full), [none]);
        assert_eq!(states(&at(0, OnTarget::Ipi), &full), [none], "same CPU");
        let unavailable = Planned::unavailable(row("msr-dev", "pread"), "no device");
        assert_eq!(states(&unavailable, &full), [none]);
        // each state its own id; the plan writes one row per state
        assert_eq!(at(1, OnTarget::Ipi).id(Some(Busy)), "p/o/@1->0:busy");
        let mut plan = Plan::default();
        plan.rows.push(at(1, OnTarget::Ipi));
        let doc: Value = serde_json::from_str(&plan.to_json(&quick)).unwrap();
        let got: Vec<(&str, &str)> = doc["rows"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                (
                    r["id"].as_str().unwrap(),
                    r["target_state"].as_str().unwrap(),
                )
            })
            .collect();
        assert_eq!(
            got,
            [("p/o/@1->0:idle", "idle"), ("p/o/@1->0:busy", "busy")]
        );
        assert_eq!(doc["target_tick_hz"], 1000);
    }

    #[test]
    fn harnesses_come_from_the_registry() {
        assert!(harnesses_of("msr-dev").contains(&"criterion".to_string()));
        assert!(harnesses_of("no such path").is_empty());
        let tick = Planned::unavailable(row("ebpf-mmap", "tick"), "no BPF")
            .only_for(&["gbench"], ("rate_hz", "Hz"));
        assert!(tick.timed_by("gbench") && !tick.timed_by("criterion"));
    }
}
