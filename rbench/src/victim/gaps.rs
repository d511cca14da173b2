//! The victim loop's gap accounting: every delta between consecutive TSC
//! reads above the threshold is a gap; the time it stole is the delta minus
//! one normal iteration (the calibrated iteration median), since that much
//! the loop would have spent anyway. This is the usual definition (the
//! kernel's osnoise tracer, and sysjitter's "interruption" time taken net
//! of the loop's own cost); the threshold itself is compared with the whole
//! delta, as sysjitter and hwlatdetect compare theirs.
//!
//! Seconds are cut by TSC deadline: the read that reaches a deadline closes
//! the second, so every delta (gap or not) belongs wholly to one second,
//! each second's wall time is the sum of its deltas, and its stolen time can
//! never exceed it. A gap that spans a deadline belongs to the second that
//! the read ending it closes (which is longer than 1 s by as much).
//!
//! [`Gaps::step`] runs in the hot loop: no allocation, no formatting, no
//! system call. A gap that finds the preallocated buffer full is still
//! counted, summed and maxed, and counted as not kept (its length is
//! missing only from the percentiles).

use crate::summary::quantile_sorted;

/// One second of the run (the last may be shorter), in TSC cycles.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Second {
    /// The read that opened it.
    pub start_tsc: u64,
    /// The read that closed it.
    pub end_tsc: u64,
    /// Gaps above the threshold.
    pub count: u64,
    /// Stolen cycles: the sum over its gaps of (delta − normal iteration).
    pub stolen: u64,
    /// The longest gap's stolen cycles.
    pub max: u64,
    /// Where its kept gaps start in the buffer.
    pub first_kept: usize,
    /// How many of its gaps the buffer kept.
    pub kept: usize,
    /// Gaps that found the buffer full (counted, not kept).
    pub not_kept: u64,
}

/// The accounting of one run (see the module's description).
#[derive(Debug)]
pub struct Gaps {
    threshold: u64,
    normal: u64,
    per_second: u64,
    deadline: u64,
    buf: Vec<u64>,
    kept: usize,
    seconds: Vec<Second>,
    max_seconds: usize,
    cur: Second,
}

/// What a run measured: its seconds and the stolen cycles of every kept
/// gap, in order (second i's are `gaps[first_kept..first_kept + kept]`).
#[derive(Debug, Clone, PartialEq)]
pub struct Measured {
    /// The seconds, in order.
    pub seconds: Vec<Second>,
    /// The kept gaps' stolen cycles.
    pub gaps: Vec<u64>,
}

impl Gaps {
    /// Accounting with gaps above `threshold` cycles, `normal` cycles per
    /// normal iteration, seconds of `per_second` cycles, room for
    /// `max_gaps` gaps and `max_seconds` seconds (past them, the last
    /// second runs on to the end of the run). Allocates everything now.
    pub fn new(
        threshold: u64,
        normal: u64,
        per_second: u64,
        max_gaps: usize,
        max_seconds: usize,
    ) -> Gaps {
        assert!(per_second > 0, "a second of TSC cycles");
        Gaps {
            threshold,
            normal,
            per_second,
            deadline: u64::MAX,
            buf: vec![u64::MAX; max_gaps], // written: faulted in before the loop
            kept: 0,
            seconds: Vec::with_capacity(max_seconds.max(1)),
            max_seconds: max_seconds.max(1),
            cur: Second::default(),
        }
    }

    /// The first read of the run: the first second starts here.
    pub fn start(&mut self, tsc: u64) {
        self.cur = Second {
            start_tsc: tsc,
            ..Second::default()
        };
        self.deadline = tsc.saturating_add(self.per_second);
    }

    /// One iteration: the read `now` after `prev`.
    #[inline(always)]
    pub fn step(&mut self, prev: u64, now: u64) {
        let delta = now.saturating_sub(prev); // never negative on a stable TSC
        if delta > self.threshold {
            self.gap(delta);
        }
        if now >= self.deadline {
            self.close(now);
        }
    }

    #[cold]
    #[inline(never)]
    fn gap(&mut self, delta: u64) {
        let stolen = delta.saturating_sub(self.normal);
        let c = &mut self.cur;
        c.count += 1;
        c.stolen += stolen;
        c.max = c.max.max(stolen);
        if self.kept < self.buf.len() {
            self.buf[self.kept] = stolen;
            self.kept += 1;
            c.kept += 1;
        } else {
            c.not_kept += 1;
        }
    }

    #[cold]
    #[inline(never)]
    fn close(&mut self, now: u64) {
        // the next deadline after now (a gap may have skipped several)
        let behind = (now - self.deadline) / self.per_second + 1;
        self.deadline = self
            .deadline
            .saturating_add(behind.saturating_mul(self.per_second));
        if self.seconds.len() + 1 >= self.max_seconds {
            return; // the last slot is finish's: this second runs on
        }
        self.cur.end_tsc = now;
        self.seconds.push(self.cur);
        self.cur = Second {
            start_tsc: now,
            first_kept: self.kept,
            ..Second::default()
        };
    }

