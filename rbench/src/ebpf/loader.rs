//! Loading bpf/counters.bpf.c through its libbpf-rs skeleton and starting
//! it on the CPUs, step by step as ubench/bpf_sampler.cc does (the steps
//! are numbered in `Loaded::start`):
//!
//! 1. open one perf event fd per (CPU, counter), on the CPUs the counter
//!    lives on (before any load: a reload reuses them);
//! 2. open the skeleton, size the maps to the possible CPUs, set the knobs
//!    and load (a kernel that cannot load the timer program gets the
//!    fallback only);
//! 3. put the fds of step 1 in the `counters` map, so the first tick
//!    already finds them (an empty entry reads -ENOENT);
//! 4. start it: arm the CPU-pinned timers (pin this thread to each CPU and
//!    make syscalls until arm_result[cpu] != 0), or else attach the perf
//!    cpu-clock program to a per-CPU cpu-clock event (on fresh maps, so no
//!    timer is left running);
//! 5. mmap the `slots` array.
//!
//! Every descriptor has one owner: the counters' perf events belong to
//! `Loaded::_counter_fds` (the `counters` map takes its own reference to
//! each event, so lending it the fd number is enough); a cpu-clock event
//! belongs to its libbpf perf link once the attach succeeds (see
//! `attach_cpu_clock`).

#![allow(clippy::needless_lifetimes)]

mod skel {
    include!(concat!(env!("OUT_DIR"), "/counters.skel.rs"));
}

use std::mem::MaybeUninit;
use std::os::fd::{AsFd, AsRawFd, IntoRawFd, OwnedFd, RawFd};

use libbpf_rs::skel::{OpenSkel, SkelBuilder};
use libbpf_rs::{Link, MapCore, MapFlags, OpenObject};
use nix::errno::Errno;

use super::slots::{
    RbSample, RbSlot, RB_ARM_NOT_TRIED, RB_ARM_OK, RB_MAX_COUNTERS, RB_MAX_CPUS, RB_MIN_PERIOD_NS,
};
use super::{lacks_capabilities, BpfConfig, TriggerChoice, NEEDS};
use crate::cpu::{pin_to_cpu, AffinityGuard};
use crate::perf::{open_counter, open_cpu_clock, PerfEventSpec};
use crate::Error;
use skel::{CountersSkel, CountersSkelBuilder};

// The skeleton's view of struct rb_slot must be ours.
const _: () = {
    use std::mem::{offset_of, size_of};
    assert!(size_of::<skel::types::rb_slot>() == size_of::<RbSlot>());
    assert!(offset_of!(skel::types::rb_slot, ticks) == offset_of!(RbSlot, ticks));
    assert!(offset_of!(skel::types::rb_slot, err) == offset_of!(RbSlot, err));
    assert!(offset_of!(skel::types::rb_slot, value) == offset_of!(RbSlot, value));
    assert!(offset_of!(skel::types::rb_slot, busy_ns) == offset_of!(RbSlot, busy_ns));
    assert!(offset_of!(skel::types::rb_slot, err_ticks) == offset_of!(RbSlot, err_ticks));
    assert!(offset_of!(skel::types::rb_slot, ring_drops) == offset_of!(RbSlot, ring_drops));
};

/// libbpf's own messages since the last start (a verifier log, a missing
/// BTF): kept instead of going to the harness's stderr; the last one joins
/// the error of a libbpf call that failed (bpf_error).
static LIBBPF_MESSAGES: std::sync::Mutex<String> = std::sync::Mutex::new(String::new());

fn keep_libbpf_message(_level: libbpf_rs::PrintLevel, message: String) {
    let mut kept = LIBBPF_MESSAGES.lock().unwrap_or_else(|e| e.into_inner());
    if kept.len() < 16384 {
        kept.push_str(&message);
    }
}

/// Forgets the messages kept so far and routes libbpf's next ones here.
fn keep_libbpf_messages() {
    LIBBPF_MESSAGES
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clear();
    libbpf_rs::set_print(Some((libbpf_rs::PrintLevel::Warn, keep_libbpf_message)));
}

