//! Discovery of perf PMU events from sysfs (the RAPL `power` PMU and the
//! `msr` PMU used as its stand-in).
//!
//! Layout, for PMU P under /sys/bus/event_source/devices:
//!
//! ```text
//! P/type                 the perf_event_attr.type of the PMU
//! P/cpumask              CPUs to open its events on (one per package for RAPL)
//! P/format/<term>        where a term goes in the config, e.g. "config:0-7"
//! P/events/<name>        the event's terms, e.g. "event=0x02"
//! P/events/<name>.scale  multiply a count by this to get <name>.unit
//! P/events/<name>.unit   e.g. "Joules"
//! ```

use std::path::Path;

use crate::cpu::{parse_cpu_list, Cpus};
use crate::perf::PerfEventSpec;
use crate::sysfs::{entry_names, read_first_line};

/// strtoull with base 0: "0x1f" (hex), "017" (octal), "23" (decimal); the
/// whole string must be a number.
fn parse_number(text: &str) -> Option<u64> {
    if let Some(hex) = text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        u64::from_str_radix(hex, 16).ok()
    } else if text.len() > 1 && text.starts_with('0') {
        u64::from_str_radix(&text[1..], 8).ok()
    } else {
        text.parse().ok()
    }
}

/// Encodes event terms ("event=0x02,umask=0x1") into a config value using
/// the PMU's format directory, where each term's file says which config bits
/// it fills ("config:0-7"; see `place_bits`). A term without a value is 1.
/// None if a term is unknown, not in `config`, or not a number.
pub fn encode_config(terms: &str, format_dir: &Path) -> Option<u64> {
    let mut config = 0u64;
    for term in terms.split(',').filter(|t| !t.is_empty()) {
        let (key, value) = match term.split_once('=') {
            Some((key, value)) => (key, parse_number(value)?),
            None => (term, 1),
        };
        let format = read_first_line(format_dir.join(key))?;
        config |= place_bits(format.strip_prefix("config:")?, value)?;
    }
    Some(config)
}

/// `value` placed in the config bits that `ranges` names ("0-7", or
/// "0-3,8-11": the value's low bits fill the first range, the next bits
/// the second); None if a range is malformed, reversed or beyond bit 63.
fn place_bits(ranges: &str, value: u64) -> Option<u64> {
    let (mut config, mut rest) = (0u64, value);
    for range in ranges.split(',') {
        let (lo, hi) = range.split_once('-').unwrap_or((range, range));
        let (lo, hi): (u32, u32) = (lo.trim().parse().ok()?, hi.trim().parse().ok()?);
        if hi < lo || hi > 63 {
            return None;
        }
        let width = hi - lo + 1; // 1 to 64
        config |= (rest & (u64::MAX >> (64 - width))) << lo;
        rest = rest.checked_shr(width).unwrap_or(0);
    }
    Some(config)
}

