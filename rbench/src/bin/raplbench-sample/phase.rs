//! One phase (one window) of a run: the sampler (or its null twin) sampling
//! into the writer thread until its time, COMMAND or a stop signal ends it
//! (rbench/README.md, "Stop signals and exit status").
//!
//! The phase's clock and CPU time start once the producer runs (its timer
//! armed, its ring buffer attached), so neither the threads' start nor
//! loading the BPF program counts; its CPU time ends once the writer has
//! written the last sample.

use nix::sys::signal::{kill, Signal};
use nix::sys::wait::{WaitPidFlag, WaitStatus};
use nix::unistd::Pid;
use rbench::clock::monotonic_ns;
use rbench::discovery::{counter_cpus, Route};
use rbench::ebpf::{BpfConfig, BpfSampler};
use rbench::ksample::{value_slots, Mode, Module};
use rbench::perf::ring::{Design, GroupRing};
use rbench::signals;
use rbench::CounterSource;
use std::os::fd::OwnedFd;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::sync_channel;
use std::sync::{Arc, Barrier};

use crate::drain::ValueMap;
use crate::mechanism::{Opened, Sampler};
use crate::sample_times::SampleTimes;
use crate::ticker::TickerSetup;
use crate::writer::{cpu_now, CsvOut, ExtraCpu};
use crate::{batch, ebpf_drain, ksample_drain, perf_ring_drain, ticker, writer, Fail};

/// What one phase measured.
#[derive(Debug, Clone)]
pub struct Ran {
    /// CLOCK_MONOTONIC ns when the phase's clock started.
    pub start_ns: u64,
    /// Its wall time, ns: from start_ns until it was told to stop.
    pub wall_ns: u64,
    /// CPU ns of the process (and of the BPF callbacks) from start_ns until
    /// the last sample was written.
    pub cpu_ns: u64,
    /// 128 + the stop signal after SIGINT/SIGTERM; else the command's exit
    /// status (128 + the signal that killed it), or 0.
    pub code: i32,
    /// What the producer counted.
    pub producer: ticker::TickerStats,
    /// The times of the samples written (a sample or two may fall just
    /// outside the window: taken before its clock started or after it was
    /// told to stop).
    pub times: SampleTimes,
    /// Ticks missed.
    pub missed: u64,
    /// Intervals long enough for a counter to wrap twice unseen (writer.rs).
    pub wrap_gaps: u64,
    /// ebpf: what drives the program (None for the others).
    pub trigger: Option<String>,
}

/// How long a phase lasts.
pub enum Until<'a> {
    /// This many ns, or a signal.
    Elapsed(u64),
    /// The command ends (its exit status is returned). A stop signal is
    /// forwarded to it; it is killed if it has not exited STOP_GRACE_NS
    /// later, or on a second one.
    CommandExits(&'a [String]),
}

/// How long COMMAND has to exit once the first stop signal was forwarded
/// to it, before it is killed with SIGKILL. A workload that handles the
/// signal to clean up exits in milliseconds; one that ignores it (or is
/// stuck) would otherwise hold an interrupted run until it ends by itself.
/// One second bounds how far the window runs past the stop, and stays far
/// below the 10 s raplbench-interfere and the 30 s results/sampler.py give
/// a stopped sampler before they kill it.
pub const STOP_GRACE_NS: u64 = 1_000_000_000;

/// The exit status of a phase that ended with `code`: 128 + the stop
/// signal when one was received (the run was interrupted, also when the
/// command trapped the signal and exited 0), else `code`.
fn stopped_or(code: i32) -> i32 {
    signals::received().map_or(code, |sig| 128 + sig)
}

