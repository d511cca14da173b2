// paths.h - what ubench opens and times, one function per kind of "open"
// in the plan (plan.h), each in its file of ubench/paths/:
//
//   {"insn": NAME}                          uinsn.cc: one user-space instruction
//   {"file": PATH, "reopen": BOOL}          powercap.cc: a counter file, kept open
//                                           (pread) or opened, read and closed
//   {"device": PATH, "offset": N, "bytes": B}  msr_dev.cc: a pread of B bytes at
//                                           offset N of a per-CPU device
//   {"perf": [EVENT, ...], "cpu": N, "group": BOOL}  perf.cc: read() of perf events
//   {"bpf": SAMPLER, "cpu": N, "via": "lookup" | "load" | "tick"}  ebpf.cc: a slot
//                                           of the in-kernel 1 kHz sampler, or its rate
//
// Each registers the row's benchmark (register.h: add_benchmark), which
// opens what the row names, warms up and times it (timed.h). What fails at
// run time says why (skip_unavailable or SkipWithError).
#pragma once

#include <chrono>

#include <nlohmann/json.hpp>

#include "flags.h"

namespace raplbench {

// The window of each repetition of a rate row (ebpf.cc), set by
// --raplbench_rate_window (flags.h).
inline std::chrono::nanoseconds rate_window = seconds_ns(kDefaultRateWindowSeconds);

void add_insn_row(const nlohmann::json& row);
void add_file_row(const nlohmann::json& row);
void add_device_row(const nlohmann::json& row);
void add_perf_row(const nlohmann::json& row);
void add_bpf_row(const nlohmann::json& row);

}  // namespace raplbench
