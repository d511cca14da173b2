//! Sampler experiments: the neighbour is a `raplbench-sample` child
//! process, started and stopped by the calling thread on the victim's
//! window grid (which windows: [`sampler_windows`]). Its ticks in the on
//! window are the distinct times in its CSV ([`super::ticks`]).
//!
//! raplbench-sample stopped by SIGINT writes every sample, renames its CSV
//! into place and exits with 130, or 0 if its duration ended first
//! ([`clean_exit`]); any other exit, or one before it was stopped, ends
//! the experiment (`child_reason`).
//! When the run is stopped, a running sampler is sent SIGINT and killed at
//! once: its CSV is not needed, and nothing is left running.

use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use super::placement::Placement;
use super::reader::{sleep_until, Count};
use super::report::{self, Experiment, Neighbour, SamplerNeighbour};
use super::schedule::{sampler_windows, Action, Grid, Role, SamplerControl};
use super::ticks::{count_ticks, TscClock};
use super::victim_side::{Calibrations, Victim};
use crate::row_meta::Status;

/// How long the sampler may take to start sampling, or to exit once
/// stopped, s.
pub const CHILD_TIMEOUT_S: f64 = 10.0;
/// The --duration given to the sampler (it is stopped long before).
pub const CHILD_DURATION_S: u32 = 86_400;

/// What to run.
#[derive(Debug, Clone)]
pub struct SamplerSettings {
    /// raplbench-sample.
    pub bin: PathBuf,
    /// Its --mechanism.
    pub mechanism: String,
    /// Its --frequency.
    pub rate_hz: u32,
    /// Pairs of windows.
    pub pairs: usize,
    /// One window, s.
    pub window_s: f64,
    /// Where its CSVs go (one per pair, removed once counted).
    pub tmp_dir: PathBuf,
}

impl SamplerSettings {
    /// Its arguments, writing the CSV to `csv`.
    pub fn args(&self, csv: &str) -> Vec<String> {
        [
            "--mechanism",
            &self.mechanism,
            "--frequency",
            &self.rate_hz.to_string(),
            "--duration",
            &CHILD_DURATION_S.to_string(),
            "--output",
            csv,
        ]
        .map(String::from)
        .into()
    }
}

/// The banner's target and CPU: `sampling <mech> (<label>) at <N> Hz[ on
/// CPU <c>...]` gives `"<label> @ <N> Hz"` and c, the CPU its ticks run on
/// (the sampling thread's, or for ebpf the CPU its bpf_timer is pinned to);
/// None when it names none (an unpinned thread).
pub fn parse_banner(line: &str, mechanism: &str, rate_hz: u32) -> Option<(String, Option<usize>)> {
    let at = line.find("sampling ")?;
    let rest = line[at..].strip_prefix(&format!("sampling {mechanism} ("))?;
    let hz = format!(") at {rate_hz} Hz");
    let (label, tail) = rest.rsplit_once(&hz)?;
    let cpu = tail
        .strip_prefix(" on CPU ")
        .and_then(|t| t.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|n| n.parse().ok());
    Some((format!("{label} @ {rate_hz} Hz"), cpu))
}

/// Where the victim sits against the sampler's ticks: on the CPU they run
/// on, or elsewhere (also when they run on no CPU in particular).
pub fn sampler_placement(tick_cpu: Option<usize>, victim_cpu: usize) -> Placement {
    if tick_cpu == Some(victim_cpu) {
        Placement::VictimIsTarget
    } else {
        Placement::VictimElsewhere
    }
}

/// Whether an exit status is a clean end of a sampler that was stopped.
pub fn clean_exit(code: Option<i32>) -> bool {
    matches!(code, Some(0) | Some(130) | Some(143))
}

/// A running sampler and the thread that reads its stderr (and gives its
/// lines once it has ended).
struct Running {
    child: Child,
    sampling: Arc<AtomicBool>,
    reader: JoinHandle<Vec<String>>,
    csv: PathBuf,
    /// Whether it was sent SIGINT.
    interrupted: bool,
}

