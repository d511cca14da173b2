//! Path "powercap": reading a zone's energy_uj, the way energy tools read
//! RAPL through the powercap framework (ubench/paths/powercap.cc), kept open
//! or opened at every read ([`PowercapMode`]), parsing the decimal text.
//!
//! Reading energy_uj of an MSR-backed zone makes the driver read the MSR on
//! the package's lead CPU (an IPI when the reader runs elsewhere). Which
//! files to read, the zones or a stand-in where there is none, is
//! discovery's ([`crate::discovery::powercap_counters`]); this module opens
//! and reads them.

mod energy_uj;

pub use energy_uj::parse_energy_uj;

use std::ffi::{CString, OsStr};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::Path;

use nix::errno::Errno;

use crate::{CounterSource, Domain, Error};

/// Bytes read per pread: a u64 in decimal is at most 20 digits plus newline.
const READ_BYTES: usize = 32;

/// How a powercap file is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PowercapMode {
    /// Kept open; one pread at offset 0 per read.
    Pread,
    /// Opened, read and closed at every read, as most tools do.
    OpenReadClose,
}

impl PowercapMode {
    /// The op id of the results schema: "pread" or "open-read-close".
    pub fn op(self) -> &'static str {
        match self {
            PowercapMode::Pread => "pread",
            PowercapMode::OpenReadClose => "open-read-close",
        }
    }
}

/// One counter file and the domain it measures.
#[derive(Debug, Clone, PartialEq)]
pub struct CounterFile {
    /// The file (energy_uj, or the stand-in).
    pub path: String,
    /// What it measures.
    pub domain: Domain,
}

/// Why `path` did not open, `errno` said: for an energy_uj file denied,
/// that it is root-only and what to do; for anything else (the stand-in
/// file, another errno) `<path>: <strerror text>` (ubench's
/// powercap_open_error, word for word).
pub fn open_error(path: &str, errno: Errno) -> Error {
    let energy_uj = Path::new(path).file_name() == Some(OsStr::new("energy_uj"));
    match errno {
        Errno::EACCES | Errno::EPERM if energy_uj => Error::PowercapPermission {
            path: path.to_string(),
        },
        errno => Error::Os {
            what: path.to_string(),
            errno,
        },
    }
}

