// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * counters.bpf.c - sample perf counters in the kernel at a fixed rate on
 * every CPU and publish them in an mmapable array (see counters.h).
 *
 * Trigger, preferred: a bpf_timer per CPU, pinned to that CPU
 * (BPF_F_TIMER_CPU_PIN, Linux 6.7) and re-armed at absolute deadlines
 * (BPF_F_TIMER_ABS) so the period does not drift. A timer can only be set
 * from a program running on the CPU it should fire on, and tracing programs
 * of the kprobe/tracepoint kind may not use timers; so arm_timer is a BTF
 * raw tracepoint (prog type "tracing") on sys_enter that arms the timer of the
 * CPU it runs on when the loader's own thread, pinned to that CPU, makes a
 * syscall. The loader detaches it once every CPU is armed.
 *
 * Trigger, fallback (older kernels): on_cpu_clock, attached by the loader to
 * a per-CPU perf cpu-clock event. On an idle CPU of some VMs it fires well
 * below the requested rate; the loader measures and reports the real rate.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "counters.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#define CLOCK_MONOTONIC 1

/* Knobs, set by the loader before load. */
const volatile __u32 target_tgid = 0;       /* only this process arms timers */
const volatile __u64 period_ns = 1000000;   /* 1 kHz */
const volatile __u32 ncounters = 0;         /* counters per CPU, <= RB_MAX_COUNTERS */
const volatile bool emit_samples = false;   /* also push every sample into `samples` */

/* Per CPU result of arming, read by the loader. */
__s32 arm_result[RB_MAX_CPUS];
/* Per CPU, set by the loader: nonzero means do not arm a timer there (the
 * 1 kHz sampler only ticks where its counters live). */
__u8 arm_skip[RB_MAX_CPUS];

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1);               /* loader sets: number of possible CPUs */
	__type(key, __u32);
	__type(value, struct rb_slot);
} slots SEC(".maps");

struct tick_timer {
	struct bpf_timer timer;
	__u64 next_ns;                        /* absolute deadline of the next tick */
	__u32 armed;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);               /* loader sets: number of possible CPUs */
	__type(key, __u32);
	__type(value, struct tick_timer);
} timers SEC(".maps");

/* Every sample, when emit_samples is set; drained in batches by user space. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 20);         /* 1 MiB: about 9000 samples, 9 s at 1 kHz */
} samples SEC(".maps");

/* perf event fds: index cpu * RB_MAX_COUNTERS + i holds counter i of CPU cpu. */
struct {
	__uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(__u32));
	__uint(max_entries, RB_MAX_COUNTERS); /* loader sets: possible CPUs * RB_MAX_COUNTERS */
} counters SEC(".maps");

/* Read this CPU's counters and publish them under the seqlock (and in the
 * ring buffer, when asked); returns the slot, or NULL. */
static __always_inline struct rb_slot *take_sample(__u32 cpu, __u64 deadline_ns)
{
	struct bpf_perf_event_value v;
	__u64 value[RB_MAX_COUNTERS] = {};
	struct rb_sample *s = NULL;
	struct rb_slot *slot;
	__s32 err = 0;
	__u32 i;

	slot = bpf_map_lookup_elem(&slots, &cpu);
	if (!slot)
		return NULL;
	/* read first, so the slot is odd (being written) as briefly as possible */
	for (i = 0; i < RB_MAX_COUNTERS && i < ncounters; i++) {
		long e = bpf_perf_event_read_value(&counters, cpu * RB_MAX_COUNTERS + i,
						   &v, sizeof(v));
		if (e)
			err = e;
		else
			value[i] = v.counter;
	}
	__sync_fetch_and_add(&slot->seq, 1);
	slot->time_ns = bpf_ktime_get_ns();
	slot->ticks++;
	slot->err = err;
	if (err)
		slot->err_ticks++;
	slot->ncounters = ncounters;
	for (i = 0; i < RB_MAX_COUNTERS; i++)
		slot->value[i] = value[i];
	if (emit_samples) {
		s = bpf_ringbuf_reserve(&samples, sizeof(*s), 0);
		if (!s)
			slot->ring_drops++; /* counted, never silent: the reader reports it */
	}
	__sync_fetch_and_add(&slot->seq, 1);

	if (s) {
		s->time_ns = slot->time_ns;
		s->deadline_ns = deadline_ns;
		s->cpu = cpu;
		s->err = err;
		s->missed = slot->missed;
		for (i = 0; i < RB_MAX_COUNTERS; i++)
			s->value[i] = value[i];
		/* no wakeup: the reader drains on its own schedule */
		bpf_ringbuf_submit(s, BPF_RB_NO_WAKEUP);
	}
	return slot;
}

/* A tick's bookkeeping, under the seqlock like the sample: deadlines
 * skipped and the callback's own time (from `start` until now). */
static __always_inline void book_tick(struct rb_slot *slot, __u64 skipped, __u64 start)
{
	__sync_fetch_and_add(&slot->seq, 1);
	slot->missed += skipped;
	slot->busy_ns += bpf_ktime_get_ns() - start;
	__sync_fetch_and_add(&slot->seq, 1);
}

static int on_timer(void *map, __u32 *key, struct tick_timer *t)
{
	__u64 start = bpf_ktime_get_ns();
	__u32 cpu = bpf_get_smp_processor_id();
	struct rb_slot *slot;
	__u64 now, skipped = 0;

	slot = take_sample(cpu, t->next_ns);

	/* next deadline on the fixed grid; skip (and count) deadlines already past */
	now = bpf_ktime_get_ns();
	t->next_ns += period_ns;
	if (t->next_ns <= now) {
		skipped = (now - t->next_ns) / period_ns + 1;
		t->next_ns += skipped * period_ns;
	}
	bpf_timer_start(&t->timer, t->next_ns, RB_TIMER_ABS | RB_TIMER_CPU_PIN);
	/* the kernel's BPF statistics do not account timer callbacks: count here */
	if (slot)
		book_tick(slot, skipped, start);
	return 0;
}

SEC("tp_btf/sys_enter")
int BPF_PROG(arm_timer, struct pt_regs *regs, long id)
{
	__u32 cpu = bpf_get_smp_processor_id();
	struct tick_timer *t;
	long err;

	if ((bpf_get_current_pid_tgid() >> 32) != target_tgid || cpu >= RB_MAX_CPUS)
		return 0;
	if (arm_skip[cpu & (RB_MAX_CPUS - 1)])
		return 0;
	t = bpf_map_lookup_elem(&timers, &cpu);
	if (!t || t->armed)
		return 0;
	t->armed = 1;

	err = bpf_timer_init(&t->timer, &timers, CLOCK_MONOTONIC);
	if (!err)
		err = bpf_timer_set_callback(&t->timer, on_timer);
	if (!err) {
		t->next_ns = bpf_ktime_get_ns() + period_ns;
		err = bpf_timer_start(&t->timer, t->next_ns, RB_TIMER_ABS | RB_TIMER_CPU_PIN);
	}
	/* the mask keeps the verifier sure of the bound (cpu < RB_MAX_CPUS, a power of 2) */
	arm_result[cpu & (RB_MAX_CPUS - 1)] = err ? (__s32)err : RB_ARM_OK;
	return 0;
}

SEC("perf_event")
int on_cpu_clock(struct bpf_perf_event_data *ctx)
{
	__u64 start = bpf_ktime_get_ns();
	struct rb_slot *slot = take_sample(bpf_get_smp_processor_id(), start);

	if (slot)
		book_tick(slot, 0, start);
	return 0;
}
