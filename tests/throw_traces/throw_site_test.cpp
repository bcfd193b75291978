// Throw sites (grove/stack_trace.hpp): this executable links grove::throw_traces, so the crash of a
// process reports where its exception was thrown. The runtime tests, which do not link it, check
// that without it nothing is recorded (logger_test.cpp).
#include "support/fixture.hpp"

#include <exception>
#include <stdexcept>
#include <string>

#include <grove/supervisor.hpp>

#include "support/log_capture.hpp"

using namespace std::chrono_literals;
using grove_test::patience;

namespace {

struct go {};

// Named functions the traces must show; noinline so that each keeps a frame of its own.
[[gnu::noinline]] void validate_field(const std::string& field) {
  if (field.empty()) throw std::invalid_argument("empty field");
}
[[gnu::noinline]] void parse_order(const std::string& text) {
  validate_field(text);
  asm volatile("");  // not a tail call: parse_order stays on the stack
}
[[gnu::noinline]] void translate_error() { throw std::runtime_error("order rejected"); }
[[gnu::noinline]] void throw_an_int() {
  throw 42;
}

// Whether any of the trace's first `depth` frames is in a function whose name contains `name`.
bool shows(const grove::stack_trace& t, const std::string& name, std::size_t depth = 8) {
  for (std::size_t i = 0; i < t.size() && i < depth; ++i)
    if (grove::stack_trace::function_name(t.frames()[i]).find(name) != std::string::npos) return true;
  return false;
}

// The exit reason of fn, run in a monitored process.
template <class F>
grove::exit_reason exit_reason_of(F fn) {
  auto [p, ref] = grove::spawn_monitor(std::move(fn));
  (void)p;
  (void)ref;
  return grove::receive([](grove::down d) { return d.reason; },
                        grove::after(patience, [] { return grove::exit_reason("no_down"); }));
}

}  // namespace

TEST_CASE("a process's crash reports where its exception was thrown, and the functions that called it") {
  grove_test::log_capture logs;
  grove_test::runtime_fixture rt;
  grove::pid p = grove::spawn([] { parse_order(""); });
  REQUIRE(grove_test::wait_until([&] { return !logs.of(grove::log_kind::crash_report).empty(); }));
  const grove::log_event r = logs.of(grove::log_kind::crash_report)[0];
  CHECK(r.process == p);
  CHECK(r.exception_type == "std::invalid_argument");
  CHECK(r.text.find("(std::invalid_argument)") != std::string::npos);
  REQUIRE(!r.throw_site.empty());
  CHECK(grove::stack_trace::function_name(r.throw_site.frames()[0]).find("validate_field") != std::string::npos);
  CHECK(shows(r.throw_site, "parse_order"));
  // The reason carries the same site, for whoever learns of the exit.
  REQUIRE(r.reason.throw_site() != nullptr);
  CHECK(r.reason.throw_site()->frames() == r.throw_site.frames());
  // Printed: one frame a line, innermost first, with the function's name.
  const std::string text = r.throw_site.to_string("  ");
  CHECK(text.rfind("  #0 0x", 0) == 0);
  CHECK(text.find("validate_field") < text.find("parse_order"));
}

TEST_CASE("a rethrow with throw; keeps the first throw site, and an exception thrown while handling another has its own") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  grove::exit_reason rethrown = exit_reason_of([] {
    try {
      parse_order("");
    } catch (const std::invalid_argument&) {
      throw;
    }
  });
  REQUIRE(rethrown.throw_site() != nullptr);
  CHECK(shows(*rethrown.throw_site(), "validate_field", 1));
  grove::exit_reason translated = exit_reason_of([] {
    try {
      parse_order("");
    } catch (const std::invalid_argument&) {
      translate_error();
    }
  });
  CHECK(translated.text() == "order rejected");
  REQUIRE(translated.throw_site() != nullptr);
  CHECK(shows(*translated.throw_site(), "translate_error", 1));
  CHECK(!shows(*translated.throw_site(), "validate_field", 64));
}

TEST_CASE("an exception thrown elsewhere and rethrown in a process with rethrow_exception has no throw site rather than a wrong one") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  // Made by this test's scoped_process, not by the process that rethrows it.
  std::exception_ptr foreign;
  try {
    translate_error();
  } catch (...) {
    foreign = std::current_exception();
  }
  grove::exit_reason r = exit_reason_of([foreign] {
    try {
      parse_order("");  // this process's own last throw, caught: its record is of another object
    } catch (const std::invalid_argument&) {
    }
    std::rethrow_exception(foreign);
  });
  CHECK(r.text() == "order rejected");
  CHECK(r.throw_site() == nullptr);
}

TEST_CASE("an exception not derived from std::exception is matched to its throw site by its type") {
  grove_test::log_capture logs;
  grove_test::runtime_fixture rt;
  grove::spawn([] { throw_an_int(); });
  REQUIRE(grove_test::wait_until([&] { return !logs.of(grove::log_kind::crash_report).empty(); }));
  const grove::log_event r = logs.of(grove::log_kind::crash_report)[0];
  CHECK(r.exception_type == "int");
  REQUIRE(!r.throw_site.empty());
  CHECK(shows(r.throw_site, "throw_an_int", 1));
}

TEST_CASE("a process that catches thousands of its own exceptions before it crashes reports the last one") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  grove::exit_reason r = exit_reason_of([] {
    for (int i = 0; i < 5000; ++i) {
      try {
        translate_error();
      } catch (const std::runtime_error&) {
      }
    }
    parse_order("");
  });
  CHECK(r.text() == "empty field");
  REQUIRE(r.throw_site() != nullptr);
  CHECK(shows(*r.throw_site(), "validate_field", 1));
}

TEST_CASE("exits by exit signal and by grove::exit carry no throw site, and record none over an exception's") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  // Killed while it waits, after it caught an exception of its own: the reason is the signal's.
  auto [victim, ref] = grove::spawn_monitor([] {
    try {
      parse_order("");
    } catch (const std::invalid_argument&) {
    }
    grove::receive([](go) {});
  });
  (void)ref;
  grove::exit(victim, grove::exit_reason("told_to"));
  grove::exit_reason killed = grove::receive([](grove::down d) { return d.reason; },
                                             grove::after(patience, [] { return grove::exit_reason("no_down"); }));
  CHECK(killed.text() == "told_to");
  CHECK(killed.throw_site() == nullptr);
  grove::exit_reason exited = exit_reason_of([] { grove::exit(grove::exit_reason("done_here")); });
  CHECK(exited.text() == "done_here");
  CHECK(exited.throw_site() == nullptr);
}

TEST_CASE("a supervised child's crash: the supervisor's report carries the exception's type and throw site") {
  grove_test::log_capture logs;
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  namespace sup = grove::supervisor;
  sup::reset_logger();  // the default: reports go through grove::log
  grove::pid s = sup::start_link({.intensity = 1}, {sup::worker("orders", [] {
                                    grove::receive([](go) {});
                                    parse_order("");
                                  })});
  auto children = sup::which_children(s);
  REQUIRE(children);
  REQUIRE(children->size() == 1);
  grove::send((*children)[0].pid, go{});
  REQUIRE(grove_test::wait_until([&] { return !logs.of(grove::log_kind::supervisor).empty(); }));
  const grove::log_event r = logs.of(grove::log_kind::supervisor)[0];
  CHECK(r.exception_type == "std::invalid_argument");
  REQUIRE(!r.throw_site.empty());
  CHECK(shows(r.throw_site, "validate_field", 1));
}
