//! One phase of a run: the sampler (or its null twin) sampling until the
//! phase ends. A user-space mechanism runs a ticking thread (ticker.rs);
//! ebpf runs the in-kernel BPF program and drains it (ebpf_drain.rs). Both
//! feed the writer thread (writer.rs), and the phase ends after --duration,
//! or when COMMAND exits, or on SIGINT/SIGTERM.

use nix::sys::wait::WaitStatus;
use rbench::ebpf::{BpfConfig, BpfSampler};
use rbench::CounterSource;
use std::fs::File;
use std::io::BufWriter;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::sync_channel;
use std::sync::{Arc, Barrier};

use crate::ticker::{monotonic_ns, TickerSetup};
use crate::{batch, ebpf_drain, signals, ticker, writer, Fail};

/// How long a phase lasts.
pub enum Until<'a> {
    /// This many ns, or a signal.
    Elapsed(u64),
    /// The command ends (its exit status is returned); a signal is forwarded to it.
    CommandExits(&'a [String]),
}

/// Waits until the phase should end; the command's exit status, or 0.
fn wait(until: &Until) -> Result<i32, Fail> {
    match until {
        Until::Elapsed(ns) => {
            let deadline = monotonic_ns() + ns;
            let ts = libc::timespec {
                tv_sec: (deadline / 1_000_000_000) as libc::time_t,
                tv_nsec: (deadline % 1_000_000_000) as libc::c_long,
            };
            // returns early (EINTR) on SIGINT/SIGTERM
            while signals::received().is_none() && monotonic_ns() < deadline {
                // SAFETY: ts is valid; no remainder is needed with TIMER_ABSTIME.
                unsafe {
                    libc::clock_nanosleep(
                        libc::CLOCK_MONOTONIC,
                        libc::TIMER_ABSTIME,
                        &ts,
                        std::ptr::null_mut(),
                    )
                };
            }
            // stopped by a signal: the shell's convention, 128 + the signal
            Ok(signals::received().map_or(0, |sig| 128 + sig))
        }
        Until::CommandExits(command) => {
            let child = Command::new(&command[0])
                .args(&command[1..])
                .spawn()
                .map_err(|e| Fail::Setup(format!("cannot run {}: {e}", command[0])))?;
            let pid = nix::unistd::Pid::from_raw(child.id() as i32);
            let mut forwarded = false;
            loop {
                match nix::sys::wait::waitpid(pid, None) {
                    Err(nix::errno::Errno::EINTR) => {
                        if let (Some(sig), false) = (signals::received(), forwarded) {
                            if let Ok(sig) = nix::sys::signal::Signal::try_from(sig) {
                                let _ = nix::sys::signal::kill(pid, sig);
                            }
                            forwarded = true;
                        }
                    }
                    Err(e) => return Err(Fail::Run(format!("waiting for {}: {e}", command[0]))),
                    // the shell's convention: the exit code, or 128 + the signal
                    Ok(WaitStatus::Exited(_, code)) => return Ok(code),
                    Ok(WaitStatus::Signaled(_, sig, _)) => return Ok(128 + sig as i32),
                    Ok(_) => {} // stopped or continued: keep waiting
                }
            }
        }
    }
}

/// The common end of a phase: start the producer, check it started, wait,
/// stop, collect.
struct Running {
    /// Printed on stderr once sampling has started (other programs wait for it).
    banner: String,
    stop: Arc<AtomicBool>,
    producer: std::thread::JoinHandle<ticker::TickerStats>,
    writer: std::thread::JoinHandle<writer::PhaseStats>,
    started: std::sync::mpsc::Receiver<Result<(), String>>,
}

impl Running {
    fn finish(
        self,
        until: &Until,
    ) -> Result<(u64, i32, ticker::TickerStats, writer::PhaseStats), Fail> {
        let startup = self
            .started
            .recv()
            .unwrap_or_else(|_| Err("the sampling thread died".into()));
        let t0 = monotonic_ns();
        let code = match startup {
            Ok(()) => {
                eprintln!("raplbench-sample: {}", self.banner);
                signals::unblock_in_this_thread().ok();
                let code = wait(until);
                signals::block_in_this_thread().ok();
                code
            }
            Err(why) => Err(Fail::Setup(why)),
        };
        let wall_ns = monotonic_ns() - t0;
        self.stop.store(true, Ordering::Relaxed);
        let producer = self
            .producer
            .join()
            .map_err(|_| Fail::Run("the sampling thread panicked".into()))?;
        let stats = self
            .writer
            .join()
            .map_err(|_| Fail::Run("the writer thread panicked".into()))?;
        Ok((wall_ns, code?, producer, stats))
    }
}

