//! Path "perf": read() of perf_event counters of the RAPL `power` PMU
//! (stand-in: the `msr` PMU's `tsc` event), one by one or as a group
//! ([`PerfMode`]), as ubench/paths/perf.cc.
//!
//! The events count on the package's designated CPU (the PMU's cpumask),
//! for all tasks (pid -1). perf_event_open is called directly: perf wrapper
//! crates set exclude_kernel by default, which the RAPL and msr PMUs reject.

mod events;
pub mod ring;

pub use events::{events_label, PerfEventSpec};

use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

use nix::errno::Errno;

use crate::sysfs::read_first_line;
use crate::{CounterSource, Domain, Error};

/// read_format: one read() returns `{nr, value[nr]}` for the whole group.
pub const PERF_FORMAT_GROUP: u64 = 1 << 3;
/// perf_event_attr.type of software events.
pub const PERF_TYPE_SOFTWARE: u32 = 1;
/// The cpu-clock software event (counts nanoseconds).
pub const PERF_COUNT_SW_CPU_CLOCK: u64 = 0;
/// perf_event_open flag: the fd is close-on-exec.
const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 1 << 3;

/// struct perf_event_attr up to clockid (PERF_ATTR_SIZE_VER3, 96 bytes):
/// the kernel takes `size` and treats the later fields as zero.
#[repr(C)]
#[derive(Default, Clone, Copy)]
struct PerfEventAttr {
    type_: u32,
    size: u32,
    config: u64,
    sample_period: u64,
    sample_type: u64,
    read_format: u64,
    /// disabled, inherit, ..., exclude_kernel, ...: all zero (counting,
    /// enabled) but where a sampling leader sets them (ring.rs).
    flags: u64,
    wakeup_events: u32,
    bp_type: u32,
    config1: u64,
    config2: u64,
    branch_sample_type: u64,
    sample_regs_user: u64,
    sample_stack_user: u32,
    /// The clock of PERF_SAMPLE_TIME where `flags` sets use_clockid.
    clockid: i32,
}

const _: () = assert!(std::mem::size_of::<PerfEventAttr>() == 96);

/// perf_event_open(attr, pid -1 (all tasks), cpu, group, CLOEXEC).
fn perf_event_open(
    attr: &PerfEventAttr,
    cpu: usize,
    group: Option<BorrowedFd<'_>>,
) -> Result<OwnedFd, Errno> {
    let group_fd = group.map_or(-1, |fd| fd.as_raw_fd());
    // SAFETY: `attr` is a valid perf_event_attr of `attr.size` bytes.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_perf_event_open,
            attr as *const PerfEventAttr,
            -1 as libc::pid_t,
            cpu as libc::c_int,
            group_fd,
            PERF_FLAG_FD_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(Errno::last());
    }
    // SAFETY: the kernel just returned this fd, owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as libc::c_int) })
}

/// Opens `spec` for counting on `cpu` (all tasks), in `group` (None: a new
/// group) with `read_format`, its error naming the event `name`. No
/// exclude_* bits.
pub fn open_counter(
    spec: &PerfEventSpec,
    name: &str,
    cpu: usize,
    group: Option<BorrowedFd<'_>>,
    read_format: u64,
) -> Result<OwnedFd, Error> {
    let attr = PerfEventAttr {
        type_: spec.type_,
        size: std::mem::size_of::<PerfEventAttr>() as u32,
        config: spec.config,
        read_format,
        ..Default::default()
    };
    perf_event_open(&attr, cpu, group).map_err(|errno| perf_open_error(errno, name))
}

/// A cpu-clock event on `cpu` that overflows every `period_ns` (the eBPF
/// fallback trigger).
pub fn open_cpu_clock(cpu: usize, period_ns: u64) -> Result<OwnedFd, Error> {
    let attr = PerfEventAttr {
        type_: PERF_TYPE_SOFTWARE,
        size: std::mem::size_of::<PerfEventAttr>() as u32,
        config: PERF_COUNT_SW_CPU_CLOCK,
        sample_period: period_ns, // cpu-clock counts nanoseconds
        ..Default::default()
    };
    perf_event_open(&attr, cpu, None).map_err(|errno| perf_open_error(errno, "cpu-clock"))
}

