//! --list: every counter each mechanism would read here, with its route,
//! unit and liveness verdict, before anything is measured (like `perf
//! list`, `turbostat` or `likwid-powermeter -i`).

use rbench::discovery::{Counter, Counters};
use rbench::liveness::LIVENESS_WINDOW;

use crate::cli::{Args, Mechanism};
use crate::mechanism::discover;

/// The column titles.
const HEADER: [&str; 6] = [
    "mechanism",
    "package",
    "domain",
    "route",
    "unit_j",
    "liveness",
];

/// The cells of one counter's line.
fn cells(mechanism: Mechanism, c: &Counter, stand_in: bool) -> [String; 6] {
    let liveness = match (&c.readable, &c.liveness) {
        (Err(e), _) => format!("unavailable: {e}"),
        _ if stand_in => "stand-in: not energy".to_string(),
        // the evidence, so a dead counter is named with its reason
        (Ok(()), Some(l)) => match &l.note {
            Some(note) => format!("{}: {note}", l.verdict),
            None => l.verdict.to_string(),
        },
        (Ok(()), None) => "unknown".to_string(),
    };
    let unit = if c.domain.joules_per_unit > 0.0 {
        format!("{:e}", c.domain.joules_per_unit)
    } else {
        "-".to_string()
    };
    [
        mechanism.name().to_string(),
        c.package.map_or("-".to_string(), |p| p.to_string()),
        format!("{}/{}", c.domain.source, c.domain.name),
        c.route.describe(mechanism == Mechanism::Ebpf),
        unit,
        liveness,
    ]
}

/// The lines of the mechanisms `args` names (all without --mechanism).
pub fn lines(args: &Args) -> Vec<[String; 6]> {
    let mechanisms = args.mechanism.map_or_else(Mechanism::all, |m| vec![m]);
    let mut out = Vec::new();
    // ebpf and perf-ring read the perf events: discovered and probed once for all
    let mut perf: Option<Result<Counters, String>> = None;
    for m in mechanisms {
        let probed = || {
            let mut found =
                discover(m, args.powercap_root.as_deref()).map_err(|e| e.to_string())?;
            found.probe(LIVENESS_WINDOW);
            Ok(found)
        };
        let found = if matches!(m, Mechanism::Perf | Mechanism::Ebpf | Mechanism::PerfRing) {
            perf.get_or_insert_with(probed).clone()
        } else {
            probed()
        };
        match found {
            Ok(found) => {
                for c in &found.counters {
                    out.push(cells(m, c, found.stand_in.is_some()));
                }
            }
            Err(e) => {
                let why = format!("unavailable: {e}");
                out.push([m.name(), "-", "-", "-", "-", &why].map(str::to_string));
            }
        }
    }
    out
}

/// The table, columns aligned, the last one as long as it is.
pub fn render(lines: &[[String; 6]]) -> String {
    let header = HEADER.map(str::to_string);
    let all: Vec<&[String; 6]> = std::iter::once(&header).chain(lines).collect();
    let mut widths = [0usize; 6];
    for line in &all {
        for (w, cell) in widths.iter_mut().zip(line.iter()) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut text = String::new();
    for line in all {
        let (last, cells) = line.split_last().expect("six cells");
        for (cell, width) in cells.iter().zip(widths) {
            text += &format!("{cell:<width$}  ");
        }
        text += last;
        text.push('\n');
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_line_up() {
        let line = |a: &str| {
            [
                a,
                "0",
                "intel-rapl:0/package-0",
                "/x/energy_uj",
                "1e-6",
                "frozen",
            ]
            .map(str::to_string)
        };
        let text = render(&[line("powercap"), line("ebpf")]);
        let rows: Vec<&str> = text.lines().collect();
        assert_eq!(rows.len(), 3);
        assert!(rows[0].starts_with("mechanism  package  domain"));
        assert_eq!(rows[1].find("intel-rapl"), rows[2].find("intel-rapl"));
        assert!(rows[2].ends_with("  frozen"));
    }
}
