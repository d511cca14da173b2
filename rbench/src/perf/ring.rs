//! lo2s's route to counters (issue 35; Ilsche et al. 2018): a `cpu-clock`
//! timer event pinned to one CPU samples a group that holds the counters,
//! as its leader (lo2s's design) or as its last member when the kernel
//! refuses that ([`Design`]). At every period the kernel writes a sample of
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

/// The records of `bytes`, as the kernel lays them out for a sampling
/// event with PERF_SAMPLE_TIME | PERF_SAMPLE_READ and PERF_FORMAT_GROUP (a
/// sample: time, nr, then the group's values, the leader's first): every
/// whole record, its values without the sampling timer's own (at
/// `timer_at`), and how many bytes they took; other record types are
/// skipped. A malformed record (size under 8, or past the end) ends it.
pub fn parse(bytes: &[u8], timer_at: usize) -> (Vec<Record>, usize) {
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
                        let values = (0..nr as usize)
                            .filter(|&i| i != timer_at)
                            .filter_map(|i| u64_at(body + 16 + 8 * i));
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

/// Which event of a group samples it: the two designs issue 35 tries, in
/// this order ([`Design::ORDER`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Design {
    /// lo2s's: the `cpu-clock` timer leads the group and samples it; the
    /// counters are its members. A counter of a hardware-context PMU (RAPL's
    /// `power`) makes the kernel move the software group into that PMU's
    /// context; the `msr` PMU (the `msr/tsc/` stand-in) is software-context,
    /// so a stand-in group never takes that path.
    TimerLeads,
    /// The first counter leads (never moved: nothing but software events
    /// join it), the other counters follow, and a `cpu-clock` member samples
    /// the whole group (PERF_SAMPLE_READ of a member reads its group).
    CounterLeads,
}

impl Design {
    /// The order they are tried in.
    pub const ORDER: [Design; 2] = [Design::TimerLeads, Design::CounterLeads];

    /// Its name on the command line and in the report.
    pub fn name(self) -> &'static str {
        match self {
            Design::TimerLeads => "timer-leads",
            Design::CounterLeads => "counter-leads",
        }
    }

    /// What samples each package's group in this design, as a run's
    /// trigger says it.
    pub fn title(self) -> &'static str {
        match self {
            Design::TimerLeads => "a cpu-clock sampling leader per package",
            Design::CounterLeads => "a cpu-clock member sampling each package's group of counters",
        }
    }

    /// The design called `name`.
    pub fn parse(name: &str) -> Result<Design, String> {
        (Design::ORDER.into_iter())
            .find(|d| d.name() == name)
            .ok_or_else(|| format!("no group design {name:?} (timer-leads, counter-leads)"))
    }

    /// What an event of `name` is in this design's group (`timer` for the
    /// cpu-clock), for the error of a call that failed on it.
    fn role(self, timer: bool) -> &'static str {
        match (self, timer) {
            (Design::TimerLeads, true) => "the sampling leader",
            (Design::TimerLeads, false) => "a member of a cpu-clock sampling leader's group",
            (Design::CounterLeads, true) => "a cpu-clock member sampling its counters' group",
            (Design::CounterLeads, false) => "a counter of a group a cpu-clock member samples",
        }
    }
}