/// The last non-empty line of `kept`, as " (libbpf: ...)", or "".
fn last_message(kept: &str) -> String {
    match kept.lines().rev().map(str::trim).find(|l| !l.is_empty()) {
        Some(line) => format!(" (libbpf: {})", line.trim_start_matches("libbpf: ")),
        None => String::new(),
    }
}

/// A perf event the program reads or is driven by, refused: said as every
/// refusal of the BPF sampler is (lacks_capabilities), since perf's own
/// advice (perf_event_paranoid) would not do for a program that needs
/// CAP_BPF as well.
fn ebpf_denied(err: Error) -> Error {
    match err {
        Error::PerfDenied { .. } => lacks_capabilities().map_or(err, Error::Unavailable),
        other => other,
    }
}

/// libbpf-rs errors, with what to do about the common ones and libbpf's
/// own last message (a verifier log line, a missing BTF).
fn bpf_error(what: &str, err: &libbpf_rs::Error) -> Error {
    let mut text = format!("{what}: {err}");
    if err.kind() == libbpf_rs::ErrorKind::PermissionDenied {
        text.push_str(": ");
        text.push_str(NEEDS);
    }
    text.push_str(&last_message(
        &LIBBPF_MESSAGES.lock().unwrap_or_else(|e| e.into_inner()),
    ));
    Error::Unavailable(text)
}

/// The `slots` array mapped read-only; unmapped when dropped.
struct MappedSlots {
    /// Start of the mapping: slot 0.
    base: *const RbSlot,
    /// Mapping length in bytes (whole pages).
    len: usize,
    /// Slots in the array (possible CPUs).
    count: usize,
}

impl MappedSlots {
    /// mmap(PROT_READ, MAP_SHARED) of the map `fd` holding `count` slots.
    fn map(fd: RawFd, count: usize) -> Result<MappedSlots, Error> {
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize;
        let len = (count * std::mem::size_of::<RbSlot>()).div_ceil(page) * page;
        // SAFETY: a fresh shared read-only mapping of a BPF_F_MMAPABLE map.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_SHARED,
                fd,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            let errno = Errno::last();
            let mut text = format!("mmap of the BPF slots array: {}", errno.desc());
            if matches!(errno, Errno::EPERM | Errno::EACCES) {
                text.push_str(": ");
                text.push_str(NEEDS);
            }
            return Err(Error::Unavailable(text));
        }
        Ok(MappedSlots {
            base: base.cast(),
            len,
            count,
        })
    }
}

impl Drop for MappedSlots {
    fn drop(&mut self) {
        // SAFETY: `base` and `len` are the mapping made in `map`.
        unsafe { libc::munmap(self.base.cast_mut().cast(), self.len) };
    }
}

/// A loaded and running sampler. Fields drop in order: the mapping, the
/// links (each closes its cpu-clock event and detaches the program), the
/// counters' perf events, then the skeleton (freeing the maps cancels the
/// timers), like the C++ destructor.
pub(super) struct Loaded {
    /// The mmapped `slots` array.
    slots: MappedSlots,
    /// The cpu-clock fallback's attachments; each owns its cpu-clock event.
    _links: Vec<Link>,
    /// The counters' perf events, lent to the `counters` map.
    _counter_fds: Vec<CounterFd>,
    /// The loaded program and its maps.
    skel: CountersSkel<'static>,
    /// The `slots` map, for lookups (owned by `skel`).
    slots_fd: RawFd,
}

/// A counter's perf event on one CPU and its index in the `counters` map.
struct CounterFd {
    /// cpu * RB_MAX_COUNTERS + i.
    key: u32,
    /// The event (its only owner).
    fd: OwnedFd,
}

// SAFETY: the raw mapping pointer is only read through the seqlock; the
// skeleton is Send and Sync itself.
unsafe impl Send for Loaded {}
// SAFETY: as above; reads never mutate.
unsafe impl Sync for Loaded {}