/// Waits until the phase should end (`Until`); the command's exit status,
/// or 0; 128 + the signal after a stop signal.
fn wait(until: &Until) -> Result<i32, Fail> {
    match until {
        Until::Elapsed(ns) => {
            let deadline = monotonic_ns() + ns;
            while signals::received().is_none() {
                if signals::wait(Some(deadline)) == signals::Woken::Deadline {
                    break;
                }
            }
            Ok(stopped_or(0))
        }
        Until::CommandExits(command) => {
            if let Some(sig) = signals::received() {
                return Ok(128 + sig); // stopped already: the command is not started
            }
            let mut spawn = Command::new(&command[0]);
            spawn.args(&command[1..]);
            // a fresh process's signals, not the sampler's blocked mask
            rbench::child::default_signals(&mut spawn);
            let child = spawn
                .spawn()
                .map_err(|e| Fail::Setup(format!("cannot run {}: {e}", command[0])))?;
            let pid = Pid::from_raw(child.id() as i32);
            // once the stop is forwarded: when the command is killed
            let mut kill_at: Option<u64> = None;
            let mut killed = false;
            loop {
                // the child may have ended before the wait began: look
                // first. It is signalled only while unreaped (its pid
                // cannot have been reused).
                match nix::sys::wait::waitpid(pid, Some(WaitPidFlag::WNOHANG)) {
                    Err(e) => return Err(Fail::Run(format!("waiting for {}: {e}", command[0]))),
                    Ok(WaitStatus::Exited(_, code)) => return Ok(stopped_or(code)),
                    Ok(WaitStatus::Signaled(_, sig, _)) => return Ok(stopped_or(128 + sig as i32)),
                    Ok(_) => {} // still running, stopped or continued: keep waiting
                }
                let deadline = kill_at.filter(|_| !killed);
                match signals::wait(deadline) {
                    signals::Woken::Child => {}
                    signals::Woken::Stop(sig) if kill_at.is_none() => {
                        if let Ok(sig) = Signal::try_from(sig) {
                            let _ = kill(pid, sig);
                        }
                        kill_at = Some(monotonic_ns() + STOP_GRACE_NS);
                    }
                    // the grace is over, or a second stop signal
                    signals::Woken::Stop(_) | signals::Woken::Deadline => {
                        if !killed {
                            let _ = kill(pid, Signal::SIGKILL);
                            killed = true;
                        }
                    }
                }
            }
        }
    }
}

/// The start-up channel of a producer thread: Ok once it samples.
pub type Started = std::sync::mpsc::SyncSender<Result<(), String>>;

/// Tells the phase through `started` whether the producer started
/// (`result`'s error says why not); `result`'s value when it did.
pub fn tell_started<T>(started: Started, result: Result<T, String>) -> Option<T> {
    let _ = started.send(result.as_ref().map(|_| ()).map_err(String::clone));
    result.ok()
}

/// The common run of a phase: the writer (`setup`) and the producer thread
/// `name` running `body` until `until`, the banner printed on stderr once
/// it has started (other programs wait for it; None: a later window of a
/// --report run). `timer` is the ticker's, woken when the phase stops.
/// What `body` returned, what was measured (trigger None), and the output.
fn run_phase<P: Send + 'static>(
    name: &str,
    setup: writer::WriterSetup,
    timer: Option<Arc<OwnedFd>>,
    banner: Option<String>,
    until: &Until,
    body: impl FnOnce(&AtomicBool, batch::ProducerEnds, Started) -> (ticker::TickerStats, P)
        + Send
        + 'static,
) -> Result<(P, Ran, Option<CsvOut>), Fail> {
    let (producer_ends, writer_ends) =
        batch::pool(setup.domains.len(), batch::batch_samples(setup.period_ns));
    let extra_cpu_ns = setup.extra_cpu_ns.clone();
    // met by the producer and the writer once the writer has taken its last
    // CPU reading: a thread that has exited vanishes from /proc/self/task
    let done = Arc::new(Barrier::new(2));
    let writer_done = done.clone();
    let writer = std::thread::Builder::new()
        .name("writer".into())
        .spawn(move || writer::run(setup, writer_ends, &writer_done))
        .expect("spawn the writer thread");
    let stop = Arc::new(AtomicBool::new(false));
    let (started_tx, started) = sync_channel(1);
    let stop_flag = stop.clone();
    let producer = std::thread::Builder::new()
        .name(name.into())
        .spawn(move || {
            // `body` hangs up as it returns (its ends dropped): the writer
            // drains and takes its last CPU reading
            let returned = body(&stop_flag, producer_ends, started_tx);
            done.wait();
            returned
        })
        .unwrap_or_else(|e| panic!("spawn the {name} thread: {e}"));
    let startup = started
        .recv()
        .unwrap_or_else(|_| Err("the sampling thread died".into()));
    let start_ns = monotonic_ns();
    let cpu_start = cpu_now(extra_cpu_ns.as_ref());
    let code = match startup {
        Ok(()) => {
            if let Some(banner) = &banner {
                rbench::say!("{banner}");
            }
            wait(until)
        }
        Err(why) => Err(Fail::Setup(why)),
    };
    let wall_ns = monotonic_ns() - start_ns;
    stop.store(true, Ordering::Relaxed);
    producer.thread().unpark(); // a drain sleeps parked
    if let Some(timer) = &timer {
        ticker::wake(timer); // the ticker waits on its timer for up to a period
    }
    let (ticker, returned) = producer
        .join()
        .map_err(|_| Fail::Run("the sampling thread panicked".into()))?;
    let (stats, output) = writer
        .join()
        .map_err(|_| Fail::Run("the writer thread panicked".into()))?;
    let ran = Ran {
        start_ns,
        wall_ns,
        cpu_ns: stats.cpu_end_ns.saturating_sub(cpu_start),
        code: code?,
        producer: ticker,
        times: stats.times,
        missed: stats.missed,
        wrap_gaps: stats.wrap_gaps,
        trigger: None,
    };
    Ok((returned, ran, output))
}

