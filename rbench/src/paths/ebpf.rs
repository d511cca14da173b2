//! Paths "ebpf-lookup" and "ebpf-mmap": polling the slot that the BPF
//! sampler (bpf/counters.bpf.c) fills at 1 kHz on every CPU of the energy
//! events' cpumask: one bpf() lookup syscall (op "lookup") or a load from
//! the mmapped array (op "load"), from that CPU and from another one of its
//! package (ubench/paths/ebpf.cc). The sampler runs as long as its rows.

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::cpu::package_placements;
use crate::discovery::{counter_cpus, Counters};
use crate::ebpf::{BpfConfig, BpfSampler, RbSlot, SlotRead, TickCounts};
use crate::perf::events_label;
use crate::plan::{meta, Plan, Planned, Reader, Reads};
use crate::Error;
use nix::errno::Errno;

use super::perf::on_cpu;
use super::Machine;

/// How long the plan watches the slots before it plans their rows: a slot
/// with no tick in that time (the cpu-clock fallback may fire far below
/// 1 kHz), or with a failed read, is no data and its rows are unavailable.
/// Must equal ubench's kSlotCheckWindow (ubench/bpf_slot_check.h): the
/// window is in the reasons ("no tick in 500 ms", "below 2 Hz") and decides
/// which slots' rows run, so the two harnesses' eBPF rows pair only when
/// both watch for as long.
pub const SLOT_CHECK: Duration = Duration::from_millis(500);

/// How often a watched slot is looked at.
const SLOT_POLL: Duration = Duration::from_millis(1);

/// A CPU's slot of the plan's running [`BpfSampler`].
#[derive(Clone)]
pub struct EbpfReads {
    /// The sampler, running as long as a row reads it.
    pub sampler: Arc<BpfSampler>,
    /// Whose slot.
    pub cpu: usize,
    /// lookup or load.
    pub via: SlotRead,
}

impl std::fmt::Debug for EbpfReads {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EbpfReads")
            .field("cpu", &self.cpu)
            .field("via", &self.via)
            .finish_non_exhaustive()
    }
}

impl Reads for EbpfReads {
    fn open(&self) -> Result<Box<dyn Reader + '_>, Error> {
        Ok(Box::new(SlotReader {
            sampler: &self.sampler,
            cpu: self.cpu,
            via: self.via,
            slot: RbSlot::default(),
            before: self.sampler.tick_counts(self.cpu).ok(),
            started: Instant::now(),
        }))
    }
}

/// One copy of a CPU's slot per operation, by lookup or by load.
struct SlotReader<'a> {
    sampler: &'a BpfSampler,
    cpu: usize,
    via: SlotRead,
    /// The last copy.
    slot: RbSlot,
    /// The slot's tick accounting when it was opened.
    before: Option<TickCounts>,
    /// When it was opened.
    started: Instant,
}

impl Reader for SlotReader<'_> {
    fn read(&mut self) -> Result<(), Error> {
        self.read_n(1)
    }

    /// The timed loop copies into a slot on the stack, as a poller would,
    /// and keeps the last copy.
    fn read_n(&mut self, n: u64) -> Result<(), Error> {
        let (sampler, cpu) = (self.sampler, self.cpu);
        let mut slot = self.slot;
        let result = match self.via {
            SlotRead::Lookup => (0..n).try_for_each(|_| {
                let result = sampler.lookup(cpu, &mut slot);
                black_box(&slot);
                result
            }),
            SlotRead::Load => (0..n).try_for_each(|_| {
                let result = sampler.load(cpu, &mut slot);
                black_box(&slot);
                result
            }),
        };
        self.slot = slot;
        result
    }

    /// A slot that failed or stopped ticking held no data: not a
    /// measurement. Judged from the tick accounting before and after
    /// (err_ticks counts every failed read, not just the last), and only
    /// when the run lasted some periods (else Criterion listed or filtered
    /// the benchmark out).
    fn no_data(&mut self) -> Option<String> {
        let (cpu, slot) = (self.cpu, &self.slot);
        let before = self.before?;
        let after = self.sampler.tick_counts(cpu).ok()?;
        let periods =
            self.started.elapsed().as_nanos() / u128::from(self.sampler.period_ns().max(1));
        if periods < 10 {
            return None;
        }
        let failed = after.err_ticks.saturating_sub(before.err_ticks);
        if failed > 0 {
            Some(format!(
                "BPF slot of CPU {cpu}: {failed} failed reads during the timing (last {}): not data",
                slot_error_text(slot.err)
            ))
        } else if after.ticks == before.ticks {
            Some(format!(
                "BPF slot of CPU {cpu}: no tick during the timing: not data"
            ))
        } else {
            None
        }
    }
}

