//! Tests of the BPF sampler that hold on any machine: no assumption about a
//! counter's value, the rate a trigger reaches, root, or CPUs outside this
//! process's affinity mask. Where the sampler cannot run (not root, no CAP_BPF,
//! a crate built without the BPF object) they print `skipped: <why>`.

use super::*;
use crate::discovery::energy_events;
use crate::perf::{PerfMode, PerfSource, PERF_TYPE_SOFTWARE};
use crate::roots::{CPU, PMU};
use crate::CounterSource;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// PERF_COUNT_SW_DUMMY: a software event that counts nothing.
const PERF_COUNT_SW_DUMMY: u64 = 9;

/// How long to wait for ticks before concluding the trigger does not fire
/// (a bound on waiting, not a rate: the test then reports instead of failing).
const PATIENCE: Duration = Duration::from_secs(5);

/// A fake of a dead energy counter (RAPL on some VMs reads 0 forever): an
/// event that opens and reads like any other on `cpus`, and always reads 0.
fn constant_zero_counter(cpus: &[usize]) -> PerfEventSpec {
    PerfEventSpec {
        name: "software/dummy/".into(),
        type_: PERF_TYPE_SOFTWARE,
        config: PERF_COUNT_SW_DUMMY,
        scale: 1.0,
        unit: String::new(),
        cpus: cpus.to_vec(),
    }
}

/// Starts the sampler, or prints why it cannot run here and gives None.
fn start_or_skip(counters: &[PerfEventSpec], config: &BpfConfig) -> Option<BpfSampler> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: needs root for BPF and perf events (CAP_BPF, CAP_PERFMON)");
        return None;
    }
    match BpfSampler::start(counters, config) {
        Ok(sampler) => Some(sampler),
        Err(Error::Unavailable(why))
            if why.starts_with("built without eBPF") || why.contains("needs CAP_BPF") =>
        {
            eprintln!("skipped: {why}");
            None
        }
        Err(e) => panic!("{e}"),
    }
}

/// True when the trigger is the CPU-pinned bpf_timer (whose rate is the
/// kernel's promise); false for the cpu-clock fallback (which may not fire).
fn on_bpf_timer(sampler: &BpfSampler) -> bool {
    sampler.trigger().starts_with("bpf_timer")
}

/// CPU `cpu`'s slot, loaded from the mmapped array.
fn slot_of(sampler: &BpfSampler, cpu: usize) -> RbSlot {
    let mut slot = RbSlot::default();
    sampler.load(cpu, &mut slot).expect("a settled slot");
    slot
}

/// Polls every sampled CPU's slot from now on, calling `seen` on each copy
/// that holds a sample, until every CPU has `ticks` ticks or PATIENCE ran
/// out; the last copies, by CPU.
fn poll_until_ticks(
    sampler: &BpfSampler,
    ticks: u64,
    mut seen: impl FnMut(usize, &RbSlot),
) -> BTreeMap<usize, RbSlot> {
    let deadline = Instant::now() + PATIENCE;
    loop {
        let last: BTreeMap<usize, RbSlot> = sampler
            .cpus()
            .iter()
            .map(|&cpu| (cpu, slot_of(sampler, cpu)))
            .collect();
        for (&cpu, slot) in &last {
            if slot.ticks > 0 {
                seen(cpu, slot);
            }
        }
        if last.values().all(|s| s.ticks >= ticks) || Instant::now() > deadline {
            return last;
        }
        std::hint::spin_loop();
    }
}