/// The sampling source of a user-space phase: given to the sampling thread,
/// and returned with what was measured, for the next window.
pub type Source = Box<dyn CounterSource + Send>;

/// Samples `source` from a user-space thread until `until`, writing
/// through `writer`; returns it with what was measured and the output.
pub fn run_ticked(
    mut source: Source,
    writer: writer::WriterSetup,
    setup: TickerSetup,
    until: &Until,
    banner: Option<String>,
) -> Result<(Source, Ran, Option<CsvOut>), Fail> {
    // created here so that stopping can wake the thread waiting on it
    let timer = Arc::new(ticker::periodic_timer(setup.period_ns).map_err(Fail::Setup)?);
    let ticker_timer = timer.clone();
    run_phase(
        "sampler",
        writer,
        Some(timer),
        banner,
        until,
        move |stop, ends, started| {
            let stats = ticker::run(&mut *source, setup, &ticker_timer, stop, ends, started);
            (stats, source)
        },
    )
}

/// The thread's body of a drain (run_phase's `body`).
type DrainBody =
    Box<dyn FnOnce(&AtomicBool, batch::ProducerEnds, Started) -> ticker::TickerStats + Send>;

/// Starts the in-kernel sampler `k` opened at `hz`, the sampler (`reads`)
/// or its null twin (the same timers reading nothing), and drains it
/// through `writer` until `until`; what was measured (with the BPF
/// trigger) and the output.
pub fn run_in_kernel(
    k: &Opened,
    reads: bool,
    mut writer: writer::WriterSetup,
    hz: u32,
    until: &Until,
    banner: Option<String>,
) -> Result<(Ran, Option<CsvOut>), Fail> {
    let counters = if reads { &k.counters[..] } else { &[] };
    let (body, extra, trigger) = match &k.sampler {
        Sampler::Ticked(_) => unreachable!("a sampling thread samples in user space"),
        Sampler::Bpf(events) => {
            // per domain, the CPU whose samples carry it and its value's index
            let map = (counters.iter())
                .filter_map(|c| match &c.route {
                    Route::PerfEvent { event, cpu } => {
                        Some((*cpu as u32, events.iter().position(|e| e == event)?))
                    }
                    _ => None,
                })
                .collect();
            let events = if reads { &events[..] } else { &[] };
            start_bpf(events, map, &counter_cpus(&k.counters), writer.period_ns)?
        }
        Sampler::Ksample(module) => {
            // per domain, its (package, MSR) (its value slot is known once started)
            let wanted: Vec<(u32, u32)> = (counters.iter())
                .filter_map(|c| match &c.route {
                    Route::Ksample { package, msr, .. } => Some((*package, *msr)),
                    _ => None,
                })
                .collect();
            // the first domain's package; its records write the lines
            let lead = k.counters.first().and_then(|c| c.package).unwrap_or(0);
            let mode = if reads { Mode::Read } else { Mode::Null };
            start_ksample(module, mode, hz, &wanted, lead)?
        }
        Sampler::PerfRing(designs) => start_perf_ring(
            counters,
            &counter_cpus(&k.counters),
            writer.period_ns,
            designs,
        )?,
    };
    let banner = banner.map(|b| match &trigger {
        Some(trigger) => format!("{b} ({trigger})"),
        None => b,
    });
    writer.extra_cpu_ns = Some(extra);
    let body = move |stop: &AtomicBool, ends, started| (body(stop, ends, started), ());
    let ((), mut ran, output) = run_phase("drain", writer, None, banner, until, body)?;
    ran.trigger = trigger;
    Ok((ran, output))
}

/// Loads and starts the BPF program on `cpus`: the drain, the callbacks'
/// own time (not in any thread's schedstat), and the trigger.
fn start_bpf(
    events: &[rbench::perf::PerfEventSpec],
    map: Vec<(u32, usize)>,
    cpus: &[usize],
    period_ns: u64,
) -> Result<(DrainBody, ExtraCpu, Option<String>), Fail> {
    let config = BpfConfig {
        period_ns,
        cpus: Some(cpus.to_vec()),
        emit_samples: true,
        ..BpfConfig::default()
    };
    let sampler =
        Arc::new(BpfSampler::start(events, &config).map_err(|e| Fail::Setup(e.to_string()))?);
    let trigger = sampler.trigger().to_string();
    let busy = sampler.clone();
    let extra: ExtraCpu = Arc::new(move || ebpf_drain::summed(&busy, |t| t.busy_ns));
    let map = ValueMap {
        domains: map,
        lead: cpus.first().map_or(0, |&c| c as u32),
    };
    let body: DrainBody =
        Box::new(move |stop, ends, started| ebpf_drain::run(&sampler, map, stop, ends, started));
    Ok((body, extra, Some(trigger)))
}

