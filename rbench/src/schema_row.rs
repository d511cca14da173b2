//! Result rows of the raplbench schema, version 2 (results/schema.json,
//! documented field by field in results/README.md), written by Rust programs
//! that report on themselves (the 1 kHz sampler). They are a Rust copy of
//! results/rows.py, kept so that the sampler's --report is self-contained
//! on a machine without the Python environment.
//!
//! The `machine` object normally comes from `python -m results.machine`
//! (bench-all writes it to the run directory: pass it with --machine); on
//! its own, [`Machine::collect_basic`] fills what /proc, uname and cpuid tell
//! cheaply and leaves the rest null, which the schema allows.
//!
//! Where each fact lives, and what pins the copies together:
//!
//! * the metric → unit pairs: results/schema.json's rules, read at run time
//!   by [`unit_of`] and by rows.py (METRIC_UNITS); no copy;
//! * hypervisor names of cpuid signatures: results/hypervisors.json, read
//!   here and by results/machine.py; no copy;
//! * the schema version, field order, timestamp and run-id rules, and the
//!   rows themselves: rows.py, copied here; results/golden/rows.json
//!   (`python -m results.golden`, kept current by results/test_golden.py)
//!   holds rows.py's answers and this module's tests check Rust gives the
//!   same; the machine fields are checked against the schema;
//! * the summary statistics: see [`crate::summary`];
//! * the rows' validity: rbench/tests/schema_rows.rs validates the
//!   sampler's --report and rows built here against results/schema.json.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::path::Path;
use std::sync::OnceLock;
use std::time::{SystemTime, UNIX_EPOCH};

use crate::liveness::{Liveness, Verdict};
use crate::summary::Summary;

/// The `machine` object: kept as JSON so every field of the schema passes
/// through untouched.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Machine(pub Map<String, Value>);

/// The fields of `machine`, in schema order.
const MACHINE_FIELDS: [&str; 14] = [
    "hostname",
    "cpu_vendor",
    "cpu_family",
    "cpu_model",
    "cpu_stepping",
    "cpu_model_name",
    "microcode",
    "kernel",
    "hypervisor",
    "smt",
    "governor",
    "boost",
    "tsc_khz",
    "mitigations",
];

impl Machine {
    /// Reads a machine.json (`python -m results.machine`); the error says which file.
    pub fn load(path: &Path) -> Result<Machine, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("{}: cannot read: {e}", path.display()))?;
        let machine: Machine = serde_json::from_str(&text)
            .map_err(|e| format!("{}: not a machine object: {e}", path.display()))?;
        for field in MACHINE_FIELDS {
            if !machine.0.contains_key(field) {
                return Err(format!(
                    "{}: machine object lacks \"{field}\"",
                    path.display()
                ));
            }
        }
        Ok(machine)
    }

    /// What /proc/cpuinfo, /proc/sys/kernel and cpuid tell cheaply; the other
    /// fields null.
    pub fn collect_basic() -> Machine {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let first = cpuinfo.split("\n\n").next().unwrap_or("");
        let field = |key: &str| -> Option<String> {
            first.lines().find_map(|line| {
                let (k, v) = line.split_once(':')?;
                (k.trim() == key).then(|| v.trim().to_string())
            })
        };
        let int = |key: &str| field(key).and_then(|v| v.parse::<i64>().ok());
        let kernel_file = |name: &str| {
            std::fs::read_to_string(format!("/proc/sys/kernel/{name}"))
                .ok()
                .map(|s| s.trim().to_string())
        };
        let in_vm = field("flags").is_some_and(|f| f.split_whitespace().any(|x| x == "hypervisor"));
        let mut m = Map::new();
        for name in MACHINE_FIELDS {
            m.insert(name.to_string(), Value::Null);
        }
        let mut set = |k: &str, v: Option<Value>| {
            m.insert(k.to_string(), v.unwrap_or(Value::Null));
        };
        set("hostname", kernel_file("hostname").map(Value::from));
        set("cpu_vendor", field("vendor_id").map(Value::from));
        set("cpu_family", int("cpu family").map(Value::from));
        set("cpu_model", int("model").map(Value::from));
        set("cpu_stepping", int("stepping").map(Value::from));
        set("cpu_model_name", field("model name").map(Value::from));
        set("microcode", field("microcode").map(Value::from));
        set("kernel", kernel_file("osrelease").map(Value::from));
        set("hypervisor", in_vm.then(|| Value::from(hypervisor_name())));
        Machine(m)
    }
}

