//! raplbench-sample --mechanism kernel end to end where the ksample module
//! cannot run (these VMs have no module support): on a missing module and
//! on a fixture of its control file (RAPLBENCH_KSAMPLE_ROOT), the messages,
//! the exit statuses, and that every start is followed by a stop. The
//! drain itself is tested beside its code; the module's QEMU boot test runs
//! this binary against the real files.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

#[path = "../src/testutil.rs"]
#[allow(dead_code)]
mod testutil;

const BIN: &str = env!("CARGO_BIN_EXE_raplbench-sample");

/// ksample.h's example of the control file, one package.
const CONTROL: &str = "# ksample 1
state: stopped
mode: read
rate_hz: 0
record_size: 88
ring_records: 16384
packages: 1
package 0 cpu 0 unit_msr 0x606 unit 0xa0e03 msrs 0x611,0x639 faulting 0x64d
counters 0 fired 0 missed 0 overruns 0 read_faults 0 busy_ns 0 max_busy_ns 0 next_seq 0 queued 0
";

fn dir(name: &str) -> PathBuf {
    static DIR: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    let d = DIR
        .get_or_init(|| testutil::fresh_dir("raplbench-sample-kernel"))
        .join(name);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn sample(root: &Path, args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .env("RAPLBENCH_KSAMPLE_ROOT", root)
        .output()
        .expect("run raplbench-sample")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A fixture of the module's files: the control text and no record.
fn fixture(name: &str) -> PathBuf {
    let root = dir(name);
    std::fs::write(root.join("control"), CONTROL).unwrap();
    std::fs::write(root.join("records"), "").unwrap();
    root
}

#[test]
fn a_missing_module_exits_2_saying_how_to_load_it() {
    let root = dir("absent");
    for args in [
        &["--mechanism", "kernel", "--duration", "1"][..],
        &[
            "--mechanism",
            "kernel",
            "--report",
            "/dev/null",
            "--duration",
            "1",
        ],
    ] {
        let out = sample(&root, args);
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        assert_eq!(
            stderr(&out),
            format!(
                "raplbench-sample: the ksample module is not loaded ({}/control missing): load it \
                 with `kbench/load ksample` as root (needs a kernel with module support and its \
                 headers)\n",
                root.display()
            )
        );
    }
}

#[test]
fn list_names_what_the_module_reads_and_stops_its_probe() {
    let root = fixture("list");
    let out = sample(&root, &["--list", "--mechanism", "kernel"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 4, "{text}");
    let pkg = lines[1];
    for part in [
        "kernel ",
        "package-0/package",
        &format!(
            "rdmsr 0x611 in the ksample hrtimer on CPU 0 ({}/records)",
            root.display()
        ),
        "6.103515625e-5", // ESU 14
    ] {
        assert!(pkg.contains(part), "{part}: {pkg}");
    }
    assert!(lines[2].contains("package-0/core"), "{}", lines[2]);
    assert!(
        lines[3].ends_with(
            "unavailable: rdmsr 0x64d faults on this CPU (EIO): this model does not implement it"
        ),
        "{}",
        lines[3]
    );
    // the probe started the module's timers (a fixture cannot run them:
    // its control file then holds the command, not the state) and stopped them
    assert!(pkg.contains("unavailable: "), "{pkg}");
    assert_eq!(
        std::fs::read_to_string(root.join("control")).unwrap(),
        "stop\n"
    );
}

#[test]
fn a_module_that_cannot_be_probed_exits_2_and_is_stopped() {
    let root = fixture("probe");
    let out = sample(&root, &["--mechanism", "kernel", "--duration", "1"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("/control: first line 'start 1000', not '# ksample 1'"),
        "{}",
        stderr(&out)
    );
    assert_eq!(
        std::fs::read_to_string(root.join("control")).unwrap(),
        "stop\n"
    );
}

/// Run by `make test` as an unprivileged user (root opens any file).
#[test]
fn an_unreadable_control_file_says_it_needs_root() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        eprintln!("skipped: root opens a mode-0 file anyway");
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    let root = fixture("denied");
    std::fs::set_permissions(root.join("control"), std::fs::Permissions::from_mode(0o000)).unwrap();
    let out = sample(&root, &["--mechanism", "kernel", "--duration", "1"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).ends_with(
            "/control: Permission denied: the ksample files are root's and opening them needs \
             CAP_SYS_RAWIO: run as root\n"
        ),
        "{}",
        stderr(&out)
    );
}