/// Opens `path` read-only and close-on-exec (a `-- COMMAND` child must not
/// inherit a descriptor of a root-only energy file: CVE-2020-8694), as
/// ubench does; the error says what to do.
fn open_counter_file(path: &CString, display: &str) -> Result<OwnedFd, Error> {
    // SAFETY: `path` is a valid NUL-terminated string.
    let fd = unsafe { libc::open(path.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(open_error(display, Errno::last()));
    }
    // SAFETY: `fd` was just opened and is owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Why `path` cannot be opened for reading, or None if it can.
pub fn unreadable_reason(path: &str) -> Option<Error> {
    let c_path = CString::new(path).ok()?;
    open_counter_file(&c_path, path).err()
}

/// One pread of the file at offset 0, parsed.
fn read_value(fd: &OwnedFd, path: &str) -> Result<u64, Error> {
    let mut buf = [0u8; READ_BYTES];
    // SAFETY: `buf` is valid for READ_BYTES bytes.
    let n = unsafe { libc::pread(fd.as_raw_fd(), buf.as_mut_ptr().cast(), READ_BYTES, 0) };
    if n < 0 {
        return Err(Error::Os {
            what: format!("{path}: read failed"),
            errno: Errno::last(),
        });
    }
    parse_energy_uj(&buf[..n as usize]).map_err(|found| Error::NotDecimal {
        path: path.to_string(),
        found,
    })
}

/// An open counter file.
struct OpenFile {
    /// The path, for errors.
    path: String,
    /// The path for open(2), built once.
    c_path: CString,
    /// The kept-open descriptor ([`PowercapMode::Pread`] only).
    fd: Option<OwnedFd>,
}

/// Reads powercap energy_uj files (or the stand-in) in one of the two modes.
pub struct PowercapSource {
    /// The files, in domain order.
    files: Vec<OpenFile>,
    /// What each file measures.
    domains: Vec<Domain>,
}

impl PowercapSource {
    /// Opens `files` (checking that each can be opened, in both modes).
    pub fn open(files: &[CounterFile], mode: PowercapMode) -> Result<Self, Error> {
        let mut opened = Vec::with_capacity(files.len());
        for file in files {
            let c_path = CString::new(file.path.as_str()).map_err(|_| {
                Error::Unavailable(format!("{}: path contains a NUL byte", file.path))
            })?;
            let fd = open_counter_file(&c_path, &file.path)?;
            opened.push(OpenFile {
                path: file.path.clone(),
                c_path,
                fd: (mode == PowercapMode::Pread).then_some(fd),
            });
        }
        Ok(PowercapSource {
            files: opened,
            domains: files.iter().map(|f| f.domain.clone()).collect(),
        })
    }
}

impl CounterSource for PowercapSource {
    fn domains(&self) -> &[Domain] {
        &self.domains
    }

    fn read(&mut self, out: &mut [u64]) -> Result<(), Error> {
        for (file, value) in self.files.iter().zip(out.iter_mut()) {
            *value = match &file.fd {
                Some(fd) => read_value(fd, &file.path)?,
                None => {
                    let fd = open_counter_file(&file.c_path, &file.path)?;
                    read_value(&fd, &file.path)? // fd is closed here
                }
            };
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::discovery::POWERCAP_STAND_IN_FILE as STAND_IN_FILE;
    use crate::testutil::{testdata_sys, TempDir};

    /// The energy_uj files of the zones `ids` under `root`, opened in `mode`.
    fn open_zones(root: &Path, ids: &[&str], mode: PowercapMode) -> Result<PowercapSource, Error> {
        let files: Vec<CounterFile> = ids
            .iter()
            .map(|id| CounterFile {
                path: root
                    .join(id)
                    .join("energy_uj")
                    .to_string_lossy()
                    .into_owned(),
                domain: Domain {
                    source: id.to_string(),
                    name: "energy".into(),
                    joules_per_unit: 1e-6,
                    max: u64::MAX,
                },
            })
            .collect();
        PowercapSource::open(&files, mode)
    }

    #[test]
    fn reads_every_fixture_zone_in_both_modes() {
        let root = testdata_sys().join("class/powercap");
        let ids = [
            "intel-rapl:0",
            "intel-rapl:0:0",
            "intel-rapl:0:1",
            "intel-rapl:1",
            "intel-rapl-mmio:0",
        ];
        for mode in [PowercapMode::Pread, PowercapMode::OpenReadClose] {
            let mut source = open_zones(&root, &ids, mode).unwrap();
            assert_eq!(source.stand_in(), None);
            let kept_open = source.files.iter().map(|f| f.fd.is_some());
            assert!(kept_open.eq([mode == PowercapMode::Pread; 5]));
            let mut out = [0u64; 5];
            source.read(&mut out).unwrap();
            assert_eq!(
                out,
                [
                    72_834_517_023,
                    38_120_931_876,
                    1_044_376_301,
                    120_385_540_131,
                    72_834_611_902
                ]
            );
        }
    }

    #[test]
    fn bad_counter_text_is_an_error_naming_the_file() {
        let dir = TempDir::new("powercap-bad");
        let zone = dir.path().join("intel-rapl:0");
        std::fs::create_dir(&zone).unwrap();
        std::fs::write(zone.join("energy_uj"), "").unwrap();
        let mut source = open_zones(dir.path(), &["intel-rapl:0"], PowercapMode::Pread).unwrap();
        let mut out = [0u64; 1];
        let path = zone.join("energy_uj").to_string_lossy().into_owned();
        assert_eq!(
            source.read(&mut out).unwrap_err().to_string(),
            format!("{path}: not a decimal counter value (empty)")
        );
        std::fs::write(zone.join("energy_uj"), "12x\n").unwrap();
        assert_eq!(
            source.read(&mut out).unwrap_err().to_string(),
            format!("{path}: not a decimal counter value (malformed: '12x\\n')")
        );
    }

    #[test]
    fn only_a_denied_energy_uj_is_said_to_be_root_only() {
        let zone = "/sys/class/powercap/intel-rapl:0/energy_uj";
        for errno in [Errno::EACCES, Errno::EPERM] {
            assert_eq!(
                open_error(zone, errno).to_string(),
                format!(
                    "{zone}: permission denied: energy_uj is readable by root only since \
                     Linux 5.10 (CVE-2020-8694); run as root or grant read access with a udev rule"
                )
            );
        }
        assert_eq!(
            open_error(STAND_IN_FILE, Errno::EACCES).to_string(),
            "/sys/class/net/lo/statistics/rx_bytes: Permission denied"
        );
        assert_eq!(
            open_error(STAND_IN_FILE, Errno::EPERM).to_string(),
            "/sys/class/net/lo/statistics/rx_bytes: Operation not permitted"
        );
        assert_eq!(
            open_error("/x/not_energy_uj", Errno::EACCES).to_string(),
            "/x/not_energy_uj: Permission denied"
        );
        assert_eq!(
            open_error(zone, Errno::ENOENT).to_string(),
            format!("{zone}: No such file or directory")
        );
    }

    #[test]
    fn unreadable_energy_uj_says_it_is_root_only() {
        // as root every file is readable: check the mapping through a file
        // that cannot be opened for another reason, and the message itself
        assert!(unreadable_reason("/nonexistent/energy_uj")
            .unwrap()
            .to_string()
            .contains("No such file"));
        let denied = Error::PowercapPermission {
            path: "/sys/class/powercap/intel-rapl:0/energy_uj".into(),
        };
        assert!(denied
            .to_string()
            .contains("readable by root only since Linux 5.10"));
    }
}