/// results/hypervisors.json, the one table of hypervisor names (results/machine.py
/// reads it too).
const HYPERVISORS_JSON: &str = include_str!("../../results/hypervisors.json");

/// The hypervisor named by a 12-byte cpuid signature (leaf 0x40000000's
/// ebx, ecx, edx), from results/hypervisors.json; None for an unknown one.
fn hypervisor_of_signature(sig: &[u8; 12]) -> Option<&'static str> {
    static TABLE: OnceLock<Vec<([u8; 12], String)>> = OnceLock::new();
    let table = TABLE.get_or_init(|| {
        let doc: Value =
            serde_json::from_str(HYPERVISORS_JSON).expect("results/hypervisors.json is JSON");
        doc["cpuid_signatures"]
            .as_object()
            .expect("results/hypervisors.json has cpuid_signatures")
            .iter()
            .map(|(sig, name)| {
                let sig: [u8; 12] = sig.as_bytes().try_into().unwrap_or_else(|_| {
                    panic!("results/hypervisors.json: signature {sig:?} is not 12 bytes")
                });
                let name = name.as_str().expect("a hypervisor name is a string");
                (sig, name.to_string())
            })
            .collect()
    });
    table
        .iter()
        .find(|(s, _)| s == sig)
        .map(|(_, name)| name.as_str())
}

/// The hypervisor's name from the cpuid signature (leaf 0x40000000), as
/// results/machine.py names it; "unknown" for an unknown signature.
fn hypervisor_name() -> &'static str {
    let r = core::arch::x86_64::__cpuid(0x4000_0000);
    let mut sig = [0u8; 12];
    sig[..4].copy_from_slice(&r.ebx.to_le_bytes());
    sig[4..8].copy_from_slice(&r.ecx.to_le_bytes());
    sig[8..].copy_from_slice(&r.edx.to_le_bytes());
    hypervisor_of_signature(&sig).unwrap_or("unknown")
}

/// Where a row's figure comes from, in the schema's terms.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RowMeta {
    /// Access path id: powercap, msr-dev, perf, ebpf-lookup, ebpf-mmap, sampler, ...
    pub path: String,
    /// Operation: pread, open-read-close, read, group-read, lookup, load; for
    /// the sampler, the mechanism.
    pub op: String,
    /// What was read (file, MSR address, event label); None when unknown.
    pub target: Option<String>,
    /// CPU the measuring thread is pinned to.
    pub cpu: Option<usize>,
    /// CPU whose counter is read; None if the counter belongs to no CPU.
    pub target_cpu: Option<usize>,
    /// None, or why a substitute is measured.
    pub stand_in: Option<String>,
    /// The worst verdict on the energy counters the row reads; None for
    /// stand-ins, instruction paths, overheads, unavailable rows.
    pub liveness: Option<Verdict>,
    /// None when live or without verdict; else one line per counter that
    /// is not live, joined by "; ".
    pub liveness_note: Option<String>,
}

impl RowMeta {
    /// Sets `liveness` and `liveness_note` from a verdict (None: no verdict).
    pub fn with_liveness(mut self, liveness: Option<Liveness>) -> RowMeta {
        self.liveness = liveness.as_ref().map(|l| l.verdict);
        self.liveness_note = liveness.and_then(|l| l.note);
        self
    }
}

/// What a row says about itself, besides the run it belongs to.
#[derive(Debug, Clone, PartialEq)]
pub struct RowSpec {
    /// harness: "sampler", ...
    pub harness: String,
    /// path, op, target, cpu, target_cpu, stand_in.
    pub meta: RowMeta,
    /// metric (with its one unit, see [`unit_of`]).
    pub metric: &'static str,
}

/// results/schema.json, the judge of every row; it also holds the
/// metric → unit pairs [`unit_of`] reads.
pub const SCHEMA_JSON: &str = include_str!("../../results/schema.json");

