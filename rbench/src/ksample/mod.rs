//! The ksample module's files (kbench/ksample.h): the in-kernel sampler of
//! Diamond & Stoico's Ref_Rapl_Kernel design. An hrtimer on each package's
//! lead CPU reads that package's energy MSRs and queues a record; user space
//! starts and stops it through /proc/ksample/control and drains the records
//! from /proc/ksample/records.
//!
//! The files behave as kbench/ksample.h says: a read of records consumes
//! whole records and ignores the file position, so one descriptor is kept
//! and read until it returns 0; a command is one write(2) to control,
//! opened with O_TRUNC as `echo stop > control` does (a fixture file takes
//! it too).

mod control;
mod record;

pub use control::{parse, value_slots, Mode, PackageCounters, PackageState, Status, FORMAT};
pub use record::{Record, MAX_VALUES, RECORD_SIZE};
#[cfg(test)]
pub(crate) use tests::TWO_PACKAGES;

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use nix::errno::Errno;

use crate::Error;

/// Records asked for per read(2): 100 ms of one package at 1 kHz in one
/// call, 8.6 KiB.
pub const READ_RECORDS: usize = 100;

/// The error of a failed open or read of `path`: the module missing, no
/// permission, or the errno.
fn file_error(path: &Path, e: &std::io::Error, step: &str) -> Error {
    let shown = path.display().to_string();
    match Errno::from_raw(e.raw_os_error().unwrap_or(0)) {
        Errno::ENOENT => Error::KsampleMissing {
            path: path.with_file_name("control").display().to_string(),
        },
        errno @ (Errno::EACCES | Errno::EPERM) => Error::KsamplePermission { path: shown, errno },
        errno => Error::Os {
            what: format!("{shown}: {step} failed"),
            errno,
        },
    }
}

/// The first bytes a control file read asks for: 16 lines of a package
/// fit many times over.
const CONTROL_READ_BYTES: usize = 16 << 10;

/// The text of `path` from one pread at offset 0 into a buffer larger than
/// it (grown while a read fills it): it holds whether the file serves its
/// text from a position (seq_file) or whole on every read.
fn read_whole(path: &Path) -> std::io::Result<String> {
    use std::os::unix::fs::FileExt;
    let file = File::open(path)?;
    let mut buf = vec![0u8; CONTROL_READ_BYTES];
    loop {
        let n = file.read_at(&mut buf, 0)?;
        if n < buf.len() {
            buf.truncate(n);
            return String::from_utf8(buf)
                .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e));
        }
        buf.resize(buf.len() * 2, 0);
    }
}

/// The module's two files under one directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Module {
    root: PathBuf,
}

impl Module {
    /// The module whose files are under `root` (/proc/ksample, or a fixture).
    pub fn at(root: &Path) -> Module {
        Module {
            root: root.to_path_buf(),
        }
    }

    /// `<root>/control`.
    pub fn control_path(&self) -> PathBuf {
        self.root.join("control")
    }

    /// The control file, parsed; an error if it is missing, unreadable, not
    /// the format this reader knows, or its records are not RECORD_SIZE.
    pub fn status(&self) -> Result<Status, Error> {
        let path = self.control_path();
        let text = read_whole(&path).map_err(|e| file_error(&path, &e, "read"))?;
        let format = |why: String| Error::KsampleFormat {
            path: path.display().to_string(),
            why,
        };
        let status = parse(&text).map_err(format)?;
        if status.record_size != RECORD_SIZE {
            return Err(format(format!(
                "record_size {}, but this raplbench-sample reads {RECORD_SIZE}-byte records \
                 (build the module and the sampler from the same tree)",
                status.record_size
            )));
        }
        Ok(status)
    }

