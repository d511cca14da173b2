// register.h - each access path's registration function. Each discovers what
// this machine offers, registers benchmarks for what can run, and records an
// unavailable row (with the reason) for what cannot. main.cc calls them all.
#pragma once

namespace raplbench {

struct EnergyCounters;  // perf_events.h

void register_uinsn();     // uinsn.cc
void register_powercap();  // powercap.cc
void register_msr_dev();   // msr_dev.cc
// perf and ebpf read the same energy counters: main.cc discovers (and
// probes) them once and hands them to both.
void register_perf(const EnergyCounters& counters);  // perf.cc
void register_ebpf(const EnergyCounters& counters);  // ebpf.cc

}  // namespace raplbench