/// A sampling group on one CPU, and its sampling event's mapped ring.
pub struct GroupRing {
    /// The group's events in its order, the leader first.
    events: Vec<OwnedFd>,
    /// The place of the cpu-clock among them (its ring is the mapping; its
    /// own value is left out of a sample's values).
    timer_at: usize,
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
    /// A `cpu-clock` on `cpu` overflowing every `period_ns` and the
    /// counters `members`, grouped as `design` says (with no counter, the
    /// timer alone), and a ring of `data_pages` pages (a power of two)
    /// mapped; sampling once this returns. Errors name the call that failed
    /// (perf_event_open of which event in which role, and its errno; mmap;
    /// the enable ioctl).
    pub fn open(
        cpu: usize,
        period_ns: u64,
        members: &[PerfEventSpec],
        design: Design,
        data_pages: usize,
    ) -> Result<GroupRing, Error> {
        // every event on the timer's clock: a group on two clocks is EINVAL
        let timer = PerfEventAttr {
            type_: PERF_TYPE_SOFTWARE,
            size: std::mem::size_of::<PerfEventAttr>() as u32,
            config: PERF_COUNT_SW_CPU_CLOCK,
            sample_period: period_ns,
            sample_type: PERF_SAMPLE_TIME | PERF_SAMPLE_READ,
            read_format: PERF_FORMAT_GROUP,
            flags: FLAG_USE_CLOCKID,
            clockid: libc::CLOCK_MONOTONIC,
            ..Default::default()
        };
        let counters = members.iter().map(|m| {
            let attr = PerfEventAttr {
                type_: m.type_,
                config: m.config,
                sample_period: 0,
                sample_type: 0,
                ..timer
            };
            (attr, m.name.as_str())
        });
        let timer = (timer, "cpu-clock");
        let group: Vec<(PerfEventAttr, &str)> = match design {
            Design::TimerLeads => std::iter::once(timer).chain(counters).collect(),
            Design::CounterLeads => counters.chain(std::iter::once(timer)).collect(),
        };
        let timer_at = match design {
            Design::TimerLeads => 0,
            Design::CounterLeads => members.len(),
        };
        let mut events: Vec<OwnedFd> = Vec::with_capacity(group.len());
        for (at, (mut attr, name)) in group.into_iter().enumerate() {
            if at == 0 {
                attr.flags |= FLAG_DISABLED; // enabled once the others joined
            }
            let fd = perf_event_open(&attr, cpu, events.first().map(|l| l.as_fd()))
                .map_err(|errno| refused(errno, name, design.role(at == timer_at), cpu))?;
            events.push(fd);
        }
        let page = page_size();
        let data_pages = data_pages.max(1).next_power_of_two();
        let len = page * (1 + data_pages);
        // SAFETY: a fresh shared mapping of the timer's ring, checked below.
        let map = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                events[timer_at].as_raw_fd(),
                0,
            )
        };
        if map == libc::MAP_FAILED {
            return Err(Error::Os {
                what: format!("mmap of the cpu-clock's ring on CPU {cpu}"),
                errno: Errno::last(),
            });
        }
        let ring = GroupRing {
            events,
            timer_at,
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
        let r = unsafe { libc::ioctl(self.events[0].as_raw_fd(), request, PERF_IOC_FLAG_GROUP) };
        if r != 0 {
            return Err(Error::Os {
                what: format!("ioctl({what}) of the sampling group"),
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
        let (records, used) = parse(&self.scratch, self.timer_at);
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

/// The error of perf_event_open refusing `name` as `role` on `cpu`: a
/// missing privilege as [`perf_open_error`] words it, anything else with
/// its errno's name (the kernel's answer the sampler reports).
fn refused(errno: Errno, name: &str, role: &str, cpu: usize) -> Error {
    match errno {
        Errno::EACCES | Errno::EPERM => perf_open_error(errno, name),
        errno => Error::Os {
            what: format!("perf_event_open of {name} as {role} on CPU {cpu} returned {errno:?}"),
            errno,
        },
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
        let (records, used) = parse(&bytes, 0);
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
        // a timer that samples as the group's last member: its value is last
        let (records, _) = parse(&record(PERF_RECORD_SAMPLE, &[5_000, 3, 5, 6, 77]), 2);
        assert_eq!(
            records,
            [Record::Sample {
                time_ns: 5_000,
                values: vec![5, 6]
            }]
        );
        assert_eq!(
            parse(&[0u8; 8], 0),
            (vec![], 0),
            "a size under 8 ends the parse"
        );
    }

    /// The TSC stand-in (or the RAPL events) on the lead CPU, if they open.
    fn members() -> Vec<PerfEventSpec> {
        energy_events(&PMU.path(), &CPU.path()).map_or(vec![], |found| found.events)
    }

    #[test]
    fn either_design_delivers_a_sample_a_period_with_its_counters_values() {
        let events: Vec<PerfEventSpec> = members().into_iter().take(2).collect();
        for design in Design::ORDER {
            a_sample_a_period(design, &events);
        }
        assert_eq!(Design::parse("counter-leads"), Ok(Design::CounterLeads));
        assert!(Design::parse("leader").is_err());
    }

    fn a_sample_a_period(design: Design, events: &[PerfEventSpec]) {
        let cpu = *allowed_cpus().first().expect("a CPU");
        let mut ring = match GroupRing::open(cpu, 1_000_000, events, design, 8) {
            Ok(ring) => ring,
            Err(e) => {
                eprintln!("skipped: no {} sampling group here: {e}", design.name());
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
            "{}: {} samples in 200 ms, median gap {median} ns, counters {first:?} .. {last:?}",
            design.name(),
            samples.len()
        );
        // the counters' values, not the timer's (the stand-in msr/tsc/ and
        // RAPL energy only grow)
        assert!(
            first.iter().zip(last).all(|(a, b)| b >= a),
            "{first:?} {last:?}"
        );
        // CLOCK_MONOTONIC: the last sample is from the last 200 ms
        let now = crate::clock::monotonic_ns();
        let last = samples.last().unwrap().0;
        assert!(now >= last && now - last < 200_000_000, "{now} {last}");
    }
}
