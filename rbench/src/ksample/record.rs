//! One record of /proc/ksample/records: kbench/ksample.h's `struct
//! ksample_record`, field for field (native endianness, 88 bytes, no
//! padding). A read(2) of the file returns whole records only.

/// Value slots in a record (KSAMPLE_MAX_MSRS).
pub const MAX_VALUES: usize = 6;

/// One sample of one package, as the module's hrtimer callback took it.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Record {
    /// Per package, from 0 at each start, +1 per callback: a gap is records
    /// dropped on a full ring.
    pub seq: u64,
    /// CLOCK_MONOTONIC ns just before the reads.
    pub time_ns: u64,
    /// Periods this package's timer skipped since the start (cumulative).
    pub missed: u64,
    /// This callback's own time, from entry to the push, ns.
    pub busy_ns: u32,
    /// The control file's "package N".
    pub package: u16,
    /// The CPU the callback ran on.
    pub cpu: u16,
    /// Bit i: value[i] faulted in this read (it is 0).
    pub faults: u32,
    /// Valid value[] entries: the package's msrs; 0 in null mode.
    pub nvalues: u32,
    /// Raw MSR values, in the order of the package's msrs.
    pub value: [u64; MAX_VALUES],
}

/// The size of a record: the control file's record_size must say the same.
pub const RECORD_SIZE: usize = std::mem::size_of::<Record>();

const _: () = assert!(RECORD_SIZE == 88, "struct ksample_record is 88 bytes");

impl Record {
    /// The record at the start of `bytes`; None if fewer than RECORD_SIZE.
    pub fn from_bytes(bytes: &[u8]) -> Option<Record> {
        if bytes.len() < RECORD_SIZE {
            return None;
        }
        // SAFETY: at least RECORD_SIZE bytes are readable, every bit
        // pattern is a valid Record (plain integers), and read_unaligned
        // copes with any alignment.
        Some(unsafe { std::ptr::read_unaligned(bytes.as_ptr().cast::<Record>()) })
    }

    /// The valid values (nvalues of them, at most MAX_VALUES).
    pub fn values(&self) -> &[u64] {
        &self.value[..(self.nvalues as usize).min(MAX_VALUES)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bytes a C compiler lays out for `struct ksample_record`.
    fn c_layout(r: &Record) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend(r.seq.to_ne_bytes());
        b.extend(r.time_ns.to_ne_bytes());
        b.extend(r.missed.to_ne_bytes());
        b.extend(r.busy_ns.to_ne_bytes());
        b.extend(r.package.to_ne_bytes());
        b.extend(r.cpu.to_ne_bytes());
        b.extend(r.faults.to_ne_bytes());
        b.extend(r.nvalues.to_ne_bytes());
        for v in r.value {
            b.extend(v.to_ne_bytes());
        }
        b
    }

    #[test]
    fn decodes_the_88_byte_layout_field_for_field() {
        let r = Record {
            seq: 0x0102_0304_0506_0708,
            time_ns: 123_456_789_012,
            missed: 3,
            busy_ns: 2100,
            package: 1,
            cpu: 28,
            faults: 0b10,
            nvalues: 2,
            value: [0xAAAA_BBBB, 0x1234, 0, 0, 0, 0xFFFF_FFFF_FFFF_FFFF],
        };
        let bytes = c_layout(&r);
        assert_eq!(bytes.len(), 88);
        // the offsets of ksample.h: value[] starts at 40
        assert_eq!(&bytes[40..48], &0xAAAA_BBBBu64.to_ne_bytes());
        assert_eq!(Record::from_bytes(&bytes), Some(r));
        // unaligned, and with a following record's bytes
        let mut shifted = vec![0u8; 3];
        shifted.extend(&bytes);
        shifted.extend(&bytes);
        assert_eq!(Record::from_bytes(&shifted[3..]), Some(r));
        assert_eq!(r.values(), [0xAAAA_BBBB, 0x1234]);
    }

    #[test]
    fn a_short_buffer_is_no_record_and_nvalues_is_bounded() {
        assert_eq!(Record::from_bytes(&[0u8; 87]), None);
        let wild = Record {
            nvalues: 1000,
            ..Record::default()
        };
        assert_eq!(wild.values().len(), MAX_VALUES);
        assert!(Record::default().values().is_empty()); // null mode
    }
}
