//! Where the victim runs relative to the reader: on the CPU whose counter
//! the reader reads (the read may interrupt it there, as an IPI does), or
//! on another CPU than the reader's.

use serde::Serialize;

/// Where the victim is, relative to the read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Placement {
    /// The victim is on the read's target CPU, another than the reader's.
    VictimIsTarget,
    /// The reader reads its own CPU or a counter of no CPU; the victim is
    /// on another CPU.
    VictimElsewhere,
}

/// The victim's CPU for a reader on `reader` reading `target` (None: a
/// counter of no CPU), among the `allowed` CPUs: the target when it is not
/// the reader's CPU, else the lowest allowed CPU other than the reader's.
/// The reason when the placement cannot be had here.
pub fn victim_cpu(
    reader: usize,
    target: Option<usize>,
    allowed: &[usize],
) -> Result<(usize, Placement), String> {
    let cpus: Vec<String> = allowed.iter().map(usize::to_string).collect();
    let list = cpus.join(",");
    if !allowed.contains(&reader) {
        return Err(format!(
            "the reader's CPU {reader} is not one this process may run on (allowed: {list})"
        ));
    }
    match target {
        Some(t) if t != reader && allowed.contains(&t) => Ok((t, Placement::VictimIsTarget)),
        Some(t) if t != reader => Err(format!(
            "the target CPU {t} is not one this process may run on (allowed: {list}): \
             the victim cannot sit there"
        )),
        _ => match allowed.iter().copied().filter(|&c| c != reader).min() {
            Some(v) => Ok((v, Placement::VictimElsewhere)),
            None => Err(format!(
                "only CPU {reader} is allowed: the victim needs a CPU other than the \
                 reader's (run on 2 CPUs or more)"
            )),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_target_cpu_hosts_the_victim_when_it_is_not_the_readers() {
        assert_eq!(
            victim_cpu(0, Some(1), &[0, 1]),
            Ok((1, Placement::VictimIsTarget))
        );
        assert_eq!(
            victim_cpu(3, Some(0), &[0, 2, 3]),
            Ok((0, Placement::VictimIsTarget))
        );
    }

    #[test]
    fn otherwise_the_lowest_other_allowed_cpu() {
        assert_eq!(
            victim_cpu(0, Some(0), &[0, 1, 2]),
            Ok((1, Placement::VictimElsewhere))
        );
        assert_eq!(
            victim_cpu(1, None, &[0, 1]),
            Ok((0, Placement::VictimElsewhere))
        );
        assert_eq!(
            victim_cpu(2, None, &[5, 2, 4]),
            Ok((4, Placement::VictimElsewhere))
        );
    }

    #[test]
    fn impossible_placements_say_why() {
        let one = victim_cpu(0, None, &[0]).unwrap_err();
        assert!(one.contains("only CPU 0 is allowed"), "{one}");
        let same = victim_cpu(0, Some(0), &[0]).unwrap_err();
        assert!(same.contains("only CPU 0"), "{same}");
        let masked = victim_cpu(0, Some(3), &[0, 1]).unwrap_err();
        assert!(masked.contains("target CPU 3"), "{masked}");
        let reader = victim_cpu(7, None, &[0, 1]).unwrap_err();
        assert!(reader.contains("reader's CPU 7"), "{reader}");
    }
}
