//! raplbench-sample's stop signals with `-- COMMAND` (issue 30), end to
//! end: the command starts with a fresh process's signals (none blocked,
//! SIGINT, SIGTERM, SIGCHLD and SIGPIPE at their defaults), SIGINT and
//! SIGTERM stop the sampler and the command at once (forwarded; SIGKILL
//! after the grace, or on a second signal), the exit status is 128 + the
//! signal, and the CSV ends on a whole line. The sampler runs on the
//! powercap fixture tree (ubench/testdata), which every machine has, so no
//! test depends on this machine's counters; the commands are sh and sleep.

use std::io::{BufRead, BufReader, Read};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

#[path = "../src/testutil.rs"]
#[allow(dead_code)]
mod testutil;

const BIN: &str = env!("CARGO_BIN_EXE_raplbench-sample");

/// How soon after a stop signal the sampler and its command must both be
/// gone (the sampler measured 20 to 40 ms on the development VM).
const PROMPT: Duration = Duration::from_millis(300);
/// raplbench-sample's grace between forwarding the stop signal and killing
/// the command (phase.rs: STOP_GRACE_NS).
const GRACE: Duration = Duration::from_secs(1);

fn fixture_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../ubench/testdata/sys/class/powercap")
}

fn tmp(name: &str) -> PathBuf {
    static DIR: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    DIR.get_or_init(|| testutil::fresh_dir("raplbench-sample-signals-test"))
        .join(name)
}

/// The sampler on the powercap fixture at 1 kHz, writing `csv`, running
/// `command`, not yet spawned (the test sets what it needs).
fn sampler(csv: &Path, command: &[&str]) -> Command {
    let mut c = Command::new(BIN);
    c.args(["--mechanism", "powercap", "--powercap-root"])
        .arg(fixture_root())
        .arg("--output")
        .arg(csv)
        .arg("--")
        .args(command)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    c
}

/// Sets the disposition of `signals` to SIG_IGN in the spawned process (as a
/// shell does to SIGINT for a background job `cmd &`).
fn ignoring(command: &mut Command, signals: &'static [libc::c_int]) {
    // SAFETY: signal() is async-signal-safe; nothing else runs before exec.
    unsafe {
        command.pre_exec(move || {
            for &s in signals {
                libc::signal(s, libc::SIG_IGN);
            }
            Ok(())
        });
    }
}

/// A running sampler: its stderr is read by a thread (so that writing it
/// never blocks), which says when the banner came and gives all of it.
struct Running {
    child: Child,
    stderr: mpsc::Receiver<String>,
}

impl Running {
    /// Spawns `command` and waits for the sampler's banner.
    fn start(mut command: Command) -> Running {
        let mut child = command.spawn().expect("run raplbench-sample");
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        let (banner_tx, banner) = mpsc::channel();
        let (all_tx, all) = mpsc::channel();
        std::thread::spawn(move || {
            let mut said = String::new();
            while stderr.read_line(&mut said).unwrap_or(0) > 0 {
                if said.contains("raplbench-sample: sampling ") {
                    let _ = banner_tx.send(());
                    break;
                }
            }
            let _ = stderr.read_to_string(&mut said);
            let _ = all_tx.send(said);
        });
        let started = banner.recv_timeout(Duration::from_secs(10));
        let running = Running { child, stderr: all };
        if started.is_err() {
            let (status, said) = running.finish();
            panic!("no banner: {status:?} {said}");
        }
        running
    }

    fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// Its command, once it has executed `comm`: its pid.
    fn workload(&self, comm: &str) -> i32 {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            if let Some(pid) = testutil::proc_children(self.pid())
                .into_iter()
                .find(|&p| testutil::proc_stat(p).is_some_and(|(c, _)| c == comm))
            {
                return pid;
            }
            assert!(Instant::now() < deadline, "no {comm} under the sampler");
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Waits for it to exit (killed if it takes more than 10 s): its
    /// status and stderr.
    fn finish(mut self) -> (ExitStatus, String) {
        let deadline = Instant::now() + Duration::from_secs(10);
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            if Instant::now() > deadline {
                self.kill();
                let said = self
                    .stderr
                    .recv_timeout(Duration::from_secs(1))
                    .unwrap_or_default();
                panic!("still running after 10 s (killed): {said}");
            }
            std::thread::sleep(Duration::from_millis(1));
        };
        let said = self
            .stderr
            .recv_timeout(Duration::from_secs(5))
            .unwrap_or_default();
        (status, said)
    }
}

/// A test that fails leaves nothing running: the sampler's children and
/// the sampler are killed.
impl Drop for Running {
    fn drop(&mut self) {
        self.kill();
    }
}

