//! CPU time of this process, read precisely: the run time (ns) that the
//! scheduler accounts to each thread in /proc/self/task/<tid>/schedstat
//! (first field). getrusage is not used: on tick-accounted kernels (HZ=250
//! here) it is sampled at the tick, not measured.

use std::fs;

/// Sum of the schedstat run time of every live thread of this process, in ns.
pub fn process_threads_ns() -> u64 {
    let Ok(tasks) = fs::read_dir("/proc/self/task") else {
        return 0;
    };
    tasks
        .flatten()
        .filter_map(|task| fs::read_to_string(task.path().join("schedstat")).ok())
        .filter_map(|line| line.split_whitespace().next()?.parse::<u64>().ok())
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn this_thread_ns() -> u64 {
        let line = fs::read_to_string("/proc/thread-self/schedstat").unwrap();
        line.split_whitespace().next().unwrap().parse().unwrap()
    }

    /// This thread's run time grows while it works, and the sum holds it.
    /// Not "the sum grows": the sum is of the live threads, and another
    /// test's thread that ends meanwhile takes its run time out of it (an
    /// unprivileged `make test` failed so, in the release profile).
    #[test]
    fn grows_while_this_thread_works() {
        let before = this_thread_ns();
        let mut x = 0u64;
        for i in 0..20_000_000u64 {
            // black_box: optimized, the loop would be folded away
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(i));
        }
        let after = this_thread_ns();
        assert!(after > before, "{before} -> {after}");
        assert!(process_threads_ns() >= after);
    }
}