/// metric → unit from the schema's rules that pair them: every
/// `{"if": {metric: const M}, "then": {unit: const U}}` under its allOf
/// (results/rows.py derives METRIC_UNITS the same way).
fn metric_units(node: &Value, units: &mut Vec<(String, String)>) {
    for rule in node["allOf"].as_array().into_iter().flatten() {
        let metric = &rule["if"]["properties"]["metric"]["const"];
        let unit = &rule["then"]["properties"]["unit"]["const"];
        if let (Some(m), Some(u)) = (metric.as_str(), unit.as_str()) {
            units.push((m.to_string(), u.to_string()));
        }
        metric_units(rule, units);
    }
}

/// The unit of each metric of the schema (results/schema.json's pairs);
/// panics on a metric the schema does not know.
pub fn unit_of(metric: &str) -> &'static str {
    static UNITS: OnceLock<Vec<(String, String)>> = OnceLock::new();
    let units = UNITS.get_or_init(|| {
        let schema: Value = serde_json::from_str(SCHEMA_JSON).expect("results/schema.json is JSON");
        let mut units = Vec::new();
        metric_units(&schema, &mut units);
        units
    });
    units
        .iter()
        .find(|(m, _)| m == metric)
        .map(|(_, u)| u.as_str())
        .unwrap_or_else(|| panic!("unknown metric {metric}"))
}

/// The fields shared by every row of one run.
#[derive(Debug, Clone)]
pub struct RunInfo {
    /// run_id
    pub run_id: String,
    /// timestamp (ISO 8601 UTC)
    pub timestamp: String,
    /// machine
    pub machine: Machine,
}

/// The version of the results schema these rows follow.
pub const SCHEMA_VERSION: &str = "2";

/// One result row as JSON, fields in schema order; a row with no samples
/// needs `reason` (status "error").
pub fn row(
    run: &RunInfo,
    spec: &RowSpec,
    samples: &[f64],
    iterations: Option<u64>,
    reason: Option<&str>,
) -> Value {
    let summary = Summary::of(samples);
    let stat = |f: fn(&Summary) -> f64| summary.as_ref().map_or(Value::Null, |s| Value::from(f(s)));
    let status = if summary.is_some() { "ok" } else { "error" };
    let mut m = Map::new();
    let mut put = |k: &str, v: Value| {
        m.insert(k.to_string(), v);
    };
    put("schema_version", SCHEMA_VERSION.into());
    put("run_id", run.run_id.clone().into());
    put("timestamp", run.timestamp.clone().into());
    put("machine", Value::Object(run.machine.0.clone()));
    let meta = &spec.meta;
    put("harness", spec.harness.clone().into());
    put("path", meta.path.clone().into());
    put("op", meta.op.clone().into());
    put("target", meta.target.clone().into());
    put("cpu", meta.cpu.into());
    put("target_cpu", meta.target_cpu.into());
    put("stand_in", meta.stand_in.clone().into());
    put(
        "liveness",
        meta.liveness.map_or(Value::Null, |v| v.as_str().into()),
    );
    put("liveness_note", meta.liveness_note.clone().into());
    put("metric", spec.metric.into());
    put("unit", unit_of(spec.metric).into());
    put(
        "samples",
        samples
            .iter()
            .copied()
            .map(Value::from)
            .collect::<Vec<_>>()
            .into(),
    );
    put("n", samples.len().into());
    put("iterations", iterations.filter(|&i| i > 0).into());
    put("mean", stat(|s| s.mean));
    put("median", stat(|s| s.median));
    put("stddev", stat(|s| s.stddev));
    put("min", stat(|s| s.min));
    put("max", stat(|s| s.max));
    put("p05", stat(|s| s.p05));
    put("p95", stat(|s| s.p95));
    put("ci95_low", stat(|s| s.ci95_low));
    put("ci95_high", stat(|s| s.ci95_high));
    put("status", status.into());
    put(
        "reason",
        match (status, reason) {
            ("ok", _) => Value::Null,
            (_, Some(r)) => r.into(),
            (_, None) => "no samples were taken".into(),
        },
    );
    put("source", Value::Null);
    Value::Object(m)
}

/// Whole seconds since the epoch, rounded down (also before 1970).
fn unix_seconds(t: SystemTime) -> i64 {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => d.as_secs() as i64,
        Err(e) => {
            let before = e.duration();
            -(before.as_secs() as i64) - i64::from(before.subsec_nanos() > 0)
        }
    }
}

