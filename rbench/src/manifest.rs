//! The manifest: what each benchmark measures, in the terms of the results
//! schema (results/schema.json), and the paths that could not run.
//!
//! Criterion reports ids and times only, so rbench writes, next to its
//! output, the manifest both harnesses write (ubench the same, with
//! "harness": "gbench"): one row per future result row,
//!
//! ```text
//! {"manifest_version": 1, "harness": "criterion", "rows": [ROW, ...]}
//! ROW = {"bench": criterion full id or null, "value": "real_time" or null,
//!        "path", "op", "target", "cpu", "target_cpu", "stand_in",
//!        "liveness", "liveness_note", "metric": "latency", "unit": "ns",
//!        "status": "ok" | "unavailable" | "error", "reason"}
//! ```
//!
//! in that key order. A path that cannot run here gets a row with
//! `bench: null` and the reason; having measured nothing, it carries no
//! liveness verdict (as in ubench). Criterion measures time per iteration
//! only: `value` is "real_time" for every row with a bench, and null
//! exactly when `bench` is (as ubench writes it).

use std::path::{Path, PathBuf};

use serde::Serialize;

pub use crate::row_meta::RowMeta;

/// The status of a manifest row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Measured: the Criterion benchmark `bench` holds the figures.
    Ok,
    /// The machine lacks what the path needs; `reason` says what.
    Unavailable,
    /// It should have worked and failed; `reason` says how.
    Error,
}

/// The version of the manifest format.
pub const MANIFEST_VERSION: u32 = 1;

/// One row of the manifest (field order is the JSON order: the fields of
/// `meta` sit between `value` and `metric`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ManifestRow {
    /// Criterion full id (`"<path>/<op>/<target>@<placement>"`), or None.
    pub bench: Option<String>,
    /// Which of the benchmark's values feeds the row: "real_time", or None
    /// when there is no benchmark (`bench` None).
    pub value: Option<&'static str>,
    /// path, op, target, cpu, target_cpu, stand_in, liveness, liveness_note.
    #[serde(flatten)]
    pub meta: RowMeta,
    /// Always "latency".
    pub metric: &'static str,
    /// Always "ns".
    pub unit: &'static str,
    /// ok, unavailable or error.
    pub status: Status,
    /// Why the row is not ok; None for ok rows.
    pub reason: Option<String>,
}

impl ManifestRow {
    fn new(
        bench: Option<String>,
        meta: &RowMeta,
        status: Status,
        reason: Option<String>,
    ) -> ManifestRow {
        ManifestRow {
            value: bench.as_ref().map(|_| "real_time"),
            bench,
            meta: meta.clone(),
            metric: "latency",
            unit: "ns",
            status,
            reason,
        }
    }
}

/// Every row of one run, in plan order.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Manifest {
    /// [`MANIFEST_VERSION`].
    pub manifest_version: u32,
    /// "criterion".
    pub harness: &'static str,
    /// The rows.
    pub rows: Vec<ManifestRow>,
}

impl Default for Manifest {
    fn default() -> Manifest {
        Manifest {
            manifest_version: MANIFEST_VERSION,
            harness: "criterion",
            rows: Vec::new(),
        }
    }
}

impl Manifest {
    /// A measured row fed by Criterion benchmark `bench`.
    pub fn add_measured(&mut self, bench: &str, meta: &RowMeta) {
        self.rows.push(ManifestRow::new(
            Some(bench.to_string()),
            meta,
            Status::Ok,
            None,
        ));
    }

    /// A path that cannot run here, with a reason a person can act on
    /// (and no liveness verdict: nothing was measured).
    pub fn add_unavailable(&mut self, meta: &RowMeta, reason: &str) {
        let meta = RowMeta {
            liveness: None,
            liveness_note: None,
            ..meta.clone()
        };
        self.rows.push(ManifestRow::new(
            None,
            &meta,
            Status::Unavailable,
            Some(reason.to_string()),
        ));
    }

