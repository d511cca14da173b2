//! Every row the sampler writes validates against results/schema.json, the
//! judge of every row (draft 2020-12, with its "date-time" format checked
//! as results/schema.py checks it): the --report of raplbench-sample on the
//! powercap fixture and on this machine's mechanisms, and rows built by
//! schema_row::row for every metric of the schema.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::SystemTime;

use jsonschema::Validator;
use rbench::liveness::Verdict;
use rbench::schema_row::{
    new_run_id, row, utc_timestamp, Machine, RowMeta, RowSpec, RunInfo, SCHEMA_JSON,
};
use serde_json::{json, Value};

#[path = "../src/testutil.rs"]
#[allow(dead_code)]
mod testutil;

const BIN: &str = env!("CARGO_BIN_EXE_raplbench-sample");

fn schema() -> Value {
    serde_json::from_str(SCHEMA_JSON).expect("results/schema.json is JSON")
}

fn validator() -> Validator {
    jsonschema::draft202012::options()
        .should_validate_formats(true)
        .build(&schema())
        .expect("results/schema.json is a valid 2020-12 schema")
}

/// Every schema error of `row`, one line each; empty when it is valid.
fn errors(validator: &Validator, row: &Value) -> Vec<String> {
    validator
        .iter_errors(row)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect()
}

fn assert_valid(validator: &Validator, rows: &[Value]) {
    for r in rows {
        let errors = errors(validator, r);
        assert!(errors.is_empty(), "{errors:#?}\nin {r}");
    }
}

fn tmp(name: &str) -> PathBuf {
    static DIR: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    DIR.get_or_init(|| testutil::fresh_dir("raplbench-schema-rows"))
        .join(name)
}

/// How raplbench-sample ended without a report.
#[derive(Debug)]
enum Failed {
    /// The mechanism cannot run here: exit status 2 (a failure before
    /// sampling started) and, last on stderr, "raplbench-sample: <why>";
    /// holds why.
    Unavailable(String),
    /// Anything else (another status, a signal, a panic, no such line, no
    /// report): the sampler is broken.
    Broken(String),
}

/// The sampler's unavailability message in `stderr` after exit status
/// `code`: Some(why) for status 2 with "raplbench-sample: <why>" last.
fn unavailability(code: Option<i32>, stderr: &str) -> Option<String> {
    let why = stderr.lines().last()?.strip_prefix("raplbench-sample: ")?;
    (code == Some(2) && !why.is_empty()).then(|| why.to_string())
}

/// raplbench-sample --report with `args`: its rows, or why it wrote none.
fn report(name: &str, args: &[&str], env: &[(&str, &Path)]) -> Result<Vec<Value>, Failed> {
    let path = tmp(name);
    let _ = std::fs::remove_file(&path);
    let mut command = Command::new(BIN);
    command
        .args(["--duration", "0.3", "--report", path.to_str().unwrap()])
        .args(args);
    for (k, v) in env {
        command.env(k, v);
    }
    let out = command.output().expect("run raplbench-sample");
    let said = String::from_utf8_lossy(&out.stderr).into_owned();
    if !out.status.success() {
        return Err(match unavailability(out.status.code(), &said) {
            Some(why) => Failed::Unavailable(why),
            None => Failed::Broken(format!("{}: {said}", out.status)),
        });
    }
    let text = std::fs::read_to_string(&path)
        .map_err(|e| Failed::Broken(format!("no report: {e}: {said}")))?;
    Ok(text
        .lines()
        .map(|l| serde_json::from_str(l).expect("a report line is JSON"))
        .collect())
}

#[test]
fn the_validator_checks_the_schema_rules_and_formats() {
    let validator = validator();
    let run = run_info(Machine::collect_basic());
    let good = row(&run, &spec("latency", None), &[1.0, 2.0], Some(10), None);
    assert_valid(&validator, std::slice::from_ref(&good));
    let mut bad = good.clone();
    bad["unit"] = json!("us"); // latency is in ns (the schema's allOf)
    assert!(!errors(&validator, &bad).is_empty());
    let mut bad = good.clone();
    bad["timestamp"] = json!("2026-13-01T00:00:00Z"); // fits the pattern, not a date
    assert!(!errors(&validator, &bad).is_empty());
    let mut bad = good.clone();
    bad.as_object_mut().unwrap().remove("source");
    assert!(!errors(&validator, &bad).is_empty());
}

#[test]
fn sampler_report_on_the_fixture_validates() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../ubench/testdata/sys/class/powercap");
    // no --run-id and no --machine: the sampler's own run id and machine
    let rows = report(
        "fixture.jsonl",
        &[
            "--mechanism",
            "powercap",
            "--powercap-root",
            root.to_str().unwrap(),
        ],
        &[],
    )
    .unwrap_or_else(|e| panic!("{e:?}"));
    // the sampler's four metrics, the null sampler's, and the sampler's rate
    // and CPU above the null sampler, one sample per window (or pair)
    assert_eq!(rows.len(), 10);
    assert!(rows.iter().all(|r| r["n"] == 10), "{rows:?}");
    assert!(rows[8..]
        .iter()
        .all(|r| r["target"].as_str().unwrap().starts_with("above null: ")));
    assert_valid(&validator(), &rows);
}

