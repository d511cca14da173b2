//! What the target CPU of a cross-CPU read is doing while the read is
//! timed (issue 34): a read that runs code on another CPU (an IPI: the msr
//! and cpuid devices, MSR-backed powercap zones, CPU-bound perf events)
//! costs what that CPU's state makes it cost. The states and their words
//! are results/schedule.json's "target_load"; ubench/target_load.cc sets up
//! the same ones for Google Benchmark.
//!
//! [`TargetLoad::start`] puts the target CPU in a state for as long as the
//! load lives: idle (nothing), ticking (a thread pinned there sleeps on a
//! timerfd at `tick_hz`, as a sampler's timer wakes it), busy (a thread
//! pinned there spins in user space, as a workload keeps it running).
//! It returns once the state holds (the thread is in its loop), so that no
//! timing starts before.

use std::fmt;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::cpu::pin_to_cpu;
use crate::Error;

/// A state of the target CPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TargetState {
    /// Nothing of the suite runs on it.
    Idle,
    /// A 1 kHz timer wakes it.
    Ticking,
    /// A user-space loop keeps it running.
    Busy,
}

impl TargetState {
    /// Every state, in the order the tables show them.
    pub const ALL: [TargetState; 3] = [TargetState::Idle, TargetState::Ticking, TargetState::Busy];

    /// Its name in results/schedule.json, the plan and the rows.
    pub fn name(self) -> &'static str {
        match self {
            TargetState::Idle => "idle",
            TargetState::Ticking => "ticking",
            TargetState::Busy => "busy",
        }
    }

    /// The state named `name`, or an error naming it.
    pub fn parse(name: &str) -> Result<TargetState, String> {
        TargetState::ALL
            .into_iter()
            .find(|s| s.name() == name)
            .ok_or_else(|| format!("'{name}' is no target state (idle, ticking, busy)"))
    }
}

impl fmt::Display for TargetState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What one read from another CPU makes its target CPU do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnTarget {
    /// It runs code there (an IPI): the msr and cpuid devices, MSR-backed
    /// powercap zones, CPU-bound perf events. Timed in every state of the run.
    Ipi,
    /// Nothing (package-scoped RAPL perf events): timed in the run's
    /// `no_ipi` states (idle; busy too in a full run, to show whether the
    /// state changes it anyway).
    Nothing,
    /// Nothing, but the suite's own program ticks there (the BPF program
    /// whose map the eBPF rows read, on its 1 kHz timer): the target is
    /// never idle. Timed ticking (by that program alone) for the run's idle,
    /// and busy where the run's `no_ipi` states have it.
    Ticks,
    /// The row reads no other CPU's counter (an instruction; the BPF
    /// program's tick rate): no state.
    Uncontrolled,
}

/// The target states a run times the cross-CPU rows in: `ipi`, where a
/// read runs code on the target; `no_ipi`, where it does not (its resting
/// state, idle, and in a full run busy as well, to show whether the state
/// changes it anyway). results/schedule.json's "target_states".
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunStates {
    /// The states of a row whose read runs code on the target.
    pub ipi: Vec<TargetState>,
    /// The states of a row whose read does not.
    pub no_ipi: Vec<TargetState>,
}

impl RunStates {
    /// bench-all's QUICK (`quick`) or full run's.
    pub fn of_bench_all(quick: bool) -> RunStates {
        let all = crate::schedule::schedules();
        let states = &all[if quick { "quick" } else { "full" }]["target_states"];
        let list = |key: &str| -> Vec<TargetState> {
            let names = states[key]
                .as_array()
                .expect("schedule.json: target_states");
            let name = |n: &serde_json::Value| {
                TargetState::parse(n.as_str().unwrap_or("")).expect("schedule.json: a state")
            };
            names.iter().map(name).collect()
        };
        RunStates {
            ipi: list("ipi"),
            no_ipi: list("no_ipi"),
        }
    }

    /// This process's run's (`RAPLBENCH_QUICK=1`: QUICK's).
    pub fn from_env() -> RunStates {
        RunStates::of_bench_all(crate::schedule::quick_from_env())
    }
}

/// The ticking state's rate: results/schedule.json's "target_load" "tick_hz".
pub fn tick_hz() -> u32 {
    let hz = crate::schedule::schedules()["target_load"]["tick_hz"].as_u64();
    hz.and_then(|hz| u32::try_from(hz).ok())
        .expect("schedule.json: target_load.tick_hz")
}

