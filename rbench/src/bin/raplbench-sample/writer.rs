//! The writer thread: everything off the sampling thread's hot path (CSV
//! lines, unit conversion, wrap correction, the window's statistics).

use rbench::delta::{CounterDiff, GapCheck};
use rbench::Domain;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::sync::{Arc, Barrier};

use crate::batch::WriterEnds;
use crate::cputime::process_threads_ns;
use crate::sample_times::SampleTimes;

/// CPU time spent outside this process's threads on its behalf (the BPF
/// program's callback time), cumulative ns.
pub type ExtraCpu = Arc<dyn Fn() -> u64 + Send + Sync>;

/// CPU ns of the process's threads, plus `extra`.
pub fn cpu_now(extra: Option<&ExtraCpu>) -> u64 {
    process_threads_ns() + extra.map_or(0, |f| f())
}

/// The CSV output, carried from one window of a run to the next: the header
/// is written once, and the first write error stops every later write.
pub struct CsvOut {
    out: BufWriter<File>,
    header_written: bool,
    /// The first write error, if the output failed.
    pub error: Option<String>,
}

impl CsvOut {
    /// A CSV output into `file`; nothing is written yet.
    pub fn new(file: File) -> CsvOut {
        CsvOut {
            out: BufWriter::with_capacity(1 << 16, file),
            header_written: false,
            error: None,
        }
    }

    fn write(&mut self, bytes: &[u8]) {
        if self.error.is_none() {
            if let Err(e) = self.out.write_all(bytes) {
                self.error = Some(e.to_string());
            }
        }
    }

    fn flush(&mut self) {
        if let Err(e) = self.out.flush() {
            self.error.get_or_insert(e.to_string());
        }
    }
}

/// What the writer saw of one window.
#[derive(Debug, Default)]
pub struct PhaseStats {
    /// The CLOCK_MONOTONIC times of the samples written.
    pub times: SampleTimes,
    /// Ticks missed.
    pub missed: u64,
    /// CPU ns of the process (plus extra) once the last sample was written
    /// (cumulative: the phase subtracts its start).
    pub cpu_end_ns: u64,
    /// Intervals long enough for a counter to have wrapped twice unseen
    /// (rbench::delta::GapCheck): their delta_j may be short by a range.
    pub wrap_gaps: u64,
}

/// What the writer needs to know.
pub struct WriterSetup {
    /// The sampling period, ns.
    pub period_ns: u64,
    /// The domains, in the order of the raw values.
    pub domains: Vec<Domain>,
    /// Per domain, whether its delta_j is energy (else the column stays
    /// empty: a stand-in, a frozen or no-unit counter).
    pub yields_energy: Vec<bool>,
    /// CSV output, or none.
    pub output: Option<CsvOut>,
    /// CPU time spent outside this process's threads on its behalf; None
    /// when there is none.
    pub extra_cpu_ns: Option<ExtraCpu>,
}

/// The CSV header.
pub const CSV_HEADER: &str = "time_ns,source,domain,raw,delta_j\n";

/// `text` as one CSV field (RFC 4180): as it is, or in double quotes with
/// its quotes doubled when it holds a comma, a quote or a line break.
/// Domain names come from sysfs files and fixtures: a comma in one must not
/// shift the columns.
fn csv_field(text: &str) -> String {
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_string()
    }
}

/// One domain's CSV lines: its "source,domain" columns, quoted once here,
/// not per sample; J per raw count where its delta_j is energy; its wrap
/// correction and its check for gaps a wrap could hide in.
struct Column {
    names: String,
    joules_per_unit: Option<f64>,
    diff: CounterDiff,
    gap: GapCheck,
}