/// Events of PMU `pmu` under `root` whose names start with `prefix` ("" for
/// all), sorted by name, on the CPUs of the PMU's cpumask (every online CPU
/// under `cpu_root` where it has none). Malformed sysfs files leave the
/// event out, and say why in the error when nothing is left.
pub fn discover_pmu_events(
    pmu: &str,
    prefix: &str,
    root: &Path,
    cpu_root: &Path,
) -> Result<Vec<PerfEventSpec>, String> {
    let dir = format!("{}/{pmu}", root.display());
    let dir = Path::new(&dir);
    let Some(type_) = read_first_line(dir.join("type")).and_then(|t| parse_number(&t)) else {
        return Err(format!("no '{pmu}' PMU ({}/type missing)", dir.display()));
    };
    let mut cpus = read_first_line(dir.join("cpumask"))
        .map(|m| parse_cpu_list(&m))
        .unwrap_or_default();
    if cpus.is_empty() {
        cpus = Cpus::at(cpu_root).online();
    }

    let mut names: Vec<String> = entry_names(dir.join("events"))
        .filter(|name| !name.contains('.') && name.starts_with(prefix)) // skips .scale, .unit
        .collect();
    names.sort();

    let mut events = Vec::new();
    let mut unparsable = String::new();
    for name in names {
        let event_file = dir.join("events").join(&name);
        let config = read_first_line(&event_file)
            .and_then(|terms| encode_config(&terms, &dir.join("format")));
        let scale = match read_first_line(dir.join("events").join(format!("{name}.scale"))) {
            Some(text) => text.trim().parse::<f64>().ok(),
            None => Some(1.0),
        };
        let (Some(config), Some(scale)) = (config, scale) else {
            unparsable.push(' ');
            unparsable.push_str(&name);
            continue;
        };
        events.push(PerfEventSpec {
            name: format!("{pmu}/{name}/"),
            type_: type_ as u32,
            config,
            scale,
            unit: read_first_line(dir.join("events").join(format!("{name}.unit")))
                .unwrap_or_default(),
            cpus: cpus.clone(),
        });
    }
    if !events.is_empty() {
        return Ok(events);
    }
    let which = (!prefix.is_empty()).then(|| format!("{prefix}* "));
    let bad = (!unparsable.is_empty()).then(|| format!(" (unparsable:{unparsable})"));
    Err(format!(
        "the '{pmu}' PMU has no {}events{}",
        which.unwrap_or_default(),
        bad.unwrap_or_default()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{testdata_sys, two_packages_sys};
    use std::path::PathBuf;

    fn root() -> PathBuf {
        testdata_sys().join("bus/event_source/devices")
    }

    /// A topology with CPUs 0-3 online.
    fn cpu_root() -> PathBuf {
        two_packages_sys().join("devices/system/cpu")
    }

    #[test]
    fn discovers_rapl_events_with_scale_and_cpumask() {
        let power = discover_pmu_events("power", "energy-", &root(), &cpu_root()).unwrap();
        let names: Vec<&str> = power.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "power/energy-cores/",
                "power/energy-gpu/",
                "power/energy-pkg/",
                "power/energy-psys/",
                "power/energy-ram/"
            ]
        );
        let pkg = &power[2];
        assert_eq!((pkg.type_, pkg.config), (23, 0x02));
        assert_eq!(pkg.scale, 2.328_306_436_538_696_3e-10); // 2^-32 J
        assert_eq!(pkg.unit, "Joules");
        assert_eq!(pkg.cpus, [0]);
        assert_eq!(pkg.short_name(), "energy-pkg");
    }

    #[test]
    fn msr_pmu_tsc_event() {
        let msr = discover_pmu_events("msr", "tsc", &root(), &cpu_root()).unwrap();
        assert_eq!(msr.len(), 1);
        assert_eq!((msr[0].type_, msr[0].config), (9, 0));
        assert_eq!(msr[0].cpus, [0, 1, 2, 3]); // no cpumask: every online CPU
    }

    #[test]
    fn missing_pmu_says_so() {
        let none = discover_pmu_events("nope", "", &root(), &cpu_root());
        assert_eq!(
            none,
            Err(format!(
                "no 'nope' PMU ({}/nope/type missing)",
                root().display()
            ))
        );
        let no_match = discover_pmu_events("msr", "energy-", &root(), &cpu_root());
        assert_eq!(
            no_match.unwrap_err(),
            "the 'msr' PMU has no energy-* events"
        );
    }

    #[test]
    fn encodes_terms_through_format_ranges() {
        let split = root().join("split/format");
        // event bits 0-3 and 8-11, umask 4-7
        assert_eq!(encode_config("event=0x12", &split), Some(0x0102));
        assert_eq!(encode_config("event=0x1,umask=0x3", &split), Some(0x31));
        assert_eq!(encode_config("event=18", &split), Some(0x0102)); // decimal
        assert_eq!(encode_config("umask", &split), Some(0x10)); // a bare term is 1
        assert_eq!(encode_config("bogus=1", &split), None);
        assert_eq!(encode_config("event=zz", &split), None);
        // the msr PMU's full-width range
        assert_eq!(
            encode_config("event=0xffffffffffffffff", &root().join("msr/format")),
            Some(u64::MAX)
        );
    }

    #[test]
    fn numbers_in_c_bases() {
        assert_eq!(parse_number("0x1F"), Some(31));
        assert_eq!(parse_number("017"), Some(15));
        assert_eq!(parse_number("0"), Some(0));
        assert_eq!(parse_number("23"), Some(23));
        assert_eq!(parse_number(""), None);
        assert_eq!(parse_number("1x"), None);
    }

    mod properties {
        use super::super::*;
        use crate::testutil::fixed_cases;
        use proptest::prelude::*;

        /// A valid bit range: (lo, hi) with lo <= hi <= 63.
        fn bit_range() -> impl Strategy<Value = (u32, u32)> {
            (0u32..64).prop_flat_map(|lo| (Just(lo), lo..64))
        }

        fn mask(width: u32) -> u64 {
            if width >= 64 {
                u64::MAX
            } else {
                (1u64 << width) - 1
            }
        }

        proptest! {
            #![proptest_config(fixed_cases(3000))]

            /// Every base the kernel's event strings use reads back.
            #[test]
            fn a_number_in_any_c_base_reads_back(value: u64) {
                prop_assert_eq!(parse_number(&value.to_string()), Some(value));
                prop_assert_eq!(parse_number(&format!("{value:#x}")), Some(value));
                prop_assert_eq!(parse_number(&format!("0X{value:X}")), Some(value));
                prop_assert_eq!(parse_number(&format!("0{value:o}")), Some(value));
            }

            #[test]
            fn any_text_is_a_number_or_none(text in "\\PC{0,24}") {
                let _ = parse_number(&text); // never panics
            }

            /// One range: the value's low bits, shifted to the range.
            #[test]
            fn one_range_places_the_low_bits((lo, hi) in bit_range(), value: u64) {
                let placed = place_bits(&format!("{lo}-{hi}"), value);
                prop_assert_eq!(placed, Some((value & mask(hi - lo + 1)) << lo));
                if lo == hi {
                    prop_assert_eq!(place_bits(&lo.to_string(), value), Some((value & 1) << lo));
                }
            }

            /// Two ranges: the low bits fill the first, the next bits the second.
            #[test]
            fn two_ranges_split_the_value(a in bit_range(), b in bit_range(), value: u64) {
                let wa = a.1 - a.0 + 1;
                let first = (value & mask(wa)) << a.0;
                let next = if wa >= 64 { 0 } else { value >> wa };
                let second = (next & mask(b.1 - b.0 + 1)) << b.0;
                prop_assert_eq!(
                    place_bits(&format!("{}-{},{}-{}", a.0, a.1, b.0, b.1), value),
                    Some(first | second)
                );
            }

            /// Reversed, beyond bit 63, or not numbers: None, never a panic
            /// or a shift overflow.
            #[test]
            fn a_bad_range_is_none(lo in 0u32..200, hi in 0u32..200, text in "\\PC{0,12}", value: u64) {
                if hi < lo || hi > 63 {
                    prop_assert_eq!(place_bits(&format!("{lo}-{hi}"), value), None);
                }
                let _ = place_bits(&text, value);
            }
        }
    }
}