impl Running {
    fn start(settings: &SamplerSettings, csv: &Path) -> Result<Running, String> {
        let _ = std::fs::remove_file(csv);
        let mut command = Command::new(&settings.bin);
        command
            .args(settings.args(&csv.to_string_lossy()))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        crate::child::default_signals(&mut command);
        // SAFETY: getpid has no preconditions.
        let parent = unsafe { libc::getpid() };
        // SAFETY: prctl and getppid are async-signal-safe; between fork and
        // exec the child only asks to be sent SIGTERM when this process
        // dies, so a sampler given a day's --duration never outlives a
        // killed raplbench-interfere, and gives up at once if this process
        // died before it asked (the signal would never come).
        unsafe {
            command.pre_exec(move || {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM) == -1 {
                    return Err(std::io::Error::last_os_error());
                }
                if libc::getppid() != parent {
                    return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
                }
                Ok(())
            });
        }
        let mut child = command
            .spawn()
            .map_err(|e| format!("cannot run {}: {e}", settings.bin.display()))?;
        let sampling = Arc::new(AtomicBool::new(false));
        let stderr = child.stderr.take().expect("stderr is piped");
        let s = sampling.clone();
        let spawned = std::thread::Builder::new()
            .name("sampler-stderr".into())
            .spawn(move || {
                let mut lines = Vec::new();
                for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                    if line.contains(": sampling ") {
                        s.store(true, Ordering::Release);
                    }
                    lines.push(line);
                }
                lines
            });
        let reader = spawned.map_err(|e| {
            let _ = child.kill();
            let _ = child.wait();
            format!("cannot start a thread to read its stderr: {e}")
        })?;
        Ok(Running {
            child,
            sampling,
            reader,
            csv: csv.to_path_buf(),
            interrupted: false,
        })
    }

    /// None while it runs; once it has exited, its exit code (None: killed
    /// by a signal, or it could not be waited for).
    fn exited(&mut self) -> Option<Option<i32>> {
        (self.child.try_wait()).map_or(Some(None), |status| status.map(|s| s.code()))
    }

    fn interrupt(&mut self) {
        // SAFETY: signalling our own child, which we have not reaped.
        unsafe { libc::kill(self.child.id() as libc::pid_t, libc::SIGINT) };
        self.interrupted = true;
    }

    /// Kills it (if still running), reaps it, and gives its stderr lines.
    fn finish(mut self) -> Vec<String> {
        if self.exited().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
        self.reader.join().unwrap_or_default()
    }
}

/// The reason a sampler ended as it did: its status and its stderr's last
/// line.
fn child_reason(code: Option<i32>, lines: &[String], when: &str) -> (Status, String) {
    let last = lines.last().map_or("(nothing on stderr)", String::as_str);
    let status = match code {
        Some(c) => format!("exit status {c}"),
        None => "killed by a signal".into(),
    };
    let kind = if code == Some(2) {
        Status::Unavailable
    } else {
        Status::Error
    };
    (kind, format!("raplbench-sample {when} ({status}): {last}"))
}

/// A sampler experiment's controller: the child on the victim's grid,
/// and what its runs said and counted.
struct Control<'a> {
    settings: &'a SamplerSettings,
    grid: Grid,
    clock: TscClock,
    stop: &'a AtomicBool,
    /// Windows taken.
    windows: usize,
    /// Samplers started.
    started: usize,
    running: Option<Running>,
    /// The running sampler's on window, once taken.
    on: Option<usize>,
    /// The on windows counted, and their ticks.
    counted: Vec<(usize, u64)>,
    neighbour: SamplerNeighbour,
    /// The CPU its ticks run on, from its banner (None until then, or
    /// unpinned).
    tick_cpu: Option<usize>,
}

/// None: the run was stopped; else why the experiment failed.
type End = Option<(Status, String)>;

