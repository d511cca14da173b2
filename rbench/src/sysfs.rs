//! Small helpers for sysfs and procfs: their one-value text files, the names in a directory.

use std::path::Path;

/// The first line of a file, without its newline; None if it cannot be read
/// or is empty (like ubench's read_line).
pub(crate) fn read_first_line(path: impl AsRef<Path>) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    let line = text.lines().next()?;
    Some(line.to_string())
}

/// The names of the entries of directory `dir`; empty if it cannot be read.
pub(crate) fn entry_names(dir: impl AsRef<Path>) -> impl Iterator<Item = String> {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .filter_map(|e| Some(e.ok()?.file_name().to_string_lossy().into_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_first_line_only() {
        let dir = crate::testutil::TempDir::new("sysfs");
        let file = dir.path().join("name");
        std::fs::write(&file, "package-0\nsecond\n").unwrap();
        assert_eq!(read_first_line(&file).as_deref(), Some("package-0"));
        std::fs::write(&file, "").unwrap();
        assert_eq!(read_first_line(&file), None);
        assert_eq!(read_first_line(dir.path().join("missing")), None);
    }
}