    /// A benchmark that failed while it ran (its figures are not to be used).
    pub fn add_error(&mut self, bench: &str, meta: &RowMeta, reason: &str) {
        self.rows.push(ManifestRow::new(
            Some(bench.to_string()),
            meta,
            Status::Error,
            Some(reason.to_string()),
        ));
    }

    /// The manifest as pretty-printed JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a manifest always serializes")
    }

    /// Writes the JSON to `path`, creating its directory.
    pub fn write(&self, path: &Path) -> std::io::Result<()> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        std::fs::write(path, self.to_json() + "\n")
    }
}

/// Criterion's output directory as Criterion finds it: $CRITERION_HOME,
/// else $CARGO_TARGET_DIR/criterion, else `<target>/criterion` where
/// `<target>` is the directory holding the running bench binary's profile
/// directory (target/release/deps/paths-* -> target).
pub fn criterion_home() -> PathBuf {
    if let Some(home) = std::env::var_os("CRITERION_HOME") {
        return PathBuf::from(home);
    }
    if let Some(target) = std::env::var_os("CARGO_TARGET_DIR") {
        return PathBuf::from(target).join("criterion");
    }
    std::env::current_exe()
        .ok()
        .and_then(|exe| exe.ancestors().nth(3).map(Path::to_path_buf))
        .unwrap_or_else(|| PathBuf::from("target"))
        .join("criterion")
}

