// process_info and system_info.
#include "support/fixture.hpp"

#include <algorithm>

using namespace std::chrono_literals;
using grove_test::patience;

namespace {
struct go {};
}  // namespace

TEST_CASE("process_info reports a process's mailbox, links, monitors, name and flags") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  grove::pid self = me.pid();
  auto other = grove::spawn([] { grove::receive([](go) {}); });
  auto p = grove::spawn([self, other] {
    grove::trap_exit(true);
    grove::link(other);
    grove::monitor(other);
    grove::send(grove::self(), 1);
    grove::send(grove::self(), 2);
    grove::send(self, go{});
    grove::receive([](go) {});
  });
  grove::receive([](go) {});
  grove::register_name("inspected", p);
  auto mon = grove::monitor(p);
  auto info = grove::process_info(p);
  REQUIRE(info);
  CHECK(info->pid == p);
  CHECK(info->mailbox_length == 2);
  CHECK(info->trap_exit);
  CHECK(info->links == std::vector<grove::pid>{other});
  REQUIRE(info->monitors.size() == 1);
  CHECK(info->monitors[0].target == other);
  CHECK(std::find(info->monitored_by.begin(), info->monitored_by.end(), self) != info->monitored_by.end());
  CHECK(info->registered_name == "inspected");
  CHECK(info->stack_bytes > 0);
  CHECK(info->stack_bytes < 64 * 1024);
  CHECK(info->worker >= 0);
  CHECK(info->worker < static_cast<int>(grove_test::test_workers()));
  CHECK(info->reductions >= 2);
  grove::send(p, go{});
  grove::receive([&](grove::down d) { CHECK(d.ref == mon); });
  CHECK_FALSE(grove::process_info(p).has_value());
  grove::send(other, go{});
}

TEST_CASE("process_info works from a plain foreign thread and from a process") {
  grove_test::runtime_fixture rt;
  auto target = grove::spawn([] { grove::receive([](go) {}); });
  auto from_thread = grove::process_info(target);
  REQUIRE(from_thread);
  CHECK(from_thread->pid == target);
  grove::scoped_process me;
  grove::pid self = me.pid();
  grove::spawn([self, target] {
    auto info = grove::process_info(target);
    grove::send(self, info.has_value() && info->pid == target);
  });
  CHECK(grove::receive([](bool ok) { return ok; }));
  grove::send(target, go{});
}

TEST_CASE("system_info counts processes, workers, switches and dead letters") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  auto before = grove::system_info();
  CHECK(before.workers.size() == grove_test::test_workers());
  CHECK(before.process_limit == grove::runtime_config{}.process_limit);
  CHECK(before.process_count == 1);  // this scoped_process
  std::vector<grove::pid> ps;
  for (int i = 0; i < 50; ++i) ps.push_back(grove::spawn([] { grove::receive([](go) {}); }));
  auto during = grove::system_info();
  CHECK(during.process_count == 51);
  CHECK(during.spawned >= 50);
  CHECK(during.stack_slots > 0);
  for (auto p : ps) {
    auto ref = grove::monitor(p);
    grove::send(p, go{});
    grove::receive([&](grove::down d) { CHECK(d.ref == ref); });
  }
  auto after = grove::system_info();
  CHECK(after.process_count == 1);
  CHECK(after.context_switches >= 50);
}

TEST_CASE("an idle runtime parks its workers") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  grove::pid self = me.pid();
  grove::spawn([self] { grove::send(self, go{}); });
  grove::receive([](go) {});
  // Nothing runs now: every worker must go to sleep (its park count rises and stays put).
  CHECK(grove_test::wait_until([] {
    auto s = grove::system_info();
    return std::all_of(s.workers.begin(), s.workers.end(), [](const grove::worker_details& w) { return w.parks > 0; });
  }));
}
