//! The layout shared with bpf/counters.h, and reading a slot under its
//! seqlock (the mmapped `slots` array is written by the BPF program while
//! user space reads it).

use std::sync::atomic::{fence, AtomicU64, Ordering};

/// RB_MAX_COUNTERS of counters.h: counters sampled per CPU.
pub const RB_MAX_COUNTERS: usize = 8;
/// RB_MAX_CPUS of counters.h: bound of the per-CPU status arrays.
pub const RB_MAX_CPUS: usize = 1024;
/// RB_MIN_PERIOD_NS of counters.h: the shortest timer period a loader accepts.
pub const RB_MIN_PERIOD_NS: u64 = 10_000;
/// RB_ARM_NOT_TRIED of counters.h: `arm_result[cpu]` before arming.
pub const RB_ARM_NOT_TRIED: i32 = 0;
/// RB_ARM_OK of counters.h: the CPU's timer is armed (negative: -errno).
pub const RB_ARM_OK: i32 = 1;

/// struct rb_slot of counters.h: one CPU's latest sample, 128 bytes.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RbSlot {
    /// Seqlock: odd while the program writes the slot.
    pub seq: u64,
    /// bpf_ktime_get_ns() when the counters were read.
    pub time_ns: u64,
    /// Samples taken on this CPU.
    pub ticks: u64,
    /// Timer deadlines skipped because already past.
    pub missed: u64,
    /// Last bpf_perf_event_read_value() error, 0 if none.
    pub err: i32,
    /// Valid entries of `value`.
    pub ncounters: u32,
    /// Raw counter values.
    pub value: [u64; RB_MAX_COUNTERS],
    /// Time spent in the timer callback, measured by itself (ns).
    pub busy_ns: u64,
    /// Ticks whose counter read failed (`err` holds the last error).
    pub err_ticks: u64,
    /// Samples the ring buffer had no room for (emit_samples): lost, counted.
    pub ring_drops: u64,
}

const _: () = assert!(std::mem::size_of::<RbSlot>() == 128);

/// struct rb_sample of counters.h: one sample of the `samples` ring buffer
/// (when the loader sets emit_samples).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RbSample {
    /// bpf_ktime_get_ns() when the counters were read.
    pub time_ns: u64,
    /// The tick's deadline on the fixed grid.
    pub deadline_ns: u64,
    /// The CPU that took the sample.
    pub cpu: u32,
    /// bpf_perf_event_read_value() error, 0 if none.
    pub err: i32,
    /// Deadlines skipped on this CPU so far.
    pub missed: u64,
    /// Raw counter values.
    pub value: [u64; RB_MAX_COUNTERS],
}

const _: () = assert!(std::mem::size_of::<RbSample>() == 96);

impl RbSample {
    /// Copies a sample out of a ring buffer record; None if it is too short.
    pub fn from_bytes(bytes: &[u8]) -> Option<RbSample> {
        if bytes.len() < std::mem::size_of::<RbSample>() {
            return None;
        }
        // SAFETY: the record holds at least size_of::<RbSample>() bytes and
        // every bit pattern is a valid RbSample; read_unaligned copes with
        // any alignment.
        Some(unsafe { std::ptr::read_unaligned(bytes.as_ptr().cast::<RbSample>()) })
    }
}

/// Retries before a slot that keeps changing is given up on.
const SEQLOCK_TRIES: usize = 10_000;

/// Copies `*slot` into `out` under the seqlock: wait while `seq` is odd,
/// copy, and retry if `seq` moved meanwhile. False if it never settled.
///
/// # Safety
///
/// `slot` must point to a readable, 8-byte aligned RbSlot for the whole call
/// (another CPU may write it concurrently: that is what the seqlock is for).
#[inline]
pub unsafe fn read_seqlocked(slot: *const RbSlot, out: &mut RbSlot) -> bool {
    // SAFETY (whole block): `slot` is valid and aligned per the contract;
    // seq is only accessed atomically. The copy is a plain memcpy between
    // two acquire points, as in ubench's load_slot: a copy torn by a
    // concurrent write is discarded by the second seq check. (A volatile
    // copy would do 16 scalar loads: about 3x slower than the memcpy.)
    unsafe {
        let seq = AtomicU64::from_ptr(std::ptr::addr_of!((*slot).seq).cast_mut());
        for _ in 0..SEQLOCK_TRIES {
            let before = seq.load(Ordering::Acquire);
            if before & 1 == 1 {
                std::hint::spin_loop(); // being written
                continue;
            }
            std::ptr::copy_nonoverlapping(slot, out, 1);
            fence(Ordering::Acquire);
            if seq.load(Ordering::Relaxed) == before {
                out.seq = before;
                return true;
            }
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The value of `#define NAME value` in counters.h.
    fn define(header: &str, name: &str) -> usize {
        let line = header
            .lines()
            .find(|l| l.starts_with(&format!("#define {name} ")))
            .unwrap_or_else(|| panic!("{name} not in counters.h"));
        line.split_whitespace().nth(2).unwrap().parse().unwrap()
    }

    #[test]
    fn constants_match_counters_h() {
        let header = include_str!("../../../bpf/counters.h");
        assert_eq!(define(header, "RB_MAX_COUNTERS"), RB_MAX_COUNTERS);
        assert_eq!(define(header, "RB_MAX_CPUS"), RB_MAX_CPUS);
        assert_eq!(define(header, "RB_MIN_PERIOD_NS") as u64, RB_MIN_PERIOD_NS);
        assert!(header.contains("RB_ARM_NOT_TRIED = 0") && header.contains("RB_ARM_OK = 1"));
    }

    #[test]
    fn a_stable_slot_is_copied() {
        let slot = RbSlot {
            seq: 4,
            ticks: 7,
            value: [1, 2, 3, 4, 5, 6, 7, 8],
            ..Default::default()
        };
        let mut out = RbSlot::default();
        // SAFETY: `slot` is a live, aligned RbSlot.
        assert!(unsafe { read_seqlocked(&slot, &mut out) });
        assert_eq!(out, slot);
    }

    #[test]
    fn a_slot_being_written_is_not_copied() {
        let slot = RbSlot {
            seq: 5,
            ..Default::default()
        };
        let mut out = RbSlot::default();
        // SAFETY: `slot` is a live, aligned RbSlot.
        assert!(!unsafe { read_seqlocked(&slot, &mut out) });
    }

    #[test]
    fn samples_parse_from_ring_buffer_bytes() {
        let sample = RbSample {
            time_ns: 10,
            deadline_ns: 9,
            cpu: 1,
            err: -2,
            missed: 3,
            value: [4; 8],
        };
        // SAFETY: RbSample is plain old data without padding.
        let bytes: [u8; 96] = unsafe { std::mem::transmute(sample) };
        assert_eq!(RbSample::from_bytes(&bytes), Some(sample));
        assert_eq!(RbSample::from_bytes(&bytes[..95]), None);
    }
}
