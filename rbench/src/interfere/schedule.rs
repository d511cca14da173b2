//! The windows of an experiment: each window's [`Role`], the order of each
//! pair, and which grid window a window the victim closed covers. Pure
//! functions and a state machine, no clock.
//!
//! **The grid**: the victim opens its first window at its first TSC read
//! (published to the other threads) and closes window k at the first read
//! at or past `start + (k + 1) × W` ([`crate::victim::gaps`]); the reader
//! and the sampler's controller follow the same boundaries.
//!
//! **Pairs**: a pair's on and off windows alternate their order pair by
//! pair, so that a drift linear in time weighs on both sides alike.

use serde::Serialize;

/// What a window of the grid is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Excluded: the experiment's first window, or a sampler starting.
    Settle,
    /// The neighbour is idle (the reader is open, not reading).
    Off,
    /// The neighbour reads.
    On,
    /// Excluded: a sampler stopping.
    Teardown,
}

/// The order of a pair's two windows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Order {
    /// The off window first.
    #[serde(rename = "off-on")]
    OffOn,
    /// The on window first.
    #[serde(rename = "on-off")]
    OnOff,
}

/// Pair `pair`'s order: off-on for even pairs, on-off for odd ones.
pub fn order(pair: usize) -> Order {
    if pair % 2 == 0 {
        Order::OffOn
    } else {
        Order::OnOff
    }
}

/// Where a pair's windows are on the grid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PairAt {
    /// Its order.
    pub order: Order,
    /// The off window's index.
    pub off: usize,
    /// The on window's index.
    pub on: usize,
}

/// A route experiment: one settle window, then `pairs` pairs of adjacent
/// windows. The roles of every window and where each pair is.
pub fn route_windows(pairs: usize) -> (Vec<Role>, Vec<PairAt>) {
    let mut roles = vec![Role::Settle];
    let mut at = Vec::with_capacity(pairs);
    for p in 0..pairs {
        let first = roles.len();
        let order = order(p);
        let (pair, off, on) = match order {
            Order::OffOn => ([Role::Off, Role::On], first, first + 1),
            Order::OnOff => ([Role::On, Role::Off], first + 1, first),
        };
        roles.extend(pair);
        at.push(PairAt { order, off, on });
    }
    (roles, at)
}

/// The victim's window grid, in TSC cycles: window k is
/// `[start + k × window, start + (k + 1) × window)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Grid {
    /// The victim's first read.
    pub start_tsc: u64,
    /// One window.
    pub window_cycles: u64,
}

impl Grid {
    /// Window `k`'s bounds.
    pub fn bounds(&self, k: usize) -> (u64, u64) {
        let start = self.start_tsc + k as u64 * self.window_cycles;
        (start, start + self.window_cycles)
    }

    /// The grid window a window the victim measured (from the read
    /// `start_tsc` that opened it to the read `end_tsc` that closed it)
    /// stands for: `Some(k)` when it opened in window k and was closed by
    /// the first read past k's end; None when a gap made it span a
    /// deadline (it mixes two windows) or the run ended within it.
    pub fn window_of(&self, start_tsc: u64, end_tsc: u64) -> Option<usize> {
        let at = |t: u64| {
            t.checked_sub(self.start_tsc)
                .map(|d| d / self.window_cycles)
        };
        match (at(start_tsc), at(end_tsc)) {
            (Some(k), Some(e)) if e == k + 1 => Some(k as usize),
            _ => None,
        }
    }
}

/// What the sampler's controller does at the start of a window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Nothing.
    Nothing,
    /// Start the sampler (the window settles it).
    StartChild,
    /// Stop the sampler (SIGINT; the window tears it down).
    StopChild,
}

/// What a sampler experiment's windows ask of the one who runs them (the
/// controller in [`super::sampler`]; a fake in the tests).
pub trait SamplerControl {
    /// What ends an experiment early.
    type End;
    /// Waits for the next window to start (reaping a sampler that has
    /// exited); whether the sampler says it samples, and whether none runs.
    fn begin(&mut self) -> Result<(bool, bool), Self::End>;
    /// Takes the window begun for `role`, doing `action` at its start; its
    /// index.
    fn take(&mut self, role: Role, action: Action) -> Result<usize, Self::End>;
    /// The end when the sampler has taken more than the timeout's windows
    /// to start sampling (`role` settle) or to exit once stopped (teardown).
    fn timed_out(&mut self, role: Role) -> Self::End;
}