fn start_writer(
    domains: Vec<rbench::Domain>,
    yields_energy: Vec<bool>,
    output: Option<BufWriter<File>>,
    period_ns: u64,
    extra_cpu_ns: Option<Box<dyn Fn() -> u64 + Send>>,
    ends: batch::WriterEnds,
    done: Arc<Barrier>,
) -> std::thread::JoinHandle<writer::PhaseStats> {
    let setup = writer::WriterSetup {
        domains,
        yields_energy,
        output,
        period_ns,
        extra_cpu_ns,
        done,
    };
    std::thread::Builder::new()
        .name("writer".into())
        .spawn(move || writer::run(setup, ends))
        .expect("spawn the writer thread")
}

/// Samples `source` from a user-space thread until `until`.
pub fn run_ticked(
    mut source: Box<dyn CounterSource + Send>,
    yields_energy: Vec<bool>,
    output: Option<BufWriter<File>>,
    setup: TickerSetup,
    until: &Until,
    banner: String,
) -> Result<(u64, i32, ticker::TickerStats, writer::PhaseStats), Fail> {
    let (producer_ends, writer_ends) = batch::pool(source.domains().len());
    let done = Arc::new(Barrier::new(2));
    let writer = start_writer(
        source.domains().to_vec(),
        yields_energy,
        output,
        setup.period_ns,
        None,
        writer_ends,
        done.clone(),
    );
    let stop = Arc::new(AtomicBool::new(false));
    let (started_tx, started) = sync_channel(1);
    let stop_flag = stop.clone();
    let producer = std::thread::Builder::new()
        .name("sampler".into())
        .spawn(move || {
            ticker::run(
                &mut *source,
                setup,
                &stop_flag,
                producer_ends,
                started_tx,
                done,
            )
        })
        .expect("spawn the sampling thread");
    Running {
        banner,
        stop,
        producer,
        writer,
        started,
    }
    .finish(until)
}

/// What the BPF program samples, and which of its values are written.
pub struct InKernelSetup<'a> {
    /// The perf events, each once.
    pub events: &'a [rbench::perf::PerfEventSpec],
    /// The CPUs they are sampled on (the first one's samples are written).
    pub cpus: &'a [usize],
    /// The written domains and where each comes from.
    pub domains: Vec<rbench::Domain>,
    /// Per domain, the CPU and the index of its value in a sample.
    pub map: Vec<(u32, usize)>,
    /// Per domain, whether its delta_j is energy.
    pub yields_energy: Vec<bool>,
}

/// Starts the BPF program on `setup.cpus` and drains it until `until`.
pub fn run_in_kernel(
    setup: InKernelSetup,
    output: Option<BufWriter<File>>,
    period_ns: u64,
    until: &Until,
    banner: String,
) -> Result<(u64, i32, ticker::TickerStats, writer::PhaseStats, String), Fail> {
    let config = BpfConfig {
        period_ns,
        cpus: Some(setup.cpus.to_vec()),
        emit_samples: true,
        ..BpfConfig::default()
    };
    let sampler =
        Arc::new(BpfSampler::start(setup.events, &config).map_err(|e| Fail::Setup(e.to_string()))?);
    let trigger = sampler.trigger().to_string();
    let domains = setup.domains;
    let (producer_ends, writer_ends) = batch::pool(domains.len());
    let done = Arc::new(Barrier::new(2));
    // the program's own time in its callbacks: not in any thread's schedstat
    let busy = sampler.clone();
    let busy_cpus = setup.cpus.to_vec();
    let extra: Box<dyn Fn() -> u64 + Send> = Box::new(move || {
        busy_cpus
            .iter()
            .map(|&cpu| busy.tick_counts(cpu).map_or(0, |t| t.busy_ns))
            .sum()
    });
    let writer = start_writer(
        domains,
        setup.yields_energy,
        output,
        period_ns,
        Some(extra),
        writer_ends,
        done.clone(),
    );
    let stop = Arc::new(AtomicBool::new(false));
    let (started_tx, started) = sync_channel(1);
    let (stop_flag, drained) = (stop.clone(), sampler.clone());
    let map = ebpf_drain::ValueMap {
        domains: setup.map,
        lead: setup.cpus.first().map_or(0, |&c| c as u32),
    };
    let producer = std::thread::Builder::new()
        .name("drain".into())
        .spawn(move || ebpf_drain::run(&drained, map, &stop_flag, producer_ends, started_tx, done))
        .expect("spawn the drain thread");
    let banner = format!("{banner} ({trigger})");
    let (wall, code, producer, stats) = Running {
        banner,
        stop,
        producer,
        writer,
        started,
    }
    .finish(until)?;
    Ok((wall, code, producer, stats, trigger))
}
