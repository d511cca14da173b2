//! raplbench-sample end to end, on the powercap fixture tree (a copy of a
//! real layout: ubench/testdata/sys/class/powercap) and on this machine's
//! perf stand-in: options, exit statuses, the CSV, SIGINT, the report.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_raplbench-sample");

fn fixture_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../ubench/testdata/sys/class/powercap")
}

fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("raplbench-sample-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn sample(args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .output()
        .expect("run raplbench-sample")
}

/// raplbench-sample --mechanism powercap on the fixture tree, with `args`.
fn on_fixture(args: &[&str]) -> Output {
    let root = fixture_root();
    let mut all = vec![
        "--mechanism",
        "powercap",
        "--powercap-root",
        root.to_str().unwrap(),
    ];
    all.extend_from_slice(args);
    sample(&all)
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn samples_every_fixture_zone_into_csv() {
    let csv = tmp("fixture.csv");
    let out = on_fixture(&[
        "--frequency",
        "200",
        "--duration",
        "0.3",
        "--output",
        csv.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = std::fs::read_to_string(&csv).unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("time_ns,source,domain,raw,delta_j"));
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert!(rows.len() >= 5 * 40, "{} lines", rows.len()); // 5 zones, ~60 ticks
    assert!(rows.iter().all(|r| r.len() == 5));
    let sources: std::collections::BTreeSet<&str> = rows.iter().map(|r| r[1]).collect();
    assert_eq!(
        sources.into_iter().collect::<Vec<_>>(),
        [
            "intel-rapl-mmio:0",
            "intel-rapl:0",
            "intel-rapl:0:0",
            "intel-rapl:0:1",
            "intel-rapl:1"
        ]
    );
    let pkg: Vec<&Vec<&str>> = rows.iter().filter(|r| r[1] == "intel-rapl:0").collect();
    assert_eq!(pkg[0][2], "package-0");
    assert_eq!(pkg[0][3], "72834517023");
    assert_eq!(pkg[0][4], "0"); // the first sample of a domain: no difference yet
    assert!(pkg.iter().all(|r| r[4] == "0")); // fixture files do not change
}

#[test]
fn selects_domains_and_refuses_unknown_ones() {
    let csv = tmp("dram.csv");
    let out = on_fixture(&[
        "--domains",
        "core,intel-rapl:1",
        "--duration",
        "0.1",
        "--output",
        csv.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = std::fs::read_to_string(&csv).unwrap();
    assert!(text
        .lines()
        .skip(1)
        .all(|l| l.contains(",core,") || l.contains(",psys,")));
    let out = on_fixture(&["--domains", "gpu", "--duration", "1"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("unknown domain 'gpu'"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn start_up_failures_exit_2_with_a_message() {
    let out = on_fixture(&["--duration", "1", "--output", "/nonexistent/dir/x.csv"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("cannot write --output /nonexistent/dir/x.csv"));
    let out = sample(&[
        "--mechanism",
        "powercap",
        "--frequency",
        "0",
        "--duration",
        "1",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let out = sample(&["--mechanism", "powercap"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--duration SECONDS or a command"));
    let out = on_fixture(&["--", "/nonexistent/command"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("cannot run /nonexistent/command"));
}

#[test]
fn exits_with_the_commands_exit_status() {
    let out = on_fixture(&["--", "sh", "-c", "sleep 0.2; exit 7"]);
    assert_eq!(out.status.code(), Some(7), "{}", stderr(&out));
}

#[test]
fn sigint_flushes_every_sample_without_a_torn_line() {
    let csv = tmp("sigint.csv");
    let root = fixture_root();
    let child = Command::new(BIN)
        .args([
            "--mechanism",
            "powercap",
            "--powercap-root",
            root.to_str().unwrap(),
            "--duration",
            "30",
            "--output",
            csv.to_str().unwrap(),
        ])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(700));
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    let text = std::fs::read_to_string(&csv).unwrap();
    assert!(text.ends_with('\n'));
    let lines: Vec<&str> = text.lines().skip(1).collect();
    assert!(lines.len() >= 5 * 300, "{} lines after 0.7 s", lines.len());
    assert!(lines.iter().all(|l| l.split(',').count() == 5));
    // the summary reports as many samples as the file holds
    let said = stderr(&out);
    assert!(
        said.contains(&format!("{} samples", lines.len() / 5)),
        "{said}"
    );
}

#[test]
fn report_holds_the_sampler_and_the_null_sampler() {
    let report = tmp("report.jsonl");
    let out = on_fixture(&[
        "--duration",
        "0.6",
        "--report",
        report.to_str().unwrap(),
        "--run-id",
        "test",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let rows: Vec<serde_json::Value> = std::fs::read_to_string(&report)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let metrics: Vec<(&str, &str)> = rows
        .iter()
        .map(|r| (r["metric"].as_str().unwrap(), r["target"].as_str().unwrap()))
        .collect();
    assert_eq!(rows.len(), 8, "{metrics:?}");
    for r in &rows {
        assert_eq!(
            (r["harness"].as_str(), r["path"].as_str(), r["op"].as_str()),
            (Some("sampler"), Some("sampler"), Some("powercap"))
        );
        assert_eq!(r["status"], "ok", "{r}");
        assert_eq!(r["run_id"], "test");
    }
    let rate = rows.iter().find(|r| r["metric"] == "rate_hz").unwrap();
    assert!(rate["target"]
        .as_str()
        .unwrap()
        .starts_with("intel-rapl:0,"));
    assert!(
        (rate["median"].as_f64().unwrap() - 1000.0).abs() < 200.0,
        "{rate}"
    );
    assert!(rows
        .iter()
        .any(|r| r["target"] == "null: bare timerfd loop @ 1000 Hz"));
    let jitter = rows.iter().find(|r| r["metric"] == "jitter_us").unwrap();
    assert!(jitter["n"].as_u64().unwrap() > 400);
}
