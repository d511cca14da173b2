//! lo2s's route to counters (issue 35; Ilsche et al. 2018): a sampling
//! leader, a `cpu-clock` timer event pinned to one CPU, with the counters
//! as members of its group. At every period the kernel writes a sample of
//! the whole group (`PERF_SAMPLE_READ` with `PERF_FORMAT_GROUP`) and its
//! time (`PERF_SAMPLE_TIME`, on CLOCK_MONOTONIC) into a ring buffer mapped
//! into this process, which drains it in batches: no system call per
//! sample. Samples the kernel had no room for are counted in
//! `PERF_RECORD_LOST` records, periods it throttled in `PERF_RECORD_THROTTLE`.
//!
//! [`GroupRing::open`] sets it up; [`GroupRing::drain`] hands over what the
//! kernel wrote since the last drain ([`Record`]); [`parse`] reads records
//! out of the ring's bytes (tested on bytes, as the kernel lays them out).

use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicU64, Ordering};

use nix::errno::Errno;

use super::{
    perf_event_open, perf_open_error, PerfEventAttr, PerfEventSpec, PERF_COUNT_SW_CPU_CLOCK,
    PERF_FORMAT_GROUP, PERF_TYPE_SOFTWARE,
};
use crate::Error;

/// sample_type: the sample's time.
const PERF_SAMPLE_TIME: u64 = 1 << 2;
/// sample_type: the leader's read_format read of the group.
const PERF_SAMPLE_READ: u64 = 1 << 4;
/// attr flags: disabled (enabled once the members joined).
const FLAG_DISABLED: u64 = 1 << 0;
/// attr flags: PERF_SAMPLE_TIME on `clockid`.
const FLAG_USE_CLOCKID: u64 = 1 << 25;
/// Record types (include/uapi/linux/perf_event.h).
const PERF_RECORD_LOST: u32 = 2;
const PERF_RECORD_THROTTLE: u32 = 5;
const PERF_RECORD_UNTHROTTLE: u32 = 6;
const PERF_RECORD_SAMPLE: u32 = 9;
/// ioctls: enable / disable, the whole group with PERF_IOC_FLAG_GROUP.
const PERF_EVENT_IOC_ENABLE: libc::c_ulong = 0x2400;
const PERF_EVENT_IOC_DISABLE: libc::c_ulong = 0x2401;
const PERF_IOC_FLAG_GROUP: libc::c_ulong = 1;
/// Where struct perf_event_mmap_page keeps data_head and data_tail.
const DATA_HEAD: usize = 1024;
const DATA_TAIL: usize = 1032;

/// What the kernel wrote into the ring.
#[derive(Debug, Clone, PartialEq)]
pub enum Record {
    /// A sample of the group.
    Sample {
        /// CLOCK_MONOTONIC ns when the leader fired.
        time_ns: u64,
        /// The members' values in their order (none for a leader alone).
        values: Vec<u64>,
    },
    /// Samples the kernel had no room for.
    Lost(u64),
    /// The kernel throttled the leader (too many interrupts).
    Throttle,
    /// It stopped throttling it.
    Unthrottle,
}

/// The records of `bytes`, as the kernel lays them out for a leader with
/// PERF_SAMPLE_TIME | PERF_SAMPLE_READ and PERF_FORMAT_GROUP (a sample:
/// time, nr, the leader's value, then the members' values): every whole
/// record, and how many bytes they took; other record types are skipped.
/// A malformed record (size under 8, or past the end) ends the parse.
pub fn parse(bytes: &[u8]) -> (Vec<Record>, usize) {
    let u64_at = |at: usize| -> Option<u64> {
        bytes
            .get(at..at + 8)
            .map(|b| u64::from_ne_bytes(b.try_into().expect("8 bytes")))
    };
    let (mut out, mut at) = (Vec::new(), 0);
    while at + 8 <= bytes.len() {
        let kind = u32::from_ne_bytes(bytes[at..at + 4].try_into().expect("4 bytes"));
        let size = u16::from_ne_bytes(bytes[at + 6..at + 8].try_into().expect("2 bytes")) as usize;
        if size < 8 || at + size > bytes.len() {
            break;
        }
        let body = at + 8;
        let record = match kind {
            PERF_RECORD_SAMPLE => {
                let (time, nr) = (u64_at(body), u64_at(body + 8));
                match (time, nr) {
                    (Some(time_ns), Some(nr)) if 24 + 8 * nr as usize <= size => {
                        // the leader's own value first: the members follow
                        let values = (1..nr as usize).filter_map(|i| u64_at(body + 16 + 8 * i));
                        Some(Record::Sample {
                            time_ns,
                            values: values.collect(),
                        })
                    }
                    _ => None,
                }
            }
            PERF_RECORD_LOST => u64_at(body + 8).map(Record::Lost),
            PERF_RECORD_THROTTLE => Some(Record::Throttle),
            PERF_RECORD_UNTHROTTLE => Some(Record::Unthrottle),
            _ => None,
        };
        out.extend(record);
        at += size;
    }
    (out, at)
}