impl SamplerControl for Control<'_> {
    type End = End;

    fn begin(&mut self) -> Result<(bool, bool), End> {
        let (start, _) = self.grid.bounds(self.windows);
        if sleep_until(self.clock.mono_of(start), self.stop) {
            return Err(None);
        }
        // a sampler that exited: stopped (count its on window's ticks) or not
        if let Some(code) = self.running.as_mut().and_then(Running::exited) {
            let r = self.running.take().expect("it ran");
            let (csv, interrupted) = (r.csv.clone(), r.interrupted);
            let lines = r.finish();
            let (mechanism, rate_hz) = (&self.settings.mechanism, self.settings.rate_hz);
            if let Some((target, cpu)) = lines
                .iter()
                .find_map(|l| parse_banner(l, mechanism, rate_hz))
            {
                self.neighbour.target = Some(target);
                // no sampling thread to name as the row's CPU in the kernel
                self.neighbour.cpu = cpu.filter(|_| !crate::registry::in_kernel(mechanism));
                self.tick_cpu = cpu;
            }
            let counted = match (interrupted, clean_exit(code), self.on.take()) {
                (false, _, _) => Err(child_reason(code, &lines, "exited before it was stopped")),
                (true, false, _) => Err(child_reason(code, &lines, "failed")),
                (true, true, None) => Ok(()),
                (true, true, Some(w)) => {
                    let (a, b) = self.grid.bounds(w);
                    let clock = self.clock;
                    std::fs::read_to_string(&csv)
                        .map_err(|e| format!("reading its CSV {}: {e}", csv.display()))
                        .and_then(|t| count_ticks(&t, clock.mono_of(a), clock.mono_of(b)))
                        .map(|n| self.counted.push((w, n)))
                        .map_err(|e| (Status::Error, e))
                }
            };
            let _ = std::fs::remove_file(&csv);
            counted.map_err(Some)?;
        }
        let sampling = (self.running.as_ref()).is_some_and(|r| r.sampling.load(Ordering::Acquire));
        Ok((sampling, self.running.is_none()))
    }

    fn take(&mut self, role: Role, action: Action) -> Result<usize, End> {
        let k = self.windows;
        self.windows += 1;
        match action {
            Action::StartChild => {
                let csv = (self.settings.tmp_dir).join(format!("pair-{}.csv", self.started));
                self.started += 1;
                let r =
                    Running::start(self.settings, &csv).map_err(|e| Some((Status::Error, e)))?;
                self.running = Some(r);
            }
            Action::StopChild => {
                if let Some(r) = &mut self.running {
                    r.interrupt();
                }
            }
            Action::Nothing => {}
        }
        if role == Role::On {
            self.on = Some(k);
        }
        Ok(k)
    }

    fn timed_out(&mut self, role: Role) -> End {
        let lines = self.running.take().map(Running::finish).unwrap_or_default();
        let what = if role == Role::Settle {
            "did not start sampling"
        } else {
            "did not exit once stopped"
        };
        let last = lines.last().cloned().unwrap_or_default();
        let why = format!("raplbench-sample {what} within {CHILD_TIMEOUT_S} s (killed): {last}");
        Some((Status::Error, why))
    }
}