/// The rows of paths "ebpf-lookup" and "ebpf-mmap" on `machine` (its perf
/// discovery); the sampler they read runs as long as they do.
pub fn plan(machine: &Machine, plan: &mut Plan) {
    plan.rows
        .extend(ebpf_rows(machine.perf(), machine.slot_check));
}

/// "err -2 (ENOENT)": a slot's error as the program stores it (a negative
/// errno), as ubench's slot_error_text.
pub fn slot_error_text(err: i32) -> String {
    let name = match Errno::from_raw(err.saturating_abs()) {
        _ if err == 0 => "0".to_string(),
        Errno::UnknownErrno => "?".to_string(),
        errno => format!("{errno:?}"),
    };
    format!("err {err} ({name})")
}

/// `x` as C's "%g" prints it (six significant digits, no trailing zeros),
/// for rates between 1e-4 and 1e6.
fn g_format(x: f64) -> String {
    let digits = 5 - x.abs().log10().floor().clamp(-4.0, 5.0) as i32;
    let text = format!("{x:.*}", digits.max(0) as usize);
    match text.contains('.') {
        true => text.trim_end_matches('0').trim_end_matches('.').to_string(),
        false => text,
    }
}

/// Why each CPU of `cpus` has a slot that is no data, or None: watched
/// together for `window` (a look every `poll`), a slot must tick and no
/// tick's read may fail (its err_ticks must not grow); a CPU outside
/// `armed` has no trigger. `load` copies a CPU's slot. The same check and
/// words as ubench's check_slot (bpf_slot_check.cc), e.g.
/// "BPF slot of CPU 0: err -2 (ENOENT) on 3 of 48 ticks seen in 50 ms".
pub fn check_slots(
    cpus: &[usize],
    armed: &[usize],
    mut load: impl FnMut(usize, &mut RbSlot) -> Result<(), Error>,
    trigger: &str,
    window: Duration,
    poll: Duration,
) -> Vec<Option<String>> {
    let slot_name = |cpu: usize| format!("BPF slot of CPU {cpu}");
    let load_failed = |cpu: usize, e: Error| match e {
        Error::SlotUnsettled { .. } => {
            format!(
                "{}: never settled (its seqlock kept moving)",
                slot_name(cpu)
            )
        }
        other => format!("{}: {other}", slot_name(cpu)),
    };
    let mut why: Vec<Option<String>> = cpus
        .iter()
        .map(|&cpu| {
            (!armed.contains(&cpu)).then(|| {
                format!(
                    "{}: no trigger armed there (outside this process's CPU affinity)",
                    slot_name(cpu)
                )
            })
        })
        .collect();
    let start = Instant::now();
    let mut first = vec![RbSlot::default(); cpus.len()];
    for (i, &cpu) in cpus.iter().enumerate() {
        if why[i].is_none() {
            if let Err(e) = load(cpu, &mut first[i]) {
                why[i] = Some(load_failed(cpu, e));
            }
        }
    }
    // the program counts every tick and every failed read (err_ticks): the
    // differences are exact however many ticks fall between two looks
    let mut now = first.clone();
    let mut last_err = vec![0i32; cpus.len()];
    loop {
        std::thread::sleep(poll);
        for (i, &cpu) in cpus.iter().enumerate() {
            if why[i].is_some() {
                continue;
            }
            match load(cpu, &mut now[i]) {
                Err(e) => why[i] = Some(load_failed(cpu, e)),
                Ok(()) if now[i].err != 0 => last_err[i] = now[i].err,
                Ok(()) => {}
            }
        }
        if start.elapsed() >= window {
            break;
        }
    }
    let ms = start.elapsed().as_millis();
    let floor_hz = g_format(1e9 / window.as_nanos().max(1) as f64);
    for (i, &cpu) in cpus.iter().enumerate() {
        if why[i].is_some() {
            continue;
        }
        let seen = now[i].ticks.wrapping_sub(first[i].ticks);
        let with_error = now[i].err_ticks.wrapping_sub(first[i].err_ticks);
        if seen == 0 {
            why[i] = Some(format!(
                "{}: no tick in {ms} ms: {trigger} fires below {floor_hz} Hz on this CPU",
                slot_name(cpu)
            ));
        } else if with_error > 0 {
            why[i] = Some(format!(
                "{}: {} on {with_error} of {seen} ticks seen in {ms} ms",
                slot_name(cpu),
                slot_error_text(last_err[i])
            ));
        }
    }
    why
}