    /// Writes the command `text` ("start 1000", "null 1000", "stop") in
    /// one write(2).
    fn command(&self, text: &str) -> Result<(), Error> {
        let path = self.control_path();
        let mut file = OpenOptions::new()
            .write(true)
            .truncate(true)
            .open(&path)
            .map_err(|e| file_error(&path, &e, "open"))?;
        let written = file.write(format!("{text}\n").as_bytes());
        let errno = match written {
            Ok(n) if n == text.len() + 1 => return Ok(()),
            Ok(_) => Errno::EIO, // a short write of a one-line command
            Err(e) => Errno::from_raw(e.raw_os_error().unwrap_or(0)),
        };
        let shown = path.display().to_string();
        Err(match errno {
            // another process's timers run: only a start is refused so
            Errno::EBUSY if text != "stop" => Error::KsampleBusy { path: shown },
            Errno::EACCES | Errno::EPERM => Error::KsamplePermission { path: shown, errno },
            Errno::ENXIO => Error::Unavailable(format!(
                "{shown}: '{text}' refused (ENXIO): a package's lead CPU is offline; bring it \
                 online (echo 1 > /sys/devices/system/cpu/cpuN/online)"
            )),
            _ => Error::Os {
                what: format!("{shown}: write '{text}'"),
                errno,
            },
        })
    }

    /// Opens the records, then starts the timers in `mode` at `hz`; the
    /// guard stops them when it is dropped. The records are opened first:
    /// a start that cannot be drained is not made.
    pub fn start(&self, mode: Mode, hz: u32) -> Result<Running, Error> {
        let records = Records::open(&self.root.join("records"))?;
        let word = match mode {
            Mode::Read => "start",
            Mode::Null => "null",
        };
        self.command(&format!("{word} {hz}"))?;
        Ok(Running {
            module: self.clone(),
            records,
            stopped: false,
        })
    }
}

/// The records file, kept open, and the buffer it is read into.
pub struct Records {
    file: File,
    path: PathBuf,
    buf: Vec<u8>,
}

impl Records {
    fn open(path: &Path) -> Result<Records, Error> {
        let file = File::open(path).map_err(|e| file_error(path, &e, "open"))?;
        Ok(Records {
            file,
            path: path.to_path_buf(),
            buf: vec![0; READ_RECORDS * RECORD_SIZE],
        })
    }

    /// Reads every record queued now (until a read returns 0) onto the end
    /// of `out`; how many. Records read before an error stay in `out`.
    pub fn read_all(&mut self, out: &mut Vec<Record>) -> Result<usize, Error> {
        let before = out.len();
        loop {
            let n = match self.file.read(&mut self.buf) {
                Ok(0) => return Ok(out.len() - before),
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(file_error(&self.path, &e, "read")),
            };
            out.extend(
                self.buf[..n]
                    .chunks_exact(RECORD_SIZE)
                    .filter_map(Record::from_bytes),
            );
            if n % RECORD_SIZE != 0 {
                return Err(Error::KsampleFormat {
                    path: self.path.display().to_string(),
                    why: format!(
                        "a read returned {n} bytes, not whole {RECORD_SIZE}-byte records (build \
                         the module and the sampler from the same tree)"
                    ),
                });
            }
        }
    }
}

/// The module's timers, running: dropping it writes "stop" (on every
/// path: an error, a panic's unwinding, the end of a phase).
pub struct Running {
    module: Module,
    records: Records,
    stopped: bool,
}

impl Running {
    /// The records, to drain while it runs and after it stopped.
    pub fn records(&mut self) -> &mut Records {
        &mut self.records
    }

    /// The module.
    pub fn module(&self) -> &Module {
        &self.module
    }