/// Opens the skeleton, sizes the maps, sets the knobs and loads it.
fn open_and_load(
    ncpus: usize,
    ncounters: usize,
    config: &BpfConfig,
    cpus: &[usize],
    with_timer: bool,
) -> Result<CountersSkel<'static>, libbpf_rs::Error> {
    // The skeleton borrows the storage of its object for its whole life; a
    // few bytes per load are leaked so the sampler can own the skeleton (the
    // object itself is freed when the skeleton is dropped).
    let storage: &'static mut MaybeUninit<OpenObject> = Box::leak(Box::new(MaybeUninit::uninit()));
    let mut open = CountersSkelBuilder::default().open(storage)?;
    open.maps.slots.set_max_entries(ncpus as u32)?;
    open.maps.timers.set_max_entries(ncpus as u32)?;
    open.maps
        .counters
        .set_max_entries((ncpus * RB_MAX_COUNTERS) as u32)?;
    let rodata = open
        .maps
        .rodata_data
        .as_deref_mut()
        .expect("counters.bpf.c has const volatile knobs");
    rodata.target_tgid = std::process::id();
    rodata.period_ns = config.period_ns;
    rodata.ncounters = ncounters as u32;
    rodata.emit_samples = config.emit_samples;
    let bss = open
        .maps
        .bss_data
        .as_deref_mut()
        .expect("counters.bpf.c has arm_result and arm_skip");
    for (cpu, skip) in bss.arm_skip.iter_mut().enumerate() {
        *skip = u8::from(!cpus.contains(&cpu));
    }
    open.progs.arm_timer.set_autoload(with_timer);
    open.load()
}

/// arm_result[cpu], read afresh from the mmapped .bss at every call.
fn arm_result(skel: &CountersSkel<'static>, cpu: usize) -> i32 {
    let bss = skel
        .maps
        .bss_data
        .as_deref()
        .expect("counters.bpf.c has arm_result");
    // SAFETY: a valid element of the mmapped .bss; the program writes it from
    // another context, hence the volatile read.
    unsafe { std::ptr::read_volatile(&bss.arm_result[cpu]) }
}

/// Arms the CPU-pinned timer of every CPU of `cpus`; the trigger
/// description, or why not.
fn arm_timers(skel: &mut CountersSkel<'static>, cpus: &[usize]) -> Result<String, String> {
    // dropped on return (after `_restore`), once every CPU is armed or one
    // failed: stop watching syscalls
    let _link = skel
        .progs
        .arm_timer
        .attach()
        .map_err(|e| bpf_error("attaching the timer-arming program", &e).to_string())?;
    let _restore = AffinityGuard::save();
    for &cpu in cpus {
        pin_to_cpu(cpu).map_err(|e| e.to_string())?;
        // any syscall made from `cpu` runs arm_timer there
        for _ in 0..100 {
            if arm_result(skel, cpu) != RB_ARM_NOT_TRIED {
                break;
            }
            // SAFETY: getppid has no preconditions.
            unsafe { libc::syscall(libc::SYS_getppid) };
        }
        match arm_result(skel, cpu) {
            RB_ARM_OK => {}
            RB_ARM_NOT_TRIED => return Err(format!("the timer was not armed on CPU {cpu}")),
            result => {
                return Err(format!(
                    "bpf_timer_start(BPF_F_TIMER_CPU_PIN) on CPU {cpu} (needs Linux 6.7): {}",
                    Errno::from_raw(-result).desc()
                ))
            }
        }
    }
    Ok("bpf_timer (CPU-pinned, absolute deadlines)".to_string())
}