/// Paths "ebpf-lookup" and "ebpf-mmap": starts the sampler on the energy
/// events on every CPU of their cpumask and reads each CPU's slot at both
/// placements; a slot that is no data ([`check_slots`], watched for
/// `check`) makes its rows unavailable with the reason. The runnable rows
/// share the sampler: it stops when the last of them is dropped (at once
/// if none runs).
pub fn ebpf_rows(perf: &Result<Counters, Error>, check: Duration) -> Vec<Planned> {
    let unavailable = |label: &str, stand_in: Option<&str>, reason: &str| {
        vec![
            Planned::unavailable(
                meta("ebpf-lookup", "lookup", Some(label), None, stand_in, None),
                reason,
            ),
            Planned::unavailable(
                meta("ebpf-mmap", "load", Some(label), None, stand_in, None),
                reason,
            ),
        ]
    };
    let found = match perf {
        Ok(found) => found,
        Err(e) => return unavailable("", None, &e.to_string()),
    };
    let cpus = counter_cpus(&found.counters);
    let (_, events) = on_cpu(found, cpus[0]);
    let label = events_label(&events);
    let stand_in = found.stand_in.as_deref();
    let config = BpfConfig {
        cpus: Some(cpus.clone()),
        ..BpfConfig::default()
    };
    let sampler = match BpfSampler::start(&events, &config) {
        Ok(sampler) => Arc::new(sampler),
        Err(e) => return unavailable(&label, stand_in, &e.to_string()),
    };
    let problems = check_slots(
        &cpus,
        sampler.cpus(),
        |cpu, slot| sampler.load(cpu, slot),
        sampler.trigger(),
        check,
        SLOT_POLL,
    );
    let mut rows = Vec::new();
    for (cpu, problem) in cpus.into_iter().zip(problems) {
        let (counters, _) = on_cpu(found, cpu);
        let liveness = Counters::liveness_of(counters);
        for p in package_placements(cpu) {
            for (path, op, via) in [
                ("ebpf-lookup", "lookup", SlotRead::Lookup),
                ("ebpf-mmap", "load", SlotRead::Load),
            ] {
                let meta = meta(path, op, Some(&label), Some(p), stand_in, liveness.clone());
                rows.push(match &problem {
                    Some(why) => Planned::unavailable(meta, why),
                    None => Planned::run(
                        meta,
                        EbpfReads {
                            sampler: sampler.clone(),
                            cpu,
                            via,
                        },
                    ),
                });
            }
        }
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::CPU_ROOT;
    use crate::discovery::perf_counters;
    use crate::perf::PMU_ROOT;
    use std::path::Path;

    #[test]
    fn ebpf_rows_without_events_are_unavailable_with_the_reason() {
        let missing: Result<Counters, Error> = Err(Error::Unavailable("no PMU".into()));
        let rows = ebpf_rows(&missing, Duration::from_millis(10));
        let ids: Vec<(&str, &str)> = rows
            .iter()
            .map(|r| (r.meta.path.as_str(), r.meta.op.as_str()))
            .collect();
        assert_eq!(ids, [("ebpf-lookup", "lookup"), ("ebpf-mmap", "load")]);
        assert!(rows.iter().all(|r| r.reason() == Some("no PMU")));
    }

    /// A slot loader over fake slots: each look advances CPU c's ticks by
    /// `ticks[c]` and its err_ticks by `errs[c]` (err -2 while failing).
    fn fake_slots(
        ticks: Vec<u64>,
        errs: Vec<u64>,
    ) -> impl FnMut(usize, &mut RbSlot) -> Result<(), Error> {
        let mut state = vec![RbSlot::default(); ticks.len()];
        move |cpu, out| {
            if cpu >= state.len() {
                return Err(Error::SlotUnsettled { cpu });
            }
            let s = &mut state[cpu];
            s.ticks += ticks[cpu];
            s.err_ticks += errs[cpu];
            s.err = if errs[cpu] > 0 { -2 } else { 0 };
            *out = *s;
            Ok(())
        }
    }

    #[test]
    fn slots_are_judged_by_their_ticks_and_failed_reads_in_ubench_s_words() {
        let window = Duration::from_millis(10);
        let why = check_slots(
            &[0, 1, 2, 3, 4],
            &[0, 1, 2, 4],
            fake_slots(vec![1, 0, 2, 1], vec![0, 0, 1, 0]),
            "bpf_timer (test)",
            window,
            Duration::from_millis(1),
        );
        assert_eq!(why[0], None);
        let number = |text: &str, after: &str| -> String {
            let rest = &text[text.find(after).unwrap() + after.len()..];
            rest.chars().take_while(char::is_ascii_digit).collect()
        };
        let no_tick = why[1].as_deref().unwrap();
        let ms = number(no_tick, "no tick in ");
        assert_eq!(
            no_tick,
            format!("BPF slot of CPU 1: no tick in {ms} ms: bpf_timer (test) fires below 100 Hz on this CPU")
        );
        let failing = why[2].as_deref().unwrap();
        let (n, ms) = (number(failing, " on "), number(failing, " seen in "));
        assert_eq!(
            failing,
            format!(
                "BPF slot of CPU 2: err -2 (ENOENT) on {n} of {} ticks seen in {ms} ms",
                2 * n.parse::<u64>().unwrap()
            )
        );
        assert_eq!(
            why[3].as_deref(),
            Some("BPF slot of CPU 3: no trigger armed there (outside this process's CPU affinity)")
        );
        assert_eq!(
            why[4].as_deref(),
            Some("BPF slot of CPU 4: never settled (its seqlock kept moving)")
        );
    }

    #[test]
    fn slot_errors_and_rates_print_as_ubench_prints_them() {
        assert_eq!(slot_error_text(-2), "err -2 (ENOENT)");
        assert_eq!(slot_error_text(-95), "err -95 (EOPNOTSUPP)");
        assert_eq!(slot_error_text(0), "err 0 (0)");
        assert_eq!(slot_error_text(-100_000), "err -100000 (?)");
        let floor = |ms: u64| g_format(1e9 / Duration::from_millis(ms).as_nanos() as f64);
        assert_eq!([floor(50), floor(500), floor(300)], ["20", "2", "3.33333"]);
        assert_eq!(g_format(0.5), "0.5");
    }

    #[test]
    fn ebpf_rows_on_this_machine_read_a_running_sampler_or_say_why() {
        let found = perf_counters(Path::new(PMU_ROOT), Path::new(CPU_ROOT));
        let rows = ebpf_rows(&found, SLOT_CHECK);
        let Some(runs) = rows.iter().find(|r| r.reads.is_ok()) else {
            let why = rows[0].reason().unwrap();
            return eprintln!("skipped: no eBPF row runs here: {why}");
        };
        let reads = runs.reads_as::<EbpfReads>().unwrap();
        assert_eq!(runs.meta.target_cpu, Some(reads.cpu));
        let mut reader = runs.reads.as_ref().unwrap().open().unwrap();
        reader.read().unwrap();
    }
}
