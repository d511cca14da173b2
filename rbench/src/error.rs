//! The errors of rbench, each message naming the file (or event) and what to
//! do about it, in the words ubench uses, so a person reading a result row
//! knows how to make the path work.
//!
//! Constructing an error allocates (it copies the path); the read paths only
//! do that when a read fails, never on success.

use nix::errno::Errno;

/// What was wrong with the text of a counter file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BadText {
    /// Nothing but whitespace (or nothing at all) was read.
    #[error("empty")]
    Empty,
    /// Something other than digits followed by a newline; holds what was read.
    #[error("malformed: '{}'", .0.escape_debug())]
    Malformed(String),
}

/// Everything that can go wrong when discovering, opening or reading a counter.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A counter file (energy_uj, or its stand-in) did not hold a decimal number.
    #[error("{path}: not a decimal counter value ({found})")]
    NotDecimal {
        /// The file that was read.
        path: String,
        /// What was found instead.
        found: BadText,
    },

    /// energy_uj could not be opened for lack of permission.
    #[error(
        "{path}: permission denied: energy_uj is readable by root only since Linux 5.10 \
         (CVE-2020-8694); run as root or grant read access with a udev rule"
    )]
    PowercapPermission {
        /// The energy_uj file.
        path: String,
    },

    /// /dev/cpu/N/msr exists but this process may not read it.
    #[error("{path}: {}: needs root with CAP_SYS_RAWIO (and no kernel lockdown)", .errno.desc())]
    MsrPermission {
        /// The device.
        path: String,
        /// EPERM or EACCES.
        errno: Errno,
    },

    /// /dev/cpu/N/msr does not exist: the msr driver is not loaded or not built.
    #[error("{path} missing: load the msr module (modprobe msr; kernel needs CONFIG_X86_MSR)")]
    MsrMissing {
        /// The device that is missing.
        path: String,
    },

    /// The MSR is not implemented by this CPU model: rdmsr faults, the driver
    /// returns EIO (a fixture file returns a short read, reported the same).
    #[error("rdmsr {addr:#x} faults on this CPU (EIO): this model does not implement it")]
    MsrFault {
        /// The MSR address.
        addr: u32,
    },

    /// The per-CPU device of an offline CPU.
    #[error("{path}: CPU offline (ENXIO)")]
    CpuOffline {
        /// The device.
        path: String,
    },

    /// perf_event_open was refused for lack of privilege.
    #[error(
        "perf_event_open({event}) denied: perf_event_paranoid={paranoid} and no CAP_PERFMON: \
         run as root or set kernel.perf_event_paranoid=0"
    )]
    PerfDenied {
        /// The event, e.g. "power/energy-pkg/".
        event: String,
        /// The contents of /proc/sys/kernel/perf_event_paranoid ("?" if unreadable).
        paranoid: String,
    },

    /// perf_event_open failed with ENOENT, EINVAL or EOPNOTSUPP.
    #[error(
        "perf_event_open({event}) failed: {}: the event is not supported by this CPU or kernel",
        .errno.desc()
    )]
    PerfUnsupported {
        /// The event.
        event: String,
        /// The errno.
        errno: Errno,
    },

    /// Any other failed system call: `what` names the file or event and the step.
    #[error("{what}: {}", .errno.desc())]
    Os {
        /// E.g. "/sys/class/net/lo/statistics/rx_bytes: read failed".
        what: String,
        /// The errno.
        errno: Errno,
    },

    /// The mmapped slot of a CPU kept changing while it was copied.
    #[error("the mmapped slot of CPU {cpu} never settled (seqlock kept moving)")]
    SlotUnsettled {
        /// The CPU whose slot was read.
        cpu: usize,
    },

    /// The ksample module is not loaded: its control file is missing.
    #[error(
        "the ksample module is not loaded ({path} missing): load it with `kbench/load ksample` \
         as root (needs a kernel with module support and its headers)"
    )]
    KsampleMissing {
        /// The control file that is missing.
        path: String,
    },

    /// A ksample file exists but this process may not open it.
    #[error(
        "{path}: {}: the ksample files are root's and opening them needs CAP_SYS_RAWIO: run as \
         root",
        .errno.desc()
    )]
    KsamplePermission {
        /// The file.
        path: String,
        /// EPERM or EACCES.
        errno: Errno,
    },

    /// "start" refused with EBUSY: the module's timers run for a process
    /// that still lives (once it is gone, a start takes over).
    #[error(
        "{path}: start refused (EBUSY): another process is sampling with the ksample module \
         (its pid is the control file's owner_pid); wait for it to end, or stop it (echo stop > \
         {path})"
    )]
    KsampleBusy {
        /// The control file.
        path: String,
    },

    /// A ksample file does not say what this reader expects.
    #[error("{path}: {why}")]
    KsampleFormat {
        /// The file.
        path: String,
        /// What is wrong, naming the line or the size.
        why: String,
    },

    /// The path cannot run on this machine; the reason says why and what to do.
    #[error("{0}")]
    Unavailable(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_counter_text_names_the_file_and_what_was_found() {
        let empty = Error::NotDecimal {
            path: "/x/energy_uj".into(),
            found: BadText::Empty,
        };
        assert_eq!(
            empty.to_string(),
            "/x/energy_uj: not a decimal counter value (empty)"
        );
        let bad = Error::NotDecimal {
            path: "/x/energy_uj".into(),
            found: BadText::Malformed("12a4\n".into()),
        };
        assert_eq!(
            bad.to_string(),
            "/x/energy_uj: not a decimal counter value (malformed: '12a4\\n')"
        );
    }

    #[test]
    fn permission_messages_say_what_to_do() {
        let powercap = Error::PowercapPermission {
            path: "/sys/class/powercap/intel-rapl:0/energy_uj".into(),
        };
        let text = powercap.to_string();
        assert!(
            text.starts_with("/sys/class/powercap/intel-rapl:0/energy_uj: permission denied"),
            "{text}"
        );
        assert!(
            text.contains("CVE-2020-8694") && text.contains("udev rule"),
            "{text}"
        );

        let msr = Error::MsrPermission {
            path: "/dev/cpu/0/msr".into(),
            errno: Errno::EPERM,
        };
        assert_eq!(
            msr.to_string(),
            "/dev/cpu/0/msr: Operation not permitted: needs root with CAP_SYS_RAWIO (and no kernel lockdown)"
        );
    }

    #[test]
    fn missing_msr_device_says_which_module_to_load() {
        let missing = Error::MsrMissing {
            path: "/dev/cpu/0/msr".into(),
        };
        assert_eq!(
            missing.to_string(),
            "/dev/cpu/0/msr missing: load the msr module (modprobe msr; kernel needs CONFIG_X86_MSR)"
        );
        assert_eq!(
            Error::MsrFault { addr: 0x641 }.to_string(),
            "rdmsr 0x641 faults on this CPU (EIO): this model does not implement it"
        );
    }

    #[test]
    fn perf_denied_names_the_paranoid_setting() {
        let denied = Error::PerfDenied {
            event: "power/energy-pkg/".into(),
            paranoid: "2".into(),
        };
        assert_eq!(
            denied.to_string(),
            "perf_event_open(power/energy-pkg/) denied: perf_event_paranoid=2 and no CAP_PERFMON: \
             run as root or set kernel.perf_event_paranoid=0"
        );
        let unsupported = Error::PerfUnsupported {
            event: "msr/tsc/".into(),
            errno: Errno::ENOENT,
        };
        assert!(unsupported
            .to_string()
            .contains("No such file or directory: the event is not supported"));
    }

    #[test]
    fn unavailable_is_its_reason() {
        assert_eq!(
            Error::Unavailable("no RAPL here".into()).to_string(),
            "no RAPL here"
        );
    }
}