/// Attaches the cpu-clock program to a cpu-clock event on every CPU of
/// `cpus`; the links, each the only owner of its event.
fn attach_cpu_clock(
    skel: &CountersSkel<'static>,
    cpus: &[usize],
    period_ns: u64,
) -> Result<Vec<Link>, String> {
    let mut links = Vec::with_capacity(cpus.len());
    for &cpu in cpus {
        let fd = open_cpu_clock(cpu, period_ns).map_err(|e| ebpf_denied(e).to_string())?;
        // a failed attach leaves the event to us: `fd` closes it on return
        let what = format!("attaching to the cpu-clock event on CPU {cpu}");
        let link = (skel.progs.on_cpu_clock.attach_perf_event(fd.as_raw_fd()))
            .map_err(|e| bpf_error(&what, &e).to_string())?;
        // attached: destroying the link closes the event (libbpf's
        // bpf_link_perf_detach), so the link becomes its only owner
        let _owned_by_link: RawFd = fd.into_raw_fd();
        links.push(link);
    }
    Ok(links)
}

/// Opens each counter on the CPUs of `cpus` it lives on (its cpumask).
fn open_counter_fds(counters: &[PerfEventSpec], cpus: &[usize]) -> Result<Vec<CounterFd>, Error> {
    let mut fds = Vec::new();
    for &cpu in cpus {
        for (i, counter) in counters.iter().enumerate() {
            if counter.cpus.contains(&cpu) {
                fds.push(CounterFd {
                    key: (cpu * RB_MAX_COUNTERS + i) as u32,
                    fd: open_counter(counter, &counter.name, cpu, None, 0).map_err(ebpf_denied)?,
                });
            }
        }
    }
    Ok(fds)
}

/// Puts the counters' events in the `counters` map of `skel` (before the
/// trigger starts, so no tick finds an empty entry).
fn store_counter_fds(
    skel: &CountersSkel<'static>,
    fds: &[CounterFd],
    counters: &[PerfEventSpec],
) -> Result<(), Error> {
    for entry in fds {
        let name = &counters[entry.key as usize % RB_MAX_COUNTERS].name;
        let (key, fd) = (entry.key.to_ne_bytes(), entry.fd.as_raw_fd().to_ne_bytes());
        (skel.maps.counters.update(&key, &fd, MapFlags::ANY))
            .map_err(|e| bpf_error(&format!("storing perf event {name} in the BPF map"), &e))?;
    }
    Ok(())
}

impl Loaded {
    /// Loads and starts the program on `cpus`, sampling the first
    /// RB_MAX_COUNTERS of `counters`; with what drives it.
    pub(super) fn start(
        counters: &[PerfEventSpec],
        config: &BpfConfig,
        cpus: &[usize],
    ) -> Result<(Loaded, String), Error> {
        let ncpus = libbpf_rs::num_possible_cpus()
            .map_err(|e| Error::Unavailable(format!("cannot size the BPF maps: {e}")))?;
        if ncpus == 0 || ncpus > RB_MAX_CPUS {
            return Err(Error::Unavailable(format!(
                "cannot size the BPF maps: {ncpus} possible CPUs"
            )));
        }
        if config.period_ns < RB_MIN_PERIOD_NS {
            return Err(Error::Unavailable(format!(
                "a timer period of {} ns is below the {RB_MIN_PERIOD_NS} ns the BPF sampler \
                 accepts (at most 100 kHz)",
                config.period_ns
            )));
        }
        if let Some(&bad) = cpus.iter().find(|&&cpu| cpu >= ncpus) {
            return Err(Error::Unavailable(format!(
                "CPU {bad} is not a possible CPU (0-{})",
                ncpus - 1
            )));
        }
        let counters = &counters[..counters.len().min(RB_MAX_COUNTERS)];
        keep_libbpf_messages();
        // 1. the counters' perf events, shared by every load below
        let counter_fds = open_counter_fds(counters, cpus)?;
        let load = |with_timer| -> Result<CountersSkel<'static>, Error> {
            let skel = open_and_load(ncpus, counters.len(), config, cpus, with_timer)
                .map_err(|e| bpf_error("loading the BPF program", &e))?;
            // 3. fill the perf-event map before any trigger is started
            store_counter_fds(&skel, &counter_fds, counters)?;
            Ok(skel)
        };

