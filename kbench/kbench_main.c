// SPDX-License-Identifier: GPL-2.0
/*
 * kbench - time inline nop, mov, cpuid, rdtsc and rdmsr in the kernel, and
 * the cost of reading a /proc and a sysfs file.
 *
 * Files: /proc/kbench/<op> (reading runs the benchmark, report below),
 * /proc/kbench/stamp and /sys/kernel/kbench/{stamp,iterations,batches,cpu};
 * modes, ranges and errors: kbench/README.md, "Interface". Every file is
 * root-only; opening an operation file also needs CAP_SYS_RAWIO, as
 * /dev/cpu/N/msr does.
 *
 * Report of /proc/kbench/<op>, one "key: value" per line, then one line per
 * batch with TSC cycles per operation (3 decimals, may be slightly negative
 * for instructions cheaper than the noise), loop overhead removed:
 *
 *   # kbench 1: TSC cycles per operation, loop overhead removed
 *   op: rdmsr:0x611
 *   cpu: 0
 *   tsc_khz: 2599998
 *   iterations: 1000            (per batch, after the interrupts-off cap)
 *   iterations_requested: 1000
 *   batches: 20
 *   batches_cut: 0              (stopped at the 1 ms interrupts-off deadline,
 *                                not reported: a busy host slowed them)
 *   unroll: 1 9
 *   liveness: frozen            (energy counters only, see below)
 *   liveness_probe: 101 reads in 101 ms, value 0x0
 *   status: ok                  ("unsupported": the MSR faults; "cut": every
 *                                batch was cut; no batches follow either)
 *   batch 0: 123.456            (one line per batch that ran to the end)
 *   ...
 *
 * An energy-status counter (kbench_ops.c: ENERGY_MSR) is probed before it is
 * timed (kbench_liveness.c) and its report carries the two liveness lines;
 * their forms: kbench/README.md, "Liveness of the energy counters".
 */
#include <linux/capability.h>
#include <linux/cpumask.h>
#include <linux/kobject.h>
#include <linux/math64.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/proc_fs.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/sysfs.h>
#include <asm/msr.h>
#include <asm/tsc.h>

#include "kbench.h"

/* Serialises benchmark runs (one at a time, for clean timings) and the parameters. */
static DEFINE_MUTEX(kbench_lock);
static unsigned int kbench_iterations = 1000;
static unsigned int kbench_batches = 20;
static unsigned int kbench_cpu;

static struct proc_dir_entry *kbench_proc_dir;
static struct kobject *kbench_kobj;

/* ---- /proc/kbench/<op> --------------------------------------------------- */

static void show_liveness(struct seq_file *m, const struct kbench_op *op,
			  const struct kbench_probe *p)
{
	if (p->verdict == KB_NO_UNIT) {
		seq_puts(m, "liveness: no-unit\n");
		if (p->unit_faults)
			seq_printf(m, "liveness_probe: unit MSR 0x%x faults\n", op->unit_msr);
		else
			seq_printf(m, "liveness_probe: unit MSR 0x%x reads 0x%llx\n",
				   op->unit_msr, p->unit);
	} else if (p->verdict != KB_LIVENESS_NONE) {	/* live or frozen */
		seq_printf(m, "liveness: %s\n", p->verdict == KB_LIVE ? "live" : "frozen");
		seq_printf(m, "liveness_probe: %u reads in %llu ms, value 0x%llx",
			   p->reads, div_u64(p->elapsed_us + 500, 1000), p->first);
		if (p->verdict == KB_LIVE)
			seq_printf(m, " then 0x%llx", p->last);
		seq_putc(m, '\n');
	}
}

static int op_show(struct seq_file *m, void *v)
{
	const struct kbench_op *op = m->private;
	struct kbench_result res = {};
	unsigned int b;
	int ret;

	/* held to the end: the parameters below stay as they were run */
	if (mutex_lock_interruptible(&kbench_lock))
		return -EINTR;
	res.milli_cycles = kcalloc(kbench_batches, sizeof(*res.milli_cycles), GFP_KERNEL);
	ret = res.milli_cycles ? kbench_run(op, kbench_cpu, kbench_iterations, kbench_batches, &res)
			       : -ENOMEM;
	if (ret)
		goto out;

	seq_puts(m, "# kbench 1: TSC cycles per operation, loop overhead removed\n");
	seq_printf(m, "op: %s\n", op->name);
	seq_printf(m, "cpu: %d\n", res.cpu);
	seq_printf(m, "tsc_khz: %u\n", tsc_khz);
	seq_printf(m, "iterations: %u\n", res.iterations);
	seq_printf(m, "iterations_requested: %u\n", kbench_iterations);
	seq_printf(m, "batches: %u\n", kbench_batches);
	seq_printf(m, "batches_cut: %u\n", res.cut);
	seq_printf(m, "unroll: %d %d\n", op->small, op->large);
	show_liveness(m, op, &res.probe);
	seq_printf(m, "status: %s\n", res.unsupported ? "unsupported" : res.batches ? "ok" : "cut");
	/* an MSR that faulted after a good read: the batches before it are not reported */
	for (b = 0; !res.unsupported && b < res.batches; b++) {
		s64 v = res.milli_cycles[b];
		u64 mag = v < 0 ? -v : v;
		u32 frac;
		u64 whole = div_u64_rem(mag, 1000, &frac);

		seq_printf(m, "batch %u: %s%llu.%03u\n", b, v < 0 ? "-" : "", whole, frac);
	}
out:
	kfree(res.milli_cycles);
	mutex_unlock(&kbench_lock);
	return ret;
}

