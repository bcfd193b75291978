// Uses grove::supervisors alone: a one_for_one supervisor restarts a child that crashes once.
#include <atomic>
#include <cstdio>

#include <grove/grove.hpp>
#include <grove/supervisor.hpp>

int main() {
  grove::runtime rt({.workers = 2});
  grove::scoped_process me;
  namespace sup = grove::supervisor;
  static std::atomic<int> starts{0};
  const grove::pid self = me.pid();
  auto s = sup::start_link({.strategy = sup::strategy::one_for_one, .intensity = 3},
                           {sup::worker("child", [self] {
                             if (starts.fetch_add(1) == 0) throw std::runtime_error("first start fails");
                             grove::send(self, 1);
                             grove::receive([](int) {});
                           })});
  const bool restarted = grove::receive([](int) { return true; }, grove::after(std::chrono::seconds(20), [] { return false; }));
  std::printf("supervisors: started %d times\n", starts.load());
  (void)s;
  return restarted && starts.load() == 2 ? 0 : 1;
}
