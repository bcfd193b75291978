// Child specs and flags: every bad spec is refused with a clear error before anything starts, and a
// start function that fails leaves nothing running (OTP's check_childspec and start_children).
#include <stdexcept>

#include "helpers.hpp"

using namespace sup_test;
using strings = std::vector<std::string>;

namespace {

sup::flags quiet(sup::flags f, report_log& reports) {
  f.logger = reports.logger();
  return f;
}

// Starts with the given flags and specs from `me`; returns the problem start_link threw.
std::string start_error(const sup::flags& f, std::vector<sup::child_spec> specs, std::error_code expect) {
  try {
    sup::start_link(f, std::move(specs));
  } catch (const sup::error& e) {
    CHECK(e.code() == expect);
    return e.what();
  }
  FAIL("start_link did not throw");
  return {};
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("validate accepts OTP's defaults") {
  CHECK_FALSE(sup::validate(sup::flags{}, {idle_worker("a"), idle_worker("b")}));
  CHECK(sup::flags{}.intensity == 1);
  CHECK(sup::flags{}.period == std::chrono::milliseconds(5000));
  CHECK(idle_worker("a").effective_shutdown() == sup::shutdown_policy::timeout(std::chrono::milliseconds(5000)));
  auto nested = sup::supervisor_child("s", sup::flags{}, {});
  CHECK(nested.effective_shutdown() == sup::shutdown_policy::infinity());
  CHECK(nested.type == sup::child_type::supervisor);
  CHECK(nested.restart == sup::restart_type::permanent);
}

TEST_CASE("every bad spec and bad flag is refused with a sentence that names it") {
  auto check = [](const sup::flags& f, std::vector<sup::child_spec> specs, sup::errc code, const std::string& words) {
    sup::problem p = sup::validate(f, specs);
    CHECK(p.code == code);
    CHECK_MESSAGE(contains(p.message, words), p.message);
  };
  check({}, {idle_worker("a"), idle_worker("b"), idle_worker("a")}, sup::errc::duplicate_child_id,
        "duplicate id 'a' (specs 1 and 3 of 3)");
  check({.intensity = -1}, {}, sup::errc::invalid_flags, "intensity -1");
  check({.period = std::chrono::milliseconds(0)}, {}, sup::errc::invalid_flags, "period 0 ms");
  check({.period = std::chrono::milliseconds(-5)}, {}, sup::errc::invalid_flags, "period -5 ms");
  sup::child_spec sig = idle_worker("s");
  sig.significant = true;
  check({.auto_shutdown = sup::auto_shutdown::any_significant}, {sig}, sup::errc::invalid_child_spec,
        "('s'): is permanent and significant");
  sig.restart = sup::restart_type::transient;
  check({}, {sig}, sup::errc::invalid_child_spec, "auto_shutdown is never");
  check({.strategy = sup::strategy::simple_one_for_one, .auto_shutdown = sup::auto_shutdown::any_significant},
        {idle_worker("t")}, sup::errc::invalid_flags, "simple_one_for_one");
  check({.strategy = sup::strategy::simple_one_for_one}, {idle_worker("t"), idle_worker("u")},
        sup::errc::invalid_child_spec, "exactly one spec");
  check({.strategy = sup::strategy::simple_one_for_one}, {}, sup::errc::invalid_child_spec, "got 0");
  sup::child_spec nostart;
  nostart.id = "x";
  check({}, {nostart}, sup::errc::invalid_child_spec, "('x'): has no start function");
  check({}, {idle_worker("")}, sup::errc::invalid_child_spec, "empty id");
  sup::child_spec with = idle_worker("w");
  with.start_with = [](const std::any&) -> grove::result<grove::pid> { return grove::errc::bad_argument; };
  check({}, {with}, sup::errc::invalid_child_spec, "start_with");
  sup::child_spec neg = idle_worker("n");
  neg.shutdown = sup::shutdown_policy::timeout(std::chrono::milliseconds(-1));
  check({}, {neg}, sup::errc::invalid_child_spec, "negative shutdown timeout");
  auto bad_backoff = [&](sup::backoff_policy b, const std::string& words) {
    sup::child_spec s = idle_worker("b");
    s.backoff = b;
    check({}, {s}, sup::errc::invalid_child_spec, words);
  };
  bad_backoff({.initial = std::chrono::milliseconds(0)}, "initial delay of 0 ms");
  bad_backoff({.initial = std::chrono::milliseconds(100), .max = std::chrono::milliseconds(10)}, "below its initial");
  bad_backoff({.multiplier = 0.5}, "multiplier");
  bad_backoff({.jitter = 1.5}, "jitter");
  bad_backoff({.reset_after = std::chrono::milliseconds(-1)}, "reset_after");
}

TEST_CASE("a bad spec starts nothing: start_link throws and no process is spawned") {
  report_log reports;
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  const auto before = grove::system_info();
  std::string what =
      start_error(quiet({}, reports), {idle_worker("a"), idle_worker("a")}, sup::errc::duplicate_child_id);
  CHECK(contains(what, "duplicate id 'a'"));
  auto r = sup::try_start_link(quiet({.intensity = -3}, reports), {idle_worker("a")});
  CHECK(r.error() == sup::errc::invalid_flags);
  const auto after = grove::system_info();
  CHECK(after.spawned == before.spawned);
  CHECK(after.process_count == before.process_count);
}

TEST_CASE("a start function that throws fails the start and stops the children already started in reverse order") {
  event_log log;
  report_log reports;
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  grove::trap_exit(true);  // a trapping parent gets the supervisor's exit signal as a message
  sup::child_spec bad;
  bad.id = "bad";
  bad.start = []() -> sup::start_return { throw std::runtime_error("connection refused"); };
  const std::size_t alive_before = grove::system_info().process_count;
  std::string what =
      start_error(quiet({}, reports), {logged_worker("a", log), logged_worker("b", log), bad, logged_worker("c", log)},
                  sup::errc::start_failed);
  CHECK(contains(what, "child 'bad' (spec 3 of 4): start function threw: connection refused"));
  CHECK(log.snapshot() == strings{"start:a", "start:b", "stop:b", "stop:a"});
  CHECK(grove_test::wait_until([&] { return grove::system_info().process_count == alive_before; }));
  auto failed = reports.of(sup::report_kind::start_failed);
  REQUIRE(failed.size() == 1);
  CHECK(failed[0].child_id == "bad");
  CHECK(contains(failed[0].exception, "connection refused"));
  // OTP 25: the supervisor exits with {shutdown, {failed_to_start_child, bad, Reason}}, and the
  // trapping parent has that exit signal as a message.
  auto e = grove::receive([](grove::exit_signal e) { return e; }, grove::after(std::chrono::milliseconds(0), [] {
                            return grove::exit_signal{};
                          }));
  CHECK(e.reason.text() == "shutdown");
  const auto* f = e.reason.payload<sup::failed_to_start_child>();
  REQUIRE(f != nullptr);
  CHECK(f->id == "bad");
  CHECK(f->reason.is_exception());
  CHECK(f->reason.text() == "connection refused");
  CHECK(contains(e.reason.to_string(), "failed_to_start_child 'bad'"));
}

TEST_CASE("a failed start_link gives a trapping caller the child's id and reason as data") {
  report_log reports;
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  grove::trap_exit(true);
  sup::child_spec bad;
  bad.id = "db";
  bad.start = []() -> sup::start_return { return grove::exit_reason("econnrefused"); };  // OTP's {error, econnrefused}
  auto r = sup::try_start_link(quiet({}, reports), {idle_worker("cache"), bad});
  REQUIRE_FALSE(r);
  const sup::start_error err = r.error();
  CHECK(err == sup::errc::start_failed);
  CHECK(err.child_id == "db");
  CHECK(err.reason.text() == "econnrefused");
  CHECK(contains(err.message, "child 'db'"));
  grove::receive([](grove::exit_signal) {}, grove::after(std::chrono::milliseconds(0), [] {}));
  // The throwing form carries the same details.
  try {
    sup::start_link(quiet({}, reports), {bad});
    FAIL("start_link did not throw");
  } catch (const sup::error& e) {
    CHECK(e.details().child_id == "db");
    CHECK(e.details().reason.text() == "econnrefused");
  }
}

TEST_CASE("a failed start_link kills a linked caller that does not trap exits, with {shutdown, {failed_to_start_child, Id, Reason}}") {
  report_log reports;
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  sup::child_spec bad;
  bad.id = "db";
  bad.start = []() -> sup::start_return { return grove::exit_reason("econnrefused"); };
  std::atomic<bool> returned{false};
  auto caller = grove::spawn_monitor([&, f = quiet({}, reports), bad] {
    (void)sup::try_start_link(f, {bad});
    returned = true;  // not reached: the supervisor's exit signal kills the caller first
  });
  auto d = wait_down(caller.monitor);
  CHECK_FALSE(returned.load());
  CHECK(d.text() == "shutdown");
  const auto* f = d.payload<sup::failed_to_start_child>();
  REQUIRE(f != nullptr);
  CHECK(f->id == "db");
  CHECK(f->reason.text() == "econnrefused");
  // A scoped process that does not trap exits is ended the same way: the call throws.
  CHECK_THROWS_AS((void)sup::try_start_link(quiet({}, reports), {bad}), grove::error);
}

TEST_CASE("a start function that returns an error or no pid fails the start with a clear error") {
  report_log reports;
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  grove::trap_exit(true);
  sup::child_spec err;
  err.id = "err";
  err.start = []() -> grove::result<grove::pid> { return grove::errc::process_limit; };
  CHECK(contains(start_error(quiet({}, reports), {err}, sup::errc::start_failed),
                 "child 'err' (spec 1 of 1): start function returned an error"));
  sup::child_spec none;
  none.id = "none";
  none.start = []() -> grove::result<grove::pid> { return grove::pid{}; };
  CHECK(contains(start_error(quiet({}, reports), {idle_worker("ok"), none}, sup::errc::start_failed),
                 "start function returned no pid"));
  sup::child_spec odd;
  odd.id = "odd";
  odd.start = []() -> sup::start_return { throw 42; };
  CHECK(contains(start_error(quiet({}, reports), {odd}, sup::errc::start_failed), "not a std::exception"));
}

TEST_CASE("a nested supervisor that fails to start fails its parent's start with both reasons") {
  report_log reports;
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  grove::trap_exit(true);
  sup::child_spec bad;
  bad.id = "bad";
  bad.start = []() -> sup::start_return { throw std::runtime_error("disk full"); };
  auto inner = sup::supervisor_child("inner", quiet({}, reports), {idle_worker("x"), bad});
  auto r = sup::try_start_link(quiet({}, reports), {idle_worker("first"), inner});
  REQUIRE_FALSE(r);
  CHECK(r.error().child_id == "inner");
  // OTP nests them: {shutdown, {failed_to_start_child, inner, {shutdown, {failed_to_start_child, bad, ...}}}}.
  const auto* f = r.error().reason.payload<sup::failed_to_start_child>();
  REQUIRE(f != nullptr);
  CHECK(f->id == "bad");
  CHECK(f->reason.text() == "disk full");
  CHECK(contains(r.error().message, "child 'inner'"));
  CHECK(contains(r.error().reason.to_string(), "disk full"));
}

TEST_CASE("a registered name that is taken fails the start, and the name is released when the supervisor exits") {
  report_log reports;
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  sup::flags f = quiet({}, reports);
  f.name = "app";
  grove::pid s = sup::start_link(f, {idle_worker("a")});
  CHECK(grove::whereis("app") == s);
  auto taken = sup::try_start_link(f, {idle_worker("a")});
  CHECK(taken.error() == sup::errc::already_started);
  CHECK(taken.error().pid == s);  // OTP's {error, {already_started, Pid}}
  auto ref = grove::monitor(s);
  CHECK(sup::stop(s) == std::error_code{});
  wait_down(ref);
  CHECK(grove::whereis("app").is_null());
}

TEST_CASE("start_link needs a calling process") {
  grove_test::runtime_fixture rt;
  CHECK(sup::try_start_link({}, {idle_worker("a")}).error() == grove::errc::not_in_process);
  CHECK_THROWS_AS(sup::start_link({}, {idle_worker("a")}), grove::error);
}

TEST_CASE("the backoff delay grows by its multiplier, is capped, and stays within its jitter") {
  sup::backoff_policy b{.initial = std::chrono::milliseconds(10),
                        .max = std::chrono::milliseconds(100),
                        .multiplier = 2.0,
                        .jitter = 0.0};
  CHECK(b.delay(1, 0.0) == std::chrono::milliseconds(10));
  CHECK(b.delay(2, 0.0) == std::chrono::milliseconds(20));
  CHECK(b.delay(4, 0.0) == std::chrono::milliseconds(80));
  CHECK(b.delay(5, 0.0) == std::chrono::milliseconds(100));
  CHECK(b.delay(1000, 0.0) == std::chrono::milliseconds(100));
  b.jitter = 0.5;
  CHECK(b.delay(1, -1.0) == std::chrono::milliseconds(5));
  CHECK(b.delay(1, 1.0) == std::chrono::milliseconds(15));
  CHECK(b.delay(10, 1.0) == std::chrono::milliseconds(100));  // never above max
}
