//! The stop signals of the binaries (raplbench-sample, -interfere,
//! -victim). SIGINT, SIGTERM and SIGCHLD stay blocked in every thread
//! ([`take`]); one thread takes them with sigtimedwait ([`wait`],
//! [`watch`]), which unblocks and waits in one system call: a signal that
//! arrives just before the wait is still pending and ends it at once (a
//! flag set by a handler and checked before sleeping loses a signal that
//! lands between the check and the sleep). A child inherits the blocked
//! mask: spawn it through [`crate::child::default_signals`].

use nix::sys::signal::{
    pthread_sigmask, sigaction, SaFlags, SigAction, SigHandler, SigSet, SigmaskHow, Signal,
};
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

use crate::clock::{monotonic_ns, timespec};

/// The first stop signal taken, 0 before.
static RECEIVED: AtomicI32 = AtomicI32::new(0);

extern "C" fn ignore(_signal: libc::c_int) {}

fn waited_signals() -> SigSet {
    SigSet::from_iter([Signal::SIGINT, Signal::SIGTERM, Signal::SIGCHLD])
}

/// Installs a handler for SIGINT and SIGTERM (never run while they are
/// blocked; it only replaces a SIG_IGN inherited from the parent, as a
/// script's background job has), and SIGCHLD's default disposition (an
/// inherited SIG_IGN would reap a command before waitpid sees its exit
/// status).
fn install() -> nix::Result<()> {
    let action = SigAction::new(
        SigHandler::Handler(ignore),
        SaFlags::empty(),
        SigSet::empty(),
    );
    for signal in [Signal::SIGINT, Signal::SIGTERM] {
        // SAFETY: the handler does nothing.
        unsafe { sigaction(signal, &action) }?;
    }
    let default = SigAction::new(SigHandler::SigDfl, SaFlags::empty(), SigSet::empty());
    // SAFETY: the default disposition, no handler.
    unsafe { sigaction(Signal::SIGCHLD, &default) }?;
    Ok(())
}

/// Blocks SIGINT, SIGTERM and SIGCHLD in the calling thread, then
/// [`install`]s: call it before spawning threads, which inherit the mask,
/// so that no stop signal reaches the handler and is lost.
pub fn take() -> Result<(), String> {
    pthread_sigmask(SigmaskHow::SIG_BLOCK, Some(&waited_signals()), None).ok();
    install().map_err(|e| format!("cannot install signal handlers: {e}"))
}

/// "SIGINT", "SIGTERM" (what a document's `stopped_by` says).
pub fn name(signal: i32) -> String {
    match signal {
        libc::SIGINT => "SIGINT".into(),
        libc::SIGTERM => "SIGTERM".into(),
        s => format!("signal {s}"),
    }
}

/// While `running()`, takes the stop signals, looking at `running` every
/// `poll_ns`: the first sets `stop`, and is returned.
pub fn watch(poll_ns: u64, running: impl Fn() -> bool, stop: &AtomicBool) -> Option<i32> {
    let mut first = None;
    while running() {
        if let Woken::Stop(s) = wait(Some(monotonic_ns() + poll_ns)) {
            first.get_or_insert(s);
            stop.store(true, Ordering::SeqCst);
        }
    }
    first
}

/// What ended a wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Woken {
    /// SIGINT or SIGTERM (also recorded: `received` returns it).
    Stop(i32),
    /// SIGCHLD: a child changed state.
    Child,
    /// The deadline passed.
    Deadline,
}

/// Waits until a stop signal, a SIGCHLD or `deadline_ns` (CLOCK_MONOTONIC;
/// None: no deadline), whichever comes first. The signals must be blocked
/// in every thread ([`take`]).
pub fn wait(deadline_ns: Option<u64>) -> Woken {
    let set = waited_signals();
    loop {
        let timeout = match deadline_ns {
            None => None,
            Some(deadline) => {
                let now = monotonic_ns();
                if now >= deadline {
                    return Woken::Deadline;
                }
                Some(timespec(deadline - now))
            }
        };
        // SAFETY: set is a valid sigset; info may be null; timeout is valid or null.
        let sig = unsafe {
            libc::sigtimedwait(
                set.as_ref(),
                std::ptr::null_mut(),
                timeout.as_ref().map_or(std::ptr::null(), |t| t as *const _),
            )
        };
        match sig {
            libc::SIGCHLD => return Woken::Child,
            s if s == libc::SIGINT || s == libc::SIGTERM => {
                let _ = RECEIVED.compare_exchange(0, s, Ordering::SeqCst, Ordering::SeqCst);
                return Woken::Stop(s);
            }
            _ => {} // EAGAIN (the deadline: checked above) or EINTR: wait again
        }
    }
}

/// The stop signal received, if any: one taken by a wait, or one pending
/// now (taken here, so that no window starts after it).
pub fn received() -> Option<i32> {
    if RECEIVED.load(Ordering::SeqCst) == 0 {
        let stop = SigSet::from_iter([Signal::SIGINT, Signal::SIGTERM]);
        // SAFETY: valid set and timeout; polls without waiting.
        let s = unsafe { libc::sigtimedwait(stop.as_ref(), std::ptr::null_mut(), &timespec(0)) };
        if s > 0 {
            let _ = RECEIVED.compare_exchange(0, s, Ordering::SeqCst, Ordering::SeqCst);
        }
    }
    match RECEIVED.load(Ordering::SeqCst) {
        0 => None,
        s => Some(s),
    }
}