/// Why opening `name` failed, in words a person can act on.
pub fn perf_open_error(errno: Errno, name: &str) -> Error {
    match errno {
        Errno::EACCES | Errno::EPERM => Error::PerfDenied {
            event: name.to_string(),
            paranoid: read_first_line("/proc/sys/kernel/perf_event_paranoid")
                .unwrap_or_else(|| "?".into()),
        },
        Errno::ENOENT | Errno::EINVAL | Errno::EOPNOTSUPP => Error::PerfUnsupported {
            event: name.to_string(),
            errno,
        },
        errno => Error::Os {
            what: format!("perf_event_open({name}) failed"),
            errno,
        },
    }
}

/// How a [`PerfSource`] reads its events.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PerfMode {
    /// One read() of 8 bytes per event (op "read").
    EachEvent,
    /// One read() of the PERF_FORMAT_GROUP group (op "group-read").
    Group,
}

impl PerfMode {
    /// The op id of the results schema.
    pub fn op(self) -> &'static str {
        match self {
            PerfMode::EachEvent => "read",
            PerfMode::Group => "group-read",
        }
    }
}

/// Open perf events on one CPU, read one by one or as a group.
pub struct PerfSource {
    /// One fd per event; the first leads the group in [`PerfMode::Group`].
    fds: Vec<OwnedFd>,
    /// One by one, or as a group.
    mode: PerfMode,
    /// The group read's buffer {nr, value[nr]}, allocated once.
    group_buf: Vec<u64>,
    /// What each event measures.
    domains: Vec<Domain>,
    /// The events' label, for errors.
    label: String,
}

impl PerfSource {
    /// Opens `events` on `cpu` (as one group in [`PerfMode::Group`]).
    pub fn open(events: &[PerfEventSpec], cpu: usize, mode: PerfMode) -> Result<PerfSource, Error> {
        let group = mode == PerfMode::Group;
        let read_format = if group { PERF_FORMAT_GROUP } else { 0 };
        let mut fds: Vec<OwnedFd> = Vec::with_capacity(events.len());
        for event in events {
            let leader = fds.first().filter(|_| group).map(|fd| fd.as_fd());
            fds.push(open_counter(event, &event.name, cpu, leader, read_format)?);
        }
        let domains = events
            .iter()
            .map(|e| e.domain(format!("cpu{cpu}")))
            .collect();
        Ok(PerfSource {
            fds,
            mode,
            group_buf: vec![0; 1 + events.len()],
            domains,
            label: events_label(events),
        })
    }

    /// A read() of `buf` from `fd`, whole or an error.
    fn read_exact(fd: &OwnedFd, buf: &mut [u64], label: &str) -> Result<(), Error> {
        let bytes = std::mem::size_of_val(buf);
        // SAFETY: `buf` is valid for `bytes` bytes.
        let n = unsafe { libc::read(fd.as_raw_fd(), buf.as_mut_ptr().cast(), bytes) };
        if n != bytes as isize {
            let errno = if n < 0 { Errno::last() } else { Errno::EIO };
            return Err(Error::Os {
                what: format!("read() of {label} failed"),
                errno,
            });
        }
        Ok(())
    }
}

impl CounterSource for PerfSource {
    fn domains(&self) -> &[Domain] {
        &self.domains
    }

    fn read(&mut self, out: &mut [u64]) -> Result<(), Error> {
        match self.mode {
            PerfMode::EachEvent => {
                for (fd, value) in self.fds.iter().zip(out.iter_mut()) {
                    Self::read_exact(fd, std::slice::from_mut(value), &self.label)?;
                }
            }
            PerfMode::Group => {
                Self::read_exact(&self.fds[0], &mut self.group_buf, &self.label)?;
                let n = self.fds.len();
                out[..n].copy_from_slice(&self.group_buf[1..=n]);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn open_errors_say_what_to_do() {
        let denied = perf_open_error(Errno::EACCES, "power/energy-pkg/").to_string();
        assert!(
            denied.starts_with("perf_event_open(power/energy-pkg/) denied: perf_event_paranoid="),
            "{denied}"
        );
        let other = perf_open_error(Errno::EMFILE, "msr/tsc/").to_string();
        assert_eq!(
            other,
            "perf_event_open(msr/tsc/) failed: Too many open files"
        );
    }
}
