// OTP's shutdown protocol: monitor the child, send exit(shutdown), wait for its down up to the
// shutdown timeout, then kill; brutal_kill kills at once; infinity waits. Unexpected reasons are
// reported as shutdown errors.
#include <atomic>

#include "helpers.hpp"

using namespace sup_test;

namespace {

sup::flags logged(report_log& reports) {
  sup::flags f;
  f.logger = reports.logger();
  return f;
}

// A child that traps exits and ignores them all: only kill ends it.
sup::child_spec stubborn(const std::string& id, std::atomic<int>& ignored) {
  sup::child_spec s;
  s.id = id;
  s.start = [&ignored]() -> grove::result<grove::pid> {
    return grove::spawn_link([&ignored] {
      grove::trap_exit(true);
      for (;;) grove::receive([&](grove::exit_signal) { ignored.fetch_add(1); });
    });
  };
  return s;
}

}  // namespace

TEST_CASE("a child that ignores shutdown is killed after its shutdown timeout and reported") {
  report_log reports;
  std::atomic<int> ignored{0};
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  sup::child_spec child = stubborn("stubborn", ignored);
  child.shutdown = sup::shutdown_policy::timeout(std::chrono::milliseconds(200));
  grove::pid s = sup::start_link(logged(reports), {child});
  grove::pid c = child_pid(s, "stubborn");
  auto ref = grove::monitor(c);
  const auto t0 = std::chrono::steady_clock::now();
  CHECK(sup::terminate_child(s, "stubborn") == std::error_code{});
  CHECK(std::chrono::steady_clock::now() - t0 >= std::chrono::milliseconds(200));  // a timer never fires early
  CHECK(wait_down(ref).is_killed());
  CHECK(ignored.load() == 1);
  auto errors = reports.of(sup::report_kind::shutdown_error);
  REQUIRE(errors.size() == 1);
  CHECK(errors[0].reason.is_killed());
  CHECK(errors[0].child == c);
  CHECK(child_state_of(s, "stubborn") == sup::child_state::stopped);
}

TEST_CASE("a brutal_kill child is killed at once, without a shutdown error") {
  report_log reports;
  std::atomic<int> ignored{0};
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  sup::child_spec child = stubborn("stubborn", ignored);
  child.shutdown = sup::shutdown_policy::brutal_kill();
  grove::pid s = sup::start_link(logged(reports), {child});
  auto ref = grove::monitor(child_pid(s, "stubborn"));
  CHECK(sup::terminate_child(s, "stubborn") == std::error_code{});
  CHECK(wait_down(ref).is_killed());
  CHECK(ignored.load() == 0);
  CHECK(reports.count(sup::report_kind::shutdown_error) == 0);
}

TEST_CASE("a child with shutdown infinity is waited for until it exits") {
  report_log reports;
  std::atomic<bool> may_exit{false};
  std::atomic<bool> asked{false};
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  sup::child_spec slow;
  slow.id = "slow";
  slow.shutdown = sup::shutdown_policy::infinity();
  slow.start = [&]() -> grove::result<grove::pid> {
    return grove::spawn_link([&] {
      grove::trap_exit(true);
      grove::receive([](grove::exit_signal) {});
      asked = true;
      while (!may_exit.load()) grove::yield();
      grove::exit(grove::exit_reason::shutdown());
    });
  };
  grove::pid s = sup::start_link(logged(reports), {slow});
  // Terminate from a helper process, so that this thread can see the supervisor still waiting.
  std::atomic<bool> done{false};
  grove::spawn([&, s] {
    CHECK(sup::terminate_child(s, "slow") == std::error_code{});
    done = true;
  });
  REQUIRE(grove_test::wait_until([&] { return asked.load(); }));
  CHECK_FALSE(done.load());  // still waiting: nothing can end it but the child
  may_exit = true;
  CHECK(grove_test::wait_until([&] { return done.load(); }));
  CHECK(reports.count(sup::report_kind::shutdown_error) == 0);
}

TEST_CASE("a child that exits with another reason while being stopped is reported as a shutdown error") {
  report_log reports;
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  sup::child_spec odd;
  odd.id = "odd";
  odd.start = []() -> grove::result<grove::pid> {
    return grove::spawn_link([] {
      grove::trap_exit(true);
      grove::receive([](grove::exit_signal) {});
      grove::exit(grove::exit_reason("disk on fire"));
    });
  };
  grove::pid s = sup::start_link(logged(reports), {odd});
  CHECK(sup::terminate_child(s, "odd") == std::error_code{});
  auto errors = reports.of(sup::report_kind::shutdown_error);
  REQUIRE(errors.size() == 1);
  CHECK(errors[0].reason.text() == "disk on fire");
  CHECK(reports.count(sup::report_kind::child_crashed) == 0);  // the stop consumed its exit
}

TEST_CASE("a child that exits just before it is stopped is reported with its own reason, once") {
  report_log reports;
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  struct go {};
  // The supervisor is held inside a start function while a terminate_child request queues up behind
  // it and then the child dies: the stop finds the child dead (its down says noproc) and must take
  // the reason from the child's exit signal, which it consumes, so no crash is reported or restarted.
  std::atomic<bool> entered{false}, release{false}, added{false}, terminated{false};
  sup::child_spec dies;
  dies.id = "dies";
  dies.start = []() -> grove::result<grove::pid> {
    return grove::spawn_link([] { grove::receive([](go) { grove::exit(grove::exit_reason("gone")); }); });
  };
  grove::pid s = sup::start_link(logged(reports), {dies});
  grove::pid d = child_pid(s, "dies");
  sup::child_spec blocker;
  blocker.id = "blocker";
  blocker.start = [&]() -> grove::result<grove::pid> {
    entered = true;
    while (!release.load()) grove::yield();
    return grove::spawn_link([] { grove::receive([](go) {}); });
  };
  grove::spawn([&, s] {
    CHECK(sup::start_child(s, blocker));
    added = true;
  });
  REQUIRE(grove_test::wait_until([&] { return entered.load(); }));
  grove::spawn([&, s] {
    CHECK(sup::terminate_child(s, "dies") == std::error_code{});
    terminated = true;
  });
  REQUIRE(grove_test::wait_until([&] {
    auto info = grove::process_info(s);  // answered while the supervisor yields in the start function
    return info && info->mailbox_length >= 1;
  }));
  auto ref = grove::monitor(d);
  grove::send(d, go{});
  CHECK(wait_down(ref).text() == "gone");
  release = true;
  CHECK(grove_test::wait_until([&] { return added.load() && terminated.load(); }));
  auto errors = reports.of(sup::report_kind::shutdown_error);
  REQUIRE(errors.size() == 1);
  CHECK(errors[0].reason.text() == "gone");
  CHECK(reports.count(sup::report_kind::child_crashed) == 0);
  CHECK(child_state_of(s, "dies") == sup::child_state::stopped);
}