/// The windows of a sampler experiment, taken one by one from `c`: one
/// settle window leads; per pair an off window, and a settle window that
/// starts the sampler (repeated until it says it samples), the on window,
/// a teardown window that stops it (repeated until it has exited); off
/// first in even pairs, last in odd ones. More than `timeout` repeated
/// windows end it. Each pair goes to `done` once its windows are taken;
/// it returns once the last one has ended.
pub fn sampler_windows<C: SamplerControl>(
    c: &mut C,
    pairs: usize,
    timeout: usize,
    done: &mut Vec<PairAt>,
) -> Result<(), C::End> {
    if pairs == 0 {
        return Ok(());
    }
    c.begin()?;
    c.take(Role::Settle, Action::Nothing)?;
    for p in 0..pairs {
        let order = order(p);
        let mut off = 0;
        if order == Order::OffOn {
            c.begin()?;
            off = c.take(Role::Off, Action::Nothing)?;
        }
        c.begin()?;
        c.take(Role::Settle, Action::StartChild)?;
        let mut waited = 0;
        let on = loop {
            if c.begin()?.0 {
                break c.take(Role::On, Action::Nothing)?;
            }
            c.take(Role::Settle, Action::Nothing)?;
            waited += 1;
            if waited > timeout {
                return Err(c.timed_out(Role::Settle));
            }
        };
        c.begin()?;
        c.take(Role::Teardown, Action::StopChild)?;
        let mut waited = 0;
        while !c.begin()?.1 {
            c.take(Role::Teardown, Action::Nothing)?;
            waited += 1;
            if waited > timeout {
                return Err(c.timed_out(Role::Teardown));
            }
        }
        if order == Order::OnOff {
            off = c.take(Role::Off, Action::Nothing)?; // begun by the loop above
        }
        done.push(PairAt { order, off, on });
    }
    c.begin().map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;
    use Action::*;
    use Role::*;

    #[test]
    fn route_pairs_alternate_after_one_settle_window() {
        let (roles, at) = route_windows(3);
        assert_eq!(roles, [Settle, Off, On, On, Off, Off, On]);
        let orders: Vec<Order> = at.iter().map(|p| p.order).collect();
        assert_eq!(orders, [Order::OffOn, Order::OnOff, Order::OffOn]);
        for p in &at {
            assert_eq!((roles[p.off], roles[p.on]), (Off, On));
            assert_eq!(p.off.abs_diff(p.on), 1, "adjacent");
        }
        assert_eq!(route_windows(0), (vec![Settle], vec![]));
    }

    #[test]
    fn victim_windows_map_onto_the_grid() {
        let g = Grid {
            start_tsc: 1000,
            window_cycles: 100,
        };
        assert_eq!(g.bounds(2), (1200, 1300));
        assert_eq!(g.window_of(1000, 1100), Some(0));
        assert_eq!(g.window_of(1100, 1203), Some(1)); // closed a little late
        assert_eq!(g.window_of(1203, 1300), Some(2));
        // a gap across a deadline: the window spans two
        assert_eq!(g.window_of(1300, 1512), None);
        // the run ended inside it; before the grid
        assert_eq!(g.window_of(1512, 1580), None);
        assert_eq!(g.window_of(900, 1100), None);
    }

    /// A sampler that says it samples `start` windows after it was started
    /// and has exited `stop` windows after it was stopped; the windows taken.
    struct Fake {
        start: usize,
        stop: usize,
        since_start: Option<usize>,
        since_stop: Option<usize>,
        taken: Vec<(Role, Action)>,
    }

    impl Fake {
        fn new(start: usize, stop: usize) -> Fake {
            Fake {
                start,
                stop,
                since_start: None,
                since_stop: None,
                taken: Vec::new(),
            }
        }
    }

    impl SamplerControl for Fake {
        type End = Role;

        fn begin(&mut self) -> Result<(bool, bool), Role> {
            let sampling = self.since_start.is_some_and(|n| n >= self.start);
            let exited = self.since_stop.is_some_and(|n| n >= self.stop);
            Ok((sampling, exited))
        }

        fn take(&mut self, role: Role, action: Action) -> Result<usize, Role> {
            match action {
                StartChild => (self.since_start, self.since_stop) = (Some(0), None),
                StopChild => (self.since_stop, self.since_start) = (Some(0), None),
                Nothing => {}
            }
            self.since_start = self.since_start.map(|n| n + 1);
            self.since_stop = self.since_stop.map(|n| n + 1);
            self.taken.push((role, action));
            Ok(self.taken.len() - 1)
        }

        fn timed_out(&mut self, role: Role) -> Role {
            role
        }
    }

    /// Runs the sampler's windows with the sampler starting after `start`
    /// settle windows and exiting after `stop` teardown windows.
    fn sampler_run(pairs: usize, start: usize, stop: usize) -> (Vec<(Role, Action)>, Vec<PairAt>) {
        let mut fake = Fake::new(start, stop);
        let mut done = Vec::new();
        sampler_windows(&mut fake, pairs, 100, &mut done).unwrap();
        (fake.taken, done)
    }

    #[test]
    fn a_sampler_pair_is_off_settle_on_teardown_alternating() {
        let (w, pairs) = sampler_run(2, 1, 1);
        let roles: Vec<Role> = w.iter().map(|x| x.0).collect();
        assert_eq!(
            roles,
            [Settle, Off, Settle, On, Teardown, Settle, On, Teardown, Off]
        );
        assert_eq!(
            (w[2].1, w[4].1, w[5].1, w[7].1),
            (StartChild, StopChild, StartChild, StopChild)
        );
        assert_eq!(
            pairs,
            [
                PairAt {
                    order: Order::OffOn,
                    off: 1,
                    on: 3
                },
                PairAt {
                    order: Order::OnOff,
                    off: 8,
                    on: 6
                },
            ]
        );
    }

    #[test]
    fn a_slow_sampler_lengthens_settle_and_teardown() {
        let (w, pairs) = sampler_run(1, 3, 2);
        let roles: Vec<Role> = w.iter().map(|x| x.0).collect();
        assert_eq!(
            roles,
            [Settle, Off, Settle, Settle, Settle, On, Teardown, Teardown]
        );
        assert_eq!(pairs[0].on, 5);
        assert_eq!(sampler_run(0, 1, 1), (vec![], vec![]));
    }

    #[test]
    fn a_sampler_slower_than_the_timeout_ends_the_experiment() {
        for (start, stop, role) in [(5, 1, Settle), (1, 5, Teardown)] {
            let mut fake = Fake::new(start, stop);
            let mut done = Vec::new();
            assert_eq!(sampler_windows(&mut fake, 1, 2, &mut done), Err(role));
            assert!(done.is_empty());
        }
    }
}
