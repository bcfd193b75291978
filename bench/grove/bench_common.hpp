// bench_common.hpp: what every Grove benchmark program shares — flags, the RESULT lines of
// bench/README.md's protocol, and readings of the process's memory and CPU time.
#pragma once

#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <string_view>

#include <fmt/format.h>

namespace bench {

// --flag INTEGER pairs, each with a default; anything else exits with status 2.
class flags {
 public:
  flags(int argc, char** argv, std::map<std::string, long long> defaults) : values_(std::move(defaults)) {
    values_.emplace("threads", 2);
    for (int i = 1; i < argc; i += 2) {
      std::string_view key = argv[i];
      if (key.substr(0, 2) != "--" || i + 1 >= argc || !values_.count(std::string(key.substr(2)))) {
        std::fprintf(stderr, "usage: %s", argv[0]);
        for (auto& [k, v] : values_) std::fprintf(stderr, " [--%s %lld]", k.c_str(), v);
        std::fprintf(stderr, "\n");
        std::exit(2);
      }
      char* end = nullptr;
      long long v = std::strtoll(argv[i + 1], &end, 10);
      if (!end || *end != '\0') {
        std::fprintf(stderr, "%s: --%s takes an integer\n", argv[0], std::string(key.substr(2)).c_str());
        std::exit(2);
      }
      values_[std::string(key.substr(2))] = v;
    }
  }
  long long operator[](const std::string& key) const { return values_.at(key); }
  // The parameters as extra JSON keys: ,"n":1000,"threads":2
  std::string json() const {
    std::string out;
    for (auto& [k, v] : values_) out += fmt::format(",\"{}\":{}", k, v);
    return out;
  }

 private:
  std::map<std::string, long long> values_;
};

inline void result(std::string_view workload, std::string_view metric, std::string_view unit, double value,
                   const flags& f, std::string_view extra = {}) {
  std::printf("RESULT {\"workload\":\"%.*s\",\"impl\":\"grove\",\"metric\":\"%.*s\",\"unit\":\"%.*s\",\"value\":%.17g%s%.*s}\n",
              static_cast<int>(workload.size()), workload.data(), static_cast<int>(metric.size()), metric.data(),
              static_cast<int>(unit.size()), unit.data(), value, f.json().c_str(), static_cast<int>(extra.size()),
              extra.data());
  std::fflush(stdout);
}

inline long vm_rss_kib() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::strtol(line.c_str() + 6, nullptr, 10);
  return 0;
}

inline double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

inline double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace bench
