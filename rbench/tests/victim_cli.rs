//! raplbench-victim end to end on this machine: a short run's JSON is
//! consistent, bad options exit 2, SIGINT stops it and it still writes.

use std::path::PathBuf;
use std::process::{Command, Output};
use std::time::Duration;

#[path = "../src/testutil.rs"]
#[allow(dead_code)]
mod testutil;

const BIN: &str = env!("CARGO_BIN_EXE_raplbench-victim");

fn tmp(name: &str) -> PathBuf {
    static DIR: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    DIR.get_or_init(|| testutil::fresh_dir("raplbench-victim-test"))
        .join(name)
}

fn victim(args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .output()
        .expect("run raplbench-victim")
}

/// The last CPU this process may run on.
fn allowed_cpu() -> Option<usize> {
    rbench::cpu::allowed_cpus().last().copied()
}

fn f(v: &serde_json::Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("a number: {v}"))
}

/// stolen ≤ wall, p50 ≤ p99 ≤ max, and null percentiles exactly when
/// there was no gap.
fn check_stats(s: &serde_json::Value) {
    assert!(
        s["stolen_ns"].as_u64().unwrap() <= s["wall_ns"].as_u64().unwrap(),
        "{s}"
    );
    if s["count"].as_u64().unwrap() == 0 {
        assert!(s["p50_ns"].is_null() && s["p99_ns"].is_null() && s["max_ns"].is_null());
        assert_eq!(s["stolen_ns"], 0, "{s}");
    } else {
        let (p50, p99, max) = (f(&s["p50_ns"]), f(&s["p99_ns"]), f(&s["max_ns"]));
        assert!(0.0 <= p50 && p50 <= p99 && p99 <= max, "{s}");
    }
}

#[test]
fn a_short_run_writes_a_consistent_document() {
    let Some(cpu) = allowed_cpu() else {
        return eprintln!("skipped: no CPU this process may run on");
    };
    let json = tmp("short.json");
    let cpu_arg = cpu.to_string();
    let out = victim(&[
        "--cpu",
        &cpu_arg,
        "--duration",
        "0.3",
        "--json",
        json.to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("threshold"), "{stderr}");
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(doc["cpu"], cpu);
    assert_eq!(f(&doc["duration_s"]), 0.3);
    let cal = &doc["calibration"];
    let ghz = f(&cal["tsc_ghz"]);
    assert!(ghz > 0.1 && ghz < 10.0, "{cal}");
    assert!(
        f(&cal["iteration_p50_ns"]) <= f(&cal["iteration_p99_ns"]),
        "{cal}"
    );
    assert!(
        f(&cal["iteration_p99_ns"]) <= f(&cal["iteration_p999_ns"]),
        "{cal}"
    );
    // the calibrated threshold clears the loop's own iteration time
    assert!(
        f(&doc["threshold_ns"]) >= f(&cal["iteration_p99_ns"]),
        "{doc}"
    );
    assert_eq!(f(&doc["threshold_ns"]), f(&cal["rule_threshold_ns"]));
    assert!(f(&doc["threshold_ns"]) >= 200.0);
    let seconds = doc["seconds"].as_array().unwrap();
    assert_eq!(seconds.len(), 1, "0.3 s is one partial second: {doc}");
    for s in seconds {
        check_stats(s);
    }
    let total = &doc["total"];
    check_stats(total);
    let sum = |k: &str| seconds.iter().map(|s| s[k].as_u64().unwrap()).sum::<u64>();
    assert_eq!(total["count"].as_u64().unwrap(), sum("count"));
    assert_eq!(total["not_kept"], doc["gaps_not_kept"]);
    // the run lasted its duration: at least (up to rounding), and at most
    // one gap more (the read that reaches the end may follow a preemption)
    let wall = total["wall_ns"].as_u64().unwrap();
    assert!(
        (299_000_000..1_000_000_000).contains(&wall),
        "wall {wall} ns"
    );
    assert!(doc["stopped_by"].is_null());
}

#[test]
fn bad_options_exit_2_with_the_reason() {
    let online = rbench::cpu::Cpus::from_env().online();
    let offline = (online.iter().max().copied().unwrap_or(0) + 1).to_string();
    let out = victim(&["--cpu", &offline, "--duration", "0.1"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("not an online CPU"), "{stderr}");
    for duration in ["0", "-1", "nan"] {
        let out = victim(&["--cpu", "0", "--duration", duration]);
        assert_eq!(out.status.code(), Some(2), "--duration {duration}");
    }
    // a CPU outside the affinity mask: run it under a mask of one CPU
    let allowed = rbench::cpu::allowed_cpus();
    if allowed.len() < 2 {
        return eprintln!("skipped (the mask part): fewer than 2 allowed CPUs");
    }
    let (inside, outside) = (allowed[0], allowed[1]);
    let out = Command::new("taskset")
        .args(["-c", &inside.to_string(), BIN])
        .args(["--cpu", &outside.to_string(), "--duration", "0.1"])
        .output();
    let Ok(out) = out else {
        return eprintln!("skipped (the mask part): no taskset");
    };
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("not in this process's affinity mask"),
        "{stderr}"
    );
}

#[test]
fn a_negative_number_is_refused_as_the_options_value() {
    // not an unknown flag for which clap suggested `-- -1` (issue 30): the
    // option's bad value, exit 2, with what a valid one is
    for (args, option, valid) in [
        (
            &["--cpu", "-1", "--duration", "1"][..],
            "--cpu",
            "not a CPU number: an integer, 0 or more",
        ),
        (
            &["--cpu", "0", "--duration", "-2"],
            "--duration",
            "not a number of seconds in (0, 86400]",
        ),
        (
            &["--cpu", "0", "--duration", "1", "--threshold-ns", "-5"],
            "--threshold-ns",
            "not a number of ns in (0, 1e9]",
        ),
    ] {
        let out = victim(args);
        testutil::refuses_negative(&out, option, valid);
    }
}

#[test]
fn sigint_stops_the_run_and_it_still_writes() {
    // the first allowed CPU: the short run (in parallel) spins on the last
    let Some(&cpu) = rbench::cpu::allowed_cpus().first() else {
        return eprintln!("skipped: no CPU this process may run on");
    };
    let json = tmp("stopped.json");
    let child = Command::new(BIN)
        .args(["--cpu", &cpu.to_string(), "--duration", "30"])
        .args(["--json", json.to_str().unwrap()])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // past the 150 ms calibration, into the measurement
    std::thread::sleep(Duration::from_millis(700));
    // SAFETY: a signal to our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let started = std::time::Instant::now();
    let out = child.wait_with_output().unwrap();
    assert!(started.elapsed() < Duration::from_secs(5), "it stopped");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("stopped early by SIGINT"), "{stderr}");
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(doc["stopped_by"], "SIGINT");
    let wall = doc["total"]["wall_ns"].as_u64().unwrap();
    assert!(wall > 100_000_000 && wall < 5_000_000_000, "wall {wall} ns");
    check_stats(&doc["total"]);
}
