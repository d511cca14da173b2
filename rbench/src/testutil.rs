//! Test helpers: temporary directories and the fixture trees under
//! ubench/testdata, shared with the C++ tests (and included by the
//! integration tests with `#[path]`).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

/// proptest's settings for `make test`: `cases` cases per property, the
/// same ones every run (a fixed seed), and no failure files in the tree.
pub(crate) fn fixed_cases(cases: u32) -> proptest::test_runner::Config {
    proptest::test_runner::Config {
        cases,
        failure_persistence: None,
        rng_seed: proptest::test_runner::RngSeed::Fixed(14),
        ..proptest::test_runner::Config::default()
    }
}

/// ubench/testdata/sys: copies of real powercap and PMU layouts.
pub(crate) fn testdata_sys() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../ubench/testdata/sys")
}

/// ubench/testdata/two-packages/sys: a 2-package machine (powercap zones,
/// a RAPL PMU with cpumask 0,2, the CPU topology).
pub(crate) fn two_packages_sys() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../ubench/testdata/two-packages/sys")
}

/// A fresh, empty directory `$TMPDIR/<name>-<uid>-<pid>`. The user id
/// keeps runs of two users apart (a root run's directory, left behind,
/// once met a later unprivileged run with the same pid: Permission
/// denied); what an earlier run of the same user and pid left is removed.
pub(crate) fn fresh_dir(name: &str) -> PathBuf {
    // SAFETY: geteuid has no preconditions.
    let uid = unsafe { libc::geteuid() };
    let dir = std::env::temp_dir().join(format!("{name}-{uid}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("creating a temporary directory");
    dir
}

/// A directory under $TMPDIR removed when dropped.
pub(crate) struct TempDir(PathBuf);

impl TempDir {
    /// A fresh, empty directory whose name contains `tag`.
    pub(crate) fn new(tag: &str) -> TempDir {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        TempDir(fresh_dir(&format!("rbench-{tag}-{n}")))
    }

    /// Where it is.
    pub(crate) fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A sparse file `<dev_root>/<cpu>/msr` with 8-byte values at the MSR
/// offsets, like the device.
pub(crate) fn write_msr_fixture(dev_root: &Path, cpu: usize, values: &[(u32, u64)]) {
    use std::os::unix::fs::FileExt;
    let dir = dev_root.join(cpu.to_string());
    std::fs::create_dir_all(&dir).unwrap();
    let file = std::fs::File::create(dir.join("msr")).unwrap();
    for &(addr, value) in values {
        file.write_all_at(&value.to_ne_bytes(), u64::from(addr))
            .unwrap();
    }
}

/// Copies the regular files of `from` (following symlinks) into `to`: a
/// fixture tree that a test may rewrite.
pub(crate) fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.path().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// Writes `uj` into an energy_uj file in place, 20 digits wide: a read
/// racing the write still sees digits and a newline.
pub(crate) fn rewrite_energy_uj(path: &Path, uj: u64) {
    use std::os::unix::fs::FileExt;
    let file = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    file.write_all_at(format!("{uj:020}\n").as_bytes(), 0)
        .unwrap();
}

/// `/proc/PID/stat`: (comm, ppid), None once the process is gone.
#[allow(dead_code)] // used by the integration tests only
pub(crate) fn proc_stat(pid: i32) -> Option<(String, i32)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (open, close) = (text.find('(')?, text.rfind(')')?);
    let ppid = text[close + 2..].split(' ').nth(1)?.parse().ok()?;
    Some((text[open + 1..close].to_string(), ppid))
}

/// The processes whose parent is `parent`.
#[allow(dead_code)] // used by the integration tests only
pub(crate) fn proc_children(parent: i32) -> Vec<i32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&p| proc_stat(p).is_some_and(|(_, pp)| pp == parent))
        .collect()
}

/// A negative value of a numeric option is that option's bad value (exit 2,
/// the option and its valid values named), not an unknown flag for which
/// clap suggested `-- -1` (issue 30).
#[allow(dead_code)] // used by the integration tests only
pub(crate) fn refuses_negative(out: &std::process::Output, option: &str, valid: &str) {
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{option}: {said}");
    assert!(
        said.contains(&format!("for '{option} <")),
        "{option}: {said}"
    );
    assert!(said.contains(valid), "{option}: {said}");
    assert!(!said.contains("-- -"), "{option}: {said}");
}
