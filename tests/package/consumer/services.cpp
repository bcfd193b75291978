// Uses grove::services alone: a task's result, awaited within its timeout.
#include <cstdio>

#include <grove/grove.hpp>
#include <grove/services/task.hpp>

int main() {
  grove::runtime rt({.workers = 2});
  grove::scoped_process me;
  namespace svc = grove::services;
  auto t = svc::async([] { return 6 * 7; });
  auto r = t.await(std::chrono::seconds(20));
  const int v = r ? r.value() : -1;
  std::printf("services: %d\n", v);
  return v == 42 ? 0 : 1;
}
