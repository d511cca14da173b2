// register.h - each access path's registration function. Each discovers what
// this machine offers, registers benchmarks for what can run, and records an
// unavailable row (with the reason) for what cannot. main.cc calls them all.
#pragma once

namespace raplbench {

void register_uinsn();     // uinsn.cc
void register_powercap();  // powercap.cc
void register_msr_dev();   // msr_dev.cc
void register_perf();      // perf.cc
void register_ebpf();      // ebpf.cc

}  // namespace raplbench