static int op_open(struct inode *inode, struct file *file)
{
	if (!capable(CAP_SYS_RAWIO))
		return -EPERM;
	/* room for the header and every batch line, so show() runs once */
	return single_open_size(file, op_show, pde_data(inode),
				512 + KBENCH_BATCHES_MAX * 32);
}

static const struct proc_ops op_proc_ops = {
	.proc_open = op_open,
	.proc_read = seq_read,
	.proc_lseek = seq_lseek,
	.proc_release = single_release,
};

/* ---- the stamp files: what reading a /proc or sysfs file costs ------------ */

/* TSC at entry to and exit from the file's show(), and the CPU: user space
 * subtracts the time inside from its own round trip of read(). */
static int stamp_format(char *buf, size_t size)
{
	u64 enter = rdtsc_ordered();
	int cpu = raw_smp_processor_id();
	u64 leave = rdtsc_ordered();

	return scnprintf(buf, size, "%llu %llu %d\n", enter, leave, cpu);
}

static int stamp_show(struct seq_file *m, void *v)
{
	char line[64];

	stamp_format(line, sizeof(line));
	seq_puts(m, line);
	return 0;
}

static int stamp_open(struct inode *inode, struct file *file)
{
	return single_open(file, stamp_show, NULL);
}

static const struct proc_ops stamp_proc_ops = {
	.proc_open = stamp_open,
	.proc_read = seq_read,
	.proc_lseek = seq_lseek,
	.proc_release = single_release,
};

static ssize_t stamp_attr_show(struct kobject *kobj, struct kobj_attribute *attr, char *buf)
{
	return stamp_format(buf, PAGE_SIZE);
}

/* ---- /sys/kernel/kbench: the control interface ---------------------------- */

static ssize_t store_param(unsigned int *param, const char *buf, size_t count,
			   unsigned int min, unsigned int max, bool is_cpu)
{
	unsigned int v;

	if (kstrtouint(buf, 0, &v) || v < min || v > max)
		return -EINVAL;
	if (is_cpu && !cpu_online(v))
		return -ENXIO;
	/* a benchmark may hold the lock for seconds: let the writer be interrupted */
	if (mutex_lock_interruptible(&kbench_lock))
		return -EINTR;
	*param = v;
	mutex_unlock(&kbench_lock);
	return count;
}

#define KBENCH_PARAM_ATTR(name, min, max, is_cpu)					\
static ssize_t name##_show(struct kobject *kobj, struct kobj_attribute *attr,	\
			   char *buf)						\
{										\
	return sysfs_emit(buf, "%u\n", READ_ONCE(kbench_##name));		\
}										\
static ssize_t name##_store(struct kobject *kobj, struct kobj_attribute *attr,	\
			    const char *buf, size_t count)			\
{										\
	return store_param(&kbench_##name, buf, count, min, max, is_cpu);	\
}										\
static struct kobj_attribute name##_attr = __ATTR(name, 0600, name##_show, name##_store)

KBENCH_PARAM_ATTR(iterations, KBENCH_ITERATIONS_MIN, KBENCH_ITERATIONS_MAX, false);
KBENCH_PARAM_ATTR(batches, KBENCH_BATCHES_MIN, KBENCH_BATCHES_MAX, false);
KBENCH_PARAM_ATTR(cpu, 0, nr_cpu_ids - 1, true);

static struct kobj_attribute stamp_attr = __ATTR(stamp, 0400, stamp_attr_show, NULL);

static const struct attribute *const kbench_attrs[] = {
	&iterations_attr.attr,
	&batches_attr.attr,
	&cpu_attr.attr,
	&stamp_attr.attr,
	NULL,
};

/* ---- module ---------------------------------------------------------------- */

static int __init kbench_init(void)
{
	const struct kbench_op *ops;
	int nops, i, err = -ENOMEM;

	if (!boot_cpu_has(X86_FEATURE_TSC) || !tsc_khz)
		return -ENODEV;
	kbench_selftest();	/* test builds only (KBENCH_SELFTEST), see kbench.h */

	kbench_proc_dir = proc_mkdir("kbench", NULL);
	if (!kbench_proc_dir)
		return -ENOMEM;
	ops = kbench_ops(&nops);
	for (i = 0; i < nops; i++)
		if (!proc_create_data(ops[i].file, 0400, kbench_proc_dir, &op_proc_ops,
				      (void *)&ops[i]))
			goto fail_proc;
	if (!proc_create("stamp", 0400, kbench_proc_dir, &stamp_proc_ops))
		goto fail_proc;

	kbench_kobj = kobject_create_and_add("kbench", kernel_kobj);
	if (!kbench_kobj)
		goto fail_proc;
	err = sysfs_create_files(kbench_kobj, kbench_attrs);
	if (err)
		goto fail_kobj;
	return 0;

fail_kobj:
	kobject_put(kbench_kobj);
fail_proc:
	proc_remove(kbench_proc_dir);	/* removes the files created so far */
	return err;
}

static void __exit kbench_exit(void)
{
	kobject_put(kbench_kobj);	/* removes its files with it */
	proc_remove(kbench_proc_dir);	/* waits for readers in progress */
}

module_init(kbench_init);
module_exit(kbench_exit);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("Time inline nop, mov, cpuid, rdtsc and allow-listed rdmsr in the kernel");
MODULE_AUTHOR("raplbench developers");