/// The target CPU held in a state; dropping it stops and joins its thread.
pub struct TargetLoad {
    /// Set to stop the thread.
    stop: Arc<AtomicBool>,
    /// The thread; None when idle.
    thread: Option<JoinHandle<()>>,
}

impl TargetLoad {
    /// Puts `cpu` in `state` (ticking at `tick_hz`); returns once it holds,
    /// or why it cannot (the thread cannot be pinned there, no timerfd).
    pub fn start(state: TargetState, cpu: usize, tick_hz: u32) -> Result<TargetLoad, Error> {
        let stop = Arc::new(AtomicBool::new(false));
        if state == TargetState::Idle {
            return Ok(TargetLoad { stop, thread: None });
        }
        let (ready, holds) = mpsc::channel::<Result<(), Error>>();
        let flag = Arc::clone(&stop);
        let thread = std::thread::Builder::new()
            .name(format!("target-{state}"))
            .spawn(move || {
                if let Err(e) = pin_to_cpu(cpu) {
                    let _ = ready.send(Err(Error::Unavailable(format!(
                        "the {state} target load: {e}"
                    ))));
                    return;
                }
                // the timer armed from the target CPU, as ubench arms it
                match state {
                    TargetState::Ticking => match periodic_timerfd(tick_hz) {
                        Ok(timer) => tick(&timer, &flag, ready),
                        Err(e) => drop(ready.send(Err(e))),
                    },
                    _ => spin(&flag, ready),
                }
            })
            .map_err(|e| {
                Error::Unavailable(format!("cannot start the {state} target load: {e}"))
            })?;
        let load = TargetLoad {
            stop,
            thread: Some(thread),
        };
        match holds.recv() {
            Ok(Ok(())) => Ok(load),
            Ok(Err(e)) => Err(e),
            Err(_) => Err(Error::Unavailable(format!(
                "the {state} target load ended before it started"
            ))),
        }
    }
}

impl Drop for TargetLoad {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join(); // ticking: within one period
        }
    }
}

/// Busy: spins until stopped, saying it runs once it does.
fn spin(stop: &AtomicBool, ready: mpsc::Sender<Result<(), Error>>) {
    let _ = ready.send(Ok(()));
    // nothing else: no PAUSE either (ubench's loop is the same; a PAUSE
    // loop may make a KVM guest's vCPU exit to the host)
    while !stop.load(Ordering::Relaxed) {}
}

/// Ticking: reads each expiry of `timer` until stopped, saying it ticks
/// after the first.
fn tick(timer: &OwnedFd, stop: &AtomicBool, ready: mpsc::Sender<Result<(), Error>>) {
    let mut ready = Some(ready);
    while !stop.load(Ordering::Relaxed) {
        let mut expirations = [0u8; 8];
        // SAFETY: reads 8 bytes into an 8-byte buffer from a timerfd we own.
        let n = unsafe { libc::read(timer.as_raw_fd(), expirations.as_mut_ptr().cast(), 8) };
        if n != 8 && std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
            if let Some(ready) = ready.take() {
                let e = std::io::Error::last_os_error();
                let _ = ready.send(Err(Error::Unavailable(format!(
                    "the ticking target load: timerfd read: {e}"
                ))));
            }
            return;
        }
        if let Some(ready) = ready.take() {
            let _ = ready.send(Ok(()));
        }
    }
}

