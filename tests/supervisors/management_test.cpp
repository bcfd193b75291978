// The management API (OTP's start_child, terminate_child, restart_child, delete_child,
// which_children, count_children, plus stop): requests and replies with timeouts, callable from any
// process or scoped_process.
#include <atomic>
#include <thread>

#include <stdexcept>

#include "helpers.hpp"

using namespace sup_test;
using strings = std::vector<std::string>;

namespace {
sup::flags logged(report_log& reports) {
  sup::flags f{.intensity = 10};
  f.logger = reports.logger();
  return f;
}
}  // namespace

TEST_CASE("a start_child or restart_child that fails returns the child's id and reason, and the supervisor goes on") {
  report_log reports;
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  grove::pid s = sup::start_link(logged(reports), {idle_worker("a")});
  sup::child_spec bad;
  bad.id = "flaky";
  bad.start = []() -> sup::start_return { return grove::exit_reason("no_backend"); };
  auto r = sup::start_child(s, bad);
  REQUIRE_FALSE(r);
  CHECK(r.error() == sup::errc::start_failed);
  CHECK(r.error().child_id == "flaky");
  CHECK(r.error().reason.text() == "no_backend");
  sup::child_spec thrower;
  thrower.id = "thrower";
  thrower.start = []() -> sup::start_return { throw std::runtime_error("bad config"); };
  auto t = sup::start_child(s, thrower);
  CHECK(t.error().reason.is_exception());
  CHECK(t.error().reason.text() == "bad config");
  CHECK(grove::is_alive(s));
  CHECK_FALSE(grove::receive([](grove::exit_signal) { return true; }, grove::after(std::chrono::milliseconds(0), [] { return false; })));
}

TEST_CASE("start_child adds a child last in start order, so it stops first") {
  event_log log;
  report_log reports;
  grove_test::runtime_fixture rt;
  grove::pid s;
  {
    grove::scoped_process me;
    s = sup::start_link(logged(reports), {logged_worker("a", log)});
    auto b = sup::start_child(s, logged_worker("b", log));
    REQUIRE(b);
    CHECK(child_pid(s, "b") == *b);
    auto again = sup::start_child(s, logged_worker("b", log));
    CHECK(again.error() == sup::errc::already_started);
    CHECK(again.error().pid == *b);  // OTP's {error, {already_started, Pid}}
    CHECK(sup::terminate_child(s, "b") == std::error_code{});
    CHECK(sup::start_child(s, logged_worker("b", log)).error() == sup::errc::already_present);
    CHECK(sup::restart_child(s, "b"));
    sup::child_spec bad = idle_worker("c");
    bad.significant = true;  // auto_shutdown is never
    CHECK(sup::start_child(s, bad).error() == sup::errc::invalid_child_spec);
    CHECK(sup::start_child(s, std::any(1)).error() == sup::errc::not_simple_one_for_one);
    auto kids = sup::which_children(s);
    REQUIRE(kids);
    REQUIRE(kids->size() == 2);
    CHECK((*kids)[0].id == "a");
    CHECK((*kids)[1].id == "b");
  }
  grove::scoped_process me;
  CHECK(grove_test::wait_until([&] { return !grove::is_alive(s); }));
  CHECK(log.with_prefix("stop:") == strings{"stop:b", "stop:b", "stop:a"});
}

TEST_CASE("terminate_child keeps the spec, restart_child starts it again, delete_child forgets it") {
  report_log reports;
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  grove::pid s = sup::start_link(logged(reports), {idle_worker("a"), idle_worker("b")});
  CHECK(sup::delete_child(s, "a") == sup::errc::running);
  CHECK(sup::restart_child(s, "a").error() == sup::errc::running);
  CHECK(sup::terminate_child(s, "a") == std::error_code{});
  auto kids = sup::which_children(s);
  REQUIRE(kids);
  CHECK((*kids)[0].state == sup::child_state::stopped);
  CHECK((*kids)[0].pid.is_null());
  auto counts = sup::count_children(s);
  REQUIRE(counts);
  CHECK(counts->specs == 2);
  CHECK(counts->active == 1);
  CHECK(counts->workers == 2);
  auto again = sup::restart_child(s, "a");
  REQUIRE(again);
  CHECK(grove::is_alive(*again));
  CHECK(sup::terminate_child(s, "a") == std::error_code{});
  CHECK(sup::delete_child(s, "a") == std::error_code{});
  CHECK(sup::delete_child(s, "a") == sup::errc::not_found);
  CHECK(sup::terminate_child(s, "zzz") == sup::errc::not_found);
  CHECK(sup::restart_child(s, "zzz").error() == sup::errc::not_found);
  counts = sup::count_children(s);
  REQUIRE(counts);
  CHECK(counts->specs == 1);
  // by pid, also on a static supervisor
  CHECK(sup::terminate_child(s, child_pid(s, "b")) == std::error_code{});
  CHECK(child_state_of(s, "b") == sup::child_state::stopped);
  CHECK(sup::terminate_child(s, grove::pid{}) == sup::errc::not_found);
}

