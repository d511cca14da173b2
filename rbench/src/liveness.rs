//! Counter liveness: does an energy counter move, and is its unit energy?
//!
//! Some machines expose RAPL counters that read a constant (0 on KVM guests
//! with `power/energy-psys/`, never-moving files in VirtualBox or EC2). Every
//! energy counter gets one [`Verdict`] where it is discovered (never in a
//! timed loop); `no-unit` is checked first and wins over `frozen`. Stand-ins
//! get none; a set gets the worst of its members'. See rbench/README.md,
//! "Live, frozen, no-unit: is the counter energy at all?".

use std::time::{Duration, Instant};

use crate::{CounterSource, Error};

/// How often the probe reads: RAPL updates its counters about every 976 µs
/// (2^-10 s), so reading every 1 ms sees each update. Its one place is
/// kbench/kbench.h (`KBENCH_LIVENESS_POLL_US`), which kbench's probe uses.
pub const LIVENESS_POLL: Duration = Duration::from_micros(KBENCH_LIVENESS_POLL_US);

/// How long the probe waits for a counter to move: about 100 RAPL updates
/// (at 976 µs each), so a live counter moves within its first few reads and
/// only a dead one costs the whole window (kbench.h's
/// `KBENCH_LIVENESS_WINDOW_MS`).
pub const LIVENESS_WINDOW: Duration = Duration::from_millis(KBENCH_LIVENESS_WINDOW_MS);

// KBENCH_LIVENESS_POLL_US and KBENCH_LIVENESS_WINDOW_MS, read from
// kbench/kbench.h by build.rs (build/rapl_msrs.rs).
include!(concat!(env!("OUT_DIR"), "/kbench_liveness.rs"));

/// The verdict on one energy counter, serialized as [`Verdict::as_str`]
/// spells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// It changed within the window and its unit is plausible.
    Live,
    /// It did not change within the window: a dead counter.
    Frozen,
    /// Its unit is implausible: the value is not energy.
    NoUnit,
}

impl Verdict {
    /// The results schema's spelling: "live", "frozen", "no-unit".
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Live => "live",
            Verdict::Frozen => "frozen",
            Verdict::NoUnit => "no-unit",
        }
    }
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The verdict on a counter (or a set), and why it is not live.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Liveness {
    /// The verdict (the worst of a set).
    pub verdict: Verdict,
    /// None when live; else one line per counter that is not live, joined
    /// by "; ".
    pub note: Option<String>,
}

impl Liveness {
    /// A live counter.
    pub fn live() -> Liveness {
        Liveness {
            verdict: Verdict::Live,
            note: None,
        }
    }

    /// A counter whose unit is not energy: `"<what>: <why>"`.
    pub fn no_unit(what: &str, why: &str) -> Liveness {
        Liveness {
            verdict: Verdict::NoUnit,
            note: Some(format!("{what}: {why}")),
        }
    }

    /// A counter that did not move in `elapsed` over `reads` reads.
    pub fn frozen(what: &str, elapsed: Duration, reads: u32) -> Liveness {
        Liveness {
            verdict: Verdict::Frozen,
            note: Some(format!(
                "{what}: did not change in {} ms ({reads} reads): a dead counter, it yields no energy",
                elapsed.as_millis()
            )),
        }
    }

    /// Whether the counter yields energy.
    pub fn is_live(&self) -> bool {
        self.verdict == Verdict::Live
    }
}

/// The worst verdict of `set` (no-unit > frozen > live) with a note naming
/// every counter that is not live; None when no member has a verdict
/// (stand-ins, or an empty set).
pub fn worst_of<'a>(set: impl IntoIterator<Item = &'a Option<Liveness>>) -> Option<Liveness> {
    let mut worst: Option<Verdict> = None;
    let mut notes: Vec<&str> = Vec::new();
    for l in set.into_iter().flatten() {
        worst = worst.max(Some(l.verdict));
        if let Some(note) = &l.note {
            notes.push(note);
        }
    }
    worst.map(|verdict| Liveness {
        verdict,
        note: (!notes.is_empty()).then(|| notes.join("; ")),
    })
}

