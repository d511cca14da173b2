//! What a child process of the suite's binaries starts with: the signal
//! state of a fresh process, not the parent's ([`crate::signals`] blocks
//! the stop signals in every thread; Rust's runtime ignores SIGPIPE). A
//! child inherits the blocked mask and every ignored signal across fork
//! and exec (std::process::Command does not reset the mask), so a workload
//! started by `raplbench-sample -- COMMAND` would ignore a forwarded stop
//! signal (issue 30).

use std::os::unix::process::CommandExt;
use std::process::Command;

/// The signals the binaries touch: their dispositions are reset to
/// SIG_DFL in the child. (SIGCHLD ignored would make the child's own
/// children vanish unwaited; SIGPIPE ignored would turn `| head` into
/// EPIPE errors.)
pub const RESET_SIGNALS: [libc::c_int; 4] =
    [libc::SIGINT, libc::SIGTERM, libc::SIGCHLD, libc::SIGPIPE];

/// Makes `command`'s child start with no signal blocked and the default
/// disposition of [`RESET_SIGNALS`], whatever the calling thread's mask
/// and the process's dispositions are.
pub fn default_signals(command: &mut Command) -> &mut Command {
    // SAFETY: between fork and exec the closure calls only signal(),
    // sigemptyset() and sigprocmask(), which are async-signal-safe, and
    // builds an io::Error from errno (no allocation). The dispositions are
    // reset before the mask is emptied: a signal already pending (a stop
    // forwarded at once) must meet SIG_DFL, not the parent's handler,
    // which fork keeps until exec.
    unsafe {
        command.pre_exec(|| {
            for signal in RESET_SIGNALS {
                if libc::signal(signal, libc::SIG_DFL) == libc::SIG_ERR {
                    return Err(std::io::Error::last_os_error());
                }
            }
            let mut empty = std::mem::MaybeUninit::<libc::sigset_t>::uninit();
            if libc::sigemptyset(empty.as_mut_ptr()) != 0
                || libc::sigprocmask(libc::SIG_SETMASK, empty.as_ptr(), std::ptr::null_mut()) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// SigBlk and SigIgn of the child `command` (cat) as it reads its
    /// /proc/self/status.
    fn child_masks(command: &mut Command) -> (u64, u64) {
        let out = command.arg("/proc/self/status").output().expect("run cat");
        let text = String::from_utf8(out.stdout).unwrap();
        let field = |name: &str| {
            let line = text.lines().find(|l| l.starts_with(name)).expect(name);
            u64::from_str_radix(line.split_whitespace().nth(1).unwrap(), 16).unwrap()
        };
        (field("SigBlk:"), field("SigIgn:"))
    }

    #[test]
    fn the_child_starts_with_no_signal_blocked_or_ignored() {
        // as the binaries do: SIGINT and SIGTERM blocked (in a thread of
        // its own: the mask is per thread) and SIGINT ignored (for the
        // whole process, put back after; no test sends it a SIGINT, and
        // SIGCHLD is left alone: ignoring it would break other tests' waits)
        let bit = |s: libc::c_int| 1u64 << (s - 1);
        // SAFETY: setting a disposition; the old one is restored below.
        let old = unsafe { libc::signal(libc::SIGINT, libc::SIG_IGN) };
        let masks = std::thread::spawn(|| {
            // SAFETY: a valid set; this thread's mask only.
            unsafe {
                let mut set = std::mem::MaybeUninit::<libc::sigset_t>::uninit();
                libc::sigemptyset(set.as_mut_ptr());
                libc::sigaddset(set.as_mut_ptr(), libc::SIGINT);
                libc::sigaddset(set.as_mut_ptr(), libc::SIGTERM);
                libc::pthread_sigmask(libc::SIG_BLOCK, set.as_ptr(), std::ptr::null_mut());
            }
            child_masks(default_signals(&mut Command::new("cat")))
        })
        .join();
        // SAFETY: the disposition saved above.
        unsafe { libc::signal(libc::SIGINT, old) };
        let (blk, ign) = masks.unwrap();
        assert_eq!(blk, 0, "SigBlk {blk:x}");
        for s in RESET_SIGNALS {
            assert_eq!(ign & bit(s), 0, "signal {s} ignored: SigIgn {ign:x}");
        }
    }
}