TEST_CASE("a call to a supervisor that is not alive returns noproc without waiting") {
  report_log reports;
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  grove::pid s = sup::start_link(logged(reports), {idle_worker("a")});
  auto ref = grove::monitor(s);
  CHECK(sup::stop(s) == std::error_code{});
  wait_down(ref);
  CHECK(sup::which_children(s).error() == grove::errc::noproc);
  CHECK(sup::count_children(s, std::chrono::seconds(60)).error() == grove::errc::noproc);
  CHECK(sup::stop(s) == grove::errc::noproc);
  CHECK(sup::start_child(s, idle_worker("b")).error() == grove::errc::noproc);
}

TEST_CASE("a call that times out returns timeout and its late reply never reaches the caller") {
  report_log reports;
  std::atomic<bool> entered{false}, release{false}, added{false};
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  grove::pid s = sup::start_link(logged(reports), {idle_worker("a")});
  sup::child_spec blocker = idle_worker("blocker");
  auto inner = blocker.start;
  blocker.start = [&, inner]() -> sup::start_return {
    entered = true;
    while (!release.load()) grove::yield();
    return inner();
  };
  grove::spawn([&, s] {
    CHECK(sup::start_child(s, blocker));
    added = true;
  });
  REQUIRE(grove_test::wait_until([&] { return entered.load(); }));
  CHECK(sup::which_children(s, std::chrono::milliseconds(50)).error() == grove::errc::timeout);
  CHECK(sup::count_children(s, std::chrono::milliseconds(0)).error() == grove::errc::timeout);
  release = true;
  REQUIRE(grove_test::wait_until([&] { return added.load(); }));
  auto kids = sup::which_children(s, std::chrono::seconds(20));  // served after the two late ones
  REQUIRE(kids);
  CHECK(kids->size() == 2);
  bool stray = grove::receive([](grove::any_message) { return true; },
                              grove::after(std::chrono::milliseconds(0), [] { return false; }));
  CHECK_FALSE(stray);
}

TEST_CASE("management calls need a calling process, and a supervisor cannot call itself") {
  report_log reports;
  grove_test::runtime_fixture rt;
  grove::pid s;
  std::error_code own;
  {
    grove::scoped_process me;
    sup::child_spec selfish = idle_worker("selfish");
    auto inner = selfish.start;
    selfish.start = [&own, inner]() -> sup::start_return {
      own = sup::which_children(grove::self()).error();  // runs inside the supervisor
      return inner();
    };
    s = sup::start_link(logged(reports), {selfish});
    CHECK(own == sup::errc::calling_self);
    // A foreign thread with no scoped_process is not a process.
    std::error_code foreign;
    std::thread t([&] { foreign = sup::which_children(s).error(); });
    t.join();
    CHECK(foreign == grove::errc::not_in_process);
  }
}

TEST_CASE("stop from a process that is not the parent stops the children in order and the supervisor") {
  event_log log;
  report_log reports;
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  grove::pid s = sup::start_link(logged(reports), {logged_worker("a", log), logged_worker("b", log)});
  std::atomic<bool> stopped{false};
  grove::spawn([&, s] {
    CHECK(sup::stop(s, grove::exit_reason::normal(), std::chrono::seconds(20)) == std::error_code{});
    stopped = true;
  });
  CHECK(grove_test::wait_until([&] { return stopped.load(); }));
  CHECK(!grove::is_alive(s));
  CHECK(log.with_prefix("stop:") == strings{"stop:b", "stop:a"});
}
