// SPDX-License-Identifier: GPL-2.0
/*
 * ksample_sampler.c - the in-kernel sampler: one hrtimer per package, on the
 * package's lead CPU, on a fixed grid of absolute deadlines, each firing
 * reading that package's allow-listed energy MSRs with rdmsr_safe into a
 * power-of-two ring (Diamond & Stoico's Ref_Rapl_Kernel design).
 *
 * The callback runs in hard interrupt context (HRTIMER_MODE_ABS_PINNED_HARD,
 * also on PREEMPT_RT) and is bounded: at most KSAMPLE_MAX_MSRS rdmsr_safe
 * and three clock reads, no lock, no allocation, no printk. It never waits
 * for the reader: a full ring drops the new record and counts it. A firing
 * more than a period late skips the deadlines it missed (hrtimer_forward)
 * and counts them; it never fires twice to catch up.
 *
 * CPU hotplug: a lead CPU that goes offline while sampling takes its timer
 * to another CPU (the hrtimer core migrates it); each record names the CPU
 * it was read on, so a reader can tell. A start needs every lead online.
 */
#include <linux/cpu.h>
#include <linux/cpumask.h>
#include <linux/errno.h>
#include <linux/hrtimer.h>
#include <linux/ktime.h>
#include <linux/log2.h>
#include <linux/minmax.h>
#include <linux/mm.h>
#include <linux/pid.h>
#include <linux/rcupdate.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/smp.h>
#include <linux/topology.h>
#include <linux/uaccess.h>
#include <linux/version.h>
#include <asm/msr.h>
#include <asm/processor.h>

#include "ksample_sampler.h"
#include "rapl_msrs.h"

/* The allow-list: each vendor's RAPL energy-status MSRs (the ENERGY rows of
 * rapl_msrs.h, in its order) and energy unit MSR: the same registers kbench
 * times and rbench's msr mechanism reads. */
