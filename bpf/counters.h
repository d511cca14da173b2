/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * counters.h - the layout shared by counters.bpf.c and its user-space
 * loaders (ubench/bpf_sampler.cc, rbench's ebpf module).
 *
 * The BPF program samples a set of perf counters (RAPL energy events, or a
 * stand-in such as msr/tsc/) at a fixed rate on every CPU and publishes the
 * latest values of CPU c in slot c of a BPF_F_MMAPABLE array. Readers either
 * copy a slot with the bpf() lookup syscall or load it straight from the
 * mmapped array, using `seq` as a seqlock:
 *
 *   seq odd   the program is writing the slot: retry;
 *   seq even  stable; reread seq after copying and retry if it moved.
 *
 * Every field is written under the seqlock, the tick's bookkeeping (missed,
 * busy_ns) in a second short section after the timer is re-armed, so a copy
 * is one consistent state of the slot.
 */
#ifndef RAPLBENCH_COUNTERS_H
#define RAPLBENCH_COUNTERS_H

#define RB_MAX_COUNTERS 8     /* counters sampled per CPU (RAPL has at most 5 domains) */
#define RB_MAX_CPUS 1024      /* bound for the per-CPU status array */
#define RB_MIN_PERIOD_NS 10000 /* shortest timer period the loaders accept (100 kHz): 0 would re-arm in the past forever */

/* bpf_timer_start() flags (uapi/linux/bpf.h; Linux 6.4 and 6.7). Spelled
 * out here so the program also builds against an older kernel's BTF. */
#define RB_TIMER_ABS (1ULL << 0)
#define RB_TIMER_CPU_PIN (1ULL << 1)

/* One CPU's latest sample: 128 bytes, two cache lines. The size and the
 * offsets of the fields are part of the loaders' contract. */
struct rb_slot {
	__u64 seq;                       /* seqlock: odd while being written */
	__u64 time_ns;                   /* bpf_ktime_get_ns() when read */
	__u64 ticks;                     /* samples taken on this CPU */
	__u64 missed;                    /* timer deadlines skipped because already past */
	__s32 err;                       /* last bpf_perf_event_read_value() error, 0 if none */
	__u32 ncounters;                 /* valid entries of value[] */
	__u64 value[RB_MAX_COUNTERS];    /* raw counter values */
	__u64 busy_ns;                   /* time spent in the timer callback, measured by itself */
	__u64 err_ticks;                 /* ticks whose counter read failed (err != 0) */
	__u64 ring_drops;                /* samples the ring buffer had no room for (emit_samples) */
};

/*
 * One sample in the ring buffer `samples` (only when the loader sets the knob
 * emit_samples): what the 1 kHz sampler (raplbench-sample --mechanism ebpf)
 * drains in batches, without being woken at every tick.
 */
struct rb_sample {
	__u64 time_ns;                   /* bpf_ktime_get_ns() when read */
	__u64 deadline_ns;               /* the tick's deadline on the fixed grid */
	__u32 cpu;
	__s32 err;                       /* bpf_perf_event_read_value() error, 0 if none */
	__u64 missed;                    /* deadlines skipped on this CPU so far */
	__u64 value[RB_MAX_COUNTERS];
};

/* Result of arming the timer on a CPU, in the program's .bss arm_result[]. */
enum rb_arm_state {
	RB_ARM_NOT_TRIED = 0,
	RB_ARM_OK = 1,
	/* negative values: the errno returned by bpf_timer_init/start */
};

#endif