/// Why an energy-unit MSR value is not RAPL, or None if it is plausible:
/// a register of 0, or ESU (bits 12:8) 0 ("1 J per count" is not RAPL).
pub fn msr_unit_problem(unit_msr: u32, value: u64) -> Option<String> {
    (value == 0 || crate::msr::energy_unit_joules(value) == 1.0).then(|| {
        format!(
            "energy unit MSR {} reads {value:#x}: not RAPL, no energy unit",
            crate::msr::msr_hex(unit_msr)
        )
    })
}

/// Why a perf event's unit and scale are not energy, or None if they are:
/// the unit must be "Joules" and the scale a finite number > 0.
pub fn perf_unit_problem(unit: &str, scale: f64) -> Option<String> {
    (unit != "Joules" || !scale.is_finite() || scale <= 0.0)
        .then(|| format!("unit '{unit}', scale {scale}: not an energy counter"))
}

/// The verdicts of `source`'s counters, named by `names` (one per domain),
/// with the unit problems already known (`unit_problems[i]`: Some(why) for
/// a no-unit counter, which wins over what the probe sees). It reads every
/// domain together every [`LIVENESS_POLL`] until each has changed at least
/// once, or `window` has passed. A read error is returned as is (it is not
/// a verdict).
pub fn probe(
    source: &mut dyn CounterSource,
    names: &[String],
    unit_problems: &[Option<String>],
    window: Duration,
) -> Result<Vec<Liveness>, Error> {
    let n = source.domains().len();
    let mut first = vec![0u64; n];
    let mut now = vec![0u64; n];
    let mut moved = vec![false; n];
    let t0 = Instant::now();
    source.read(&mut first)?;
    let mut reads = 1;
    while !moved.iter().all(|&m| m) && t0.elapsed() < window {
        std::thread::sleep(LIVENESS_POLL);
        source.read(&mut now)?;
        reads += 1;
        for ((m, a), b) in moved.iter_mut().zip(&first).zip(&now) {
            *m |= a != b;
        }
    }
    Ok(names
        .iter()
        .enumerate()
        .map(|(i, name)| match unit_problems.get(i).cloned().flatten() {
            Some(why) => Liveness::no_unit(name, &why),
            None if moved[i] => Liveness::live(),
            None => Liveness::frozen(name, window, reads),
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Domain;

    /// A counter source whose values advance from the `moves_at`-th read
    /// on (None: never).
    struct Fake {
        domains: Vec<Domain>,
        moves_at: Vec<Option<u32>>,
        reads: u32,
    }

    impl Fake {
        fn new(moves_at: &[Option<u32>]) -> Fake {
            let domains = moves_at
                .iter()
                .enumerate()
                .map(|(i, _)| Domain {
                    source: format!("fake{i}"),
                    name: "energy".into(),
                    joules_per_unit: 1e-6,
                    max: u64::MAX,
                })
                .collect();
            Fake {
                domains,
                moves_at: moves_at.to_vec(),
                reads: 0,
            }
        }
    }

    impl CounterSource for Fake {
        fn domains(&self) -> &[Domain] {
            &self.domains
        }
        fn read(&mut self, out: &mut [u64]) -> Result<(), Error> {
            self.reads += 1;
            for (v, at) in out.iter_mut().zip(&self.moves_at) {
                *v = match at {
                    Some(at) if self.reads >= *at => u64::from(self.reads),
                    _ => 0,
                };
            }
            Ok(())
        }
    }

    fn names(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("counter {i}")).collect()
    }

    const SHORT: Duration = Duration::from_millis(20);

    #[test]
    fn a_verdict_serializes_as_the_schema_spells_it() {
        for v in [Verdict::Live, Verdict::Frozen, Verdict::NoUnit] {
            assert_eq!(serde_json::to_value(v).unwrap(), v.as_str());
        }
    }

    #[test]
    fn a_counter_that_never_advances_is_frozen() {
        let mut fake = Fake::new(&[None]);
        let got = probe(&mut fake, &names(1), &[None], SHORT).unwrap();
        assert_eq!(got[0].verdict, Verdict::Frozen);
        let note = got[0].note.as_deref().unwrap();
        assert!(
            note.starts_with("counter 0: did not change in ")
                && note.ends_with("reads): a dead counter, it yields no energy"),
            "{note}"
        );
        assert!(fake.reads >= 2, "{} reads", fake.reads);
    }

    #[test]
    fn a_counter_that_advances_on_the_third_read_is_live_and_stops_the_probe() {
        let mut fake = Fake::new(&[Some(3)]);
        // a long window: the probe must stop as soon as it moved
        let got = probe(&mut fake, &names(1), &[None], Duration::from_secs(3600)).unwrap();
        assert_eq!(got, [Liveness::live()]);
        assert_eq!(fake.reads, 3);
    }

    #[test]
    fn no_unit_wins_over_frozen_and_over_live() {
        let mut fake = Fake::new(&[Some(2), None, Some(2)]);
        let problems = [
            Some("unit 'Watts', scale 1: not an energy counter".into()),
            None,
            None,
        ];
        let got = probe(&mut fake, &names(3), &problems, SHORT).unwrap();
        let verdicts: Vec<Verdict> = got.iter().map(|l| l.verdict).collect();
        assert_eq!(verdicts, [Verdict::NoUnit, Verdict::Frozen, Verdict::Live]);
        assert_eq!(
            got[0].note.as_deref(),
            Some("counter 0: unit 'Watts', scale 1: not an energy counter")
        );
    }

    #[test]
    fn a_set_gets_the_worst_verdict_and_every_note() {
        let live = Some(Liveness::live());
        let frozen = Some(Liveness::frozen("a", Duration::from_millis(100), 97));
        let no_unit = Some(Liveness::no_unit("b", "why"));
        assert_eq!(worst_of(&[live.clone(), None]), live);
        assert_eq!(worst_of(&[None, None]), None);
        let both = worst_of(&[frozen.clone(), live.clone(), no_unit]).unwrap();
        assert_eq!(both.verdict, Verdict::NoUnit);
        assert_eq!(
            both.note.as_deref(),
            Some(
                "a: did not change in 100 ms (97 reads): a dead counter, it yields no energy; b: why"
            )
        );
        assert_eq!(worst_of(&[live, frozen]).unwrap().verdict, Verdict::Frozen);
    }

    #[test]
    fn unit_plausibility() {
        assert_eq!(
            msr_unit_problem(0x606, 0).as_deref(),
            Some("energy unit MSR 0x606 reads 0x0: not RAPL, no energy unit")
        );
        assert!(msr_unit_problem(0x606, 0x000A_0003).is_some()); // ESU 0
        assert_eq!(msr_unit_problem(0x606, 0x000A_0E03), None);
        assert_eq!(perf_unit_problem("Joules", 2.3283064365386963e-10), None);
        assert_eq!(
            perf_unit_problem("Watts", 1.0).as_deref(),
            Some("unit 'Watts', scale 1: not an energy counter")
        );
        assert!(perf_unit_problem("Joules", 0.0).is_some());
        assert!(perf_unit_problem("Joules", f64::NAN).is_some());
        assert!(perf_unit_problem("Joules", f64::INFINITY).is_some());
        assert!(perf_unit_problem("", 1.0).is_some());
    }

    #[test]
    fn the_schema_spelling() {
        let text: Vec<String> = [Verdict::Live, Verdict::Frozen, Verdict::NoUnit]
            .iter()
            .map(|v| serde_json::to_string(v).unwrap())
            .collect();
        assert_eq!(text, ["\"live\"", "\"frozen\"", "\"no-unit\""]);
    }
}
