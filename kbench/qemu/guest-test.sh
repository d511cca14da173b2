# guest-test.sh - the kbench boot test, run as root inside the QEMU guest by
# kbench/qemu/test (busybox sh; /proc, /sys, /dev mounted by kbench/qemu/boot).
#
# Output parts, each opened by "=== begin <part>" (split by results/kbench.py):
#   machine  `kbench-read machine`: what the guest CPU and kernel are
#   checks   one "<check>: <result>" line per safety check
#   report   `kbench-read report`: every operation and the round trips
#   stress   offline CPU, concurrent and interrupted writers, load/unload
#            cycles, readers racing rmmod
#   ksample  the in-kernel sampler module
#   sampler-rows-1000, sampler-rows-10000
#            the --report rows of raplbench-sample --mechanism kernel (JSON Lines)
#   unload   whether rmmod removed every file, and the kernel log
# What each part checks: kbench/README.md, "The boot test";
# kbench/test_kbench_qemu.py asserts on them.
K=/kbench
check() { echo "$1: $2"; }
# waits (up to 10 s) until every FILE exists: a background reader touches its
# file once it has read, so what follows runs while it reads (no fixed sleep)
await() {
  local n=0
  for f in "$@"; do
    while [ ! -e "$f" ] && [ $n -lt 200 ]; do sleep 0.05; n=$((n+1)); done
  done
}

echo "=== begin machine"
$K/kbench-read machine

echo "=== begin checks"
if insmod $K/kbench.ko; then check insmod ok; else check insmod failed; fi
# out-of-range and malformed control writes fail with EINVAL ...
for w in "iterations 0" "iterations 1000001" "iterations abc" "batches 0" "batches 1001" \
         "cpu 2" "cpu -1"; do
  $K/kbench-read write "/sys/kernel/kbench/${w% *}" "${w#* }"
done
# ... and change nothing
check "iterations after bad writes" "$(cat /sys/kernel/kbench/iterations)"
check "batches after bad writes" "$(cat /sys/kernel/kbench/batches)"
check "cpu after bad writes" "$(cat /sys/kernel/kbench/cpu)"
# a non-root user can read nothing
for f in /proc/kbench/nop /proc/kbench/rdmsr_0x611 /proc/kbench/stamp /sys/kernel/kbench/stamp \
         /sys/kernel/kbench/iterations; do
  $K/kbench-read read-as 65534 $f
done
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
# 100 unload/load cycles, in one process (an insmod and an rmmod per cycle
# cost half of it under TCG); selftest=0: the probe self-test (about 0.2 s per
# load under TCG, 20 s for the 100) runs at every other load of this script
rmmod kbench
$K/kbench-read load-cycles $K/kbench.ko 100 selftest=0
# readers racing rmmod: rmmod waits for the running reads, later opens fail
insmod $K/kbench.ko
$K/kbench-read write /sys/kernel/kbench/iterations 200
$K/kbench-read write /sys/kernel/kbench/batches 10
for r in 1 2 3 4; do
  ( cat /proc/kbench/nop > /dev/null && touch /tmp/reader$r
    while cat /proc/kbench/nop > /dev/null 2>&1; do :; done ) &
done
await /tmp/reader1 /tmp/reader2 /tmp/reader3 /tmp/reader4
if rmmod kbench; then check "rmmod under readers" ok; else check "rmmod under readers" failed; fi
wait
check "readers after rmmod" "stopped"
insmod $K/kbench.ko

