// Strategies, start order and stop order: OTP's one_for_one, one_for_all, rest_for_one and
// simple_one_for_one (runtime/DESIGN.md §5), observed through children that log their starts and stops.
#include <atomic>
#include <thread>

#include "helpers.hpp"

using namespace sup_test;
using grove_test::patience;
using strings = std::vector<std::string>;

namespace {

sup::flags with(sup::strategy s, report_log& reports) {
  sup::flags f{.strategy = s, .intensity = 10, .period = 5s};
  f.logger = reports.logger();
  return f;
}

}  // namespace

TEST_CASE("children start in spec order and stop in reverse order when the parent exits") {
  event_log log;
  report_log reports;
  grove_test::runtime_fixture rt;
  grove::pid s;
  {
    grove::scoped_process parent;
    s = sup::start_link(with(sup::strategy::one_for_one, reports),
                        {logged_worker("a", log), logged_worker("b", log), logged_worker("c", log)});
    CHECK(log.snapshot() == strings{"start:a", "start:b", "start:c"});
  }  // the parent (that scoped_process) exits here, normal
  grove::scoped_process me;
  CHECK(grove_test::wait_until([&] { return !grove::is_alive(s); }));
  CHECK(log.with_prefix("stop:") == strings{"stop:c", "stop:b", "stop:a"});
  CHECK(reports.count(sup::report_kind::shutdown_error) == 0);
}

TEST_CASE("a supervisor exits with its parent's reason after stopping its children") {
  event_log log;
  report_log reports;
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  struct go {};
  // The parent is a process that starts the supervisor, reports its pid, then dies with "bye".
  auto parent = grove::spawn([&, me = me.pid()] {
    grove::pid s =
        sup::start_link(with(sup::strategy::one_for_one, reports), {logged_worker("a", log), logged_worker("b", log)});
    grove::send(me, s);
    grove::receive([](go) {});
    grove::exit(grove::exit_reason("bye"));
  });
  grove::pid s = grove::receive([](grove::pid p) { return p; });
  auto ref = grove::monitor(s);
  grove::send(parent, go{});
  auto why = wait_down(ref);
  CHECK(why.text() == "bye");
  CHECK(log.with_prefix("stop:") == strings{"stop:b", "stop:a"});
}

TEST_CASE("one_for_one restarts only the child that crashed") {
  event_log log;
  report_log reports;
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  grove::pid s = sup::start_link(with(sup::strategy::one_for_one, reports),
                                 {logged_worker("a", log), logged_worker("b", log), logged_worker("c", log)});
  grove::pid a = child_pid(s, "a"), b = child_pid(s, "b"), c = child_pid(s, "c");
  log.clear();
  grove::exit(b, grove::exit_reason("boom"));  // b does trap exits: it logs, then dies with boom
  grove::pid b2 = wait_restarted(s, "b", b);
  REQUIRE(!b2.is_null());
  CHECK(child_pid(s, "a") == a);
  CHECK(child_pid(s, "c") == c);
  CHECK(log.snapshot() == strings{"stop:b", "start:b"});
  CHECK(reports.count(sup::report_kind::child_crashed) == 1);
  CHECK(reports.count(sup::report_kind::child_restarted) == 1);
}

TEST_CASE("one_for_all stops the other children in reverse order and restarts all in start order") {
  event_log log;
  report_log reports;
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  grove::pid s = sup::start_link(
      with(sup::strategy::one_for_all, reports),
      {logged_worker("a", log), logged_worker("b", log), logged_worker("c", log), logged_worker("d", log)});
  grove::pid a = child_pid(s, "a"), b = child_pid(s, "b"), d = child_pid(s, "d");
  log.clear();
  grove::exit(b, grove::exit_reason("boom"));
  REQUIRE(grove_test::wait_until([&] { return log.with_prefix("start:").size() == 4; }));
  CHECK(log.snapshot() == strings{"stop:b", "stop:d", "stop:c", "stop:a", "start:a", "start:b", "start:c", "start:d"});
  CHECK(child_pid(s, "a") != a);
  CHECK(child_pid(s, "d") != d);
  CHECK(!child_pid(s, "b").is_null());
  CHECK(reports.count(sup::report_kind::child_crashed) == 1);
  CHECK(reports.count(sup::report_kind::child_restarted) == 4);
  CHECK(reports.count(sup::report_kind::shutdown_error) == 0);
}

TEST_CASE("rest_for_one restarts the crashed child and those started after it, not those before") {
  event_log log;
  report_log reports;
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  grove::pid s = sup::start_link(with(sup::strategy::rest_for_one, reports),
                                 {logged_worker("db", log), logged_worker("cache", log), logged_worker("api", log)});
  grove::pid db = child_pid(s, "db"), cache = child_pid(s, "cache");
  log.clear();
  grove::exit(cache, grove::exit_reason("boom"));
  REQUIRE(grove_test::wait_until([&] { return log.with_prefix("start:").size() == 2; }));
  CHECK(log.snapshot() == strings{"stop:cache", "stop:api", "start:cache", "start:api"});
  CHECK(child_pid(s, "db") == db);
  log.clear();
  grove::exit(db, grove::exit_reason("boom"));
  REQUIRE(grove_test::wait_until([&] { return log.with_prefix("start:").size() == 3; }));
  CHECK(log.snapshot() == strings{"stop:db", "stop:api", "stop:cache", "start:db", "start:cache", "start:api"});
}