/// $RAPLBENCH_MANIFEST, else `<criterion home>/raplbench-manifest.json`.
pub fn manifest_path() -> PathBuf {
    match std::env::var_os("RAPLBENCH_MANIFEST") {
        Some(path) if !path.is_empty() => PathBuf::from(path),
        _ => criterion_home().join("raplbench-manifest.json"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta() -> RowMeta {
        RowMeta {
            path: "msr-dev".into(),
            op: "pread".into(),
            target: Some("cpuid:0x0".into()),
            cpu: Some(1),
            target_cpu: Some(0),
            stand_in: Some("why".into()),
            liveness: None,
            liveness_note: None,
        }
    }

    #[test]
    fn rows_serialize_in_the_contract_order() {
        let mut m = Manifest::default();
        m.add_measured("msr-dev/pread/cpuid:0x0@1->0", &meta());
        let unavailable = RowMeta {
            target: None,
            cpu: None,
            target_cpu: None,
            stand_in: None,
            ..meta()
        };
        m.add_unavailable(&unavailable, "no device");
        let json = serde_json::to_string(&m).unwrap();
        assert_eq!(
            json,
            r#"{"manifest_version":1,"harness":"criterion","rows":[{"bench":"msr-dev/pread/cpuid:0x0@1->0","value":"real_time","path":"msr-dev","op":"pread","target":"cpuid:0x0","cpu":1,"target_cpu":0,"stand_in":"why","liveness":null,"liveness_note":null,"metric":"latency","unit":"ns","status":"ok","reason":null},{"bench":null,"value":null,"path":"msr-dev","op":"pread","target":null,"cpu":null,"target_cpu":null,"stand_in":null,"liveness":null,"liveness_note":null,"metric":"latency","unit":"ns","status":"unavailable","reason":"no device"}]}"#
        );
    }

    #[test]
    fn a_frozen_row_carries_its_verdict_and_note() {
        let frozen = RowMeta {
            stand_in: None,
            ..meta()
        }
        .with_liveness(Some(crate::liveness::Liveness::frozen(
            "power/energy-psys/ on CPU 0",
            std::time::Duration::from_millis(100),
            97,
        )));
        let mut m = Manifest::default();
        m.add_measured("perf/read/power/energy-psys/@0->0", &frozen);
        let json = serde_json::to_string(&m).unwrap();
        assert!(
            json.contains(r#""stand_in":null,"liveness":"frozen","liveness_note":"power/energy-psys/ on CPU 0: did not change in 100 ms (97 reads): a dead counter, it yields no energy","metric""#),
            "{json}"
        );
    }

    #[test]
    fn an_unavailable_row_has_no_verdict() {
        let frozen = RowMeta {
            stand_in: None,
            ..meta()
        }
        .with_liveness(Some(crate::liveness::Liveness::frozen(
            "MSR 0x611 on CPU 0",
            std::time::Duration::from_millis(100),
            97,
        )));
        let mut m = Manifest::default();
        m.add_unavailable(&frozen, "cannot pin to CPU 1");
        m.add_error("msr-dev/pread/0x611@1->0", &frozen, "read failed");
        assert_eq!(
            (
                m.rows[0].meta.liveness,
                m.rows[0].meta.liveness_note.as_deref()
            ),
            (None, None)
        );
        assert_eq!(m.rows[1].meta.liveness, frozen.liveness); // it ran
    }

    #[test]
    fn value_is_null_exactly_when_bench_is() {
        let mut m = Manifest::default();
        m.add_measured("msr-dev/pread/cpuid:0x0@1->0", &meta());
        m.add_unavailable(&meta(), "no device");
        m.add_error("msr-dev/pread/cpuid:0x0@1->0", &meta(), "read failed");
        let pairs: Vec<(bool, Option<&str>)> = m
            .rows
            .iter()
            .map(|r| (r.bench.is_some(), r.value))
            .collect();
        assert_eq!(
            pairs,
            [
                (true, Some("real_time")),
                (false, None),
                (true, Some("real_time"))
            ]
        );
    }

    #[test]
    fn error_rows_keep_the_bench_and_the_reason() {
        let mut m = Manifest::default();
        m.add_error(
            "perf/read/msr/tsc/@0->0",
            &meta(),
            "read() of msr/tsc/ failed",
        );
        assert_eq!(m.rows[0].status, Status::Error);
        assert!(m.to_json().contains("\"status\": \"error\""));
    }

    #[test]
    fn writes_the_file() {
        let dir = crate::testutil::TempDir::new("manifest");
        let path = dir.path().join("sub/raplbench-manifest.json");
        Manifest::default().write(&path).unwrap();
        let back: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(
            back,
            serde_json::json!({"manifest_version": 1, "harness": "criterion", "rows": []})
        );
    }

    mod properties {
        use super::super::*;
        use crate::testutil::fixed_cases;
        use proptest::prelude::*;

        fn text() -> impl Strategy<Value = String> {
            "\\PC{0,16}|[\"\\\\\u{0}-\u{1f}\u{2028}\u{7f}]{0,8}"
        }

        proptest! {
            #![proptest_config(fixed_cases(500))]

            /// Any text in any field (quotes, backslashes, control
            /// characters, U+2028) comes back from the JSON unchanged, as
            /// results/manifest.py reads it.
            #[test]
            fn any_row_text_survives_the_json(
                path in text(), op in text(), target in proptest::option::of(text()),
                cpu in proptest::option::of(0usize..4096), stand_in in proptest::option::of(text()),
                bench in text(), reason in text(),
            ) {
                let meta = RowMeta { path, op, target, cpu, target_cpu: cpu, stand_in,
                                     liveness: None, liveness_note: None };
                let mut m = Manifest::default();
                m.add_measured(&bench, &meta);
                m.add_error(&bench, &meta, &reason);
                let back: serde_json::Value = serde_json::from_str(&m.to_json()).unwrap();
                for row in back["rows"].as_array().unwrap() {
                    prop_assert_eq!(row["path"].as_str(), Some(meta.path.as_str()));
                    prop_assert_eq!(row["op"].as_str(), Some(meta.op.as_str()));
                    prop_assert_eq!(row["target"].as_str(), meta.target.as_deref());
                    prop_assert_eq!(row["stand_in"].as_str(), meta.stand_in.as_deref());
                    prop_assert_eq!(row["cpu"].as_u64(), meta.cpu.map(|c| c as u64));
                    prop_assert_eq!(row["bench"].as_str(), Some(bench.as_str()));
                }
                prop_assert_eq!(back["rows"][1]["reason"].as_str(), Some(reason.as_str()));
            }
        }
    }
}
