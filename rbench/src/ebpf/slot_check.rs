//! Is a CPU's slot of the BPF sampler data? Checked before a slot's rows
//! are planned, with the same check and words as ubench's check_slot
//! (ubench/bpf_slot_check.cc): a slot whose program fails to read the
//! counters (err_ticks grows), or whose tick count does not advance (the
//! trigger does not fire on that CPU: the cpu-clock fallback can fire far
//! below 1 kHz, even at 0 Hz on an idle VM CPU), holds no values to measure.

use std::time::{Duration, Instant};

use nix::errno::Errno;

use super::RbSlot;
use crate::Error;

/// How long the plan watches the slots before it plans their rows. Must
/// equal ubench's kSlotCheckWindow (ubench/bpf_slot_check.h): the window is
/// in the reasons ("no tick in 500 ms", "below 2 Hz") and decides which
/// slots' rows run, so the two harnesses' eBPF rows pair only when both
/// watch for as long.
pub const SLOT_CHECK: Duration = Duration::from_millis(500);

/// How often a watched slot is looked at (ubench's kSlotCheckPoll).
pub const SLOT_POLL: Duration = Duration::from_millis(1);

/// Enough to judge a slot before [`SLOT_CHECK`] ends: this many ticks seen,
/// none with a failed read. The 1 kHz timer's slots are judged in 100 ms,
/// not 500 (bench-all plans once per run); a slot that ticks slower or
/// fails is watched for the whole window. Its rows are judged again while
/// they are timed: a slot that fails then fails its row.
pub const SLOT_ENOUGH_TICKS: u64 = 100;

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
/// together for `window` (a look every `poll`; less once every slot has
/// [`SLOT_ENOUGH_TICKS`] clean ticks), a slot must tick and no tick's read
/// may fail (its err_ticks must not grow); a CPU outside `armed` has no
/// trigger. `load` copies a CPU's slot. A reason reads e.g.
/// "BPF slot of CPU 0: err -2 (ENOENT) on 3 of 48 ticks seen in 50 ms".
pub fn check_slots(
    cpus: &[usize],
    armed: &[usize],
    mut load: impl FnMut(usize, &mut RbSlot) -> Result<(), Error>,
    trigger: &str,
    window: Duration,
    poll: Duration,
) -> Vec<Option<String>> {
    let load_failed = |e: Error| match e {
        Error::SlotUnsettled { .. } => "never settled (its seqlock kept moving)".to_string(),
        other => other.to_string(),
    };
    let mut why: Vec<Option<String>> = cpus
        .iter()
        .map(|cpu| {
            (!armed.contains(cpu))
                .then(|| "no trigger armed there (outside this process's CPU affinity)".into())
        })
        .collect();
    let start = Instant::now();
    let mut first = vec![RbSlot::default(); cpus.len()];
    for (i, &cpu) in cpus.iter().enumerate() {
        if why[i].is_none() {
            if let Err(e) = load(cpu, &mut first[i]) {
                why[i] = Some(load_failed(e));
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
                Err(e) => why[i] = Some(load_failed(e)),
                Ok(()) if now[i].err != 0 => last_err[i] = now[i].err,
                Ok(()) => {}
            }
        }
        let judged = (0..cpus.len()).all(|i| {
            why[i].is_some()
                || (now[i].ticks.wrapping_sub(first[i].ticks) >= SLOT_ENOUGH_TICKS
                    && now[i].err_ticks == first[i].err_ticks)
        });
        if judged || start.elapsed() >= window {
            break;
        }
    }
    let ms = start.elapsed().as_millis();
    let floor_hz = g_format(1e9 / window.as_nanos().max(1) as f64);
    for (i, why) in why.iter_mut().enumerate().filter(|(_, why)| why.is_none()) {
        let seen = now[i].ticks.wrapping_sub(first[i].ticks);
        let with_error = now[i].err_ticks.wrapping_sub(first[i].err_ticks);
        if seen == 0 {
            *why = Some(format!(
                "no tick in {ms} ms: {trigger} fires below {floor_hz} Hz on this CPU"
            ));
        } else if with_error > 0 {
            let err = slot_error_text(last_err[i]);
            *why = Some(format!(
                "{err} on {with_error} of {seen} ticks seen in {ms} ms"
            ));
        }
    }
    (why.into_iter().zip(cpus))
        .map(|(why, cpu)| why.map(|why| format!("BPF slot of CPU {cpu}: {why}")))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn slots_with_enough_clean_ticks_end_the_watch_early_and_a_failing_one_does_not() {
        let watch = |ticks: Vec<u64>, errs: Vec<u64>| {
            let cpus: Vec<usize> = (0..ticks.len()).collect();
            let mut slots = fake_slots(ticks, errs);
            let mut looks = 0;
            let why = check_slots(
                &cpus,
                &cpus,
                |cpu, slot| {
                    looks += 1;
                    slots(cpu, slot)
                },
                "bpf_timer (test)",
                Duration::from_millis(200),
                Duration::from_millis(1),
            );
            (why, looks / cpus.len())
        };
        // 50 ticks a look: the first look, then two more, not 200 ms of them
        assert_eq!(watch(vec![50, 50], vec![0, 0]), (vec![None, None], 3));
        let (why, looks) = watch(vec![50, 50], vec![0, 1]);
        assert!(why[0].is_none() && why[1].as_deref().unwrap().contains("err -2"));
        assert!(
            looks > 10,
            "a failing slot is watched for the whole window: {looks} looks"
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
}