/// A sampling leader on one CPU with its members, and its mapped ring.
pub struct GroupRing {
    /// The leader (the ring is its mapping).
    leader: OwnedFd,
    /// The members, kept open while the group samples.
    _members: Vec<OwnedFd>,
    /// The mapping: one metadata page, then `data_size` bytes of data.
    map: *mut u8,
    /// Its whole length.
    len: usize,
    /// The data area's size (a power of two).
    data_size: usize,
    /// Where the data area starts in the mapping (one page).
    data_offset: usize,
    /// A record that wraps around the data area's end, copied whole.
    scratch: Vec<u8>,
}

// SAFETY: the mapping belongs to this value alone; one thread drains it.
unsafe impl Send for GroupRing {}

impl GroupRing {
    /// A `cpu-clock` leader on `cpu` overflowing every `period_ns`, with
    /// `members` in its group, and a ring of `data_pages` pages (a power of
    /// two) mapped; sampling once this returns. Errors name the call that
    /// failed (perf_event_open of which event, mmap, the enable ioctl).
    pub fn open(
        cpu: usize,
        period_ns: u64,
        members: &[PerfEventSpec],
        data_pages: usize,
    ) -> Result<GroupRing, Error> {
        let leader_attr = PerfEventAttr {
            type_: PERF_TYPE_SOFTWARE,
            size: std::mem::size_of::<PerfEventAttr>() as u32,
            config: PERF_COUNT_SW_CPU_CLOCK,
            sample_period: period_ns,
            sample_type: PERF_SAMPLE_TIME | PERF_SAMPLE_READ,
            read_format: PERF_FORMAT_GROUP,
            flags: FLAG_DISABLED | FLAG_USE_CLOCKID,
            clockid: libc::CLOCK_MONOTONIC,
            ..Default::default()
        };
        let leader = perf_event_open(&leader_attr, cpu, None)
            .map_err(|errno| perf_open_error(errno, "cpu-clock (sampling leader)"))?;
        let mut joined = Vec::with_capacity(members.len());
        for m in members {
            // the leader's clock: a group of events on two clocks is EINVAL
            let attr = PerfEventAttr {
                type_: m.type_,
                size: std::mem::size_of::<PerfEventAttr>() as u32,
                config: m.config,
                read_format: PERF_FORMAT_GROUP,
                flags: FLAG_USE_CLOCKID,
                clockid: libc::CLOCK_MONOTONIC,
                ..Default::default()
            };
            let what = format!("{} (member of a cpu-clock sampling group)", m.name);
            joined.push(
                perf_event_open(&attr, cpu, Some(leader.as_fd()))
                    .map_err(|errno| perf_open_error(errno, &what))?,
            );
        }
        let page = page_size();
        let data_pages = data_pages.max(1).next_power_of_two();
        let len = page * (1 + data_pages);
        // SAFETY: a fresh shared mapping of the leader's ring, checked below.
        let map = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                leader.as_raw_fd(),
                0,
            )
        };
        if map == libc::MAP_FAILED {
            return Err(Error::Os {
                what: format!("mmap of the cpu-clock sampling leader's ring on CPU {cpu}"),
                errno: Errno::last(),
            });
        }
        let ring = GroupRing {
            leader,
            _members: joined,
            map: map.cast(),
            len,
            data_size: page * data_pages,
            data_offset: page,
            scratch: Vec::new(),
        };
        ring.ioctl(PERF_EVENT_IOC_ENABLE, "enable")?;
        Ok(ring)
    }

    /// The leader's ioctl `request` on its whole group.
    fn ioctl(&self, request: libc::c_ulong, what: &str) -> Result<(), Error> {
        // SAFETY: a perf fd we own and a request that takes an integer.
        let r = unsafe { libc::ioctl(self.leader.as_raw_fd(), request, PERF_IOC_FLAG_GROUP) };
        if r != 0 {
            return Err(Error::Os {
                what: format!("ioctl({what}) of the cpu-clock sampling group"),
                errno: Errno::last(),
            });
        }
        Ok(())
    }

    /// The mapping's u64 at `offset` of the metadata page.
    fn word(&self, offset: usize) -> &AtomicU64 {
        // SAFETY: an aligned u64 inside the metadata page we mapped.
        unsafe { &*(self.map.add(offset) as *const AtomicU64) }
    }

    /// Hands every record the kernel wrote since the last drain to `each`,
    /// then frees their room.
    pub fn drain(&mut self, mut each: impl FnMut(Record)) {
        let head = self.word(DATA_HEAD).load(Ordering::Acquire) as usize;
        let tail = self.word(DATA_TAIL).load(Ordering::Relaxed) as usize;
        if head == tail {
            return;
        }
        // the bytes between tail and head, unwrapped
        let (size, start) = (self.data_size, tail % self.data_size);
        let pending = head.wrapping_sub(tail).min(size);
        // SAFETY: the data area lies inside the mapping.
        let data = unsafe { std::slice::from_raw_parts(self.map.add(self.data_offset), size) };
        self.scratch.clear();
        let first = pending.min(size - start);
        self.scratch.extend_from_slice(&data[start..start + first]);
        self.scratch.extend_from_slice(&data[..pending - first]);
        let (records, used) = parse(&self.scratch);
        records.into_iter().for_each(&mut each);
        self.word(DATA_TAIL)
            .store(tail.wrapping_add(used) as u64, Ordering::Release);
    }
}

