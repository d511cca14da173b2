//! SIGINT and SIGTERM: the handler only records the signal; the main thread
//! (the only one with the signals unblocked) wakes from its wait with EINTR,
//! forwards the signal to the command if there is one, and stops sampling.

use nix::sys::signal::{
    pthread_sigmask, sigaction, SaFlags, SigAction, SigHandler, SigSet, SigmaskHow, Signal,
};
use std::sync::atomic::{AtomicI32, Ordering};

static RECEIVED: AtomicI32 = AtomicI32::new(0);

extern "C" fn record(signal: libc::c_int) {
    RECEIVED.store(signal, Ordering::SeqCst); // async-signal-safe
}

fn stop_signals() -> SigSet {
    let mut set = SigSet::empty();
    set.add(Signal::SIGINT);
    set.add(Signal::SIGTERM);
    set
}

/// Installs the handler, without SA_RESTART so blocking waits return EINTR.
pub fn install() -> nix::Result<()> {
    let action = SigAction::new(
        SigHandler::Handler(record),
        SaFlags::empty(),
        SigSet::empty(),
    );
    for signal in [Signal::SIGINT, Signal::SIGTERM] {
        // SAFETY: the handler only stores into an atomic.
        unsafe { sigaction(signal, &action) }?;
    }
    Ok(())
}

/// Blocks SIGINT and SIGTERM in the calling thread (threads spawned while
/// they are blocked inherit the mask), so they reach the main thread.
pub fn block_in_this_thread() -> nix::Result<()> {
    pthread_sigmask(SigmaskHow::SIG_BLOCK, Some(&stop_signals()), None)
}

/// Unblocks them again in the calling thread.
pub fn unblock_in_this_thread() -> nix::Result<()> {
    pthread_sigmask(SigmaskHow::SIG_UNBLOCK, Some(&stop_signals()), None)
}

/// The signal received, if any.
pub fn received() -> Option<i32> {
    match RECEIVED.load(Ordering::SeqCst) {
        0 => None,
        s => Some(s),
    }
}