/// Runs until the producer hangs up, then takes the last CPU reading and
/// meets the producer at `done`; returns the statistics and the output.
/// Each counter's first sample of the window has an empty delta_j: there is
/// no difference yet (a window of a --report run follows a gap).
pub fn run(
    mut setup: WriterSetup,
    ends: WriterEnds,
    done: &Barrier,
) -> (PhaseStats, Option<CsvOut>) {
    let mut stats = PhaseStats {
        times: SampleTimes::new(setup.period_ns),
        ..PhaseStats::default()
    };
    let mut previous_t: Option<u64> = None;
    let ndom = setup.domains.len();
    let mut columns: Vec<Column> = (setup.domains.iter().zip(&setup.yields_energy))
        .map(|(d, &energy)| Column {
            names: format!("{},{}", csv_field(&d.source), csv_field(&d.name)),
            joules_per_unit: energy.then_some(d.joules_per_unit),
            diff: CounterDiff::with_max(d.max),
            gap: GapCheck::with_max(d.max),
        })
        .collect();
    let mut line = String::with_capacity(128);
    if let Some(out) = setup.output.as_mut().filter(|o| !o.header_written) {
        out.write(CSV_HEADER.as_bytes());
        out.header_written = true;
    }

    while let Ok(mut batch) = ends.full.recv() {
        batch.times[..batch.len]
            .iter()
            .for_each(|&t| stats.times.push(t));
        if let Some(out) = setup.output.as_mut().filter(|o| o.error.is_none()) {
            for i in 0..batch.len {
                let t = batch.times[i];
                let raws = &batch.values[i * ndom..(i + 1) * ndom];
                let gap_ns = previous_t.map(|p| t.saturating_sub(p));
                previous_t = Some(t);
                let mut gap_too_long = false;
                for (column, &raw) in columns.iter_mut().zip(raws) {
                    line.clear();
                    let delta = column.diff.update(raw).difference();
                    if let (Some(d), Some(g)) = (delta, gap_ns) {
                        gap_too_long |= column.gap.too_long(d, g);
                    }
                    use std::fmt::Write as _;
                    let _ = write!(line, "{t},{},{raw},", column.names);
                    if let (Some(delta), Some(unit)) = (delta, column.joules_per_unit) {
                        let _ = write!(line, "{}", delta as f64 * unit);
                    }
                    line.push('\n');
                    out.write(line.as_bytes());
                }
                stats.wrap_gaps += u64::from(gap_too_long);
            }
        }
        stats.missed += batch.missed;
        batch.len = 0;
        batch.missed = 0;
        let _ = ends.empty.send(batch); // the producer may be gone
    }

    stats.cpu_end_ns = cpu_now(setup.extra_cpu_ns.as_ref());
    done.wait();
    if let Some(out) = setup.output.as_mut() {
        out.flush();
    }
    (stats, setup.output)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// An RFC 4180 reader of one line, the test's oracle.
    fn split_fields(line: &str) -> Vec<String> {
        let (mut fields, mut field, mut quoted, mut chars) =
            (Vec::new(), String::new(), false, line.chars().peekable());
        while let Some(c) = chars.next() {
            match (c, quoted) {
                ('"', true) if chars.peek() == Some(&'"') => {
                    field.push('"');
                    chars.next();
                }
                ('"', _) => quoted = !quoted,
                (',', false) => fields.push(std::mem::take(&mut field)),
                (c, _) => field.push(c),
            }
        }
        fields.push(field);
        fields
    }

    #[test]
    fn plain_names_are_written_as_they_are() {
        assert_eq!(csv_field("package-0"), "package-0");
    }

    #[test]
    fn a_comma_or_a_quote_is_quoted() {
        let line = format!("{},{}", csv_field("dram,1"), csv_field("say \"hi\""));
        assert_eq!(line, "\"dram,1\",\"say \"\"hi\"\"\"");
        assert_eq!(split_fields(&line), ["dram,1", "say \"hi\""]);
    }

    proptest! {
        #![proptest_config(crate::testutil::fixed_cases(2000))]

        /// Any source and domain name: the line has its five columns and
        /// reads back to the same names.
        #[test]
        fn any_names_keep_the_columns(source in "\\PC{0,12}|[,\"\n]{0,4}", name in "\\PC{0,12}|[,\"\r]{0,4}", raw: u64) {
            let line = format!("123,{},{},{raw},0.5", csv_field(&source), csv_field(&name));
            prop_assert_eq!(split_fields(&line), [
                "123".to_string(), source, name, raw.to_string(), "0.5".to_string()
            ]);
        }
    }
}
