//! raplbench-sample: the 1 kHz RAPL energy sampler, raplbench's reference
//! workload (the tool whose cost the suite measures); its files and options
//! are in rbench/README.md, "The 1 kHz sampler".
//!
//! Threads: the main thread starts everything, then waits (for --duration,
//! or for COMMAND) in sigtimedwait for SIGINT/SIGTERM (rbench::signals), which
//! stay blocked in every thread; the sampling thread (ticker.rs; for ebpf and
//! kernel a drain thread, drain.rs) fills preallocated batches; the writer
//! thread (writer.rs) converts, wrap-corrects and writes them. With --report
//! a run is windows of the sampler and of a null sampler (report.rs).

mod batch;
mod cli;
mod cputime;
mod drain;
mod ebpf_drain;
mod ksample_drain;
mod list;
mod mechanism;
mod output;
mod perf_ring_drain;
mod phase;
mod report;
mod sample_times;
#[cfg(test)]
#[path = "../../testutil.rs"]
#[allow(dead_code)]
mod testutil;
mod ticker;
mod writer;

use clap::Parser;
use rbench::discovery::{counter_cpus, Counters};
use rbench::say;
use rbench::signals;
use std::io::Write;
use std::path::Path;

use cli::Args;
use mechanism::{NullSource, Opened, Sampler};
use output::OutFile;
use phase::{run_in_kernel, run_ticked, Ran, Source, Until};
use report::{Kind, Subject, Window};
use ticker::TickerSetup;
use writer::{CsvOut, WriterSetup};

/// Why the program stops early.
enum Fail {
    /// Before sampling started: bad options, a counter or file that cannot
    /// be opened. Exit status 2.
    Setup(String),
    /// After sampling started. Exit status 1.
    Run(String),
}

fn create(path: &Path, what: &str) -> Result<OutFile, Fail> {
    OutFile::create(path)
        .map_err(|e| Fail::Setup(format!("cannot write {what} {}: {e}", path.display())))
}

/// " (what was written is in .NAME.PID.partial)" for an output that is
/// not renamed over its name, or "" (one written in place).
fn kept_note(file: &OutFile) -> String {
    file.kept_at().map_or(String::new(), |k| {
        format!(" (what was written is in {})", k.display())
    })
}

/// Renames a complete output over its final name (output.rs).
fn commit(file: OutFile, what: &str) -> Result<(), Fail> {
    let note = kept_note(&file);
    file.commit()
        .map_err(|e| Fail::Run(format!("writing {what} failed: {e}{note}")))
}

/// How a window samples: the mechanism's loop, or its null twin (the same
/// deadlines, nothing read; for ebpf and kernel a timer on each package
/// CPU, so its floor is comparable: the callback time adds up).
struct Loops {
    /// What was opened (a ticked source is lent to each sampler window).
    opened: Opened,
    /// Where and how a user-space sampling thread runs.
    setup: TickerSetup,
    hz: u32,
}

impl Loops {
    /// Runs one window of `kind` until `until`; a sampler window writes
    /// into `output` (and hands it back there).
    fn run(
        &mut self,
        kind: Kind,
        output: &mut Option<CsvOut>,
        until: &Until,
        banner: Option<String>,
    ) -> Result<Ran, Fail> {
        let reads = kind == Kind::Sampler;
        let counters = if reads {
            &self.opened.counters[..]
        } else {
            &[]
        };
        let writer = WriterSetup {
            period_ns: self.setup.period_ns,
            domains: counters.iter().map(|c| c.domain.clone()).collect(),
            yields_energy: mechanism::yields_energy(counters),
            output: if reads { output.take() } else { None },
            extra_cpu_ns: None,
        };
        let (ran, out) = match self.opened.sampler {
            Sampler::Ticked(ref mut source) => {
                // lent to the window (the null loop's a source of nothing), then back
                let mut null: Source = Box::new(NullSource);
                let lent = if reads { source } else { &mut null };
                let taken = std::mem::replace(lent, Box::new(NullSource));
                let (back, ran, out) = run_ticked(taken, writer, self.setup, until, banner)?;
                *lent = back;
                (ran, out)
            }
            _ => run_in_kernel(&self.opened, reads, writer, self.hz, until, banner)?,
        };
        if reads {
            *output = out;
        }
        Ok(ran)
    }
}

