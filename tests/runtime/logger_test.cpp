// The logger (grove/logger.hpp): a crash nobody hears of is reported once, with pid, name and reason;
// the runtime's own warnings go through the same hook.
#include "support/fixture.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "support/log_capture.hpp"

using namespace std::chrono_literals;
using grove_test::patience;

namespace {

struct go {};
struct order {
  int n;
};

// Spawns fn unobserved (no link, no monitor) and returns once its exit protocol is over: its
// control block is back (resources_in_use), which comes after any report it makes.
template <class F>
grove::pid run_unobserved(F fn) {
  const std::size_t before = grove::resources_in_use().processes;
  grove::pid p = grove::spawn(std::move(fn));
  CHECK(grove_test::wait_until([before] { return grove::resources_in_use().processes <= before; }));
  return p;
}

}  // namespace

TEST_CASE("a process that crashes while no process links to it or monitors it is reported once, with pid, name and reason") {
  grove_test::log_capture logs;
  grove_test::runtime_fixture rt;
  grove::pid p = run_unobserved([] {
    grove::register_name("payments", grove::self());
    throw std::runtime_error("card declined");
  });
  REQUIRE(grove_test::wait_until([&] { return logs.of(grove::log_kind::crash_report).size() == 1; }));
  auto r = logs.of(grove::log_kind::crash_report)[0];
  CHECK(r.level == grove::log_level::error);
  CHECK(r.process == p);
  CHECK(r.name == "payments");
  CHECK(r.reason.is_exception());
  CHECK(r.reason.text() == "card declined");
  CHECK(r.exception_type == "std::runtime_error");
  CHECK(r.text.find("(std::runtime_error)") != std::string::npos);
  // This executable does not link grove::throw_traces: no throw site is recorded (tests/throw_traces/).
  CHECK(r.throw_site.empty());
  CHECK(r.reason.throw_site() == nullptr);
  CHECK(r.links.empty());
  CHECK(r.last_messages.empty());  // not traced
  CHECK(r.text.find("last messages") == std::string::npos);
  CHECK(r.text.find(fmt::format("{}", p)) != std::string::npos);
  CHECK(r.text.find("payments") != std::string::npos);
  CHECK(r.text.find("card declined") != std::string::npos);
  // Every way a process ends with a reason of its own is reported: a returned reason, grove::exit.
  grove::pid q = run_unobserved([] { return grove::exit_reason("bad_config"); });
  grove::pid s = run_unobserved([] { grove::exit(grove::exit_reason("gave_up")); });
  CHECK(grove_test::wait_until([&] { return logs.of(grove::log_kind::crash_report).size() == 3; }));
  auto all = logs.of(grove::log_kind::crash_report);
  CHECK(all[1].process == q);
  CHECK(all[1].reason.text() == "bad_config");
  CHECK(all[2].process == s);
  CHECK(all[2].reason.text() == "gave_up");
}

TEST_CASE("while the tracer records its receives, a crash report names the last messages the process took, with their senders") {
  grove_test::log_capture logs;
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  const grove::pid self = me.pid();
  REQUIRE(!grove::trace::start());
  // It takes ten orders from us, then a go from a helper, and crashes on it.
  grove::pid p = grove::spawn([] {
    for (int i = 0; i < 10; ++i) grove::receive([](order) {});
    grove::receive([](go) { throw std::runtime_error("bad order"); });
  });
  for (int i = 0; i < 10; ++i) grove::send(p, order{i});
  grove::pid helper = grove::spawn([p] { grove::send(p, go{}); });
  REQUIRE(grove_test::wait_until([&] { return logs.of(grove::log_kind::crash_report).size() == 1; }));
  auto r = logs.of(grove::log_kind::crash_report)[0];
  CHECK(r.process == p);
  REQUIRE(r.last_messages.size() == 8);  // the newest 8, oldest first
  for (std::size_t i = 0; i < 7; ++i) {
    CHECK(r.last_messages[i].type.find("order") != std::string::npos);
    CHECK(r.last_messages[i].from == self);
  }
  CHECK(r.last_messages[7].type.find("go") != std::string::npos);
  CHECK(r.last_messages[7].from == helper);
  CHECK(std::is_sorted(r.last_messages.begin(), r.last_messages.end(),
                       [](const auto& a, const auto& b) { return a.time_ns < b.time_ns; }));
  CHECK(r.text.find(fmt::format("; last messages: (anonymous namespace)::order from {}, ", self)) != std::string::npos);
  CHECK(r.text.find(fmt::format(", (anonymous namespace)::go from {}", helper)) != std::string::npos);

  // Traced by its own flags only: its receives, without senders (their sends are not recorded); a
  // crash of an untraced process reports none.
  grove::trace::stop();
  REQUIRE(!grove::trace::start({.kinds = 0}));
  grove::pid traced = grove::spawn([] {
    grove::receive([](order) {});
    grove::receive([](go) { throw std::runtime_error("traced"); });
  });
  grove::pid untraced = grove::spawn([] {
    grove::receive([](order) {});
    grove::receive([](go) { throw std::runtime_error("untraced"); });
  });
  REQUIRE(!grove::trace::trace_process(traced, grove::trace::process_flags::receive));
  for (grove::pid q : {traced, untraced}) {
    grove::send(q, order{1});
    grove::send(q, go{});
  }
  REQUIRE(grove_test::wait_until([&] { return logs.of(grove::log_kind::crash_report).size() == 3; }));
  for (const auto& c : logs.of(grove::log_kind::crash_report)) {
    if (c.process == traced) {
      REQUIRE(c.last_messages.size() == 2);
      CHECK(c.last_messages[0].type.find("order") != std::string::npos);
      CHECK(c.last_messages[0].from.is_null());
      CHECK(c.last_messages[1].type.find("go") != std::string::npos);
    }
    if (c.process == untraced) CHECK(c.last_messages.empty());
  }
  grove::trace::stop();
}