/// Ticks per second on each CPU between two sets of copies taken `seconds` apart.
fn rates(
    before: &BTreeMap<usize, RbSlot>,
    after: &BTreeMap<usize, RbSlot>,
    seconds: f64,
) -> String {
    after
        .iter()
        .map(|(cpu, a)| {
            let hz = (a.ticks - before[cpu].ticks) as f64 / seconds;
            format!("cpu {cpu}: {hz:.0} Hz (missed {})", a.missed)
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The first ticks already find the perf events in the `counters` map: no
/// slot ever publishes -ENOENT (an empty entry), even at a 10 kHz start.
/// The counter is the constant-0 fake: its 0 is published as a value with
/// err 0 (telling a dead counter from a live one is the harness's job).
#[test]
fn the_first_ticks_find_every_counter_in_the_map() {
    let cpus = allowed_cpus();
    let config = BpfConfig {
        period_ns: 100_000,
        cpus: Some(cpus.clone()),
        ..BpfConfig::default()
    };
    let Some(sampler) = start_or_skip(&[constant_zero_counter(&cpus)], &config) else {
        return;
    };
    eprintln!("trigger: {}", sampler.trigger());
    let last = poll_until_ticks(&sampler, 20, |cpu, slot| {
        assert_eq!(
            slot.err, 0,
            "cpu {cpu}, tick {}: err {} (-2: the perf event was not in the map yet)",
            slot.ticks, slot.err
        );
    });
    for (cpu, slot) in &last {
        if slot.ticks == 0 {
            assert!(!on_bpf_timer(&sampler), "cpu {cpu}: bpf_timer never fired");
            eprintln!("cpu {cpu}: the cpu-clock fallback did not fire within {PATIENCE:?}");
            continue;
        }
        assert_eq!(slot.err_ticks, 0, "cpu {cpu}: failed reads since the start");
        assert_eq!(slot.ncounters, 1);
        assert_eq!(
            slot.value[0], 0,
            "cpu {cpu}: the dummy event counts nothing"
        );
    }
}

/// The program loads, publishes err 0 on the CPUs its counters live on,
/// ticks advance (bpf_timer; the fallback's rate is only reported), the
/// values are perf counts like a direct perf read (never decreasing), and
/// only CPUs of this process's affinity mask are used.
#[test]
fn loads_publishes_and_ticks_on_the_cpus_it_may_run_on() {
    let found = match energy_events(Path::new(PMU.real()), Path::new(CPU.real())) {
        Ok(found) => found,
        Err(e) => return eprintln!("skipped: no energy events or stand-in to sample: {e}"),
    };
    let cpus = allowed_cpus();
    let config = BpfConfig {
        cpus: Some(cpus.clone()),
        ..BpfConfig::default()
    };
    let Some(sampler) = start_or_skip(&found.events, &config) else {
        return;
    };
    eprintln!("trigger: {}", sampler.trigger());
    assert_eq!(sampler.cpus(), cpus);
    let counters = &found.events[..found.events.len().min(RB_MAX_COUNTERS)];
    // the CPUs where every sampled counter lives (elsewhere the map has no
    // entry for it: that slot reads -ENOENT by design)
    let home: Vec<usize> = cpus
        .iter()
        .copied()
        .filter(|cpu| counters.iter().all(|c| c.cpus.contains(cpu)))
        .collect();
    if home.is_empty() {
        return eprintln!(
            "skipped: the counters live on CPUs {:?}, outside this process's affinity {cpus:?}",
            counters[0].cpus
        );
    }

    let before = poll_until_ticks(&sampler, 1, |_, _| ());
    let t0 = Instant::now();
    let after = poll_until_ticks(
        &sampler,
        before.values().map(|s| s.ticks).max().unwrap() + 2,
        |_, _| (),
    );
    std::thread::sleep(Duration::from_millis(500));
    let later: BTreeMap<usize, RbSlot> = cpus
        .iter()
        .map(|&cpu| (cpu, slot_of(&sampler, cpu)))
        .collect();
    eprintln!(
        "{}: {}",
        sampler.trigger(),
        rates(&before, &later, t0.elapsed().as_secs_f64())
    );

    for &cpu in &cpus {
        let (b, a, l) = (&before[&cpu], &after[&cpu], &later[&cpu]);
        assert!(
            a.seq % 2 == 0 && l.seq >= a.seq,
            "cpu {cpu}: seq {} then {}",
            a.seq,
            l.seq
        );
        if on_bpf_timer(&sampler) {
            assert!(
                a.ticks > b.ticks,
                "cpu {cpu}: bpf_timer ticks did not advance in {PATIENCE:?}"
            );
            assert!(a.time_ns > b.time_ns && a.seq > b.seq);
        }
    }
    for &cpu in &home {
        let (a, l) = (&after[&cpu], &later[&cpu]);
        if l.ticks == 0 {
            eprintln!("cpu {cpu}: no sample to check (the fallback did not fire)");
            continue;
        }
        assert_eq!(
            (l.err, l.err_ticks),
            (0, 0),
            "cpu {cpu}: counter reads failed"
        );
        assert_eq!(l.ncounters as usize, counters.len());
        // what a direct perf read of the same events on that CPU gives:
        // counts that read without error and never decrease
        let mut direct = PerfSource::open(counters, cpu, PerfMode::EachEvent).unwrap();
        let mut first = vec![0u64; counters.len()];
        let mut second = vec![0u64; counters.len()];
        direct.read(&mut first).unwrap();
        direct.read(&mut second).unwrap();
        for i in 0..counters.len() {
            assert!(second[i] >= first[i], "direct read of {}", counters[i].name);
            assert!(
                l.value[i] >= a.value[i],
                "cpu {cpu}: {} went back",
                counters[i].name
            );
        }

        // both ways of copying a slot see the same sample or a later one
        let (mut via_load, mut via_lookup) = (RbSlot::default(), RbSlot::default());
        sampler.load(cpu, &mut via_load).unwrap();
        sampler.lookup(cpu, &mut via_lookup).unwrap();
        assert!(via_lookup.seq >= via_load.seq);
        assert_eq!(via_lookup.err, 0);
    }
}

/// Set in the environment of the child process that runs
/// [`forced_fallback_child`] alone.
const FD_CHILD_ENV: &str = "RBENCH_EBPF_FD_CHILD";

/// The forced cpu-clock fallback, started and dropped, closes each of its
/// descriptors exactly once: counted in a child process that runs only this
/// check, so no other test opens or closes descriptors meanwhile. (A double
/// close also aborts a debug build: "IO Safety violation".)
#[test]
fn a_forced_cpu_clock_fallback_closes_each_descriptor_once() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return eprintln!("skipped: needs root for BPF and perf events (CAP_BPF, CAP_PERFMON)");
    }
    let out = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "ebpf::tests::forced_fallback_child",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(FD_CHILD_ENV, "1")
        .output()
        .expect("rerunning this test binary");
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    eprintln!("{text}");
    assert!(out.status.success(), "child: {}", out.status);
    assert!(
        text.contains("fallback child: ok") || text.contains("skipped:"),
        "the child did not run the check"
    );
}

/// This process's open descriptors and what each refers to.
fn open_fds() -> BTreeMap<i32, String> {
    std::fs::read_dir("/proc/self/fd")
        .unwrap()
        .filter_map(|entry| {
            let entry = entry.ok()?;
            let fd = entry.file_name().to_str()?.parse().ok()?;
            let target = std::fs::read_link(entry.path()).ok()?;
            Some((fd, target.display().to_string()))
        })
        .collect()
}

/// The check of [`a_forced_cpu_clock_fallback_closes_each_descriptor_once`],
/// in its child process (a no-op elsewhere).
#[test]
fn forced_fallback_child() {
    if std::env::var_os(FD_CHILD_ENV).is_none() {
        return;
    }
    let cpus = allowed_cpus();
    let counters = [constant_zero_counter(&cpus)];
    for trigger in [TriggerChoice::CpuClock, TriggerChoice::Auto] {
        let config = BpfConfig {
            cpus: Some(cpus.clone()),
            trigger,
            ..BpfConfig::default()
        };
        let fds_before = open_fds();
        let Some(sampler) = start_or_skip(&counters, &config) else {
            return;
        };
        eprintln!("{trigger:?}: trigger {}", sampler.trigger());
        if trigger == TriggerChoice::CpuClock {
            assert!(
                sampler
                    .trigger()
                    .starts_with("perf cpu-clock event (fallback: forced"),
                "{}",
                sampler.trigger()
            );
            // busy this CPU briefly (an idle VM CPU may never fire), report the rate
            let before: BTreeMap<usize, RbSlot> =
                cpus.iter().map(|&c| (c, slot_of(&sampler, c))).collect();
            let t0 = Instant::now();
            while t0.elapsed() < Duration::from_millis(200) {
                std::hint::spin_loop();
            }
            let after: BTreeMap<usize, RbSlot> =
                cpus.iter().map(|&c| (c, slot_of(&sampler, c))).collect();
            eprintln!(
                "fallback rate: {}",
                rates(&before, &after, t0.elapsed().as_secs_f64())
            );
        }
        // a descriptor opened meanwhile must survive the drop
        let unrelated = std::fs::File::open("/dev/null").unwrap();
        let unrelated_fd = std::os::fd::AsRawFd::as_raw_fd(&unrelated);
        drop(sampler);
        // SAFETY: F_GETFD on any number is harmless; -1 means it was closed.
        assert_ne!(
            unsafe { libc::fcntl(unrelated_fd, libc::F_GETFD) },
            -1,
            "{trigger:?}: an unrelated fd was closed"
        );
        let mut fds_after = open_fds();
        assert_eq!(
            fds_after.remove(&unrelated_fd).as_deref(),
            Some("/dev/null")
        );
        assert_eq!(
            fds_after, fds_before,
            "{trigger:?}: descriptors before start and after drop"
        );
    }
    eprintln!("fallback child: ok");
}

/// The mmapped load checks the CPU index against the map: an index past
/// the slots is an error, not a read out of bounds. `slot` checks it once,
/// and its loads (what path ebpf-mmap times, as ubench's loop does with
/// BpfSampler::slot) check nothing more; results/agreement.py's "loop"
/// cause cites this test for that.
#[test]
fn load_of_a_cpu_without_a_slot_is_an_error() {
    let cpus = allowed_cpus();
    let config = BpfConfig {
        cpus: Some(cpus.clone()),
        ..BpfConfig::default()
    };
    let Some(sampler) = start_or_skip(&[constant_zero_counter(&cpus)], &config) else {
        return;
    };
    let mut slot = RbSlot::default();
    assert!(sampler.load(cpus[0], &mut slot).is_ok());
    let past = 1 << 20; // beyond any possible CPU count (and RB_MAX_CPUS)
    let err = sampler.load(past, &mut slot).unwrap_err().to_string();
    assert!(
        err.starts_with(&format!("CPU {past} has no slot (")),
        "{err}"
    );
    let Err(err) = sampler.slot(past) else {
        panic!("CPU {past} has a slot")
    };
    assert!(err
        .to_string()
        .starts_with(&format!("CPU {past} has no slot (")));
    let found = sampler.slot(cpus[0]).expect("the first CPU's slot");
    assert!(found.load(&mut slot).is_ok() && found.load(&mut slot).is_ok());
}

/// A period of 0 would re-arm the timer in the past forever: refused before
/// anything is loaded (so the check needs no privilege).
#[test]
fn a_period_below_the_minimum_is_refused_before_loading() {
    let cpus = allowed_cpus();
    for period_ns in [0, RB_MIN_PERIOD_NS - 1] {
        let config = BpfConfig {
            period_ns,
            cpus: Some(cpus.clone()),
            ..BpfConfig::default()
        };
        let err = BpfSampler::start(&[constant_zero_counter(&cpus)], &config)
            .err()
            .expect("a period below the minimum must be refused");
        assert!(
            err.to_string()
                .contains(&format!("a timer period of {period_ns} ns is below")),
            "{err}"
        );
    }
}

/// Each sample the ring buffer has no room for is counted in its CPU's slot,
/// so every tick either reaches the reader or is a ring drop: with the ring
/// left undrained at 50 kHz (about 9000 samples fit), some are dropped, and
/// the samples drained afterwards lie between the ticks minus the drops
/// before and after the drain.
#[test]
fn every_tick_reaches_the_ring_or_is_counted_as_dropped() {
    let cpus = allowed_cpus();
    let config = BpfConfig {
        period_ns: 20_000,
        cpus: Some(cpus.clone()),
        emit_samples: true,
        ..BpfConfig::default()
    };
    let Some(sampler) = start_or_skip(&[constant_zero_counter(&cpus)], &config) else {
        return;
    };
    if !on_bpf_timer(&sampler) {
        eprintln!(
            "skipped: the cpu-clock fallback may not fire ({})",
            sampler.trigger()
        );
        return;
    }
    let settled = |s: &BpfSampler| -> (u64, u64) {
        s.cpus()
            .iter()
            .map(|&cpu| s.tick_counts(cpu).expect("a slot"))
            .fold((0, 0), |(t, d), c| (t + c.ticks, d + c.ring_drops))
    };
    let deadline = Instant::now() + PATIENCE;
    while settled(&sampler).1 == 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    let (ticks_before, drops_before) = settled(&sampler);
    if drops_before == 0 {
        eprintln!("skipped: {ticks_before} ticks in {PATIENCE:?} never filled the ring");
        return;
    }
    let mut drained = 0u64;
    {
        let ring = sampler
            .samples_ring_buffer(|_| drained += 1)
            .expect("the ring");
        ring.consume().expect("consume"); // everything there at that moment
    }
    let (ticks_after, drops_after) = settled(&sampler);
    assert!(
        ticks_before - drops_before <= drained && drained <= ticks_after - drops_after,
        "{ticks_before} ticks - {drops_before} drops <= {drained} drained <= \
         {ticks_after} - {drops_after}"
    );
}
