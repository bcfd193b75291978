// Processes: spawn, exit reasons, self, the process limit.
#include "support/fixture.hpp"

using namespace std::chrono_literals;
using grove_test::patience;

TEST_CASE("a spawned process runs and can reply to a scoped process") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  grove::pid parent = me.pid();
  grove::spawn([parent] { grove::send(parent, 42); });
  int got = grove::receive([](int n) { return n; }, grove::after(patience, [] { return -1; }));
  CHECK(got == 42);
}