/// Opens a sampling group on each of `cpus` (their energy events among
/// `counters` its members; none for the null) and starts it: the drain,
/// no extra CPU time counted (the kernel takes each sample in the timer
/// interrupt, in no thread's time: the victim step measures it), and the
/// trigger.
fn start_perf_ring(
    counters: &[rbench::discovery::Counter],
    cpus: &[usize],
    period_ns: u64,
    designs: &[Design],
) -> Result<(DrainBody, ExtraCpu, Option<String>), Fail> {
    let members_on = |cpu: usize| -> Vec<_> {
        (counters.iter())
            .filter_map(|c| match &c.route {
                Route::PerfEvent { event, cpu: on } if *on == cpu => Some(event.clone()),
                _ => None,
            })
            .collect()
    };
    let open = |design| -> Result<Vec<_>, rbench::Error> {
        (cpus.iter())
            .map(|&cpu| {
                GroupRing::open(
                    cpu,
                    period_ns,
                    &members_on(cpu),
                    design,
                    perf_ring_drain::RING_PAGES,
                )
                .map(|ring| perf_ring_drain::CpuRing::new(cpu as u32, ring))
            })
            .collect()
    };
    // the first design the kernel takes on every CPU, and its answers before
    let (mut refused, mut taken) = (Vec::new(), None);
    for &design in designs {
        match open(design) {
            Ok(rings) => {
                taken = Some((design, rings));
                break;
            }
            // a missing privilege refuses every design alike
            Err(e @ rbench::Error::PerfDenied { .. }) => return Err(Fail::Setup(e.to_string())),
            Err(e) => refused.push(format!("{}: {e}", design.name())),
        }
    }
    let Some((design, rings)) = taken else {
        return Err(Fail::Setup(format!(
            "the kernel refused every perf-ring group design ({})",
            refused.join("; ")
        )));
    };
    let mut domains = Vec::new();
    // per domain, its CPU and its place among that CPU's members
    let mut members_of = std::collections::HashMap::new();
    for c in counters {
        if let Route::PerfEvent { cpu, .. } = &c.route {
            let at: &mut usize = members_of.entry(*cpu).or_default();
            domains.push((*cpu as u32, *at));
            *at += 1;
        }
    }
    let map = ValueMap {
        domains,
        lead: cpus.first().map_or(0, |&c| c as u32),
    };
    let extra: ExtraCpu = Arc::new(|| 0);
    let body: DrainBody = Box::new(move |stop, ends, started| {
        perf_ring_drain::run(rings, period_ns, map, stop, ends, started)
    });
    let mut trigger = format!(
        "{} ({}), {period_ns} ns period, perf ring",
        design.title(),
        design.name()
    );
    if !refused.is_empty() {
        trigger += &format!("; the kernel refused {}", refused.join("; "));
    }
    Ok((body, extra, Some(trigger)))
}

/// Starts the ksample module's timers (stopped again by the guard the
/// drain owns, whatever happens next): the drain and the callbacks' own
/// time, the sum of the packages' busy_ns in the control file.
fn start_ksample(
    module: &Module,
    mode: Mode,
    hz: u32,
    wanted: &[(u32, u32)],
    lead: u32,
) -> Result<(DrainBody, ExtraCpu, Option<String>), Fail> {
    let setup = |e: rbench::Error| Fail::Setup(e.to_string());
    let running = module.start(mode, hz).map_err(setup)?;
    // the value slots of this start's records
    let status = module.status().map_err(setup)?;
    let map = ValueMap {
        domains: value_slots(&status, wanted).map_err(setup)?,
        lead,
    };
    let msrs: Vec<Vec<u32>> = status.packages.iter().map(|p| p.msrs.clone()).collect();
    let busy = module.clone();
    let extra: ExtraCpu = Arc::new(move || busy.status().map_or(0, |s| s.busy_ns()));
    let body: DrainBody = Box::new(move |stop, ends, started| {
        ksample_drain::run(running, msrs, map, stop, ends, started)
    });
    Ok((body, extra, None))
}