impl Drop for GroupRing {
    fn drop(&mut self) {
        let _ = self.ioctl(PERF_EVENT_IOC_DISABLE, "disable");
        // SAFETY: the mapping we made, unmapped once.
        unsafe { libc::munmap(self.map.cast(), self.len) };
    }
}

/// The system's page size.
fn page_size() -> usize {
    // SAFETY: a plain sysconf query.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if size > 0 {
        size as usize
    } else {
        4096
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::allowed_cpus;
    use crate::discovery::energy_events;
    use crate::roots::{CPU, PMU};

    /// A record of `kind` with `body` (u64 words), as the kernel writes it.
    fn record(kind: u32, body: &[u64]) -> Vec<u8> {
        let size = (8 + 8 * body.len()) as u16;
        let mut out = kind.to_ne_bytes().to_vec();
        out.extend(0u16.to_ne_bytes());
        out.extend(size.to_ne_bytes());
        body.iter().for_each(|w| out.extend(w.to_ne_bytes()));
        out
    }

    #[test]
    fn samples_lost_and_throttle_records_parse_and_a_cut_record_waits() {
        let mut bytes = record(PERF_RECORD_SAMPLE, &[1_000, 3, 77, 5, 6]);
        bytes.extend(record(PERF_RECORD_LOST, &[42, 9]));
        bytes.extend(record(3, &[1, 2])); // PERF_RECORD_COMM: skipped
        bytes.extend(record(PERF_RECORD_THROTTLE, &[2_000, 1, 1]));
        bytes.extend(record(PERF_RECORD_SAMPLE, &[3_000, 1, 78])); // a leader alone
        let whole = bytes.len();
        bytes.extend(&record(PERF_RECORD_SAMPLE, &[4_000, 1, 79])[..12]); // not yet whole
        let (records, used) = parse(&bytes);
        assert_eq!(
            records,
            [
                Record::Sample {
                    time_ns: 1_000,
                    values: vec![5, 6]
                },
                Record::Lost(9),
                Record::Throttle,
                Record::Sample {
                    time_ns: 3_000,
                    values: vec![]
                },
            ]
        );
        assert_eq!(used, whole, "the cut record stays for the next drain");
        assert_eq!(
            parse(&[0u8; 8]),
            (vec![], 0),
            "a size under 8 ends the parse"
        );
    }

    /// The TSC stand-in (or the RAPL events) on the lead CPU, if they open.
    fn members() -> Vec<PerfEventSpec> {
        energy_events(&PMU.path(), &CPU.path()).map_or(vec![], |found| found.events)
    }

    #[test]
    fn a_leader_with_its_members_delivers_a_sample_a_period_without_a_syscall_each() {
        let cpu = *allowed_cpus().first().expect("a CPU");
        let events: Vec<PerfEventSpec> = members().into_iter().take(1).collect();
        let mut ring = match GroupRing::open(cpu, 1_000_000, &events, 8) {
            Ok(ring) => ring,
            Err(e) => {
                eprintln!("skipped: no sampling group here: {e}");
                return;
            }
        };
        std::thread::sleep(std::time::Duration::from_millis(200));
        let mut samples = Vec::new();
        ring.drain(|r| {
            if let Record::Sample { time_ns, values } = r {
                samples.push((time_ns, values));
            }
        });
        // at 1 kHz for 200 ms; this VM's timers miss a few percent
        assert!(
            (150..=230).contains(&samples.len()),
            "{} samples",
            samples.len()
        );
        assert!(samples.iter().all(|(_, v)| v.len() == events.len()));
        let gaps: Vec<u64> = samples.windows(2).map(|w| w[1].0 - w[0].0).collect();
        assert!(gaps.iter().all(|&g| g > 0), "times advance");
        let mut sorted = gaps.clone();
        sorted.sort_unstable();
        let median = sorted[sorted.len() / 2];
        assert!(
            (800_000..1_200_000).contains(&median),
            "median gap {median} ns"
        );
        let (first, last) = (&samples[0].1, &samples[samples.len() - 1].1);
        eprintln!(
            "{} samples in 200 ms, median gap {median} ns, members {first:?} .. {last:?}",
            samples.len()
        );
        // CLOCK_MONOTONIC: the last sample is from the last 200 ms
        let now = crate::clock::monotonic_ns();
        let last = samples.last().unwrap().0;
        assert!(now >= last && now - last < 200_000_000, "{now} {last}");
    }
}