/// One sampler experiment with the victim on `victim_cpu`.
pub fn run_sampler(
    settings: &SamplerSettings,
    victim_cpu: usize,
    calibrations: &mut Calibrations,
    stop: &AtomicBool,
) -> Experiment {
    let neighbour = SamplerNeighbour {
        mechanism: settings.mechanism.clone(),
        cpu: None,
        sampler_args: settings.args("<tmp csv>"),
        target: None,
    };
    let rate = Some(settings.rate_hz);
    let calibration = match calibrations.of(victim_cpu) {
        Ok(c) => c,
        Err(why) => {
            let reason = format!("calibrating the victim on CPU {victim_cpu}: {why}");
            let n = Neighbour::Sampler(neighbour);
            return Experiment::new(n, rate, None, Err((Status::Error, reason)));
        }
    };
    let elsewhere = Some((victim_cpu, Placement::VictimElsewhere));
    let timeout_windows = (CHILD_TIMEOUT_S / settings.window_s).ceil() as usize;
    let max_windows = 1 + settings.pairs * (4 + 2 * timeout_windows);
    let victim = match Victim::start(
        victim_cpu,
        calibration,
        settings.window_s,
        None,
        max_windows,
    ) {
        Ok(v) => v,
        Err(e) => {
            let n = Neighbour::Sampler(neighbour);
            return Experiment::new(n, rate, elsewhere, Err((Status::Error, e)));
        }
    };
    let mut c = Control {
        settings,
        grid: victim.grid,
        clock: TscClock::now(calibration.calibration.tsc_ghz),
        stop,
        windows: 0,
        started: 0,
        running: None,
        on: None,
        counted: Vec::new(),
        neighbour,
        tick_cpu: None,
    };
    let mut done = Vec::new();
    let failure = sampler_windows(&mut c, settings.pairs, timeout_windows, &mut done).err();
    if let Some(mut r) = c.running.take() {
        r.interrupt();
        let _ = r.finish();
    }
    victim.stop();
    let n = Neighbour::Sampler(c.neighbour);
    let stats = match (victim.join(c.windows), failure.flatten()) {
        (Ok(stats), None) => stats,
        (Err(e), _) => return Experiment::new(n, rate, elsewhere, Err((Status::Error, e))),
        (Ok(_), Some(failed)) => return Experiment::new(n, rate, elsewhere, Err(failed)),
    };
    let mut counts = vec![Count::default(); c.windows];
    let expected = (settings.window_s * f64::from(settings.rate_hz)).round() as u64;
    for &(w, ticks) in &c.counted {
        if let Some(count) = counts.get_mut(w) {
            count.reads = ticks;
            count.missed = expected.saturating_sub(ticks);
        }
    }
    // only pairs whose on window was counted
    done.retain(|p| c.counted.iter().any(|x| x.0 == p.on));
    let placement = sampler_placement(c.tick_cpu, victim_cpu);
    let pairs = report::pairs(&done, &stats, &counts);
    Experiment::new(n, rate, Some((victim_cpu, placement)), Ok(pairs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_banner_gives_the_target_and_the_cpu() {
        let b = "raplbench-sample: sampling perf (msr/tsc/) at 1000 Hz on CPU 0";
        assert_eq!(
            parse_banner(b, "perf", 1000),
            Some(("msr/tsc/ @ 1000 Hz".into(), Some(0)))
        );
        let e = "raplbench-sample: sampling ebpf (msr/tsc/) at 1000 Hz on CPU 0 (bpf_timer (CPU-pinned, absolute deadlines))";
        assert_eq!(
            parse_banner(e, "ebpf", 1000),
            Some(("msr/tsc/ @ 1000 Hz".into(), Some(0)))
        );
        let p = "raplbench-sample: sampling powercap (a (b) c) at 100 Hz";
        assert_eq!(
            parse_banner(p, "powercap", 100),
            Some(("a (b) c @ 100 Hz".into(), None))
        );
        assert_eq!(
            parse_banner("raplbench-sample: frozen counter", "perf", 1000),
            None
        );
        assert_eq!(parse_banner(b, "perf", 100), None);
    }

    #[test]
    fn the_victim_is_the_target_where_the_ticks_run() {
        assert_eq!(sampler_placement(Some(0), 0), Placement::VictimIsTarget);
        assert_eq!(sampler_placement(Some(0), 1), Placement::VictimElsewhere);
        assert_eq!(sampler_placement(None, 0), Placement::VictimElsewhere);
    }

    #[test]
    fn a_stopped_sampler_exits_0_or_128_plus_the_signal() {
        assert!(clean_exit(Some(0)) && clean_exit(Some(130)) && clean_exit(Some(143)));
        assert!(!clean_exit(Some(1)) && !clean_exit(Some(3)) && !clean_exit(None));
        let (s, why) = child_reason(Some(2), &["x".into(), "no BPF here".into()], "failed");
        assert_eq!(
            (s, why.as_str()),
            (
                Status::Unavailable,
                "raplbench-sample failed (exit status 2): no BPF here"
            )
        );
        assert_eq!(child_reason(Some(3), &[], "failed").0, Status::Error);
    }
}