impl Running {
    /// Kills its children (the command holds its stderr too) and it, if
    /// it still runs.
    fn kill(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            for pid in testutil::proc_children(self.pid()) {
                // SAFETY: our sampler's child, not reaped while it runs.
                unsafe { libc::kill(pid, libc::SIGKILL) };
            }
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// A field of `/proc/PID/status` holding a signal set (SigBlk, SigIgn).
fn signal_set(pid: i32, field: &str) -> u64 {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = text
        .lines()
        .find(|l| l.starts_with(&format!("{field}:")))
        .unwrap();
    u64::from_str_radix(line.split_whitespace().nth(1).unwrap(), 16).unwrap()
}

fn bit(signal: libc::c_int) -> u64 {
    1 << (signal - 1)
}

fn send(pid: i32, signal: libc::c_int) -> Instant {
    // SAFETY: a signal to our own child (or its process group).
    assert_eq!(unsafe { libc::kill(pid, signal) }, 0);
    Instant::now()
}

/// The command's process `sleep` is gone (killed and reaped).
fn assert_gone(sleep: i32) {
    assert!(
        testutil::proc_stat(sleep).is_none(),
        "sleep {sleep} still there"
    );
}

/// The CSV ends on a whole line, every line with the header's fields.
fn check_csv(csv: &Path) {
    let text = std::fs::read_to_string(csv).unwrap();
    assert!(
        text.ends_with('\n'),
        "{csv:?} ends in {:?}",
        text.chars().last()
    );
    let mut lines = text.lines();
    let fields = lines.next().unwrap().split(',').count();
    assert_eq!(fields, 5);
    let mut n = 0;
    for l in lines {
        assert_eq!(l.split(',').count(), fields, "{l:?}");
        n += 1;
    }
    assert!(n > 0, "no sample in {csv:?}");
}

/// The sampler running `sleep 30` and sent `signal`: stopped, with the
/// sleep, within PROMPT; 128 + the signal; a whole CSV.
fn a_stop_signal_ends_the_sampler_and_its_command_at_once(signal: libc::c_int, name: &str) {
    let csv = tmp(&format!("{name}.csv"));
    let run = Running::start(sampler(&csv, &["sleep", "30"]));
    let sleep = run.workload("sleep");
    std::thread::sleep(Duration::from_millis(200)); // some samples
    let sent = send(run.pid(), signal);
    let (status, said) = run.finish();
    let took = sent.elapsed();
    eprintln!("{name}: the sampler and sleep stopped in {took:?}");
    assert_eq!(status.code(), Some(128 + signal), "{status:?} {said}");
    assert!(took < PROMPT, "{name}: stopping took {took:?}");
    assert_gone(sleep);
    check_csv(&csv);
}

#[test]
fn sigterm_ends_the_sampler_and_its_command_at_once() {
    a_stop_signal_ends_the_sampler_and_its_command_at_once(libc::SIGTERM, "sigterm");
}

#[test]
fn sigint_ends_the_sampler_and_its_command_at_once() {
    a_stop_signal_ends_the_sampler_and_its_command_at_once(libc::SIGINT, "sigint");
}

#[test]
fn the_command_starts_with_no_signal_blocked_or_ignored() {
    // The sampler blocks SIGINT, SIGTERM and SIGCHLD for sigtimedwait; its
    // command inherited that mask (SigBlk 0000000000014002) and ignored a
    // forwarded SIGTERM. Started as a background job is (SIGINT ignored),
    // with SIGPIPE ignored as Rust programs have it, the command must
    // still start clean.
    let csv = tmp("masks.csv");
    let mut command = sampler(&csv, &["sleep", "30"]);
    ignoring(&mut command, &[libc::SIGINT, libc::SIGPIPE]);
    let run = Running::start(command);
    let sleep = run.workload("sleep");
    let (blocked, ignored) = (signal_set(sleep, "SigBlk"), signal_set(sleep, "SigIgn"));
    assert_eq!(blocked, 0, "the command's SigBlk: {blocked:016x}");
    for s in [libc::SIGINT, libc::SIGTERM, libc::SIGCHLD, libc::SIGPIPE] {
        assert_eq!(ignored & bit(s), 0, "signal {s} in SigIgn {ignored:016x}");
    }
    send(run.pid(), libc::SIGTERM);
    let (status, said) = run.finish();
    assert_eq!(status.code(), Some(143), "{status:?} {said}");
}

#[test]
fn ctrl_c_to_the_process_group_ends_both_at_once() {
    // A terminal sends SIGINT to its whole foreground process group: the
    // sampler and its command. Here the group is a new one, the sampler's.
    let csv = tmp("group.csv");
    let mut command = sampler(&csv, &["sleep", "30"]);
    command.process_group(0);
    let run = Running::start(command);
    let sleep = run.workload("sleep");
    std::thread::sleep(Duration::from_millis(100));
    let sent = send(-run.pid(), libc::SIGINT);
    let (status, said) = run.finish();
    let took = sent.elapsed();
    eprintln!("Ctrl-C to the group: the sampler and sleep stopped in {took:?}");
    assert_eq!(status.code(), Some(130), "{status:?} {said}");
    assert!(took < PROMPT, "stopping took {took:?}");
    assert_gone(sleep);
    check_csv(&csv);
}

/// A command that ignores SIGTERM: sh sets SIG_IGN, and exec keeps it, so
/// the sleep is the command itself (no grandchild left behind by the
/// sampler's SIGKILL of its child).
const IGNORES_SIGTERM: &[&str] = &["sh", "-c", "trap '' TERM; exec sleep 30"];

#[test]
fn a_command_that_ignores_sigterm_is_killed_after_the_grace() {
    let csv = tmp("grace.csv");
    let run = Running::start(sampler(&csv, IGNORES_SIGTERM));
    let sleep = run.workload("sleep");
    assert_ne!(signal_set(sleep, "SigIgn") & bit(libc::SIGTERM), 0);
    let sent = send(run.pid(), libc::SIGTERM);
    let (status, said) = run.finish();
    let took = sent.elapsed();
    eprintln!("a command ignoring SIGTERM was killed and the sampler stopped in {took:?}");
    assert_eq!(status.code(), Some(143), "{status:?} {said}");
    assert!(
        took >= GRACE && took < GRACE + PROMPT,
        "stopping took {took:?}, the grace is {GRACE:?}"
    );
    assert_gone(sleep);
    check_csv(&csv);
}

#[test]
fn a_second_stop_signal_kills_the_command_at_once() {
    let csv = tmp("second.csv");
    let run = Running::start(sampler(&csv, IGNORES_SIGTERM));
    let sleep = run.workload("sleep");
    send(run.pid(), libc::SIGTERM);
    std::thread::sleep(Duration::from_millis(100));
    assert!(testutil::proc_stat(sleep).is_some(), "it ignores SIGTERM");
    let sent = send(run.pid(), libc::SIGINT);
    let (status, said) = run.finish();
    let took = sent.elapsed();
    eprintln!("after a second stop signal the sampler stopped in {took:?}");
    // the first signal says what stopped the run
    assert_eq!(status.code(), Some(143), "{status:?} {said}");
    assert!(took < PROMPT, "stopping took {took:?}");
    assert_gone(sleep);
}

#[test]
fn an_interrupted_run_exits_128_plus_the_signal_even_if_its_command_exits_0() {
    // the command traps SIGTERM and exits 0 (within ~10 ms: its sleep ends)
    let csv = tmp("trapped.csv");
    let trapping = [
        "sh",
        "-c",
        "trap 'exit 0' TERM; while :; do sleep 0.01; done",
    ];
    let run = Running::start(sampler(&csv, &trapping));
    run.workload("sh");
    std::thread::sleep(Duration::from_millis(100));
    let sent = send(run.pid(), libc::SIGTERM);
    let (status, said) = run.finish();
    assert_eq!(status.code(), Some(143), "{status:?} {said}");
    assert!(
        sent.elapsed() < PROMPT,
        "stopping took {:?}",
        sent.elapsed()
    );
    check_csv(&csv);
}

#[test]
fn a_sampler_started_with_sigchld_ignored_still_waits_for_its_command() {
    // SIGCHLD inherited as SIG_IGN: the kernel reaps the command itself and
    // sends no SIGCHLD, so the sampler waited forever (or failed on ECHILD)
    let csv = tmp("sigchld.csv");
    let mut command = sampler(&csv, &["sh", "-c", "sleep 0.3; exit 7"]);
    ignoring(&mut command, &[libc::SIGCHLD]);
    let started = Instant::now();
    let (status, said) = Running::start(command).finish();
    assert_eq!(status.code(), Some(7), "{status:?} {said}");
    assert!(started.elapsed() < Duration::from_secs(5));
    check_csv(&csv);
}

#[test]
fn a_background_sampler_with_a_duration_stopped_by_sigint_exits_130() {
    // results/sampler.py's Background: --duration, SIGINT ignored as a
    // shell's `cmd &` leaves it, stopped with SIGINT: 130, a clean stop
    let csv = tmp("background.csv");
    let mut command = Command::new(BIN);
    command
        .args(["--mechanism", "powercap", "--powercap-root"])
        .arg(fixture_root())
        .args(["--duration", "30", "--output"])
        .arg(&csv)
        .stdin(Stdio::null())
        .stderr(Stdio::piped());
    ignoring(&mut command, &[libc::SIGINT]);
    let run = Running::start(command);
    std::thread::sleep(Duration::from_millis(100));
    let sent = send(run.pid(), libc::SIGINT);
    let (status, said) = run.finish();
    assert_eq!(status.code(), Some(130), "{status:?} {said}");
    assert!(
        sent.elapsed() < PROMPT,
        "stopping took {:?}",
        sent.elapsed()
    );
    check_csv(&csv);
}