/// "2026-11-22T00:06:45Z" for `t`: ISO 8601 UTC to the second, the
/// fraction cut off (results/rows.py's utc_timestamp).
pub fn utc_timestamp(t: SystemTime) -> String {
    let secs = unix_seconds(t);
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (y, mo, d) = civil_from_days(days);
    format!(
        "{y:04}-{mo:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// A run id like results/rows.py's new_run_id: "20261122T000645Z-3fa9c1",
/// the UTC time to the second and 6 hex digits that differ between runs
/// started in the same second.
pub fn new_run_id(t: SystemTime) -> String {
    let stamp: String = utc_timestamp(t)
        .chars()
        .filter(|c| !matches!(c, '-' | ':'))
        .collect();
    let nanos = t.duration_since(UNIX_EPOCH).map_or(0, |d| d.subsec_nanos());
    format!(
        "{stamp}-{:06x}",
        (nanos ^ std::process::id().rotate_left(12)) & 0xFF_FFFF
    )
}

/// Days since 1970-01-01 to (year, month, day): Howard Hinnant's algorithm.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn hypervisor_signatures_come_from_results_hypervisors_json() {
        assert_eq!(hypervisor_of_signature(b"KVMKVMKVM\0\0\0"), Some("kvm"));
        assert_eq!(hypervisor_of_signature(b"TCGTCGTCGTCG"), Some("qemu-tcg"));
        assert_eq!(hypervisor_of_signature(b"SomethingNew"), None);
        let doc: Value = serde_json::from_str(HYPERVISORS_JSON).unwrap();
        for (sig, name) in doc["cpuid_signatures"].as_object().unwrap() {
            let sig: &[u8; 12] = sig.as_bytes().try_into().unwrap();
            assert_eq!(hypervisor_of_signature(sig), name.as_str());
        }
    }

    #[test]
    fn every_schema_metric_has_its_unit_from_the_schema() {
        let schema: Value = serde_json::from_str(SCHEMA_JSON).unwrap();
        let metrics = schema["properties"]["metric"]["enum"].as_array().unwrap();
        for metric in metrics {
            let unit = unit_of(metric.as_str().unwrap());
            assert!(schema["properties"]["unit"]["enum"]
                .as_array()
                .unwrap()
                .contains(&Value::from(unit)));
        }
        assert_eq!(
            [
                unit_of("latency"),
                unit_of("rate_hz"),
                unit_of("overhead_pct")
            ],
            ["ns", "Hz", "%"]
        );
    }

    /// results/rows.py's row-building facts and rows built from fixed
    /// inputs (`python -m results.golden` writes the file,
    /// results/test_golden.py keeps it current).
    const GOLDEN: &str = include_str!("../../results/golden/rows.json");

    fn golden() -> Value {
        serde_json::from_str(GOLDEN).unwrap()
    }

    #[test]
    fn timestamps_and_run_ids_agree_with_rows_py() {
        let golden = golden();
        let digits = golden["run_id_random_hex_digits"].as_u64().unwrap() as usize;
        for instant in golden["instants"].as_array().unwrap() {
            let secs = instant["unix_seconds"].as_i64().unwrap();
            let nanos = Duration::from_nanos(instant["nanos"].as_u64().unwrap());
            let t = if secs >= 0 {
                UNIX_EPOCH + Duration::from_secs(secs as u64)
            } else {
                UNIX_EPOCH - Duration::from_secs(secs.unsigned_abs())
            } + nanos;
            assert_eq!(utc_timestamp(t), instant["utc_timestamp"], "{instant}");
            let id = new_run_id(t);
            let prefix = instant["run_id_prefix"].as_str().unwrap();
            let random = id
                .strip_prefix(prefix)
                .unwrap_or_else(|| panic!("{id}: {instant}"));
            assert!(
                random.len() == digits
                    && random
                        .bytes()
                        .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')),
                "{id}"
            );
        }
    }

    /// a == b, floats equal or within 1e-12 relative (summary.rs's tests
    /// pin the statistics more closely).
    fn same(a: &Value, b: &Value) -> bool {
        match (a.as_f64(), b.as_f64()) {
            (Some(x), Some(y)) if a.is_f64() || b.is_f64() => {
                x == y || (x - y).abs() <= 1e-12 * x.abs().max(y.abs())
            }
            _ => a == b,
        }
    }

    #[test]
    fn rows_agree_with_rows_py() {
        let golden = golden();
        assert_eq!(SCHEMA_VERSION, golden["schema_version"]);
        let fields: Vec<&str> = golden["fields"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f.as_str().unwrap())
            .collect();
        let text = |v: &Value| v.as_str().map(str::to_string);
        let cpu = |v: &Value| v.as_u64().map(|c| c as usize);
        for case in golden["rows"].as_array().unwrap() {
            let input = &case["inputs"];
            let run = RunInfo {
                run_id: text(&input["run_id"]).unwrap(),
                timestamp: text(&input["timestamp"]).unwrap(),
                machine: serde_json::from_value(input["machine"].clone()).unwrap(),
            };
            let liveness = [Verdict::Live, Verdict::Frozen, Verdict::NoUnit]
                .into_iter()
                .find(|v| input["liveness"] == v.as_str());
            let metric = text(&input["metric"]).unwrap();
            let spec = RowSpec {
                harness: text(&input["harness"]).unwrap(),
                meta: RowMeta {
                    path: text(&input["path"]).unwrap(),
                    op: text(&input["op"]).unwrap(),
                    target: text(&input["target"]),
                    cpu: cpu(&input["cpu"]),
                    target_cpu: cpu(&input["target_cpu"]),
                    stand_in: text(&input["stand_in"]),
                    liveness,
                    liveness_note: text(&input["liveness_note"]),
                },
                metric: Box::leak(metric.into_boxed_str()),
            };
            let samples: Vec<f64> = input["samples"]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_f64().unwrap())
                .collect();
            let reason = input["reason"].as_str();
            let got = row(&run, &spec, &samples, input["iterations"].as_u64(), reason);
            let want = &case["row"];
            let keys: Vec<&str> = got
                .as_object()
                .unwrap()
                .keys()
                .map(String::as_str)
                .collect();
            assert_eq!(keys, fields, "the field order of results/rows.py");
            for field in &fields {
                assert!(
                    same(&got[field], &want[field]),
                    "{field}: {} in Rust, {} in results/rows.py",
                    got[field],
                    want[field]
                );
            }
        }
    }

    #[test]
    fn machine_fields_are_the_schemas() {
        let schema: Value = serde_json::from_str(SCHEMA_JSON).unwrap();
        assert_eq!(
            schema["$defs"]["machine"]["required"],
            Value::from(MACHINE_FIELDS.to_vec())
        );
    }

    #[test]
    fn rows_follow_the_schema_order_and_rules() {
        let run = RunInfo {
            run_id: "r".into(),
            timestamp: "2026-11-22T00:00:05Z".into(),
            machine: Machine::collect_basic(),
        };
        let spec = RowSpec {
            harness: "sampler".into(),
            meta: RowMeta {
                path: "sampler".into(),
                op: "perf".into(),
                target: Some("msr/tsc/".into()),
                cpu: Some(0),
                target_cpu: Some(0),
                stand_in: None,
                liveness: Some(Verdict::Frozen),
                liveness_note: Some("MSR 0x611 on CPU 0: did not change".into()),
            },
            metric: "rate_hz",
        };
        let ok = row(&run, &spec, &[999.0, 998.0, 1000.0], Some(1000), None);
        let keys: Vec<&str> = ok.as_object().unwrap().keys().map(String::as_str).collect();
        // the field order of results/rows.py (and of the schema)
        assert_eq!(Value::from(keys), golden()["fields"]);
        assert_eq!(ok["schema_version"], "2");
        assert_eq!(ok["liveness"], "frozen");
        assert_eq!(ok["liveness_note"], "MSR 0x611 on CPU 0: did not change");
        assert_eq!(ok["unit"], "Hz");
        assert_eq!(ok["median"], 999.0);
        assert_eq!(ok["status"], "ok");
        assert!(ok["reason"].is_null());
        let failed = row(&run, &spec, &[], None, Some("no tick"));
        assert_eq!(
            (failed["status"].as_str(), failed["reason"].as_str()),
            (Some("error"), Some("no tick"))
        );
        assert_eq!(failed["n"], 0);
        assert!(failed["median"].is_null());
        assert_eq!(run.machine.0.len(), 14);
    }
}
