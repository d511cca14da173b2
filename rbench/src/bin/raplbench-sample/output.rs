//! The --output and --report files: written beside their final name and
//! renamed over it once complete and on disk (fsync), so that a run that
//! dies never leaves a truncated file where a complete one was, and a
//! reader never sees half a report. A path that is not a regular file
//! (/dev/stdout, a FIFO) is written in place: there is nothing to rename.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// An output being written.
pub struct OutFile {
    file: File,
    /// (the partial file, the final name) when written beside it.
    rename: Option<(PathBuf, PathBuf)>,
}

/// The partial file of `dest`: hidden, in the same directory (a rename
/// within one file system is atomic), named after the process.
pub fn partial_path(dest: &Path) -> PathBuf {
    let name = dest
        .file_name()
        .map_or_else(|| "output".into(), |n| n.to_string_lossy());
    dest.with_file_name(format!(".{name}.{}.partial", std::process::id()))
}

impl OutFile {
    /// Opens `dest` for writing (close-on-exec: a COMMAND run under the
    /// sampler does not inherit it).
    pub fn create(dest: &Path) -> io::Result<OutFile> {
        let special = std::fs::metadata(dest).is_ok_and(|m| !m.is_file());
        let rename = (!special).then(|| (partial_path(dest), dest.to_path_buf()));
        let file = OpenOptions::new()
            .write(true)
            .create_new(rename.is_some())
            .custom_flags(libc::O_CLOEXEC)
            .open(rename.as_ref().map_or(dest, |(partial, _)| partial))?;
        Ok(OutFile { file, rename })
    }

    /// A second handle on the same open file (the CSV writer's).
    pub fn handle(&self) -> io::Result<File> {
        self.file.try_clone()
    }

    /// The file as written so far.
    pub fn file(&mut self) -> &mut File {
        &mut self.file
    }

    /// Complete: on disk, then under its final name (the directory entry
    /// on disk too). Everything must have been written and flushed.
    pub fn commit(self) -> io::Result<()> {
        self.file.sync_all().or_else(ignore_unsupported)?;
        if let Some((partial, dest)) = &self.rename {
            std::fs::rename(partial, dest)?;
            let dir = match dest.parent() {
                Some(dir) if !dir.as_os_str().is_empty() => dir,
                _ => Path::new("."),
            };
            File::open(dir)
                .and_then(|d| d.sync_all())
                .or_else(ignore_unsupported)?;
        }
        Ok(())
    }

    /// Where the data is when the run fails before commit: the partial
    /// file is kept (never renamed over a complete one), for inspection.
    pub fn kept_at(&self) -> Option<&Path> {
        self.rename.as_ref().map(|(partial, _)| partial.as_path())
    }
}

/// fsync on what cannot be synced (a pipe, some special files): nothing to do.
fn ignore_unsupported(e: io::Error) -> io::Result<()> {
    match e.raw_os_error() {
        Some(libc::EINVAL) | Some(libc::EROFS) | Some(libc::ENOTSUP) => Ok(()),
        _ => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn dir(name: &str) -> PathBuf {
        crate::testutil::fresh_dir(&format!("raplbench-out-{name}"))
    }

    #[test]
    fn the_old_file_stays_whole_until_the_new_one_is_committed() {
        let d = dir("commit");
        let dest = d.join("run.csv");
        std::fs::write(&dest, "old, complete\n").unwrap();
        let mut out = OutFile::create(&dest).unwrap();
        out.file().write_all(b"new, half").unwrap();
        assert_eq!(std::fs::read_to_string(&dest).unwrap(), "old, complete\n");
        assert!(out.kept_at().unwrap().exists());
        out.file().write_all(b" and the rest\n").unwrap();
        out.commit().unwrap();
        assert_eq!(
            std::fs::read_to_string(&dest).unwrap(),
            "new, half and the rest\n"
        );
        assert!(!partial_path(&dest).exists());
    }

    #[test]
    fn an_output_that_is_never_committed_is_kept_beside_the_old_one() {
        let d = dir("kept");
        let dest = d.join("report.jsonl");
        std::fs::write(&dest, "old\n").unwrap();
        let mut out = OutFile::create(&dest).unwrap();
        out.file().write_all(b"partial").unwrap();
        let kept = out.kept_at().unwrap().to_path_buf();
        drop(out); // the run failed
        assert_eq!(std::fs::read_to_string(&dest).unwrap(), "old\n");
        assert_eq!(std::fs::read_to_string(&kept).unwrap(), "partial");
    }

    #[test]
    fn a_special_file_is_written_in_place() {
        let mut out = OutFile::create(Path::new("/dev/null")).unwrap();
        assert!(out.kept_at().is_none());
        out.file().write_all(b"x").unwrap();
        out.commit().unwrap();
    }
}
