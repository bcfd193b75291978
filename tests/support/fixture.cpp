#include "support/fixture.hpp"

#include <thread>

namespace grove_test {

unsigned test_workers() {
  const char* s = std::getenv("GROVE_TEST_WORKERS");
  int n = s ? std::atoi(s) : 2;
  return n > 0 ? static_cast<unsigned>(n) : 2u;
}

unsigned stress_scale() {
  const char* s = std::getenv("GROVE_STRESS_SCALE");
  int n = s ? std::atoi(s) : 1;
  return n > 0 ? static_cast<unsigned>(n) : 1u;
}

runtime_fixture::runtime_fixture(grove::runtime_config config) {
  if (config.workers == 0) config.workers = test_workers();
  rt_.emplace(config);
}

grove::stop_report runtime_fixture::stop(std::chrono::milliseconds deadline) {
  stopped_ = true;
  return rt_->stop(deadline);
}

runtime_fixture::~runtime_fixture() {
  if (!stopped_) {
    grove::stop_report r = rt_->stop(std::chrono::seconds(10));
    CHECK(r.clean);
  }
  rt_.reset();
  grove::resource_usage u = grove::resources_in_use();
  CHECK_MESSAGE(u.processes == 0, "process control blocks leaked");
  CHECK_MESSAGE(u.stack_images == 0, "stack images leaked");
  CHECK_MESSAGE(u.arenas == 0, "arenas leaked");
  CHECK_MESSAGE(u.timers == 0, "timers leaked");
}

bool wait_until(const std::function<bool()>& pred, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (pred()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::yield();  // polling a predicate with a deadline, not sleeping to synchronise
  }
}

}  // namespace grove_test