#define ENERGY_ONLY_UNIT(addr)
#define ENERGY_ONLY_ENERGY(addr) addr,
#define ENERGY_ONLY_REFERENCE(addr)
#define INTEL_ENERGY(name, addr, vendor, kind, domain, reg, label) \
	RAPL_IF_VENDOR(INTEL, vendor, ENERGY_ONLY_##kind(addr))
#define AMD_ENERGY(name, addr, vendor, kind, domain, reg, label) \
	RAPL_IF_VENDOR(AMD, vendor, ENERGY_ONLY_##kind(addr))
static const u32 intel_energy_msrs[] = { RAPL_MSR_TABLE(INTEL_ENERGY) };
static const u32 amd_energy_msrs[] = { RAPL_MSR_TABLE(AMD_ENERGY) };
static_assert(ARRAY_SIZE(intel_energy_msrs) <= KSAMPLE_MAX_MSRS);
static_assert(ARRAY_SIZE(amd_energy_msrs) <= KSAMPLE_MAX_MSRS);

static struct ksample_package *packages;
static unsigned int npackages;
static bool running;
static unsigned int rate_hz;
static bool mode_read = true;
static unsigned int ring_size;
/* The process that started the timers: while it lives, a start is EBUSY;
 * once it is gone (a sampler killed before it could stop them), the next
 * start stops them and takes over. */
static struct pid *owner;

static const u32 *energy_msrs(unsigned int *count, u32 *unit_msr)
{
	switch (boot_cpu_data.x86_vendor) {
	case X86_VENDOR_INTEL:
		*count = ARRAY_SIZE(intel_energy_msrs);
		*unit_msr = RAPL_MSR_INTEL_UNIT;
		return intel_energy_msrs;
	case X86_VENDOR_AMD:
	case X86_VENDOR_HYGON:
		*count = ARRAY_SIZE(amd_energy_msrs);
		*unit_msr = RAPL_MSR_AMD_UNIT;
		return amd_energy_msrs;
	default:
		*count = 0;
		return NULL;
	}
}

/*
 * Which allow-listed MSRs read without a fault on the package's lead CPU,
 * and its energy unit. 0, or -ENXIO (or another errno of the cross call)
 * if the CPU cannot be reached.
 */
static int probe_msrs(struct ksample_package *p)
{
	unsigned int count, i;
	const u32 *msrs = energy_msrs(&count, &p->unit_msr);
	u32 lo, hi;
	int err;

	p->nmsrs = 0;
	p->nfaulting = 0;
	err = rdmsr_safe_on_cpu(p->cpu, p->unit_msr, &lo, &hi);
	if (err && err != -EIO)
		return err;
	p->unit_faults = err == -EIO;
	p->unit = err ? 0 : ((u64)hi << 32) | lo;
	for (i = 0; i < count; i++) {
		err = rdmsr_safe_on_cpu(p->cpu, msrs[i], &lo, &hi);
		if (err == -EIO)
			p->faulting[p->nfaulting++] = msrs[i];
		else if (err)
			return err;
		else
			p->msrs[p->nmsrs++] = msrs[i];
	}
	return 0;
}

/* Raises a counter the control file reads concurrently (no torn value). */
#define BUMP(field, by) WRITE_ONCE(field, (field) + (by))

static enum hrtimer_restart ksample_tick(struct hrtimer *timer)
{
	struct ksample_package *p = container_of(timer, struct ksample_package, timer);
	struct ksample_counters *c = &p->counters;
	struct ksample_ring *ring = &p->ring;
	u64 enter = ktime_get_ns();
	u64 periods = hrtimer_forward(timer, hrtimer_cb_get_time(timer), p->period);
	u64 head = ring->head, seq = c->next_seq, busy;
	struct ksample_record *r;
	unsigned int i;

	BUMP(c->fired, 1);
	if (periods > 1)
		BUMP(c->missed, periods - 1);
	WRITE_ONCE(c->next_seq, seq + 1);
	if (head - smp_load_acquire(&ring->tail) > ring->mask) {
		BUMP(c->overruns, 1);	/* full: this seq is lost, and counted */
		goto out;
	}
	r = &ring->slots[head & ring->mask];
	r->seq = seq;
	r->missed = c->missed;
	r->package = p->index;
	r->cpu = smp_processor_id();
	r->faults = 0;
	r->nvalues = p->read ? p->nmsrs : 0;
	r->time_ns = ktime_get_ns();
	for (i = 0; i < r->nvalues; i++) {
		u32 lo, hi;

		if (rdmsr_safe(p->msrs[i], &lo, &hi)) {
			r->faults |= 1U << i;
			lo = hi = 0;
		}
		r->value[i] = ((u64)hi << 32) | lo;
	}
	for (; i < KSAMPLE_MAX_MSRS; i++)
		r->value[i] = 0;
	if (r->faults)
		BUMP(c->read_faults, hweight32(r->faults));
	r->busy_ns = min_t(u64, ktime_get_ns() - enter, U32_MAX);
	smp_store_release(&ring->head, head + 1);
out:
	busy = ktime_get_ns() - enter;
	BUMP(c->busy_ns, busy);
	if (busy > c->max_busy_ns)
		WRITE_ONCE(c->max_busy_ns, busy);
	return HRTIMER_RESTART;
}

/* Runs on the lead CPU (a cross call): a pinned timer stays on the CPU that starts it. */
static void arm_here(void *data)
{
	struct ksample_package *p = data;

	hrtimer_start(&p->timer, p->first, HRTIMER_MODE_ABS_PINNED_HARD);
}

static bool owner_alive(void)
{
	bool alive;

	rcu_read_lock();
	alive = pid_task(owner, PIDTYPE_TGID) != NULL;
	rcu_read_unlock();
	return alive;
}

void ksample_stop(void)
{
	unsigned int i;

	for (i = 0; i < npackages; i++)
		hrtimer_cancel(&packages[i].timer);	/* waits for a running callback */
	running = false;
}

int ksample_start(unsigned int hz, bool read)
{
	ktime_t period = ns_to_ktime(div_u64(NSEC_PER_SEC, hz));
	ktime_t first;
	unsigned int i;
	int err;

	if (running) {
		if (owner_alive())
			return -EBUSY;
		pr_info("ksample: the process that started sampling (pid %d) is gone: its timers stop, a new start takes over\n",
			pid_nr(owner));
		ksample_stop();
	}
	for (i = 0; i < npackages; i++) {
		struct ksample_package *p = &packages[i];

		if (!cpu_online(p->cpu))
			return -ENXIO;
		err = probe_msrs(p);
		if (err)
			return err;
		p->counters = (struct ksample_counters){};
		p->ring.head = 0;
		p->ring.tail = 0;
		p->read = read;
		p->period = period;
	}
	rate_hz = hz;
	mode_read = read;
	/* every package on the same grid, starting one period from now */
	first = ktime_add(ktime_get(), period);
	running = true;
	for (i = 0; i < npackages; i++) {
		packages[i].first = first;
		err = smp_call_function_single(packages[i].cpu, arm_here, &packages[i], 1);
		if (err) {
			ksample_stop();	/* the timers armed so far */
			return err;
		}
	}
	put_pid(owner);
	owner = get_task_pid(current, PIDTYPE_TGID);
	return 0;
}

void ksample_show(struct seq_file *m)
{
	unsigned int i, j;

	seq_puts(m, KSAMPLE_FORMAT "\n");
	seq_printf(m, "state: %s\n", running ? "running" : "stopped");
	seq_printf(m, "mode: %s\n", mode_read ? "read" : "null");
	seq_printf(m, "rate_hz: %u\n", rate_hz);
	seq_printf(m, "owner_pid: %d\n", owner ? pid_nr(owner) : 0);
	seq_printf(m, "record_size: %zu\n", sizeof(struct ksample_record));
	seq_printf(m, "ring_records: %u\n", ring_size);
	seq_printf(m, "packages: %u\n", npackages);
	for (i = 0; i < npackages; i++) {
		struct ksample_package *p = &packages[i];
		struct ksample_counters *c = &p->counters;

		seq_printf(m, "package %u cpu %d unit_msr 0x%x ", p->index, p->cpu, p->unit_msr);
		if (p->unit_faults)
			seq_puts(m, "unit fault");
		else
			seq_printf(m, "unit 0x%llx", p->unit);
		seq_puts(m, " msrs ");
		for (j = 0; j < p->nmsrs; j++)
			seq_printf(m, "%s0x%x", j ? "," : "", p->msrs[j]);
		if (!p->nmsrs)
			seq_putc(m, '-');
		seq_puts(m, " faulting ");
		for (j = 0; j < p->nfaulting; j++)
			seq_printf(m, "%s0x%x", j ? "," : "", p->faulting[j]);
		if (!p->nfaulting)
			seq_putc(m, '-');
		seq_putc(m, '\n');
		seq_printf(m, "counters %u fired %llu missed %llu overruns %llu read_faults %llu busy_ns %llu max_busy_ns %llu next_seq %llu queued %llu\n",
			   p->index, READ_ONCE(c->fired), READ_ONCE(c->missed),
			   READ_ONCE(c->overruns), READ_ONCE(c->read_faults),
			   READ_ONCE(c->busy_ns), READ_ONCE(c->max_busy_ns),
			   READ_ONCE(c->next_seq),
			   smp_load_acquire(&p->ring.head) - p->ring.tail);
	}
}

ssize_t ksample_pop(char __user *buf, size_t room)
{
	size_t done = 0;
	unsigned int i;

	for (i = 0; i < npackages && done < room; i++) {
		struct ksample_ring *ring = &packages[i].ring;
		u64 tail = ring->tail;
		u64 n = min_t(u64, smp_load_acquire(&ring->head) - tail, room - done);

		while (n) {
			/* up to the end of the slots, then from the start */
			u64 at = tail & ring->mask;
			u64 chunk = min(n, ring->mask + 1 - at);

			if (copy_to_user(buf + done * sizeof(struct ksample_record), &ring->slots[at],
					 chunk * sizeof(struct ksample_record)))
				return done ? done : -EFAULT;	/* what was copied is consumed */
			tail += chunk;
			done += chunk;
			n -= chunk;
			smp_store_release(&ring->tail, tail);	/* the slots are free again */
		}
	}
	return done;
}

static void init_timer(struct ksample_package *p)
{
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 13, 0)
	hrtimer_setup(&p->timer, ksample_tick, CLOCK_MONOTONIC, HRTIMER_MODE_ABS_PINNED_HARD);
#else
	hrtimer_init(&p->timer, CLOCK_MONOTONIC, HRTIMER_MODE_ABS_PINNED_HARD);
	p->timer.function = ksample_tick;
#endif
}

int ksample_setup(unsigned int ring_records)
{
	unsigned int count, i;
	u32 unit_msr;
	int cpu, err;

	if (!energy_msrs(&count, &unit_msr)) {
		pr_err("ksample: no RAPL energy MSRs are known for this CPU vendor\n");
		return -ENODEV;
	}
	if (!is_power_of_2(ring_records) || ring_records < KSAMPLE_RING_MIN ||
	    ring_records > KSAMPLE_RING_MAX) {
		pr_err("ksample: ring_records=%u: want a power of two in %u..%u\n",
		       ring_records, KSAMPLE_RING_MIN, KSAMPLE_RING_MAX);
		return -EINVAL;
	}
	ring_size = ring_records;
	packages = kcalloc(nr_cpu_ids, sizeof(*packages), GFP_KERNEL);
	if (!packages)
		return -ENOMEM;
	cpus_read_lock();
	for_each_online_cpu(cpu) {
		int id = topology_logical_package_id(cpu);

		for (i = 0; i < npackages && packages[i].logical_id != id; i++)
			;
		if (i < npackages)
			continue;
		packages[i].index = i;
		packages[i].logical_id = id;
		packages[i].cpu = cpu;
		init_timer(&packages[i]);	/* before any failure: teardown cancels them */
		npackages++;
	}
	cpus_read_unlock();
	for (i = 0; i < npackages; i++) {
		struct ksample_package *p = &packages[i];

		p->ring.mask = ring_records - 1;
		p->ring.slots = kvcalloc(ring_records, sizeof(struct ksample_record), GFP_KERNEL);
		if (!p->ring.slots) {
			err = -ENOMEM;
			goto fail;
		}
		err = probe_msrs(p);	/* what the control file shows before a start */
		if (err)
			goto fail;
	}
	return 0;
fail:
	ksample_teardown();
	return err;
}

void ksample_teardown(void)
{
	unsigned int i;

	if (!packages)
		return;
	ksample_stop();
	for (i = 0; i < npackages; i++)
		kvfree(packages[i].ring.slots);
	kfree(packages);
	packages = NULL;
	put_pid(owner);
	owner = NULL;
	npackages = 0;
}
