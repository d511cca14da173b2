//! The sampler without root (issue 14): a mechanism samples as an
//! unprivileged user given only the capabilities rbench/README.md lists for it,
//! and without one of them it stops at start-up (exit 2) naming every one the
//! README's table lists (issue 33: the messages and the table agree). `setpriv` (util-linux) drops to `nobody` with ambient
//! capabilities, so this runs only as root, and only for the mechanisms that
//! sample on this machine as root; otherwise it says why it skips.

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::{Command, Output};

#[path = "../src/testutil.rs"]
#[allow(dead_code)]
mod testutil;

const BIN: &str = env!("CARGO_BIN_EXE_raplbench-sample");

/// The sampler copied where `nobody` can run it (the build tree may not be
/// reachable to other users).
fn reachable_copy() -> PathBuf {
    let dir = testutil::fresh_dir("rbench-caps");
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let bin = dir.join("raplbench-sample");
    std::fs::copy(BIN, &bin).unwrap();
    std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
    bin
}

fn sample_args(mechanism: &str) -> [&str; 6] {
    [
        "--mechanism",
        mechanism,
        "--duration",
        "0.2",
        "--output",
        "/dev/null",
    ]
}

/// The sampler as `nobody` with exactly `caps` ("+perfmon,+bpf", or "-all").
fn as_nobody(bin: &PathBuf, caps: &str, mechanism: &str) -> Output {
    Command::new("setpriv")
        .args([
            "--reuid=nobody",
            "--regid=nogroup",
            "--clear-groups",
            &format!("--inh-caps={caps}"),
            &format!("--ambient-caps={caps}"),
        ])
        .arg(bin)
        .args(sample_args(mechanism))
        .output()
        .expect("running setpriv")
}

fn text(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// (mechanism, the capabilities it needs, a set lacking one of them). perf, perf-ring:
/// CPU-wide events need CAP_PERFMON unless perf_event_paranoid <= 0; ebpf:
/// loading the program needs CAP_BPF, its perf events CAP_PERFMON.
const NEEDS: [(&str, &str, &str); 4] = [
    ("perf", "+perfmon", "-all"),
    ("perf-ring", "+perfmon", "-all"),
    ("ebpf", "+bpf,+perfmon", "+perfmon"),
    ("ebpf", "+bpf,+perfmon", "+bpf"),
];

/// The capabilities rbench/README.md's "Privileges" table says `mechanism`
/// needs (the CAP_ names of its row's "needs" cell, alternatives in "(or
/// ...)" aside): what its refusal must name, so that the message and the
/// table agree.
fn documented_caps(mechanism: &str) -> Vec<String> {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md"))
        .expect("rbench/README.md");
    let row = readme
        .lines()
        .skip_while(|l| !l.starts_with("**Privileges.**"))
        .find(|l| l.starts_with(&format!("| `{mechanism}` |")))
        .unwrap_or_else(|| panic!("no row for {mechanism} in rbench/README.md's Privileges"));
    // what it needs, before any alternative "(or ...)"
    let needs = row.split('|').nth(2).unwrap().split("(or").next().unwrap();
    let caps: Vec<String> = needs
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| w.starts_with("CAP_"))
        .map(str::to_owned)
        .collect();
    assert!(!caps.is_empty(), "{mechanism}: no capability in {needs:?}");
    caps
}

#[test]
fn the_privileges_table_names_each_mechanisms_capabilities() {
    assert_eq!(documented_caps("perf"), ["CAP_PERFMON"]);
    assert_eq!(documented_caps("ebpf"), ["CAP_BPF", "CAP_PERFMON"]);
    assert_eq!(documented_caps("perf-ring"), ["CAP_PERFMON"]);
    assert_eq!(documented_caps("msr"), ["CAP_SYS_RAWIO"]);
}

#[test]
fn each_mechanism_samples_with_its_capabilities_and_names_the_one_it_lacks() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: needs root, to drop to nobody with chosen capabilities");
        return;
    }
    if Command::new("setpriv").arg("--version").output().is_err() {
        eprintln!("skipped: no setpriv (util-linux)");
        return;
    }
    let paranoid: i32 = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .ok()
        .and_then(|t| t.trim().parse().ok())
        .unwrap_or(2);
    let bin = reachable_copy();
    for (mechanism, caps, lacking) in NEEDS {
        let as_root = Command::new(&bin)
            .args(sample_args(mechanism))
            .output()
            .unwrap();
        if !as_root.status.success() {
            eprintln!(
                "{mechanism}: skipped, it cannot sample here even as root: {}",
                text(&as_root).trim()
            );
            continue;
        }
        let with_caps = as_nobody(&bin, caps, mechanism);
        assert!(
            with_caps.status.success(),
            "{mechanism} as nobody with {caps}: {}",
            text(&with_caps)
        );
        if mechanism.starts_with("perf") && paranoid <= 0 {
            eprintln!(
                "{mechanism}: perf_event_paranoid is {paranoid}: anyone may open CPU-wide events"
            );
            continue;
        }
        let without = as_nobody(&bin, lacking, mechanism);
        assert_eq!(
            without.status.code(),
            Some(2),
            "{mechanism} with {lacking}: {}",
            text(&without)
        );
        for named in documented_caps(mechanism) {
            assert!(
                text(&without).contains(&named),
                "{mechanism} with {lacking} does not name {named}, as rbench/README.md does: {}",
                text(&without)
            );
        }
    }
    let _ = std::fs::remove_dir_all(bin.parent().unwrap());
}
