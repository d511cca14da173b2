//! The BPF counter sampler of paths "ebpf-lookup" and "ebpf-mmap":
//! bpf/counters.bpf.c (shared with ubench) samples the counters in the
//! kernel at 1 kHz on every CPU into one 128-byte slot per CPU, which a
//! poller copies with a bpf(BPF_MAP_LOOKUP_ELEM) syscall
//! ([`BpfSampler::lookup`]) or loads from the mmapped BPF_F_MMAPABLE array
//! under its seqlock ([`BpfSampler::load`]).
//!
//! The program is driven by a CPU-pinned bpf_timer (Linux 6.7), or else by a
//! perf cpu-clock event; [`BpfSampler::trigger`] says which. Where the crate
//! was built without the BPF object (no clang, bpftool or kernel BTF),
//! [`BpfSampler::start`] returns [`Error::Unavailable`] saying why.
//! [`slot_check`] tells whether a CPU's slot holds data before its rows
//! are planned.

#[cfg_attr(not(rbench_bpf), path = "without_bpf.rs")]
mod loader;
pub mod slot_check;
mod slots;

pub use slots::{
    read_seqlocked, RbSample, RbSlot, RB_ARM_NOT_TRIED, RB_ARM_OK, RB_MAX_COUNTERS, RB_MAX_CPUS,
    RB_MIN_PERIOD_NS,
};

use std::marker::PhantomData;

use crate::cpu::allowed_cpus;
use crate::perf::PerfEventSpec;
use crate::Error;

/// What loading the program and opening the perf events it reads need,
/// said by every refusal on the way (rbench/README.md, "Privileges";
/// tests/sampler_caps.rs checks that the two agree).
pub const NEEDS: &str = "needs CAP_BPF and CAP_PERFMON (run as root)";

/// Why this process cannot run the BPF sampler, from its effective
/// capabilities (`CapEff` of /proc/self/status): None when it has CAP_BPF
/// and CAP_PERFMON, or CAP_SYS_ADMIN (which implies both, and is all that
/// kernels before 5.8 know), or when they cannot be read. Said instead of
/// perf's advice (perf_event_paranoid), which would not do here.
pub fn lacks_capabilities() -> Option<String> {
    const SYS_ADMIN: u32 = 21;
    const PERFMON: u32 = 38;
    const BPF: u32 = 39;
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let hex = status.lines().find_map(|l| l.strip_prefix("CapEff:"))?;
    let effective = u64::from_str_radix(hex.trim(), 16).ok()?;
    let has = |bit: u32| effective & (1u64 << bit) != 0;
    if has(SYS_ADMIN) || (has(BPF) && has(PERFMON)) {
        return None;
    }
    let missing: Vec<&str> = [(BPF, "CAP_BPF"), (PERFMON, "CAP_PERFMON")]
        .into_iter()
        .filter(|&(bit, _)| !has(bit))
        .map(|(_, name)| name)
        .collect();
    Some(format!(
        "the ebpf mechanism {NEEDS}; this process lacks {}",
        missing.join(" and ")
    ))
}

/// How the sampler is started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BpfConfig {
    /// Sampling period of each CPU's timer (1 ms: 1 kHz).
    pub period_ns: u64,
    /// CPUs to sample on (the others get no timer: arm_skip); None: every online CPU.
    pub cpus: Option<Vec<usize>>,
    /// Also push every sample into the `samples` ring buffer.
    pub emit_samples: bool,
    /// What may drive the program (default: the best the kernel has).
    pub trigger: TriggerChoice,
}

/// Which trigger [`BpfSampler::start`] may use.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum TriggerChoice {
    /// The CPU-pinned bpf_timer where the kernel has it (Linux 6.7), else
    /// the perf cpu-clock fallback.
    #[default]
    Auto,
    /// The perf cpu-clock fallback even where bpf_timer works (to test or
    /// compare it).
    CpuClock,
}

impl Default for BpfConfig {
    fn default() -> Self {
        BpfConfig {
            period_ns: 1_000_000, // 1 kHz
            cpus: None,
            emit_samples: false,
            trigger: TriggerChoice::Auto,
        }
    }
}

/// A CPU's tick accounting, from its slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TickCounts {
    /// Samples taken on this CPU.
    pub ticks: u64,
    /// Deadlines skipped because already past.
    pub missed: u64,
    /// Time spent in the timer callback (ns), measured by itself.
    pub busy_ns: u64,
    /// Ticks whose counter read failed (not data: count and show them).
    pub err_ticks: u64,
    /// Samples the ring buffer had no room for (lost: count and show them).
    pub ring_drops: u64,
}