TEST_CASE("normal and shutdown exits, observed crashes and deaths by exit signal are not crash reports") {
  grove_test::log_capture logs;
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  run_unobserved([] {});
  run_unobserved([] { grove::exit(grove::exit_reason::shutdown()); });
  run_unobserved([] { grove::exit(grove::exit_reason::user<int>("shutdown", 3)); });  // OTP's {shutdown, Term}
  // Monitored: the monitor hears of it.
  auto m = grove::spawn_monitor([] { throw std::runtime_error("seen"); });
  grove::receive([](grove::down) {});
  (void)m;
  // Linked to a process that traps exits: it hears of it.
  grove::trap_exit(true);
  grove::spawn_link([] { throw std::runtime_error("seen too"); });
  grove::receive([](grove::exit_signal) {});
  grove::trap_exit(false);
  // Killed by an exit signal: whoever sent it knows.
  const std::size_t before = grove::resources_in_use().processes;
  grove::pid victim = grove::spawn([] { grove::receive([](go) {}); });
  grove::exit(victim, grove::exit_reason::kill());
  grove::pid stopped = grove::spawn([] { grove::receive([](go) {}); });
  grove::exit(stopped, grove::exit_reason("told_to"));
  CHECK(grove_test::wait_until([before] { return grove::resources_in_use().processes <= before; }));
  // A marker crash, reported: everything before it has been reported by then, if at all.
  grove::pid marker = run_unobserved([] { throw std::runtime_error("marker"); });
  REQUIRE(grove_test::wait_until([&] { return !logs.of(grove::log_kind::crash_report).empty(); }));
  auto reports = logs.of(grove::log_kind::crash_report);
  REQUIRE(reports.size() == 1);
  CHECK(reports[0].process == marker);
}

TEST_CASE("with crash_reports = all, linked and monitored crashes are reported too, naming their links and monitors") {
  grove_test::log_capture logs;
  grove_test::runtime_fixture rt(grove::runtime_config{.crash_reports = grove::crash_report_policy::all});
  grove::scoped_process me;
  grove::trap_exit(true);
  auto m = grove::spawn_monitor([] { throw std::runtime_error("seen"); });
  grove::receive([](grove::down) {});
  grove::pid linked = grove::spawn_link([] { throw std::runtime_error("seen too"); });
  grove::receive([](grove::exit_signal) {});
  // Still not reported: normal exits and deaths by exit signal.
  grove::pid victim = grove::spawn_link([] { grove::receive([](go) {}); });
  grove::exit(victim, grove::exit_reason::kill());
  grove::receive([](grove::exit_signal) {});
  grove::pid marker = run_unobserved([] { throw std::runtime_error("marker"); });
  REQUIRE(grove_test::wait_until([&] { return logs.of(grove::log_kind::crash_report).size() == 3; }));
  auto reports = logs.of(grove::log_kind::crash_report);
  REQUIRE(reports.size() == 3);
  CHECK(reports[0].process == m.pid);
  CHECK(reports[0].monitored_by == std::vector<grove::pid>{me.pid()});
  CHECK(reports[0].links.empty());
  CHECK(reports[0].text.find(fmt::format("monitored by {}", me.pid())) != std::string::npos);
  CHECK(reports[1].process == linked);
  CHECK(reports[1].links == std::vector<grove::pid>{me.pid()});
  CHECK(reports[1].text.find(fmt::format("links {}", me.pid())) != std::string::npos);
  CHECK(reports[2].process == marker);
}

TEST_CASE("an arena over its limit is reported through the logger") {
  grove_test::log_capture logs;
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  auto s = grove::try_spawn(grove::spawn_options{.monitor = true, .max_heap_bytes = 16 * 1024}, [] {
    std::pmr::vector<char> v(&grove::arena());
    v.resize(1 << 20);
  });
  REQUIRE(s);
  auto d = grove::receive([](grove::down d) { return d; }, grove::after(patience, [] { return grove::down{}; }));
  CHECK(d.reason.what_kind() == grove::exit_reason::kind::max_heap_size);
  auto heap = logs.of(grove::log_kind::max_heap_size);
  REQUIRE(heap.size() == 1);
  CHECK(heap[0].process == s->pid);
  CHECK(heap[0].reason.what_kind() == grove::exit_reason::kind::max_heap_size);
}

TEST_CASE("an empty logger silences Grove, and a logger that throws does not hurt the reporter") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  grove::set_logger({});
  run_unobserved([] { throw std::runtime_error("unheard"); });
  std::atomic<int> calls{0};
  grove::set_logger([&calls](const grove::log_event&) {
    calls.fetch_add(1);
    throw std::runtime_error("the logger itself fails");
  });
  run_unobserved([] { throw std::runtime_error("heard, then dropped"); });
  CHECK(grove_test::wait_until([&] { return calls.load() == 1; }));
  grove::reset_logger();
  CHECK(grove::is_alive(grove::spawn([] { grove::receive([](go) {}); })));  // the runtime goes on
}