/// What the sampler and the null loop of `opened` are, their banners, and
/// the loops that run them.
fn loops(opened: Opened, args: &Args) -> (Loops, [Subject; 2], [String; 2]) {
    let (mech, hz) = (args.mechanism().name(), args.frequency);
    let liveness = Counters::liveness_of(&opened.counters);
    // the sampling CPU, the counters', and where it samples (for the banner)
    let (cpu, target_cpu, on) = match opened.sampler {
        Sampler::Ticked(_) => {
            let target_cpu = opened.counters.first().and_then(|c| c.cpu);
            let cpu = args.cpu.or(target_cpu);
            (
                cpu,
                target_cpu,
                cpu.map_or(String::new(), |c| format!(" on CPU {c}")),
            )
        }
        _ => {
            let cpus = counter_cpus(&opened.counters);
            let cpu = cpus.first().copied().unwrap_or(0);
            let all: Vec<String> = cpus.iter().map(usize::to_string).collect();
            (Some(cpu), Some(cpu), format!(" on CPU {}", all.join(",")))
        }
    };
    let (label, stand_in, kind) = (&opened.label, &opened.stand_in, opened.null_kind());
    let banners = [
        format!("sampling {mech} ({label}) at {hz} Hz{on}"),
        format!("null sampler ({kind}) at {hz} Hz"),
    ];
    let sampler = Subject {
        title: format!("{mech} ({label})"),
        target: label.clone(),
        cpu,
        target_cpu,
        stand_in: stand_in.clone(),
        liveness,
    };
    let null = Subject {
        title: format!("null ({kind})"),
        target: kind.into(),
        cpu,
        ..Subject::default() // it reads nothing: no counters' CPU, stand-in or liveness
    };
    let setup = TickerSetup {
        period_ns: 1_000_000_000 / u64::from(hz),
        cpu,
        fifo: args.fifo,
    };
    let loops = Loops { opened, setup, hz };
    (loops, [sampler, null], banners)
}