    /// Ends the run at the last read `last`: the second under way is kept
    /// if any time passed in it.
    pub fn finish(mut self, last: u64) -> Measured {
        if last > self.cur.start_tsc {
            self.cur.end_tsc = last;
            self.seconds.push(self.cur);
        }
        self.buf.truncate(self.kept);
        Measured {
            seconds: self.seconds,
            gaps: self.buf,
        }
    }
}

/// A stretch's gap statistics in nanoseconds. The percentiles are over the
/// kept gaps (numpy's linear interpolation, [`quantile_sorted`]); count,
/// stolen time and max over every gap. None where there was no gap.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct GapStats {
    /// Wall time.
    pub wall_ns: u64,
    /// Time stolen.
    pub stolen_ns: u64,
    /// Gaps.
    pub count: u64,
    /// Median gap (stolen time per gap).
    pub p50_ns: Option<f64>,
    /// 99th percentile gap.
    pub p99_ns: Option<f64>,
    /// Longest gap.
    pub max_ns: Option<f64>,
    /// Gaps not kept for the percentiles (the buffer was full).
    pub not_kept: u64,
}

impl Second {
    /// Wall cycles: from the read that opened it to the one that closed it.
    pub fn wall(&self) -> u64 {
        self.end_tsc - self.start_tsc
    }

    /// Its statistics, given its kept gaps (sorted here).
    fn stats(&self, gaps: &mut [u64], ns_per_cycle: f64) -> GapStats {
        gaps.sort_unstable();
        let ns: Vec<f64> = gaps.iter().map(|&g| g as f64 * ns_per_cycle).collect();
        let quantile = |q| (!ns.is_empty()).then(|| quantile_sorted(&ns, q));
        let to_ns = |cycles: u64| (cycles as f64 * ns_per_cycle).round() as u64;
        GapStats {
            wall_ns: to_ns(self.wall()),
            stolen_ns: to_ns(self.stolen),
            count: self.count,
            p50_ns: quantile(0.50),
            p99_ns: quantile(0.99),
            max_ns: (self.count > 0).then_some(self.max as f64 * ns_per_cycle),
            not_kept: self.not_kept,
        }
    }
}

