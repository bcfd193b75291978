// peer.hpp: what every CAF peer benchmark shares (see bench/README.md, "Output protocol"): flag
// parsing (--name integer, plus --threads, the scheduler's max-threads, default 2), RESULT lines on
// stdout, failed checks (exit status 1), VmRSS and CPU time of the process, and a fast exit that does
// not wait for actors still holding hour-long timers. Written against CAF 0.17 (Debian's libcaf-dev).
#pragma once

#include <sys/resource.h>

#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <utility>
#include <variant>
#include <vector>

#include "caf/all.hpp"

namespace peer {

// Ends the process now, like erlang:halt/1 or Go's os.Exit: the actor system's destructor would wait
// for every actor, including ones sleeping for an hour.
[[noreturn]] inline void exit_now(int status) {
  std::fflush(stdout);
  std::fflush(stderr);
  std::_Exit(status);
}

using extra_value = std::variant<std::int64_t, double>;
using extras = std::vector<std::pair<std::string, extra_value>>;

// One workload's run: its name, its parameters (echoed in every RESULT line), the actor system.
class bench {
public:
  // defaults: every accepted flag with its default; --threads is added.
  bench(const char* workload, int argc, char** argv, std::map<std::string, std::int64_t> defaults)
      : workload_(workload), params_(std::move(defaults)) {
    params_.emplace("threads", 2);
    params_.emplace("sharing", 0);
    for (int i = 1; i < argc; i += 2) {
      std::string flag = argv[i];
      if (flag.rfind("--", 0) != 0 || i + 1 >= argc || params_.count(flag.substr(2)) == 0)
        usage("unexpected argument " + flag);
      char* end = nullptr;
      long long v = std::strtoll(argv[i + 1], &end, 10);
      if (*end != '\0')
        usage(std::string("not an integer: ") + argv[i + 1]);
      params_[flag.substr(2)] = v;
    }
  }

  std::int64_t operator[](const std::string& name) const { return params_.at(name); }

  // The configuration every peer uses: --threads workers under CAF's default work-stealing
  // scheduler, or its work-sharing one (a single shared queue) with --sharing 1.
  caf::actor_system_config config() const {
    caf::actor_system_config cfg;
    cfg.set("scheduler.max-threads", static_cast<std::size_t>(params_.at("threads")));
    if (params_.at("sharing") != 0)
      cfg.set("scheduler.policy", caf::atom("sharing"));
    return cfg;
  }

  void result(const char* metric, const char* unit, double value, const extras& more = {}) const {
    std::string line = "RESULT {\"workload\":\"" + workload_ + "\",\"impl\":\"caf\",\"metric\":\""
                       + metric + "\",\"unit\":\"" + unit + "\",\"value\":" + number(value);
    std::map<std::string, std::string> keys;
    for (auto& [k, v] : params_)
      keys[k] = std::to_string(v);
    for (auto& [k, v] : more)
      keys[k] = std::holds_alternative<double>(v) ? number(std::get<double>(v))
                                                  : std::to_string(std::get<std::int64_t>(v));
    for (auto& [k, v] : keys)
      line += ",\"" + k + "\":" + v;
    line += "}\n";
    std::fputs(line.c_str(), stdout);
    std::fflush(stdout);
  }

  // A failed check: say why on stderr and exit with status 1 at once (actors may still be alive).
  [[noreturn]] void fail(const std::string& why) const {
    std::fprintf(stderr, "%s: check failed: %s\n", workload_.c_str(), why.c_str());
    exit_now(1);
  }

private:
  [[noreturn]] void usage(const std::string& why) const {
    std::fprintf(stderr, "%s: %s\nusage: %s", workload_.c_str(), why.c_str(), workload_.c_str());
    for (auto& [k, v] : params_)
      std::fprintf(stderr, " [--%s N (%lld)]", k.c_str(), static_cast<long long>(v));
    std::fprintf(stderr, "\n");
    std::exit(2);
  }

  // The shortest text that reads back as v; fixed notation in the usual range, so 200000 is not 2e+05.
  static std::string number(double v) {
    char buf[400];
    auto fmt = (v == 0 || (std::abs(v) >= 1e-6 && std::abs(v) < 1e21)) ? std::chars_format::fixed
                                                                        : std::chars_format::general;
    auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v, fmt);
    return std::string(buf, end);
  }

  std::string workload_;
  std::map<std::string, std::int64_t> params_;
};

// VmRSS of this process from /proc/self/status, in bytes.
inline std::int64_t rss_bytes() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("VmRSS:", 0) == 0)
      return std::stoll(line.substr(6)) * 1024;
  std::abort();
}

// User + system CPU time of this process (all threads), from getrusage(RUSAGE_SELF), in seconds.
inline double cpu_seconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

inline double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Waits until the registry counts `expected` running actors or `timeout` passes; returns the count.
// (An actor that has finished its work leaves the count a moment later, on another thread.)
inline std::size_t await_running(caf::actor_system& sys, std::size_t expected,
                                 std::chrono::seconds timeout = std::chrono::seconds(10)) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (sys.registry().running() != expected && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return sys.registry().running();
}

} // namespace peer