echo "=== begin ksample"
C=/proc/ksample/control
if insmod $K/ksample.ko; then check "ksample insmod" ok; else check "ksample insmod" failed; fi
for f in /proc/ksample/*; do
  check "mode $f" "$(stat -c %a "$f")"
done
# bad control writes fail with EINVAL and start nothing
for v in "start 0" "start 10001" "start abc" "start" "start 1000 x" "start -5" "null 0" \
         "go 100" "stop now"; do
  $K/kbench-read write $C "$v"
done
check "ksample state after bad writes" "$(sed -n 's/^state: //p' $C)"
# a non-root user can open neither file
$K/kbench-read read-as 65534 $C
$K/kbench-read read-as 65534 /proc/ksample/records
# a start while the process that started sampling lives is EBUSY ...
$K/ksample-check drain owner start 100 2 100 > /dev/null &
sleep 1
$K/kbench-read write $C "start 100"
check "ksample state while sampling" "$(sed -n 's/^state: //p' $C)"
wait
# ... and once it is gone (here: a writer that exited), a start takes over;
# stop twice is fine
$K/kbench-read write $C "start 100"
$K/kbench-read write $C "start 200"
check "ksample rate after a takeover" "$(sed -n 's/^rate_hz: //p' $C)"
$K/kbench-read write $C "stop"
$K/kbench-read write $C "stop"
# drains every 100 ms: every seq read once, nothing dropped
$K/ksample-check drain k1000 start 1000 3 100
$K/ksample-check drain k10000 start 10000 3 100
$K/ksample-check drain null1000 null 1000 2 100
# the sampler program on the module, as root and as nobody
if [ -x $K/raplbench-sample ]; then
  for hz in 1000 10000; do
    $K/raplbench-sample --mechanism kernel --frequency $hz --duration 4 --pairs 4 \
      --output /tmp/k$hz.csv --report /tmp/k$hz.jsonl 2>/tmp/k$hz.err
    check "sampler $hz exit" "$?"
    sed "s/^/sampler $hz stderr| /" /tmp/k$hz.err
    check "sampler $hz csv lines" "$(wc -l < /tmp/k$hz.csv)"
    check "sampler $hz csv header" "$(head -n 1 /tmp/k$hz.csv)"
    check "sampler $hz csv first line" "$(sed -n 2p /tmp/k$hz.csv)"
  done
  check "ksample state after the sampler" "$(sed -n 's/^state: //p' $C)"
  su nobody -c "$K/raplbench-sample --mechanism kernel --duration 1" 2>/tmp/nobody.err
  check "sampler as nobody exit" "$?"
  sed "s/^/sampler as nobody stderr| /" /tmp/nobody.err
else
  check "sampler 1000 exit" "no raplbench-sample in the guest"
fi
# a slow reader (every 1 s) on a ring of 256 records at 1 kHz: overruns, counted
rmmod ksample
insmod $K/ksample.ko ring_records=256
$K/ksample-check drain slow start 1000 3 1000
rmmod ksample
# a ring size that is not a power of two is refused at load
if insmod $K/ksample.ko ring_records=100 2>/dev/null; then check "ksample ring_records=100" loaded; rmmod ksample
else check "ksample ring_records=100" refused; fi
# rmmod while sampling at 10 kHz, a reader polling the records
insmod $K/ksample.ko
$K/kbench-read write $C "start 10000"
( dd if=/proc/ksample/records of=/dev/null bs=8800 count=1 2>/dev/null && touch /tmp/records-reader
  while dd if=/proc/ksample/records of=/dev/null bs=8800 count=1 2>/dev/null; do :; done ) &
await /tmp/records-reader
if rmmod ksample; then check "ksample rmmod while sampling" ok; else check "ksample rmmod while sampling" failed; fi
wait
if [ -e /proc/ksample ]; then check "ksample files" left; else check "ksample files" removed; fi

for hz in 1000 10000; do
  echo "=== begin sampler-rows-$hz"
  [ -f /tmp/k$hz.jsonl ] && cat /tmp/k$hz.jsonl
done

echo "=== begin unload"
if rmmod kbench; then check rmmod ok; else check rmmod failed; fi
if [ -e /proc/kbench ] || [ -e /sys/kernel/kbench ]; then check files left; else check files removed; fi
dmesg | grep -iE 'kbench|ksample|oops|bug:|warning:|hogged cpu|soft lockup|hung task' | sed 's/^/dmesg: /'
echo "=== begin done"