/// A CLOCK_MONOTONIC timerfd firing every 1/`hz` s from now.
fn periodic_timerfd(hz: u32) -> Result<OwnedFd, Error> {
    let period = Duration::from_nanos(1_000_000_000 / u64::from(hz.max(1)));
    let unavailable = |what: &str| {
        let e = std::io::Error::last_os_error();
        Error::Unavailable(format!("the ticking target load: {what}: {e}"))
    };
    // SAFETY: plain syscall; the fd is owned below.
    let fd = unsafe { libc::timerfd_create(libc::CLOCK_MONOTONIC, libc::TFD_CLOEXEC) };
    if fd < 0 {
        return Err(unavailable("timerfd_create"));
    }
    // SAFETY: fd is a fresh descriptor nobody else owns.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let ts = libc::timespec {
        tv_sec: period.as_secs() as libc::time_t,
        tv_nsec: period.subsec_nanos() as libc::c_long,
    };
    let spec = libc::itimerspec {
        it_interval: ts,
        it_value: ts,
    };
    // SAFETY: a valid timerfd and itimerspec.
    if unsafe { libc::timerfd_settime(fd.as_raw_fd(), 0, &spec, std::ptr::null_mut()) } != 0 {
        return Err(unavailable("timerfd_settime"));
    }
    Ok(fd)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::allowed_cpus;
    use std::time::Instant;

    /// The CPU time of thread `tid` of this process, from its schedstat (ns).
    fn thread_cpu_ns(tid: i32) -> u64 {
        let text = std::fs::read_to_string(format!("/proc/self/task/{tid}/schedstat")).unwrap();
        text.split_whitespace().next().unwrap().parse().unwrap()
    }

    /// The tid of the load's thread (its name is "target-<state>").
    fn load_tid(state: TargetState) -> i32 {
        let name = format!("target-{state}");
        std::fs::read_dir("/proc/self/task")
            .unwrap()
            .filter_map(|e| e.ok())
            .find(|e| {
                std::fs::read_to_string(e.path().join("comm")).is_ok_and(|c| c.trim() == name)
            })
            .map(|e| e.file_name().to_string_lossy().parse().unwrap())
            .expect("the load's thread")
    }

    fn target() -> usize {
        *allowed_cpus().last().expect("an allowed CPU")
    }

    #[test]
    fn quick_times_idle_and_busy_and_a_full_run_every_state() {
        use TargetState::*;
        let (quick, full) = (
            RunStates::of_bench_all(true),
            RunStates::of_bench_all(false),
        );
        assert_eq!((quick.ipi, quick.no_ipi), (vec![Idle, Busy], vec![Idle]));
        assert_eq!(
            (full.ipi, full.no_ipi),
            (vec![Idle, Ticking, Busy], vec![Idle, Busy])
        );
        assert_eq!(tick_hz(), 1000);
    }

    #[test]
    fn names_parse_back_and_an_unknown_one_is_named() {
        for s in TargetState::ALL {
            assert_eq!(TargetState::parse(s.name()), Ok(s));
        }
        assert!(TargetState::parse("warm").unwrap_err().contains("'warm'"));
    }

    #[test]
    fn busy_runs_on_its_cpu_and_ticking_sleeps_between_ticks() {
        let cpu = target();
        let busy = TargetLoad::start(TargetState::Busy, cpu, 1000).unwrap();
        let tid = load_tid(TargetState::Busy);
        let (t0, c0) = (Instant::now(), thread_cpu_ns(tid));
        std::thread::sleep(Duration::from_millis(60));
        let busy_share = (thread_cpu_ns(tid) - c0) as f64 / t0.elapsed().as_nanos() as f64;
        drop(busy);
        let ticking = TargetLoad::start(TargetState::Ticking, cpu, 1000).unwrap();
        let tid = load_tid(TargetState::Ticking);
        let (t0, c0) = (Instant::now(), thread_cpu_ns(tid));
        std::thread::sleep(Duration::from_millis(60));
        let ticking_share = (thread_cpu_ns(tid) - c0) as f64 / t0.elapsed().as_nanos() as f64;
        let stopping = Instant::now();
        drop(ticking);
        assert!(
            stopping.elapsed() < Duration::from_millis(50),
            "a tick ends it"
        );
        // the test thread shares no CPU with the load only where there are two
        assert!(busy_share > 0.3, "busy ran {busy_share:.2} of the time");
        assert!(
            ticking_share < busy_share / 2.0,
            "ticking {ticking_share:.3} vs busy {busy_share:.3}"
        );
    }

    #[test]
    fn idle_starts_nothing_and_a_cpu_that_is_not_there_is_named() {
        let idle = TargetLoad::start(TargetState::Idle, 1 << 20, 1000).unwrap();
        assert!(idle.thread.is_none());
        let Err(e) = TargetLoad::start(TargetState::Busy, 1 << 20, 1000) else {
            panic!("pinned to a CPU that does not exist")
        };
        assert!(e.to_string().contains(&format!("CPU {}", 1 << 20)), "{e}");
    }
}