TEST_CASE("a temporary child in a one_for_all group is stopped and forgotten, not restarted") {
  event_log log;
  report_log reports;
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  grove::pid s = sup::start_link(with(sup::strategy::one_for_all, reports),
                                 {logged_worker("a", log), logged_worker("t", log, sup::restart_type::temporary)});
  grove::pid a = child_pid(s, "a");
  grove::exit(a, grove::exit_reason("boom"));
  REQUIRE(!wait_restarted(s, "a", a).is_null());
  auto kids = sup::which_children(s);
  REQUIRE(kids);
  REQUIRE(kids->size() == 1);
  CHECK(kids->front().id == "a");
  CHECK(log.count("start:t") == 1);
  CHECK(log.count("stop:t") == 1);
}

TEST_CASE("simple_one_for_one starts children with arguments and restarts a crashed one with the same arguments") {
  report_log reports;
  std::atomic<int> sum{0};
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  struct never {};
  auto tmpl = sup::worker_with<int>("adder", [&sum](int n) {
    sum.fetch_add(n, std::memory_order_relaxed);
    grove::receive([](never) {});
  });
  grove::pid s = sup::start_link(with(sup::strategy::simple_one_for_one, reports), {tmpl});
  const int n = 50;
  std::vector<grove::pid> kids;
  for (int i = 1; i <= n; ++i) {
    auto p = sup::start_child(s, std::any(i));
    REQUIRE(p);
    kids.push_back(*p);
  }
  CHECK(grove_test::wait_until([&] { return sum.load() == n * (n + 1) / 2; }));
  auto counts = sup::count_children(s);
  REQUIRE(counts);
  CHECK(counts->specs == 1);
  CHECK(counts->active == static_cast<std::size_t>(n));
  CHECK(counts->workers == static_cast<std::size_t>(n));
  grove::exit(kids[9], grove::exit_reason("boom"));  // the child started with 10
  CHECK(grove_test::wait_until([&] { return sum.load() == n * (n + 1) / 2 + 10; }));
  CHECK(grove_test::wait_until([&] {
    auto c = sup::count_children(s);
    return c && c->active == static_cast<std::size_t>(n);
  }));
  auto wrong = sup::start_child(s, std::any(std::string("not an int")));
  CHECK(wrong.error() == sup::errc::start_failed);
  CHECK(sup::terminate_child(s, kids[0]) == std::error_code{});
  auto after = sup::count_children(s);
  REQUIRE(after);
  CHECK(after->active == static_cast<std::size_t>(n - 1));
  CHECK(sup::terminate_child(s, "adder") == sup::errc::simple_one_for_one);
  CHECK(sup::restart_child(s, "adder").error() == sup::errc::simple_one_for_one);
  CHECK(sup::delete_child(s, "adder") == sup::errc::simple_one_for_one);
}

TEST_CASE("simple_one_for_one stops all its children at once") {
  report_log reports;
  std::atomic<int> asked{0};
  constexpr int n = 20;
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  // Each child, asked to stop, waits until every child has been asked: a one-at-a-time stop would
  // leave the first one waiting until its 10 s timeout killed it (a shutdown_error report).
  sup::child_spec tmpl;
  tmpl.id = "patient";
  tmpl.shutdown = sup::shutdown_policy::timeout(10s);
  tmpl.start = [&asked]() -> grove::result<grove::pid> {
    return grove::spawn_link([&asked] {
      grove::trap_exit(true);
      grove::receive([](grove::exit_signal) {});
      asked.fetch_add(1);
      while (asked.load() < n) grove::yield();
      grove::exit(grove::exit_reason::shutdown());
    });
  };
  grove::pid s = sup::start_link(with(sup::strategy::simple_one_for_one, reports), {tmpl});
  for (int i = 0; i < n; ++i) REQUIRE(sup::start_child(s, std::any{}));
  auto ref = grove::monitor(s);
  CHECK(sup::stop(s) == std::error_code{});
  CHECK(wait_down(ref).is_normal());
  CHECK(asked.load() == n);
  CHECK(reports.count(sup::report_kind::shutdown_error) == 0);
}

TEST_CASE("a nested supervisor stops its own children before it exits") {
  event_log log;
  report_log reports;
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  auto inner = sup::supervisor_child("inner", with(sup::strategy::one_for_one, reports),
                                     {logged_worker("i1", log), logged_worker("i2", log)});
  grove::pid s = sup::start_link(with(sup::strategy::one_for_one, reports),
                                 {logged_worker("first", log), inner, logged_worker("last", log)});
  CHECK(log.snapshot() == strings{"start:first", "start:i1", "start:i2", "start:last"});
  auto counts = sup::count_children(s);
  REQUIRE(counts);
  CHECK(counts->supervisors == 1);
  CHECK(counts->workers == 2);
  auto ref = grove::monitor(s);
  CHECK(sup::stop(s) == std::error_code{});
  CHECK(wait_down(ref).is_normal());
  CHECK(log.with_prefix("stop:") == strings{"stop:last", "stop:i2", "stop:i1", "stop:first"});
}
