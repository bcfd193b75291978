// A supervisor that gives up dumps the flight recorder (grove/trace.hpp) when tracing records into
// one with a dump file: the events that led to the give-up, written at once.
#include "support/fixture.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <stdexcept>
#include <string>

#include <grove/supervisor.hpp>

#include "support/log_capture.hpp"

namespace sup = grove::supervisor;
namespace trace = grove::trace;
using grove_test::patience;

namespace {
struct go {};

// Starts a supervisor that gives up at its child's first crash, crashes it, and waits for its exit.
void give_up_once(const std::string& name) {
  sup::flags f{.intensity = 0};
  f.name = name;
  f.logger = sup::logger{};  // quiet: this test reads the runtime's log
  grove::pid s = sup::start_link(f, {sup::worker("w", [] {
                                   grove::receive([](go) {});
                                   throw std::runtime_error("boom");
                                 })});
  auto kids = sup::which_children(s);
  REQUIRE(kids);
  grove::send((*kids)[0].pid, go{});
  grove::receive(grove::when([s](const grove::exit_signal& e) { return e.from == s; }, [](grove::exit_signal) {}),
                 grove::after(patience, [] {}));
}

long file_size(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? static_cast<long>(st.st_size) : -1;
}
}  // namespace

TEST_CASE("a supervisor that gives up dumps the flight recorder, at most once a second") {
  grove_test::log_capture logs;
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  grove::trap_exit(true);
  char path[] = "/tmp/grove-flight-XXXXXX";
  const int fd = ::mkstemp(path);
  REQUIRE(fd >= 0);
  ::close(fd);
  ::unlink(path);
  REQUIRE(!trace::start({.events_per_worker = 4096, .dump_file = path}));
  const auto t_start = std::chrono::steady_clock::now();
  give_up_once("orders");
  REQUIRE(grove_test::wait_until([&] { return !logs.of(grove::log_kind::trace).empty(); }));
  const auto dumps = logs.of(grove::log_kind::trace);
  CHECK(dumps[0].text.find("supervisor orders") != std::string::npos);
  CHECK(dumps[0].text.find(path) != std::string::npos);
  CHECK(file_size(path) > 0);
  // What led there is in the rings: the child's crash.
  const auto events = trace::snapshot();
  CHECK(std::any_of(events.begin(), events.end(), [](const trace::event& e) {
    return e.kind == trace::event_kind::exit && e.detail == "exception: boom";
  }));
  // A second give-up within the second writes nothing more (checked when both came within one
  // second of the start: then the second's try is less than a second after the first dump).
  give_up_once("payments");
  if (std::chrono::steady_clock::now() - t_start < std::chrono::seconds(1))
    CHECK(logs.of(grove::log_kind::trace).size() == 1);
  else
    MESSAGE("the two give-ups took over a second (a loaded machine): the rate limit was not checked");
  trace::stop();
  // Not recording, or no file: nothing.
  CHECK(trace::dump("asked") == 0);
  ::unlink(path);
}

TEST_CASE("a supervisor annotates the trace: each child started, the crash, the give-up") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  grove::trap_exit(true);
  REQUIRE(!trace::start({.kinds = trace::bit(trace::event_kind::annotation)}));
  give_up_once("payments");
  std::vector<std::string> texts;
  for (const trace::event& e : trace::snapshot())
    if (e.kind == trace::event_kind::annotation) texts.push_back(e.detail);
  trace::stop();
  auto index_of = [&](std::string_view needle) {
    for (std::size_t i = 0; i < texts.size(); ++i)
      if (texts[i].find(needle) != std::string::npos) return static_cast<long>(i);
    return -1L;
  };
  const long started = index_of("supervisor: started w ");
  const long crashed = index_of("supervisor: child_crashed w ");
  const long gave_up = index_of("supervisor: gave_up w ");
  REQUIRE(started >= 0);
  REQUIRE(crashed > started);
  REQUIRE(gave_up >= crashed);
  CHECK(texts[static_cast<std::size_t>(crashed)].find("boom") != std::string::npos);
}
