//! Test helpers: temporary directories and the fixture trees under
//! ubench/testdata, shared with the C++ tests.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

/// ubench/testdata/sys: copies of real powercap and PMU layouts.
pub(crate) fn testdata_sys() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../ubench/testdata/sys")
}

/// A directory under $TMPDIR removed when dropped.
pub(crate) struct TempDir(PathBuf);

impl TempDir {
    /// A fresh, empty directory whose name contains `tag`.
    pub(crate) fn new(tag: &str) -> TempDir {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("rbench-{tag}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("creating a temporary directory");
        TempDir(dir)
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
