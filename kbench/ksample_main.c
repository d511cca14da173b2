// SPDX-License-Identifier: GPL-2.0
/*
 * ksample - the in-kernel 1 kHz energy sampler (Diamond & Stoico's
 * Ref_Rapl_Kernel design): an hrtimer per package reads the energy MSRs
 * into a ring (ksample_sampler.c), and user space collects the records in
 * batches through /proc. The interface, the record layout and the control
 * file's format are in ksample.h; why a module apart from kbench.ko:
 * kbench/README.md.
 *
 * This file: the two /proc files and the module's life. Every file
 * operation and start/stop run under ksample_lock; unloading removes the
 * files first (waiting for the operations under way), then stops the timers.
 */
#include <linux/capability.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/proc_fs.h>
#include <linux/seq_file.h>
#include <linux/string.h>
#include <linux/uaccess.h>

#include "ksample_sampler.h"

static unsigned int ring_records = KSAMPLE_RING_DEFAULT;
module_param(ring_records, uint, 0444);
MODULE_PARM_DESC(ring_records, "records queued per package: a power of two, 64..1048576 (default 16384)");

static DEFINE_MUTEX(ksample_lock);
static struct proc_dir_entry *proc_dir;

/* ---- /proc/ksample/control ------------------------------------------------ */

static int control_show(struct seq_file *m, void *v)
{
	if (mutex_lock_interruptible(&ksample_lock))
		return -EINTR;
	ksample_show(m);
	mutex_unlock(&ksample_lock);
	return 0;
}

/* Both files: root (the mode) with CAP_SYS_RAWIO, as /dev/cpu/N/msr. */
static int control_open(struct inode *inode, struct file *file)
{
	return capable(CAP_SYS_RAWIO) ? single_open(file, control_show, NULL) : -EPERM;
}

/* "start <hz>", "null <hz>" or "stop"; anything else is -EINVAL. */
static int control_command(char *line)
{
	char *word = strsep(&line, " ");
	unsigned int hz;
	bool read;

	if (!strcmp(word, "stop") && !line) {
		ksample_stop();
		return 0;
	}
	if (!strcmp(word, "start"))
		read = true;
	else if (!strcmp(word, "null"))
		read = false;
	else
		return -EINVAL;
	/* kstrtouint refuses signs, spaces and trailing words */
	if (!line || kstrtouint(line, 10, &hz) || hz < KSAMPLE_RATE_MIN || hz > KSAMPLE_RATE_MAX)
		return -EINVAL;
	return ksample_start(hz, read);
}

static ssize_t control_write(struct file *file, const char __user *ubuf, size_t count,
			     loff_t *ppos)
{
	char buf[32];
	int err;

	if (count >= sizeof(buf))
		return -EINVAL;
	if (copy_from_user(buf, ubuf, count))
		return -EFAULT;
	buf[count] = '\0';
	if (count && buf[count - 1] == '\n')
		buf[count - 1] = '\0';
	if (mutex_lock_interruptible(&ksample_lock))
		return -EINTR;
	err = control_command(buf);
	mutex_unlock(&ksample_lock);
	return err ? err : count;
}

static const struct proc_ops control_ops = {
	.proc_open = control_open,
	.proc_read = seq_read,
	.proc_write = control_write,
	.proc_lseek = seq_lseek,
	.proc_release = single_release,
};

/* ---- /proc/ksample/records ------------------------------------------------- */

static int records_open(struct inode *inode, struct file *file)
{
	return capable(CAP_SYS_RAWIO) ? nonseekable_open(inode, file) : -EPERM;
}

static ssize_t records_read(struct file *file, char __user *buf, size_t count, loff_t *ppos)
{
	size_t room = count / sizeof(struct ksample_record);
	ssize_t n;

	if (!room)
		return -EINVAL;
	if (mutex_lock_interruptible(&ksample_lock))
		return -EINTR;
	n = ksample_pop(buf, room);
	mutex_unlock(&ksample_lock);
	return n < 0 ? n : n * (ssize_t)sizeof(struct ksample_record);
}

static const struct proc_ops records_ops = {
	.proc_open = records_open,
	.proc_read = records_read,
};

/* ---- module ------------------------------------------------------------------ */

static int __init ksample_init(void)
{
	int err = ksample_setup(ring_records);

	if (err)
		return err;
	proc_dir = proc_mkdir("ksample", NULL);
	if (!proc_dir ||
	    !proc_create("control", 0600, proc_dir, &control_ops) ||
	    !proc_create("records", 0400, proc_dir, &records_ops)) {
		proc_remove(proc_dir);
		ksample_teardown();
		return -ENOMEM;
	}
	return 0;
}

static void __exit ksample_exit(void)
{
	proc_remove(proc_dir);	/* waits for the file operations under way */
	ksample_teardown();	/* stops the timers, frees the rings */
}

module_init(ksample_init);
module_exit(ksample_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("ksample: an hrtimer per package samples the RAPL energy MSRs into a ring read through /proc");