impl Measured {
    /// Each second's statistics, then the whole run's (as one long second).
    pub fn stats(&self, ns_per_cycle: f64) -> (Vec<GapStats>, GapStats) {
        let mut gaps = self.gaps.clone();
        let per_second = (self.seconds.iter())
            .map(|s| s.stats(&mut gaps[s.first_kept..s.first_kept + s.kept], ns_per_cycle))
            .collect();
        let sum = |f: fn(&Second) -> u64| self.seconds.iter().map(f).sum::<u64>();
        let whole = Second {
            end_tsc: sum(Second::wall),
            count: sum(|s| s.count),
            stolen: sum(|s| s.stolen),
            max: self.seconds.iter().map(|s| s.max).max().unwrap_or(0),
            kept: gaps.len(),
            not_kept: sum(|s| s.not_kept),
            ..Second::default()
        };
        (per_second, whole.stats(&mut gaps, ns_per_cycle))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs a synthetic TSC stream through the accounting.
    fn run(g: &mut Gaps, stream: &[u64]) {
        g.start(stream[0]);
        for w in stream.windows(2) {
            g.step(w[0], w[1]);
        }
    }

    /// A stream from `start` by steps of `normal` cycles, with the extra
    /// delays `(at_tsc, extra)` inserted where the stream first reaches
    /// `at_tsc`, until `end`.
    fn stream(start: u64, normal: u64, end: u64, delays: &[(u64, u64)]) -> Vec<u64> {
        let mut out = vec![start];
        let mut t = start;
        let mut pending = delays.to_vec();
        while t < end {
            t += normal;
            if let Some(i) = pending.iter().position(|&(at, _)| t >= at) {
                t += pending.remove(i).1;
            }
            out.push(t);
        }
        out
    }

    #[test]
    fn quiet_stream_has_no_gaps_and_whole_seconds() {
        // 1000 cycles a second, 10 per iteration, threshold 50, 3.5 s
        let mut g = Gaps::new(50, 10, 1000, 16, 8);
        let s = stream(0, 10, 3500, &[]);
        run(&mut g, &s);
        let m = g.finish(*s.last().unwrap());
        let walls: Vec<u64> = m.seconds.iter().map(Second::wall).collect();
        assert_eq!(walls, [1000, 1000, 1000, 500]);
        assert!(m.seconds.iter().all(|s| s.count == 0 && s.stolen == 0));
        assert!(m.gaps.is_empty());
        let (per, total) = m.stats(1.0);
        assert_eq!(per[0].p50_ns, None);
        assert_eq!((total.wall_ns, total.count, total.max_ns), (3500, 0, None));
    }

    #[test]
    fn gaps_count_minus_one_normal_iteration_in_the_second_they_end() {
        let mut g = Gaps::new(50, 10, 1000, 16, 8);
        // second 0: gaps of 100 and 300 extra cycles; second 1: one of 40
        // (delta 50: not above the threshold), and one of 60 extra that
        // spans the deadline at 2000 (from the read at 1990 to 2060)
        let s = stream(
            0,
            10,
            2500,
            &[(100, 100), (500, 300), (1300, 40), (1995, 60)],
        );
        run(&mut g, &s);
        let m = g.finish(*s.last().unwrap());
        assert_eq!(m.seconds.len(), 3);
        let [a, b, c] = [m.seconds[0], m.seconds[1], m.seconds[2]];
        // a delta of normal + extra steals `extra`
        assert_eq!((a.count, a.stolen, a.max), (2, 400, 300));
        assert_eq!((b.count, b.stolen, b.max), (1, 60, 60));
        assert_eq!((c.count, c.stolen), (0, 0));
        // every delta in exactly one second: the walls add up
        let wall: u64 = m.seconds.iter().map(Second::wall).sum();
        assert_eq!(wall, s.last().unwrap() - s[0]);
        assert!(m.seconds.iter().all(|s| s.stolen <= s.wall()));
        // the read that ended the spanning gap closed second 1
        assert_eq!((b.end_tsc, c.start_tsc), (2060, 2060));
        assert_eq!(m.gaps, [100, 300, 60]);
        let (per, total) = m.stats(0.5); // 2 GHz
        assert_eq!(per[0].stolen_ns, 200);
        assert_eq!((per[0].p50_ns, per[0].max_ns), (Some(100.0), Some(150.0)));
        assert_eq!(total.count, 3);
        assert_eq!(total.p50_ns, Some(50.0));
        assert_eq!(total.max_ns, Some(150.0));
    }

    #[test]
    fn a_gap_longer_than_a_second_skips_deadlines_but_loses_nothing() {
        let mut g = Gaps::new(50, 10, 1000, 16, 8);
        let s = stream(0, 10, 4000, &[(500, 2500)]);
        run(&mut g, &s);
        let m = g.finish(*s.last().unwrap());
        let total: u64 = m.seconds.iter().map(|s| s.stolen).sum();
        assert_eq!(total, 2500);
        assert!(m.seconds.iter().all(|s| s.stolen <= s.wall()));
        // the read ending the gap (at 3000) closed second 0; the next
        // deadline is the next whole second after it
        assert_eq!(m.seconds[0].end_tsc, 3000);
        assert_eq!(m.seconds[1].start_tsc, 3000);
        assert_eq!(m.seconds[1].end_tsc, 4000);
    }

    #[test]
    fn a_full_buffer_counts_what_it_cannot_keep() {
        let mut g = Gaps::new(50, 10, 1000, 2, 8);
        let delays: Vec<(u64, u64)> = (1..=5).map(|i| (i * 300, i * 100)).collect();
        let s = stream(0, 10, 3000, &delays);
        run(&mut g, &s);
        let m = g.finish(*s.last().unwrap());
        let (_, total) = m.stats(1.0);
        assert_eq!(total.count, 5);
        assert_eq!(total.not_kept, 3);
        assert_eq!(m.gaps, [100, 200]);
        // count, sum and max still cover every gap
        assert_eq!(total.stolen_ns, 1500);
        assert_eq!(total.max_ns, Some(500.0));
        assert_eq!(total.p50_ns, Some(150.0)); // of the two kept
    }

    #[test]
    fn past_max_seconds_the_last_second_runs_on() {
        let mut g = Gaps::new(50, 10, 100, 16, 2);
        let s = stream(0, 10, 1000, &[(950, 70)]);
        run(&mut g, &s);
        let m = g.finish(*s.last().unwrap());
        assert_eq!(m.seconds.len(), 2);
        assert_eq!(m.seconds[1].wall(), s.last().unwrap() - 100);
        assert_eq!(m.seconds[1].stolen, 70);
    }

    #[test]
    fn a_threshold_below_one_iteration_never_underflows() {
        let mut g = Gaps::new(5, 10, 1000, 16, 8);
        let s = stream(0, 10, 100, &[]);
        run(&mut g, &s);
        let m = g.finish(100);
        assert_eq!((m.seconds[0].count, m.seconds[0].stolen), (10, 0));
    }

    #[test]
    fn a_tsc_going_backwards_is_no_gap() {
        let mut g = Gaps::new(50, 10, 1000, 16, 8);
        run(&mut g, &[100, 110, 90, 100, 120]);
        assert_eq!(g.finish(120).seconds[0].count, 0);
    }
}