#[test]
fn only_status_2_with_the_sampler_s_message_is_unavailable() {
    let why = "/dev/cpu/0/msr missing: load the msr module";
    let said = format!("raplbench-sample: {why}\n");
    assert_eq!(unavailability(Some(2), &said).as_deref(), Some(why));
    assert_eq!(unavailability(Some(1), &said), None); // failed while sampling
    assert_eq!(unavailability(Some(101), &said), None); // a panic
    assert_eq!(unavailability(None, &said), None); // a signal
    let clap = "error: unexpected argument '--x' found\n";
    assert_eq!(unavailability(Some(2), clap), None); // a bad option
    assert_eq!(unavailability(Some(2), ""), None);
}

/// The stand-in of the powercap mechanism where there is no zone.
const STAND_IN_FILE: &str = "/sys/class/net/lo/statistics/rx_bytes";

#[test]
fn sampler_reports_on_this_machine_validate() {
    let validator = validator();
    let empty = tmp("no-powercap");
    std::fs::create_dir_all(&empty).unwrap();
    let mut validated = 0;
    for mechanism in ["powercap", "msr", "perf", "ebpf", "kernel"] {
        // powercap on an empty root: the stand-in, whatever this machine has
        let env: &[(&str, &Path)] = if mechanism == "powercap" {
            &[("RAPLBENCH_POWERCAP_ROOT", &empty)]
        } else {
            &[]
        };
        match report(
            &format!("{mechanism}.jsonl"),
            &["--mechanism", mechanism],
            env,
        ) {
            Ok(rows) => {
                assert!(!rows.is_empty(), "{mechanism}");
                assert_valid(&validator, &rows);
                validated += 1;
            }
            // on an empty root powercap reads the stand-in: it must work
            // wherever the stand-in file is readable
            Err(Failed::Unavailable(why))
                if mechanism == "powercap" && std::fs::read(STAND_IN_FILE).is_ok() =>
            {
                panic!("powercap on an empty root, {STAND_IN_FILE} readable: {why}")
            }
            Err(Failed::Unavailable(why)) => {
                eprintln!("skipped {mechanism}: unavailable on this machine: {why}")
            }
            Err(Failed::Broken(why)) => panic!("raplbench-sample --mechanism {mechanism}: {why}"),
        }
    }
    eprintln!("validated the reports of {validated} mechanism(s) on this machine");
}

fn run_info(machine: Machine) -> RunInfo {
    let now = SystemTime::now();
    RunInfo {
        run_id: new_run_id(now),
        timestamp: utc_timestamp(now),
        machine,
    }
}

fn spec(metric: &'static str, liveness: Option<Verdict>) -> RowSpec {
    RowSpec {
        harness: "sampler".into(),
        meta: RowMeta {
            path: "sampler".into(),
            op: "powercap".into(),
            target: Some("intel-rapl:0".into()),
            cpu: Some(0),
            target_cpu: Some(0),
            stand_in: None,
            liveness,
            liveness_note: liveness
                .filter(|v| *v != Verdict::Live)
                .map(|v| format!("intel-rapl:0/energy_uj: {}", v.as_str())),
        },
        metric,
    }
}

#[test]
fn rows_built_for_every_metric_validate() {
    let validator = validator();
    let all_null = Machine(
        schema()["$defs"]["machine"]["required"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| (f.as_str().unwrap().to_string(), Value::Null))
            .collect(),
    );
    let metrics: Vec<&'static str> = schema()["properties"]["metric"]["enum"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| &*Box::leak(m.as_str().unwrap().to_string().into_boxed_str()))
        .collect();
    assert!(!metrics.is_empty());
    for machine in [Machine::collect_basic(), all_null] {
        let run = run_info(machine);
        for &metric in &metrics {
            let mut rows = Vec::new();
            for liveness in [
                None,
                Some(Verdict::Live),
                Some(Verdict::Frozen),
                Some(Verdict::NoUnit),
            ] {
                let spec = spec(metric, liveness);
                rows.push(row(&run, &spec, &[3.0, 1.5, 2.25], Some(1000), None));
                rows.push(row(&run, &spec, &[-0.5], None, None));
                rows.push(row(&run, &spec, &[], None, Some("no tick completed")));
                rows.push(row(&run, &spec, &[], Some(0), None));
            }
            let mut stand_in = spec(metric, None);
            stand_in.meta.stand_in = Some("perf msr/tsc/: no RAPL PMU".into());
            stand_in.meta.target_cpu = None;
            stand_in.meta.cpu = None;
            stand_in.meta.target = None;
            rows.push(row(&run, &stand_in, &[7.0; 40], None, None));
            assert_valid(&validator, &rows);
        }
    }
}
