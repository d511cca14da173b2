//! When the Criterion harness (`benches/paths.rs`) times the plan's rows:
//! in rounds, the way ubench's Google Benchmark times its repetitions, so
//! that a row of either harness is the same statistic of the same kind of
//! blocks. One Criterion measurement is one block: each of
//! [`Schedule::rounds`] rounds times every row once ([`round_order`]:
//! shuffled anew each round), each row pinned, warmed up for
//! [`Schedule::warm_up`] and measured for [`Schedule::block`], into
//! `<criterion home>/round-NN/`; the row's samples are the rounds' ns per
//! operation (results/criterion.py). Why blocks spread over the run:
//! results/README.md, "Agreement between the harnesses".

use std::path::{Path, PathBuf};
use std::time::Duration;

/// How many blocks each row gets, and how long each is warmed up and timed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Schedule {
    /// Rounds: blocks per row, the row's number of samples.
    pub rounds: usize,
    /// Untimed operations before each block (Criterion's warm-up).
    pub warm_up: Duration,
    /// Timed operations per block (Criterion's measurement time).
    pub block: Duration,
}

/// results/schedule.json: bench-all's QUICK and full schedules, the one
/// place they are set (results/schedule.py reads the same file).
const SCHEDULES_JSON: &str = include_str!("../../results/schedule.json");

/// results/schedule.json (the target states read it too: crate::target_load).
pub(crate) fn schedules() -> serde_json::Value {
    serde_json::from_str(SCHEDULES_JSON).expect("results/schedule.json is JSON")
}

/// Whether this process runs bench-all's QUICK schedule (`RAPLBENCH_QUICK=1`).
pub fn quick_from_env() -> bool {
    std::env::var("RAPLBENCH_QUICK").is_ok_and(|v| v == "1")
}

impl Schedule {
    /// bench-all's QUICK (`quick`) or full schedule, from results/schedule.json.
    pub fn of_bench_all(quick: bool) -> Schedule {
        let all = schedules();
        let one = &all[if quick { "quick" } else { "full" }];
        let seconds =
            |key: &str| Duration::from_secs_f64(one[key].as_f64().expect("schedule.json: seconds"));
        Schedule {
            rounds: one["blocks"].as_u64().expect("schedule.json: blocks") as usize,
            warm_up: seconds("warmup_s"),
            block: seconds("block_s"),
        }
    }

    /// [`Schedule::of_bench_all`] as `quick` says, each field
    /// overridden by `var` ("RAPLBENCH_ROUNDS": a count,
    /// "RAPLBENCH_WARMUP_S" and "RAPLBENCH_BLOCK_S": seconds), which
    /// results/latency_steps.py sets from the schedule it gives ubench too.
    pub fn from_vars(
        quick: bool,
        var: impl Fn(&str) -> Option<String>,
    ) -> Result<Schedule, String> {
        let mut schedule = Schedule::of_bench_all(quick);
        if let Some(text) = var("RAPLBENCH_ROUNDS") {
            schedule.rounds = match text.trim().parse::<usize>() {
                Ok(n) if n >= 1 => n,
                _ => return Err(format!("RAPLBENCH_ROUNDS={text}: a count >= 1")),
            };
        }
        for (name, field) in [
            ("RAPLBENCH_WARMUP_S", &mut schedule.warm_up),
            ("RAPLBENCH_BLOCK_S", &mut schedule.block),
        ] {
            if let Some(text) = var(name) {
                *field = match crate::clock::parse_finite(text.trim(), |s| s > 0.0) {
                    Some(s) => Duration::from_secs_f64(s),
                    None => return Err(format!("{name}={text}: a number of seconds > 0")),
                };
            }
        }
        Ok(schedule)
    }

    /// The schedule of this process's environment (`RAPLBENCH_QUICK=1` and
    /// the overrides of [`Schedule::from_vars`]).
    pub fn from_env() -> Result<Schedule, String> {
        Schedule::from_vars(quick_from_env(), |name| {
            std::env::var(name).ok().filter(|v| !v.is_empty())
        })
    }
}

