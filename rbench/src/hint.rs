//! [`do_not_optimize`]: what the timed loops of rbench use to keep a read's
//! result alive, the same escape as ubench's (Google Benchmark's
//! `benchmark::DoNotOptimize`), so that both harnesses time the same
//! instructions around a read.
//!
//! `std::hint::black_box(&x)` also keeps `x` alive, but it takes its
//! argument by value and hands the asm the address of that argument: for
//! `&x`, a pointer the loop stores to the stack on every iteration, one
//! store per read more than ubench's loop. Around the 3–4 ns mmapped-slot
//! load it was part of the per-load work that made rbench's loop 1.08–1.13
//! times a bare copy (results/README.md, "Agreement between the
//! harnesses"). Here the asm gets the address in a register, as Google
//! Benchmark's does, and stores nothing.

/// Makes the compiler assume that `value`, and any memory, is read and
/// written here: what precedes it cannot be optimized away, and nothing
/// is stored for it (an empty asm with a memory clobber, as
/// `DoNotOptimize`).
#[inline(always)]
pub fn do_not_optimize<T: ?Sized>(value: &T) {
    let address = (value as *const T).cast::<u8>();
    // SAFETY: the asm is empty: it reads nothing, writes nothing and leaves
    // the stack and the flags alone. Without `nomem`, the compiler must
    // assume it reads and writes memory, which is the point.
    unsafe { std::arch::asm!("/* {0} */", in(reg) address, options(nostack, preserves_flags)) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leaves_the_value_as_it_was() {
        let slot = [7u64; 16];
        do_not_optimize(&slot);
        do_not_optimize(&slot[..]);
        assert_eq!(slot, [7u64; 16]);
    }
}
