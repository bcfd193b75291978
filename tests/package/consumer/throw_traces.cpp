// Uses grove::throw_traces with grove::runtime, as an application that found them with find_package
// or pkg-config: a crash's report carries its throw site.
#include <chrono>
#include <cstdio>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>

#include <grove/grove.hpp>

namespace {
[[gnu::noinline]] void fail_here() { throw std::runtime_error("consumer crash"); }
}  // namespace

int main() {
  std::mutex lock;
  std::string where;  // guarded by lock
  grove::set_logger([&](const grove::log_event& e) {
    if (e.kind != grove::log_kind::crash_report || e.throw_site.empty()) return;
    std::lock_guard<std::mutex> g(lock);
    where = grove::stack_trace::function_name(e.throw_site.frames()[0]);
  });
  {
    grove::runtime rt({.workers = 2});
    grove::spawn([] { fail_here(); });
    for (int i = 0; i < 20000; ++i) {
      {
        std::lock_guard<std::mutex> g(lock);
        if (!where.empty()) break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  grove::reset_logger();
  std::printf("throw_traces: thrown in %s\n", where.empty() ? "(no throw site)" : where.c_str());
  return where.find("fail_here") != std::string::npos ? 0 : 1;
}
