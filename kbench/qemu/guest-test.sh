# guest-test.sh - the kbench boot test, run as root inside the QEMU guest by
# kbench/qemu/test (busybox sh; /proc, /sys, /dev mounted by kbench/qemu/boot).
#
# Output parts, each opened by "=== begin <part>" (split by results/kbench.py):
#   machine  `kbench-read machine`: what the guest CPU and kernel are
#   checks   one "<check>: <result>" line per safety check
#   report   `kbench-read report`: every operation and the round trips
#   stress   offline CPU, concurrent and interrupted writers, 100 load/unload
#            cycles, readers racing rmmod
#   unload   whether rmmod removed every file, and the kernel log
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

echo "=== begin stress"
# an offline CPU is ENXIO, as /dev/cpu/N/msr says: on a write naming it, and
# on reading an operation whose CPU went offline after it was chosen
online=/sys/devices/system/cpu/cpu1/online
if [ -w $online ]; then
  $K/kbench-read write /sys/kernel/kbench/cpu 1
  echo 0 > $online
  check "cpu1 online" "$(cat $online)"
  $K/kbench-read read-as 0 /proc/kbench/nop
  $K/kbench-read write /sys/kernel/kbench/cpu 1
  echo 1 > $online
  check "cpu1 online again" "$(cat $online)"
  check "nop on cpu 1 again" "$(grep '^cpu:' /proc/kbench/nop)"
  $K/kbench-read write /sys/kernel/kbench/cpu 0
else
  check "cpu1 online" "no hotplug"
fi
# concurrent writers during reads: every write lands whole, the last one wins
for v in 300 400; do
  ( i=0; while [ $i -lt 50 ]; do echo $v > /sys/kernel/kbench/iterations; i=$((i+1)); done ) &
done
cat /proc/kbench/nop > /dev/null; cat /proc/kbench/cpuid_0x0 > /dev/null
wait
check "iterations after concurrent writes" "$(cat /sys/kernel/kbench/iterations)"
# a writer waiting behind a long benchmark can be interrupted (EINTR) and changes nothing:
# 1000 batches of about 0.5 ms each (the cap) hold the lock for half a second or more
$K/kbench-read write /sys/kernel/kbench/iterations 1000000
$K/kbench-read write /sys/kernel/kbench/batches 1000
$K/kbench-read write-while-reading /proc/kbench/cpuid_0x0 /sys/kernel/kbench/batches 7
check "batches after interrupted write" "$(cat /sys/kernel/kbench/batches)"
$K/kbench-read write /sys/kernel/kbench/iterations 200
$K/kbench-read write /sys/kernel/kbench/batches 10
# 100 unload/load cycles
rmmod kbench
ok=0; i=0
while [ $i -lt 100 ]; do
  insmod $K/kbench.ko && [ -e /proc/kbench/nop ] && rmmod kbench && ok=$((ok+1))
  i=$((i+1))
done
check "load-unload cycles" "$ok of 100"
# readers racing rmmod: rmmod waits for the running reads, later opens fail
insmod $K/kbench.ko
$K/kbench-read write /sys/kernel/kbench/iterations 200
$K/kbench-read write /sys/kernel/kbench/batches 10
for r in 1 2 3 4; do
  ( while cat /proc/kbench/nop > /dev/null 2>&1; do :; done ) &
done
sleep 1
if rmmod kbench; then check "rmmod under readers" ok; else check "rmmod under readers" failed; fi
wait
check "readers after rmmod" "stopped"
insmod $K/kbench.ko

echo "=== begin unload"
if rmmod kbench; then check rmmod ok; else check rmmod failed; fi
if [ -e /proc/kbench ] || [ -e /sys/kernel/kbench ]; then check files left; else check files removed; fi
dmesg | grep -iE 'kbench|oops|bug:|warning:|hogged cpu|soft lockup|hung task' | sed 's/^/dmesg: /'
echo "=== begin done"