/// Where Criterion writes round `round`: `<home>/round-NN`.
pub fn round_dir(home: &Path, round: usize) -> PathBuf {
    home.join(format!("round-{round:02}"))
}

/// A small pseudo-random generator (xorshift64*), enough to shuffle rows.
#[derive(Debug, Clone)]
pub struct Shuffler(u64);

impl Shuffler {
    /// Seeded from `seed` (0 is replaced: xorshift never leaves 0).
    pub fn new(seed: u64) -> Shuffler {
        Shuffler(if seed == 0 {
            0x9E37_79B9_7F4A_7C15
        } else {
            seed
        })
    }

    /// Seeded differently in each process, as Google Benchmark's
    /// interleaving is (std::random_device).
    pub fn from_entropy() -> Shuffler {
        use std::hash::{BuildHasher, Hasher};
        let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
        hasher.write_u64(std::process::id().into());
        Shuffler::new(hasher.finish())
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}

/// The order in which one round times `rows` (indices into the plan): each
/// once, shuffled (Fisher–Yates).
pub fn round_order(rows: &[usize], shuffler: &mut Shuffler) -> Vec<usize> {
    let mut order = rows.to_vec();
    for i in (1..order.len()).rev() {
        let j = (shuffler.next() % (i as u64 + 1)) as usize;
        order.swap(i, j);
    }
    order
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn vars(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |name| map.get(name).cloned()
    }

    #[test]
    fn quick_and_full_are_bench_alls_schedules_and_vars_override_them() {
        for quick in [true, false] {
            let s = Schedule::from_vars(quick, vars(&[])).unwrap();
            assert_eq!(s, Schedule::of_bench_all(quick));
            assert!(s.rounds >= 10 && s.block > Duration::ZERO && s.warm_up > Duration::ZERO);
        }
        assert!(Schedule::of_bench_all(false).block > Schedule::of_bench_all(true).block);
        let set = vars(&[
            ("RAPLBENCH_ROUNDS", "3"),
            ("RAPLBENCH_WARMUP_S", "0.002"),
            ("RAPLBENCH_BLOCK_S", "0.5"),
        ]);
        assert_eq!(
            Schedule::from_vars(true, set),
            Ok(Schedule {
                rounds: 3,
                warm_up: Duration::from_millis(2),
                block: Duration::from_millis(500),
            })
        );
        for (name, bad) in [
            ("RAPLBENCH_ROUNDS", "0"),
            ("RAPLBENCH_ROUNDS", "two"),
            ("RAPLBENCH_WARMUP_S", "0"),
            ("RAPLBENCH_BLOCK_S", "-1"),
            ("RAPLBENCH_BLOCK_S", "10ms"),
        ] {
            let err = Schedule::from_vars(true, vars(&[(name, bad)])).unwrap_err();
            assert!(err.starts_with(&format!("{name}={bad}: ")), "{err}");
        }
    }

    #[test]
    fn each_round_times_every_row_once_in_a_new_order() {
        let rows: Vec<usize> = (0..12).collect();
        let mut shuffler = Shuffler::new(42);
        let orders: Vec<Vec<usize>> = (0..10).map(|_| round_order(&rows, &mut shuffler)).collect();
        for order in &orders {
            let mut sorted = order.clone();
            sorted.sort_unstable();
            assert_eq!(sorted, rows);
        }
        // not one order repeated: 12! orders, 10 draws
        for (i, a) in orders.iter().enumerate() {
            assert!(orders[i + 1..].iter().all(|b| b != a), "round {i} repeats");
        }
        // every row is first in some round and not always in the same place
        let firsts: std::collections::HashSet<usize> = orders.iter().map(|o| o[0]).collect();
        assert!(firsts.len() > 3, "{firsts:?}");
        assert_eq!(round_order(&[], &mut shuffler), Vec::<usize>::new());
        assert_eq!(round_order(&[7], &mut shuffler), vec![7]);
    }

    #[test]
    fn rounds_go_to_numbered_directories() {
        assert_eq!(round_dir(Path::new("/h"), 3), PathBuf::from("/h/round-03"));
    }
}