        // 2. open and load, with the timer program if wanted and the kernel
        // takes it; 4. start it: timers, or else the cpu-clock fallback (on
        // fresh maps), saying why
        let (skel, timers) = match config.trigger {
            TriggerChoice::CpuClock => (load(false)?, Err("forced by BpfConfig::trigger".into())),
            TriggerChoice::Auto => match load(true) {
                Err(first) => (
                    load(false).map_err(|_| first)?,
                    Err("the kernel cannot load the bpf_timer program".into()),
                ),
                Ok(mut skel) => match arm_timers(&mut skel, cpus) {
                    Ok(trigger) => (skel, Ok(trigger)),
                    Err(why) => {
                        drop(skel); // freeing its maps cancels the timers armed so far
                        (load(false)?, Err(why))
                    }
                },
            },
        };
        let (links, trigger) = match timers {
            Ok(trigger) => (Vec::new(), trigger),
            Err(timer_why) => (
                attach_cpu_clock(&skel, cpus, config.period_ns).map_err(|why| {
                    Error::Unavailable(format!("{timer_why}; perf cpu-clock fallback: {why}"))
                })?,
                format!("perf cpu-clock event (fallback: {timer_why})"),
            ),
        };

        // 5. map the published slots
        let slots_fd = skel.maps.slots.as_fd().as_raw_fd();
        let slots = MappedSlots::map(slots_fd, ncpus)?;
        let loaded = Loaded {
            slots,
            _links: links,
            _counter_fds: counter_fds,
            skel,
            slots_fd,
        };
        Ok((loaded, trigger))
    }

    /// CPU `cpu`'s slot in the mapping, valid as long as `self`.
    pub(super) fn slot(&self, cpu: usize) -> Result<*const RbSlot, Error> {
        if cpu >= self.slots.count {
            return Err(Error::Unavailable(format!(
                "CPU {cpu} has no slot ({} possible CPUs)",
                self.slots.count
            )));
        }
        // SAFETY: `cpu` is in bounds of the live mapping.
        Ok(unsafe { self.slots.base.add(cpu) })
    }

    #[inline]
    pub(super) fn lookup(&self, cpu: usize, out: &mut RbSlot) -> Result<(), Error> {
        let key = cpu as u32;
        // SAFETY: key and value buffers have the map's key and value sizes
        // (4 and 128 bytes); the fd is the live `slots` map.
        let ret = unsafe {
            libbpf_rs::libbpf_sys::bpf_map_lookup_elem(
                self.slots_fd,
                (&key as *const u32).cast(),
                (out as *mut RbSlot).cast(),
            )
        };
        if ret != 0 {
            return Err(Error::Os {
                what: "bpf map lookup failed".into(),
                errno: Errno::from_raw(-ret),
            });
        }
        Ok(())
    }

    pub(super) fn samples_ring_buffer<'cb>(
        &self,
        mut on_sample: impl FnMut(&RbSample) + 'cb,
    ) -> Result<libbpf_rs::RingBuffer<'cb>, Error> {
        let mut builder = libbpf_rs::RingBufferBuilder::new();
        builder
            .add(&self.skel.maps.samples, move |bytes: &[u8]| {
                if let Some(sample) = RbSample::from_bytes(bytes) {
                    on_sample(&sample);
                }
                0
            })
            .map_err(|e| bpf_error("attaching to the samples ring buffer", &e))?;
        builder
            .build()
            .map_err(|e| bpf_error("creating the samples ring buffer", &e))
    }
}

#[cfg(test)]
mod libbpf_messages {
    use super::*;

    // (the kept messages are global, shared with tests that load the
    // program in parallel: the formatting is tested on its own)
    #[test]
    fn the_last_libbpf_message_joins_the_reason() {
        assert_eq!(last_message(""), "");
        assert_eq!(last_message("\n  \n"), "");
        let kept = "libbpf: prog 'on_timer': BPF program load failed: Invalid argument\n\
                    libbpf: failed to load object 'counters_bpf'\n";
        assert_eq!(
            last_message(kept),
            " (libbpf: failed to load object 'counters_bpf')"
        );
    }
}