/// One CPU's slot in the sampler's mmapped array ([`BpfSampler::slot`]);
/// it borrows the sampler, so the mapping outlives it.
#[derive(Clone, Copy)]
pub struct SlotRef<'a> {
    /// The slot, in bounds of the mapping.
    slot: *const RbSlot,
    /// Whose slot it is.
    cpu: usize,
    /// The mapping it points into.
    _mapping: PhantomData<&'a BpfSampler>,
}

impl SlotRef<'_> {
    /// Copies the slot under the seqlock.
    #[inline]
    pub fn load(&self, out: &mut RbSlot) -> Result<(), Error> {
        // SAFETY: `slot` is an aligned slot of a mapping that lives as long
        // as the sampler this borrows.
        if unsafe { read_seqlocked(self.slot, out) } {
            Ok(())
        } else {
            Err(Error::SlotUnsettled { cpu: self.cpu })
        }
    }
}

/// The BPF counter sampler, loaded and running on its CPUs until dropped.
pub struct BpfSampler {
    /// The loaded program (uninhabited when built without BPF).
    inner: loader::Loaded,
    /// The CPUs it samples on.
    cpus: Vec<usize>,
    /// What drives it ([`BpfSampler::trigger`]).
    trigger: String,
    /// Its sampling period.
    period_ns: u64,
}

impl BpfSampler {
    /// Loads bpf/counters.bpf.c, points it at the first RB_MAX_COUNTERS of
    /// `counters` (each opened on the CPUs of its cpumask) and starts it.
    /// The perf events are in the map before the trigger starts, so a slot
    /// publishes err -ENOENT only on a CPU where a counter does not live
    /// (outside its cpumask): there is no event to read there.
    pub fn start(counters: &[PerfEventSpec], config: &BpfConfig) -> Result<BpfSampler, Error> {
        let cpus = config.cpus.clone().unwrap_or_else(allowed_cpus);
        let (inner, trigger) = loader::Loaded::start(counters, config, &cpus)?;
        Ok(BpfSampler {
            inner,
            cpus,
            trigger,
            period_ns: config.period_ns,
        })
    }

    /// Copies CPU `cpu`'s slot with the bpf() lookup syscall (no allocation).
    #[inline]
    pub fn lookup(&self, cpu: usize, out: &mut RbSlot) -> Result<(), Error> {
        self.inner.lookup(cpu, out)
    }

    /// Copies CPU `cpu`'s slot from the mmapped array under the seqlock.
    #[inline]
    pub fn load(&self, cpu: usize, out: &mut RbSlot) -> Result<(), Error> {
        self.slot(cpu)?.load(out)
    }

    /// CPU `cpu`'s slot in the mmapped array, found once, to load it again
    /// and again as a poller does (no lookup or bounds check per load).
    pub fn slot(&self, cpu: usize) -> Result<SlotRef<'_>, Error> {
        self.inner.slot(cpu).map(|slot| SlotRef {
            slot,
            cpu,
            _mapping: PhantomData,
        })
    }

    /// CPU `cpu`'s ticks, missed deadlines, callback time, failed reads and
    /// ring buffer drops.
    pub fn tick_counts(&self, cpu: usize) -> Result<TickCounts, Error> {
        let mut slot = RbSlot::default();
        self.load(cpu, &mut slot)?;
        Ok(TickCounts {
            ticks: slot.ticks,
            missed: slot.missed,
            busy_ns: slot.busy_ns,
            err_ticks: slot.err_ticks,
            ring_drops: slot.ring_drops,
        })
    }

    /// The CPUs it samples on.
    pub fn cpus(&self) -> &[usize] {
        &self.cpus
    }

    /// What drives it: "bpf_timer (CPU-pinned, absolute deadlines)" or
    /// `"perf cpu-clock event (fallback: <why>)"` (why: the kernel's refusal,
    /// or "forced by BpfConfig::trigger").
    pub fn trigger(&self) -> &str {
        &self.trigger
    }

    /// The sampling period.
    pub fn period_ns(&self) -> u64 {
        self.period_ns
    }

    /// A consumer of the `samples` ring buffer (filled when
    /// [`BpfConfig::emit_samples`] is set): poll or consume it to have
    /// `on_sample` called for each sample.
    pub fn samples_ring_buffer<'cb>(
        &self,
        on_sample: impl FnMut(&RbSample) + 'cb,
    ) -> Result<libbpf_rs::RingBuffer<'cb>, Error> {
        self.inner.samples_ring_buffer(on_sample)
    }
}

/// How a poller copies a slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SlotRead {
    /// The bpf() lookup syscall (path ebpf-lookup).
    Lookup,
    /// A load from the mmapped array (path ebpf-mmap).
    Load,
}

#[cfg(test)]
mod tests;
