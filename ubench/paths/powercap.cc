// powercap.cc - path "powercap": one read of a zone's energy_uj, the way
// energy tools read RAPL through the powercap framework (or of the plan's
// stand-in file where there is no zone).
//
//   op "pread":           the file is kept open; each read is pread(fd, 0)
//                         plus parsing the decimal text (one value out);
//   op "open-read-close": open, read, close and parse, as most tools do.
//
// The plan (rbench/src/paths/powercap.rs) names the file and its CPUs.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <string>

#include "register.h"
#include "paths/paths.h"
#include "timed.h"

namespace raplbench {
namespace {

// Reads the decimal counter value of the open file `fd` (`path`); an empty
// string, or why not.
std::string read_counter(int fd, const std::string& path, uint64_t* value) {
  char buf[32];
  const ssize_t n = pread(fd, buf, sizeof(buf), 0);
  if (n < 0) return path + ": read failed: " + std::strerror(errno);
  uint64_t v = 0;
  // digits only (no sign), at least one, no overflow, then the end, a newline, space or NUL
  const auto [end, ec] = std::from_chars(buf, buf + n, v);
  const bool trailing_ok =
      ec == std::errc() && (end == buf + n || *end == '\n' || *end == ' ' || *end == '\0');
  if (!trailing_ok)
    return path + ": not a decimal counter value (" + (n == 0 ? "empty" : "malformed") + ")";
  *value = v;
  return "";
}

void bench_pread(benchmark::State& state, const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return skip_unavailable(state, path + ": " + std::strerror(errno));
  uint64_t value = 0;
  warm_up_before(state, [&] { return read_counter(fd, path, &value).empty(); });
  for (auto _ : state) {
    std::string err = read_counter(fd, path, &value);
    if (!err.empty()) {
      state.SkipWithError(err.c_str());
      break;
    }
    benchmark::DoNotOptimize(value);
  }
  close(fd);
}

void bench_open_read_close(benchmark::State& state, const std::string& path) {
  uint64_t value = 0;
  warm_up_before(state, [&] {
    int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    const bool ok = read_counter(fd, path, &value).empty();
    close(fd);
    return ok;
  });
  for (auto _ : state) {
    int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      skip_unavailable(state, path + ": " + std::strerror(errno));
      break;
    }
    std::string err = read_counter(fd, path, &value);
    close(fd);
    if (!err.empty()) {
      state.SkipWithError(err.c_str());
      break;
    }
    benchmark::DoNotOptimize(value);
  }
}

}  // namespace

void add_file_row(const nlohmann::json& row) {
  const std::string path = row["open"]["file"];
  if (row["open"].value("reopen", false))
    add_benchmark(row,
                  [path](benchmark::State& s) { bench_open_read_close(s, path); });
  else
    add_benchmark(row, [path](benchmark::State& s) { bench_pread(s, path); });
}

}  // namespace raplbench
