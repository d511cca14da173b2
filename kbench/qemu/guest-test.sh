# guest-test.sh - the kbench boot test, run as root inside the QEMU guest by
# kbench/qemu/test (busybox sh; /proc, /sys, /dev mounted by kbench/qemu/boot).
#
# Output parts, each opened by "=== begin <part>" (split by results/kbench.py):
#   machine  `kbench-read machine`: what the guest CPU and kernel are
#   checks   one "<check>: <result>" line per safety check
#   report   `kbench-read report`: every operation and the round trips
#   unload   whether rmmod removed every file
# kbench/test_kbench_qemu.py asserts on them.
K=/kbench
check() { echo "$1: $2"; }

echo "=== begin machine"
$K/kbench-read machine

echo "=== begin checks"
if insmod $K/kbench.ko; then check insmod ok; else check insmod failed; fi
# out-of-range and malformed control writes fail with EINVAL ...
$K/kbench-read write /sys/kernel/kbench/iterations 0
$K/kbench-read write /sys/kernel/kbench/iterations 1000001
$K/kbench-read write /sys/kernel/kbench/iterations abc
$K/kbench-read write /sys/kernel/kbench/batches 0
$K/kbench-read write /sys/kernel/kbench/batches 1001
$K/kbench-read write /sys/kernel/kbench/cpu 2
$K/kbench-read write /sys/kernel/kbench/cpu -1
# ... and change nothing
check "iterations after bad writes" "$(cat /sys/kernel/kbench/iterations)"
check "batches after bad writes" "$(cat /sys/kernel/kbench/batches)"
check "cpu after bad writes" "$(cat /sys/kernel/kbench/cpu)"
# a non-root user can read nothing
$K/kbench-read read-as 65534 /proc/kbench/nop
$K/kbench-read read-as 65534 /proc/kbench/rdmsr_0x611
$K/kbench-read read-as 65534 /proc/kbench/stamp
$K/kbench-read read-as 65534 /sys/kernel/kbench/stamp
$K/kbench-read read-as 65534 /sys/kernel/kbench/iterations
# file modes
for f in /proc/kbench/* /sys/kernel/kbench/*; do
  check "mode $f" "$(stat -c %a "$f")"
done
# the CPU setting moves the benchmark; a faulting MSR reads as unsupported
$K/kbench-read write /sys/kernel/kbench/cpu 1
check "nop on cpu 1" "$(grep '^cpu:' /proc/kbench/nop)"
$K/kbench-read write /sys/kernel/kbench/cpu 0
# small batches: an emulated CPU is slow
$K/kbench-read write /sys/kernel/kbench/iterations 200
$K/kbench-read write /sys/kernel/kbench/batches 10

echo "=== begin report"
$K/kbench-read report 200 10

echo "=== begin unload"
if rmmod kbench; then check rmmod ok; else check rmmod failed; fi
if [ -e /proc/kbench ] || [ -e /sys/kernel/kbench ]; then check files left; else check files removed; fi
dmesg | grep -iE 'kbench|oops|bug:|warning:' | sed 's/^/dmesg: /'
echo "=== begin done"