fn run(args: Args) -> Result<i32, Fail> {
    args.validate().map_err(Fail::Setup)?;
    if args.list {
        // a closed pipe (| head) ends the listing, not in a panic
        let _ = std::io::stdout().write_all(list::render(&list::lines(&args)).as_bytes());
        return Ok(0);
    }
    // everything that can fail before sampling, fails now (exit 2)
    let output_file = (args.output.as_deref().map(|p| create(p, "--output"))).transpose()?;
    let mut output = (output_file.as_ref())
        .map(|file| file.handle().map(CsvOut::new))
        .transpose()
        .map_err(|e| Fail::Setup(format!("cannot write --output: {e}")))?;
    let report_file = (args.report.as_deref().map(|p| create(p, "--report"))).transpose()?;
    // main takes them with sigtimedwait
    signals::take().map_err(Fail::Setup)?;
    let opened = mechanism::open(&args).map_err(Fail::Setup)?;
    let dead = mechanism::dead_counter_lines(args.mechanism(), &opened.counters);
    for line in &dead {
        say!("{line}");
    }
    if args.require_live && !dead.is_empty() {
        return Err(Fail::Setup(format!(
            "--require-live: {} counter(s) not live (see above)",
            dead.len()
        )));
    }
    let (mut loops, [mut sampler, null], banners) = loops(opened, &args);

    let reporting = report_file.is_some();
    let pairs = if reporting { args.pairs() } else { 1 };
    let schedule = report::schedule(pairs, reporting && !args.no_null);
    let window_ns = args
        .duration
        .map(|s| report::window_ns((s * 1e9) as u64, pairs));
    let mut windows: Vec<Window> = Vec::new();
    let mut code = 0;
    let mut trigger = None;
    for (pair, kind) in schedule {
        if !windows.is_empty() && signals::received().is_some() {
            break; // stopped: no window starts after a signal
        }
        let until = match (window_ns, kind) {
            (Some(ns), _) => Until::Elapsed(ns),
            (None, Kind::Sampler) => Until::CommandExits(&args.command),
            // as long as its pair's sampler window, which ran first
            (None, Kind::Null) => Until::Elapsed(
                windows
                    .iter()
                    .find(|w| (w.pair, w.kind) == (pair, Kind::Sampler))
                    .map_or(0, |w| w.ran.wall_ns),
            ),
        };
        let first_of_kind = !windows.iter().any(|w| w.kind == kind);
        let banner = first_of_kind.then(|| banners[(kind == Kind::Null) as usize].clone());
        let ran = loops.run(kind, &mut output, &until, banner)?;
        if code == 0 {
            code = ran.code;
        }
        if kind == Kind::Sampler && trigger.is_none() {
            trigger = ran.trigger.clone();
        }
        windows.push(Window { kind, pair, ran });
    }
    if let Some(trigger) = &trigger {
        sampler.title.pop(); // "ebpf (label)" becomes "ebpf (label, trigger)"
        sampler.title += &format!(", {trigger})");
    }
    let (sampled, nulls): (Vec<&Window>, Vec<&Window>) =
        windows.iter().partition(|w| w.kind == Kind::Sampler);
    let pairs = report::pairs(&windows);
    if reporting {
        say!("{}", sampler.windows_summary(&sampled));
        if !nulls.is_empty() {
            say!("{}", null.windows_summary(&nulls));
            for line in report::above_null_summary(args.mechanism().name(), &pairs) {
                say!("{line}");
            }
        }
    } else {
        say!("{}", sampler.summary(sampled[0]));
    }

    let write_error = output.as_ref().and_then(|o| o.error.clone());
    drop(output); // flushed by the writer thread at the end of each window
    let mut failure = write_error
        .as_ref()
        .map(|e| format!("writing --output failed: {e}"));
    if sampled.iter().all(|w| w.ran.times.len() == 0) && signals::received().is_none() {
        let why = sampled
            .iter()
            .find_map(|w| w.ran.producer.first_error.clone());
        failure.get_or_insert_with(|| format!("no sample was taken: {}", why.unwrap_or_default()));
    }
    // the CSV under its name once complete; a failed write keeps it aside
    if let Some(file) = output_file {
        match &mut failure {
            Some(why) if write_error.is_some() => why.push_str(&kept_note(&file)),
            _ => commit(file, "--output")?,
        }
    }
    if let Some(mut file) = report_file {
        let text = report::document(
            args.mechanism().name(),
            args.frequency,
            [&sampler, &null],
            trigger.as_deref(),
            &windows,
        );
        file.file()
            .write_all(text.as_bytes())
            .map_err(|e| Fail::Run(format!("writing --report failed: {e}")))?;
        commit(file, "--report")?;
    }
    // samples lost on the way (the summary above counts them): a run that
    // otherwise succeeded says so in its exit status
    let lost: u64 = sampled
        .iter()
        .map(|w| w.ran.producer.dropped + w.ran.producer.read_errors)
        .sum();
    match failure {
        Some(why) => Err(Fail::Run(why)),
        None if code == 0 && lost > 0 => {
            say!("{lost} samples lost (dropped or failed reads, above): exit status {EXIT_LOST}");
            Ok(EXIT_LOST)
        }
        None => Ok(code),
    }
}

/// The exit status of a run that sampled to the end but lost samples.
const EXIT_LOST: i32 = 3;

fn main() {
    let args = Args::parse(); // bad options: clap prints why and exits 2
    let (why, code) = match run(args) {
        Ok(code) => std::process::exit(code),
        Err(Fail::Setup(why)) => (why, 2),
        Err(Fail::Run(why)) => (why, 1),
    };
    say!("{why}");
    std::process::exit(code);
}