    /// Stops the timers; what is queued stays readable.
    pub fn stop(&mut self) -> Result<(), Error> {
        self.stopped = true;
        self.module.command("stop")
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if !self.stopped {
            let _ = self.module.command("stop");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::TempDir;

    /// ksample.h's example, two packages, the second's unit faulting.
    pub(crate) const TWO_PACKAGES: &str = "# ksample 1
state: running
mode: read
rate_hz: 1000
record_size: 88
ring_records: 16384
packages: 2
package 0 cpu 0 unit_msr 0x606 unit 0xa0e03 msrs 0x611,0x639,0x641,0x619,0x64d faulting -
counters 0 fired 5012 missed 3 overruns 0 read_faults 0 busy_ns 2345678 max_busy_ns 2100 next_seq 5012 queued 12
package 1 cpu 28 unit_msr 0x606 unit fault msrs - faulting 0x611,0x639
counters 1 fired 5011 missed 0 overruns 7 read_faults 2 busy_ns 1000 max_busy_ns 900 next_seq 5011 queued 0
";

    fn record(package: u16, seq: u64) -> Record {
        Record {
            seq,
            package,
            time_ns: 1000 + seq,
            nvalues: 1,
            ..Record::default()
        }
    }

    fn bytes(records: &[Record]) -> Vec<u8> {
        records
            .iter()
            .flat_map(|r| {
                // SAFETY: a Record is RECORD_SIZE bytes of plain integers.
                unsafe {
                    std::slice::from_raw_parts((r as *const Record).cast::<u8>(), RECORD_SIZE)
                }
                .to_vec()
            })
            .collect()
    }

    #[test]
    fn a_missing_control_file_says_how_to_load_the_module() {
        let root = TempDir::new("ksample-missing");
        let module = Module::at(&root.path().join("ksample"));
        let err = module.status().unwrap_err().to_string();
        assert_eq!(
            err,
            format!(
                "the ksample module is not loaded ({}/ksample/control missing): load it with \
                 `kbench/load ksample` as root (needs a kernel with module support and its headers)",
                root.path().display()
            )
        );
        // the records missing says the same: the module is what is missing
        let start = module.start(Mode::Read, 1000).err().unwrap().to_string();
        assert_eq!(start, err);
        let busy = Error::KsampleBusy {
            path: "/proc/ksample/control".into(),
        };
        assert!(busy
            .to_string()
            .contains("another process is sampling with the ksample module"));
        let denied = Error::KsamplePermission {
            path: "/proc/ksample/records".into(),
            errno: Errno::EPERM,
        };
        assert_eq!(
            denied.to_string(),
            "/proc/ksample/records: Operation not permitted: the ksample files are root's and \
             opening them needs CAP_SYS_RAWIO: run as root"
        );
    }

    #[test]
    fn reads_status_records_and_writes_commands_on_a_fixture() {
        let root = TempDir::new("ksample-files");
        let module = Module::at(root.path());
        std::fs::write(module.control_path(), TWO_PACKAGES).unwrap();
        assert_eq!(module.status().unwrap().packages.len(), 2);
        let wrong = TWO_PACKAGES.replace("record_size: 88", "record_size: 96");
        std::fs::write(module.control_path(), wrong).unwrap();
        let err = module.status().unwrap_err().to_string();
        assert!(
            err.contains("record_size 96, but this raplbench-sample reads 88-byte"),
            "{err}"
        );

        // 250 records: three reads of up to 100, then 0 (a fixture file
        // reads each once, as the module consumes them)
        let queued: Vec<Record> = (0..250).map(|i| record((i % 2) as u16, i)).collect();
        std::fs::write(root.path().join("records"), bytes(&queued)).unwrap();
        let mut running = module.start(Mode::Null, 250).unwrap();
        assert_eq!(
            std::fs::read_to_string(module.control_path()).unwrap(),
            "null 250\n"
        );
        let mut out = Vec::new();
        assert_eq!(running.records().read_all(&mut out).unwrap(), 250);
        assert_eq!(out, queued);
        assert_eq!(running.records().read_all(&mut out).unwrap(), 0);
        drop(running);
        assert_eq!(
            std::fs::read_to_string(module.control_path()).unwrap(),
            "stop\n"
        );
    }

    #[test]
    fn a_control_text_longer_than_the_first_read_is_read_whole() {
        let root = TempDir::new("ksample-long");
        let module = Module::at(root.path());
        let mut text = TWO_PACKAGES.to_string();
        while text.len() <= 2 * CONTROL_READ_BYTES {
            text += "padding: a key this reader skips\n";
        }
        std::fs::write(module.control_path(), &text).unwrap();
        assert_eq!(read_whole(&module.control_path()).unwrap(), text);
        assert_eq!(module.status().unwrap().packages.len(), 2);
    }

    #[test]
    fn a_torn_record_is_an_error_after_the_whole_ones() {
        let root = TempDir::new("ksample-torn");
        let module = Module::at(root.path());
        let mut b = bytes(&[record(0, 0)]);
        b.extend([0u8; 10]);
        std::fs::write(root.path().join("records"), b).unwrap();
        std::fs::write(module.control_path(), "").unwrap();
        let mut running = module.start(Mode::Read, 1000).unwrap();
        let mut out = Vec::new();
        let err = running
            .records()
            .read_all(&mut out)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("a read returned 98 bytes, not whole 88-byte records"),
            "{err}"
        );
        assert_eq!(out, [record(0, 0)]);
        running.stop().unwrap();
    }
}
