// grove/trace.hpp: what the trace records, that it reads the same while recording goes on, and
// that a call that timed out can be read from it. The Perfetto file itself: protoc --decode_raw here,
// and tests/trace/check_environment.cmake for GROVE_TRACE.
#include "support/fixture.hpp"
#include "support/log_capture.hpp"
#include "support/protoc.hpp"

#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

using namespace std::chrono_literals;
using grove_test::patience;
namespace trace = grove::trace;

namespace {

struct request {
  grove::pid from;
};
struct reply {};
struct timed_out {};
struct go {};

std::vector<trace::event> of_kind(const std::vector<trace::event>& all, trace::event_kind k) {
  std::vector<trace::event> out;
  for (const auto& e : all)
    if (e.kind == k) out.push_back(e);
  return out;
}

bool type_is(const trace::event& e, const char* needle) {
  return e.message_type && std::string(e.message_type).find(needle) != std::string::npos;
}

}  // namespace

TEST_CASE("a call that timed out reads in the trace: the request into the busy server, the caller's timeout, the late reply") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  const grove::pid self = me.pid();
  REQUIRE(!trace::start());
  std::atomic<bool> may_reply{false};
  // The server computes until told it is late, yielding every millisecond so that a single worker
  // still runs the caller (Grove does not preempt).
  grove::pid server = grove::spawn([&may_reply] {
    grove::register_name("slow_server", grove::self());
    grove::receive([&](request r) {
      while (!may_reply.load(std::memory_order_relaxed)) {
        const auto until = std::chrono::steady_clock::now() + 1ms;
        while (std::chrono::steady_clock::now() < until) {
        }
        grove::yield();
      }
      grove::send(r.from, reply{});
    });
    grove::receive([](go) {});  // alive until the trace is written: its track is named by its name
  });
  grove::pid client = grove::spawn([server, self] {
    grove::send(server, request{grove::self()});
    const bool answered = grove::receive([](reply) { return true; }, grove::after(50ms, [] { return false; }));
    grove::send(self, answered ? go{} : go{});
    if (!answered) {
      grove::send(self, timed_out{});
      grove::receive([](reply) {});  // the late reply, taken so that its arrow ends here
    }
  });
  grove::receive([](go) {});
  REQUIRE(grove::receive([](timed_out) { return true; }, grove::after(patience, [] { return false; })));
  may_reply = true;
  auto ref = grove::monitor(client);
  grove::receive(grove::when([ref](const grove::down& d) { return d.ref == ref; }, [](grove::down) {}));
  const auto events = trace::snapshot();
  trace::stop();

  auto sends = of_kind(events, trace::event_kind::send);
  auto receives = of_kind(events, trace::event_kind::receive);
  auto req = std::find_if(sends.begin(), sends.end(), [&](const trace::event& e) { return e.process == client && e.other == server && type_is(e, "request"); });
  REQUIRE(req != sends.end());
  CHECK(req->message_id != 0);
  auto taken = std::find_if(receives.begin(), receives.end(), [&](const trace::event& e) { return e.message_id == req->message_id; });
  REQUIRE(taken != receives.end());
  CHECK(taken->process == server);
  auto timeouts = of_kind(events, trace::event_kind::receive_timeout);
  auto timeout = std::find_if(timeouts.begin(), timeouts.end(), [&](const trace::event& e) { return e.process == client; });
  REQUIRE(timeout != timeouts.end());
  CHECK(timeout->time_ns >= req->time_ns + 50'000'000);  // never early
  auto rep = std::find_if(sends.begin(), sends.end(), [&](const trace::event& e) { return e.process == server && type_is(e, "reply"); });
  REQUIRE(rep != sends.end());
  CHECK(rep->time_ns > timeout->time_ns);  // late
  auto late = std::find_if(receives.begin(), receives.end(), [&](const trace::event& e) { return e.message_id == rep->message_id; });
  REQUIRE(late != receives.end());
  CHECK(late->process == client);
  // Busy meanwhile: the server ran between taking the request and replying.
  const auto runs = of_kind(events, trace::event_kind::run_begin);
  CHECK(std::count_if(runs.begin(), runs.end(), [&](const trace::event& e) {
          return e.process == server && e.time_ns > taken->time_ns && e.time_ns < rep->time_ns;
        }) >= 1);
  auto exits = of_kind(events, trace::event_kind::exit);
  CHECK(std::any_of(exits.begin(), exits.end(), [&](const trace::event& e) { return e.process == client && e.detail == "normal"; }));
  auto ends = of_kind(events, trace::event_kind::run_end);
  CHECK(std::any_of(ends.begin(), ends.end(), [&](const trace::event& e) { return e.process == client && e.detail == "wait: receive"; }));
  // Times are in order.
  CHECK(std::is_sorted(events.begin(), events.end(), [](const auto& a, const auto& b) { return a.time_ns < b.time_ns; }));

  // The same as a Perfetto file: tracks for the workers and the processes, the slices, the arrows.
  char path[] = "/tmp/grove-trace-XXXXXX";
  const int fd = ::mkstemp(path);
  REQUIRE(fd >= 0);
  ::close(fd);
  auto written = trace::write_perfetto(path);
  REQUIRE(written);
  CHECK(*written >= events.size());  // the server records on meanwhile (it yields every millisecond)
  grove::send(server, go{});
  const std::string text = grove_test::protoc_decode_raw_file(path);
  ::unlink(path);
  CHECK(text.find("\"grove worker 0\"") != std::string::npos);
  CHECK(text.find(fmt::format("\"{} slow_server\"", server)) != std::string::npos);  // its track, by name
  CHECK(text.find("\"receive timed out\"") != std::string::npos);
  CHECK(text.find("\"wait: receive\"") != std::string::npos);
  CHECK(text.find("47: ") != std::string::npos);  // TrackEvent.flow_ids
  CHECK(text.find("48: ") != std::string::npos);  // TrackEvent.terminating_flow_ids
}

TEST_CASE("the flight recorder keeps the newest events of each worker") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  REQUIRE(!trace::start({.events_per_worker = 64}));
  const grove::pid self = me.pid();
  grove::pid p = grove::spawn([self] {
    for (int i = 0; i < 5000; ++i) {
      grove::send(grove::self(), i);
      grove::receive([](int) {});
    }
    grove::send(self, go{});
  });
  grove::receive([](go) {});
  auto ref = grove::monitor(p);
  grove::receive([](grove::down) {});
  (void)ref;
  const auto events = trace::snapshot();
  CHECK(events.size() <= 64 * (grove_test::test_workers() + 1));
  // The newest are there: the process's exit, after its 10,000 sends and receives.
  CHECK(std::any_of(events.begin(), events.end(), [&](const trace::event& e) { return e.kind == trace::event_kind::exit && e.process == p; }));
  trace::stop();
}

TEST_CASE("stop keeps what was recorded and records nothing more; kinds select what is recorded") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  CHECK_FALSE(trace::is_recording());
  REQUIRE(!trace::start({.kinds = trace::bit(trace::event_kind::send)}));
  CHECK(trace::is_recording());
  grove::send(me.pid(), 1);
  grove::receive([](int) {});
  grove::pid p = grove::spawn([] {});
  (void)p;
  trace::stop();
  CHECK_FALSE(trace::is_recording());
  const auto events = trace::snapshot();
  REQUIRE(events.size() == 1);
  CHECK(events[0].kind == trace::event_kind::send);
  CHECK(events[0].worker == -1);  // sent from this thread, not a worker
  CHECK(events[0].process == me.pid());
  grove::send(me.pid(), 2);
  grove::receive([](int) {});
  CHECK(trace::snapshot().size() == 1);
}

TEST_CASE("reading the rings while every worker records gives whole events: each paired receive is its send's receiver's") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  REQUIRE(!trace::start({.events_per_worker = 256}));
  std::atomic<bool> stop{false};
  const grove::pid self = me.pid();
  const unsigned pairs = grove_test::test_workers() + 1;
  for (unsigned i = 0; i < pairs; ++i) {
    grove::pid echo = grove::spawn([&stop] {
      while (!stop.load(std::memory_order_relaxed))
        grove::receive([](request r) { grove::send(r.from, reply{}); }, grove::after(10ms, [] {}));
    });
    grove::spawn([echo, &stop, self] {
      while (!stop.load(std::memory_order_relaxed)) {
        grove::send(echo, request{grove::self()});
        grove::receive([](reply) {}, grove::after(10ms, [] {}));  // the echo may have stopped first
      }
      grove::send(self, go{});
    });
  }
  std::size_t seen = 0, paired = 0;
  const auto give_up_at = std::chrono::steady_clock::now() + patience;
  for (int round = 0; round < 50 || (paired == 0 && std::chrono::steady_clock::now() < give_up_at); ++round) {
    const auto events = trace::snapshot();
    seen += events.size();
    // A torn slot (words of two events) or a wrong pairing shows as a receive by another process
    // than the one its send went to, or of another type, or as a pid no process here has.
    std::unordered_map<std::uint64_t, const trace::event*> sent;
    for (const auto& e : events) {
      CHECK(static_cast<unsigned>(e.kind) <= static_cast<unsigned>(trace::event_kind::io_wait));
      CHECK(e.worker < static_cast<int>(grove_test::test_workers()));
      if (e.kind == trace::event_kind::send) {
        CHECK((type_is(e, "request") || type_is(e, "reply") || type_is(e, "go")));
        sent[e.message_id] = &e;
      }
      if (e.kind == trace::event_kind::receive && e.message_id != 0) {
        auto it = sent.find(e.message_id);
        REQUIRE(it != sent.end());
        CHECK(it->second->other == e.process);
        CHECK(std::string(it->second->message_type) == e.message_type);
        ++paired;
      }
    }
  }
  CHECK(seen > 0);
  CHECK(paired > 0);
  stop = true;
  for (unsigned i = 0; i < pairs; ++i) grove::receive([](go) {});
  trace::stop();
}

namespace {

const trace::event* find_event(const std::vector<trace::event>& all, trace::event_kind k, grove::pid process, grove::pid other) {
  for (const auto& e : all)
    if (e.kind == k && e.process == process && e.other == other) return &e;
  return nullptr;
}

}  // namespace

TEST_CASE("links, monitors, downs and exit signals are recorded, each exit signal with what its receiver did") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  const grove::pid self = me.pid();
  grove::trap_exit(true);
  REQUIRE(!trace::start());
  // crasher exits with a reason of its own when told; bystander is linked to it and does not trap
  // exits; calm is linked to quiet, which exits normally (the signal is ignored).
  grove::pid crasher = grove::spawn([] {
    grove::receive([](go) {});
    grove::exit(grove::exit_reason("disk_full"));
  });
  grove::pid bystander = grove::spawn([crasher, self] {
    grove::link(crasher);
    grove::send(self, go{});
    grove::receive([](request) {});  // never comes: it dies by the signal
  });
  grove::pid quiet = grove::spawn([] { grove::receive([](go) {}); });
  grove::pid calm = grove::spawn([quiet, self] {
    grove::link(quiet);
    grove::send(self, go{});
    grove::receive([self](go) { grove::send(self, reply{}); });  // after quiet's exit signal: acted on
    grove::receive([](request) {});  // never comes: it is killed
  });
  REQUIRE(grove::receive([](go) { return true; }, grove::after(patience, [] { return false; })));
  REQUIRE(grove::receive([](go) { return true; }, grove::after(patience, [] { return false; })));
  grove::link(crasher);
  (void)grove::monitor(crasher);
  (void)grove::monitor(bystander);
  (void)grove::monitor(calm);
  (void)grove::monitor(quiet);
  grove::send(crasher, go{});
  grove::send(quiet, go{});
  // The crash reaches us trapped, and as a down; bystander dies of it.
  std::string trapped;
  REQUIRE(grove::receive(grove::when([crasher](const grove::exit_signal& e) { return e.from == crasher; },
                                     [&](grove::exit_signal e) { trapped = e.reason.to_string(); return true; }),
                         grove::after(patience, [] { return false; })));
  CHECK(trapped.find("disk_full") != std::string::npos);
  auto down_of = [](grove::pid who) {
    return grove::receive(grove::when([who](const grove::down& d) { return d.from == who; }, [](grove::down d) { return d.reason.to_string(); }),
                          grove::after(patience, [] { return std::string("(no down)"); }));
  };
  CHECK(down_of(crasher).find("disk_full") != std::string::npos);
  CHECK(down_of(bystander).find("disk_full") != std::string::npos);
  // calm ignores quiet's normal exit (its exit signal reaches calm before quiet's down reaches us,
  // and before our go); it ends only when killed, directly.
  CHECK(down_of(quiet) == "normal");
  grove::send(calm, go{});
  REQUIRE(grove::receive([](reply) { return true; }, grove::after(patience, [] { return false; })));
  grove::exit(calm, grove::exit_reason::kill());
  CHECK(down_of(calm) == "killed");
  // A link to and a monitor of a process that is gone; an unlink and a demonitor.
  grove::link(crasher);  // dead: trapped as a noproc exit signal
  REQUIRE(grove::receive(grove::when([crasher](const grove::exit_signal& e) { return e.from == crasher; }, [](grove::exit_signal) { return true; }),
                         grove::after(patience, [] { return false; })));
  (void)grove::monitor(crasher);
  CHECK(down_of(crasher) == "noproc");
  grove::pid idle = grove::spawn([] { grove::receive([](go) {}); });
  grove::link(idle);
  grove::unlink(idle);
  const grove::monitor_ref on_idle = grove::monitor(idle);
  CHECK(grove::demonitor(on_idle, true));
  grove::send(idle, go{});

  const std::vector<trace::event> all = trace::snapshot();
  trace::stop();
  using trace::event_kind;
  using trace::signal_outcome;
  const trace::event* e = find_event(all, event_kind::link, bystander, crasher);
  REQUIRE(e);
  CHECK(e->outcome == signal_outcome::none);
  REQUIRE(find_event(all, event_kind::monitor, self, crasher));
  e = find_event(all, event_kind::exit_signal, self, crasher);  // the first: the crash, trapped
  REQUIRE(e);
  CHECK(e->outcome == signal_outcome::trapped);
  CHECK(e->count == 1);  // through a link
  CHECK(e->detail.find("disk_full") != std::string::npos);
  e = find_event(all, event_kind::exit_signal, bystander, crasher);
  REQUIRE(e);
  CHECK(e->outcome == signal_outcome::exits);
  CHECK(e->detail.find("disk_full") != std::string::npos);
  e = find_event(all, event_kind::exit_signal, calm, quiet);
  REQUIRE(e);
  CHECK(e->outcome == signal_outcome::ignored);
  CHECK(e->detail == "normal");
  e = find_event(all, event_kind::exit_signal, calm, self);
  REQUIRE(e);
  CHECK(e->outcome == signal_outcome::exits);
  CHECK(e->count == 0);  // sent directly
  CHECK(e->detail == "kill");
  e = find_event(all, event_kind::down, self, bystander);
  REQUIRE(e);
  CHECK(e->detail.find("disk_full") != std::string::npos);
  // The second link to crasher and the second monitor of it: it was gone.
  int noproc_links = 0, noproc_monitors = 0;
  for (const auto& x : all) {
    if (x.process != self || x.other != crasher) continue;
    if (x.kind == event_kind::link && x.outcome == signal_outcome::noproc) ++noproc_links;
    if (x.kind == event_kind::monitor && x.outcome == signal_outcome::noproc) ++noproc_monitors;
  }
  CHECK(noproc_links == 1);
  CHECK(noproc_monitors == 1);
  CHECK(find_event(all, event_kind::unlink, self, idle));
  CHECK(find_event(all, event_kind::demonitor, self, idle));

  // The Perfetto file shows them on the processes' tracks.
  char path[] = "/tmp/grove-trace-links-XXXXXX";
  const int fd = ::mkstemp(path);
  REQUIRE(fd >= 0);
  ::close(fd);
  REQUIRE(trace::write_perfetto(path));
  const std::string text = grove_test::protoc_decode_raw_file(path);
  ::unlink(path);
  CHECK(text.find("(trapped)") != std::string::npos);
  CHECK(text.find("(ignored)") != std::string::npos);
  CHECK(text.find("(exits)") != std::string::npos);
  CHECK(text.find("DOWN ") != std::string::npos);
  CHECK(text.find(": noproc") != std::string::npos);
}

TEST_CASE("annotations carry their text, from processes and from other threads; a repeated text is kept once") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  REQUIRE(!trace::start());
  CHECK(trace::is_recording(trace::event_kind::annotation));
  for (int i = 0; i < 3; ++i) trace::annotate("checkpoint reached");
  std::thread([] { trace::annotate("from a plain thread"); }).join();
  trace::annotate("");
  const std::vector<trace::event> all = of_kind(trace::snapshot(), trace::event_kind::annotation);
  REQUIRE(all.size() == 5);
  for (int i = 0; i < 3; ++i) {
    CHECK(all[i].detail == "checkpoint reached");
    CHECK(all[i].process == me.pid());
  }
  CHECK(all[3].detail == "from a plain thread");
  CHECK(all[3].process.is_null());
  CHECK(all[3].worker == -1);
  CHECK(all[4].detail.empty());
  // Kept once: past the 65,536 different texts a runtime keeps, a repeated text still comes with
  // every annotation.
  for (int i = 0; i < 70'000; ++i) trace::annotate("checkpoint reached");
  const std::vector<trace::event> many = of_kind(trace::snapshot(), trace::event_kind::annotation);
  REQUIRE(!many.empty());
  CHECK(many.back().detail == "checkpoint reached");
  // Not recorded when its kind is not selected.
  REQUIRE(!trace::start({.kinds = trace::bit(trace::event_kind::send)}));
  CHECK(!trace::is_recording(trace::event_kind::annotation));
  trace::annotate("unseen");
  CHECK(of_kind(trace::snapshot(), trace::event_kind::annotation).empty());
  trace::stop();
}

TEST_CASE("a worker held by a process that never yields has its queue stolen, and the trace shows the steals") {
  if (grove_test::test_workers() < 2) return;  // one worker: nobody to steal
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  REQUIRE(!trace::start({.kinds = trace::bit(trace::event_kind::steal) | trace::bit(trace::event_kind::spawn)}));
  constexpr int children = 64;
  std::atomic<int> ran{0};
  grove::pid spawner = grove::spawn([&] {
    // Its children go to this worker's queue; it computes until they have all run, so every one
    // of them ran on another worker, taken by a steal.
    for (int i = 0; i < children; ++i) grove::spawn([&ran] { ran.fetch_add(1, std::memory_order_relaxed); });
    const auto until = std::chrono::steady_clock::now() + patience;
    while (ran.load(std::memory_order_relaxed) < children && std::chrono::steady_clock::now() < until) {
    }
  });
  REQUIRE(grove_test::wait_until([&] { return ran.load(std::memory_order_relaxed) == children; }));
  const std::vector<trace::event> all = trace::snapshot();
  trace::stop();
  int spawned_on = -1;
  for (const auto& e : all)
    if (e.kind == trace::event_kind::spawn && e.process == spawner) spawned_on = e.worker;
  REQUIRE(spawned_on >= 0);
  std::uint32_t stolen = 0;
  for (const auto& e : of_kind(all, trace::event_kind::steal)) {
    CHECK(e.worker != e.from_worker);
    CHECK(e.count >= 1);
    CHECK(!e.process.is_null());
    if (e.from_worker == spawned_on) stolen += e.count;
  }
  CHECK(stolen >= static_cast<std::uint32_t>(children));
}

TEST_CASE("trace_process records one process's events, and its children's with set_on_spawn; 0 stops it") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  const grove::pid self = me.pid();
  namespace flags = trace::process_flags;
  CHECK(trace::trace_process(self, flags::all) == grove::errc::not_running);  // no start in effect
  REQUIRE(!trace::start({.kinds = 0}));
  CHECK(trace::is_recording());
  std::atomic<std::uint64_t> child_pid{0};  // a local pid's bits()
  // traced waits, is traced, then spawns a child that sends too, sends itself and exits; untraced
  // does the same without flags.
  auto body = [self, &child_pid](bool spawns) {
    return [self, &child_pid, spawns] {
      grove::receive([](go) {});
      if (spawns) {
        grove::pid c = grove::spawn([self] { grove::send(self, reply{}); });
        child_pid.store(c.bits());
      }
      grove::send(self, reply{});
      grove::receive([](go) {});
    };
  };
  grove::pid traced = grove::spawn(body(true));
  grove::pid untraced = grove::spawn(body(false));
  CHECK(trace::trace_process(traced, flags::send | flags::procs | flags::set_on_spawn) == std::error_code{});
  grove::send(traced, go{});
  grove::send(untraced, go{});
  for (int i = 0; i < 3; ++i) REQUIRE(grove::receive([](reply) { return true; }, grove::after(patience, [] { return false; })));
  const grove::pid child = grove::pid::from_bits(child_pid.load());
  // Off for traced: its exit is not recorded; untraced's neither.
  CHECK(trace::trace_process(traced, 0) == std::error_code{});
  const grove::monitor_ref m1 = grove::monitor(traced);
  const grove::monitor_ref m2 = grove::monitor(untraced);
  grove::send(traced, go{});
  grove::send(untraced, go{});
  for (int i = 0; i < 2; ++i) REQUIRE(grove::receive([](grove::down) { return true; }, grove::after(patience, [] { return false; })));
  (void)m1;
  (void)m2;
  CHECK(trace::trace_process(traced, flags::all) == grove::errc::noproc);  // gone
  // The child's reply comes before its exit is recorded: wait for that event (it never comes if
  // the child did not inherit the flags).
  CHECK(grove_test::wait_until([&] {
    for (const auto& e : trace::snapshot())
      if (e.kind == trace::event_kind::exit && e.process == child) return true;
    return false;
  }));
  const std::vector<trace::event> all = trace::snapshot();
  trace::stop();
  int traced_sends = 0, child_sends = 0, child_exits = 0;
  bool spawn_seen = false;
  for (const auto& e : all) {
    CHECK(e.process != untraced);
    CHECK(e.process != self);  // the caller is not traced at all
    CHECK(e.kind != trace::event_kind::run_begin);  // no running flag
    CHECK(e.kind != trace::event_kind::receive);    // no receive flag
    if (e.kind == trace::event_kind::send && e.process == traced) ++traced_sends;
    if (e.kind == trace::event_kind::send && e.process == child) ++child_sends;
    if (e.kind == trace::event_kind::exit && e.process == child) ++child_exits;
    if (e.kind == trace::event_kind::spawn && e.process == traced && e.other == child) spawn_seen = true;
    CHECK(!(e.kind == trace::event_kind::exit && e.process == traced));  // switched off before it
  }
  CHECK(traced_sends == 1);
  CHECK(child_sends == 1);  // inherited
  CHECK(child_exits == 1);
  CHECK(spawn_seen);
}

TEST_CASE("trace_process on a process that is computing applies from its next event") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  REQUIRE(!trace::start({.kinds = 0}));
  std::atomic<bool> go_on{false};
  const grove::pid self = me.pid();
  grove::pid busy = grove::spawn([&go_on, self] {
    while (!go_on.load(std::memory_order_relaxed)) {
    }
    grove::send(self, reply{});
  });
  REQUIRE(grove_test::wait_until([&] {
    auto s = grove::process_summary_of(busy);
    return s && s->status == grove::process_status::running;
  }));
  CHECK(trace::trace_process(busy, trace::process_flags::send | trace::process_flags::procs) == std::error_code{});
  go_on.store(true, std::memory_order_relaxed);
  REQUIRE(grove::receive([](reply) { return true; }, grove::after(patience, [] { return false; })));
  CHECK(grove_test::wait_until([&] {
    bool sent = false, exited = false;
    for (const auto& e : trace::snapshot()) {
      sent = sent || (e.kind == trace::event_kind::send && e.process == busy && e.other == self);
      exited = exited || (e.kind == trace::event_kind::exit && e.process == busy);
    }
    return sent && exited;
  }));
  trace::stop();
}

TEST_CASE("options::dump_signal: the signal dumps the flight recorder; stop puts the signal's old disposition back") {
  grove_test::log_capture logs;
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  struct sigaction before {};
  REQUIRE(::sigaction(SIGUSR2, nullptr, &before) == 0);
  char path[] = "/tmp/grove-signal-dump-XXXXXX";
  const int fd = ::mkstemp(path);
  REQUIRE(fd >= 0);
  ::close(fd);
  ::unlink(path);
  REQUIRE(!trace::start({.dump_file = path, .dump_signal = SIGUSR2}));
  struct sigaction during {};
  REQUIRE(::sigaction(SIGUSR2, nullptr, &during) == 0);
  const bool replaced = during.sa_handler != before.sa_handler;
  CHECK(replaced);
  grove::send(me.pid(), go{});
  REQUIRE(grove::receive([](go) { return true; }, grove::after(patience, [] { return false; })));
  REQUIRE(::kill(::getpid(), SIGUSR2) == 0);
  REQUIRE(grove_test::wait_until([&] { return !logs.of(grove::log_kind::trace).empty(); }));
  const auto dumps = logs.of(grove::log_kind::trace);
  CHECK(dumps[0].text.find("signal") != std::string::npos);
  CHECK(dumps[0].text.find(path) != std::string::npos);
  const std::string text = grove_test::protoc_decode_raw_file(path);
  ::unlink(path);
  CHECK(text.find("\"other threads\"") != std::string::npos);
  CHECK(text.find("receive ") != std::string::npos);  // our receive of go
  trace::stop();
  struct sigaction after {};
  REQUIRE(::sigaction(SIGUSR2, nullptr, &after) == 0);
  const bool restored = after.sa_handler == before.sa_handler;
  CHECK(restored);
  // A signal that cannot be caught is refused, and nothing is started.
  CHECK(trace::start({.dump_signal = SIGKILL}) == grove::errc::bad_argument);
  CHECK(!trace::is_recording());
}

TEST_CASE("wakes say who or what made a process runnable; send_after's fire pairs with its receive; IO waits name the fd; receives carry the mailbox length") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  const grove::pid self = me.pid();
  REQUIRE(!trace::start());
  struct ping {};
  int fds[2];
  REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds) == 0);
  // waiter: woken by our message. sleeper: by its timer. reader: by its fd. blocker: by its
  // blocking call's end. ticked: by a send_after timer's message. counter: takes in three requests
  // before the go it waits for, then the requests.
  grove::pid waiter = grove::spawn([self] {
    grove::receive([](go) {});
    grove::send(self, reply{});
  });
  grove::pid sleeper = grove::spawn([self] {
    grove::sleep_for(100ms);  // parked long before: its timer wakes it
    grove::send(self, reply{});
  });
  const int read_end = fds[0];
  grove::pid reader = grove::spawn([self, read_end] {
    grove::send(self, go{});
    const std::error_code ec = grove::io::wait_readable(read_end, patience);
    grove::send(self, ec ? timed_out{} : timed_out{});
    grove::send(self, reply{});
  });
  grove::pid blocker = grove::spawn([self] {
    const grove::pid me = grove::self();
    grove::run_blocking([me] {  // ends once its caller is parked: its end is what wakes it
      grove_test::wait_until([me] {
        auto s = grove::process_summary_of(me);
        return s && s->status == grove::process_status::waiting;
      });
    });
    grove::send(self, reply{});
  });
  grove::pid ticked = grove::spawn([self] {
    grove::receive([](ping) {});
    grove::send(self, reply{});
  });
  grove::pid counter = grove::spawn([self] {
    grove::receive([](go) {});
    for (int i = 0; i < 3; ++i) grove::receive([](request) {});
    grove::send(self, reply{});
  });
  for (int i = 0; i < 3; ++i) grove::send(counter, request{self});
  grove::send(counter, go{});
  grove::receive([](go) {});  // the reader is about to wait: the byte may come before its wait, or after
  // The waiter parked in receive before our message, or our message came first and there is no
  // wake to record: wait until it is seen waiting (introspection, never asking it).
  REQUIRE(grove_test::wait_until([&] {
    auto s = grove::process_summary_of(waiter);
    auto r = grove::process_summary_of(reader);
    auto t = grove::process_summary_of(ticked);
    return s && s->status == grove::process_status::waiting && r && r->status == grove::process_status::waiting && t &&
           t->status == grove::process_status::waiting;
  }));
  grove::send_after(ticked, ping{}, 1ms);
  grove::send(waiter, go{});
  REQUIRE(::write(fds[1], "x", 1) == 1);
  for (int i = 0; i < 6; ++i) REQUIRE(grove::receive([](reply) { return true; }, grove::after(patience, [] { return false; })));
  REQUIRE(grove::receive([](timed_out) { return true; }, grove::after(patience, [] { return false; })));
  const auto events = trace::snapshot();
  trace::stop();
  ::close(fds[0]);
  ::close(fds[1]);

  const auto wakes = of_kind(events, trace::event_kind::wake);
  auto woken = [&](grove::pid p, trace::wake_cause c) {
    return std::find_if(wakes.begin(), wakes.end(), [&](const trace::event& e) { return e.process == p && e.cause == c; });
  };
  auto w = woken(waiter, trace::wake_cause::message);
  REQUIRE(w != wakes.end());
  CHECK(w->other == self);  // by whom
  w = woken(sleeper, trace::wake_cause::timeout);
  REQUIRE(w != wakes.end());
  CHECK(w->other.is_null());  // a timer wakes it, no process
  CHECK(woken(reader, trace::wake_cause::io) != wakes.end());
  CHECK(woken(blocker, trace::wake_cause::blocking_call) != wakes.end());
  // The timer's message: fired for ticked, with its type, paired with ticked's receive of it.
  const auto fires = of_kind(events, trace::event_kind::timer_fire);
  auto fire = std::find_if(fires.begin(), fires.end(), [&](const trace::event& e) { return e.process == ticked; });
  REQUIRE(fire != fires.end());
  CHECK(type_is(*fire, "ping"));
  REQUIRE(fire->message_id != 0);
  const auto receives = of_kind(events, trace::event_kind::receive);
  auto got = std::find_if(receives.begin(), receives.end(), [&](const trace::event& e) { return e.message_id == fire->message_id; });
  REQUIRE(got != receives.end());
  CHECK(got->process == ticked);
  CHECK(got->time_ns >= fire->time_ns);
  CHECK(woken(ticked, trace::wake_cause::message) != wakes.end());
  // The IO wait names its fd and direction.
  const auto io_waits = of_kind(events, trace::event_kind::io_wait);
  auto iw = std::find_if(io_waits.begin(), io_waits.end(), [&](const trace::event& e) { return e.process == reader; });
  REQUIRE(iw != io_waits.end());
  CHECK(iw->count == static_cast<std::uint32_t>(read_end));
  CHECK(iw->detail == "readable");
  // counter took in the three requests before its go: the go passed over them and left them
  // queued, then each request left one fewer.
  std::vector<std::uint32_t> queued;
  for (const auto& e : receives)
    if (e.process == counter) queued.push_back(e.queued);
  CHECK(queued == std::vector<std::uint32_t>{3, 2, 1, 0});
  CHECK(std::none_of(wakes.begin(), wakes.end(), [](const trace::event& e) { return e.process.is_null(); }));

  char path[] = "/tmp/grove-trace-XXXXXX";
  const int fd = ::mkstemp(path);
  REQUIRE(fd >= 0);
  ::close(fd);
  REQUIRE(trace::write_perfetto(path));
  const std::string text = grove_test::protoc_decode_raw_file(path);
  ::unlink(path);
  CHECK(text.find(fmt::format("\"woken by {} (message)\"", self)) != std::string::npos);
  CHECK(text.find("\"woken (timeout)\"") != std::string::npos);
  CHECK(text.find("\"woken (io)\"") != std::string::npos);
  CHECK(text.find(fmt::format("\"io wait: fd {} readable\"", read_end)) != std::string::npos);
  CHECK(text.find("\"timer fired: ") != std::string::npos);
  CHECK(text.find(fmt::format("\"mailbox {}\"", counter)) != std::string::npos);  // its counter track
}

TEST_CASE("event times are CLOCK_MONOTONIC nanoseconds, whatever the trace clock (GROVE_TRACE_CLOCK)") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  REQUIRE(!trace::start({.kinds = trace::bit(trace::event_kind::annotation)}));
  auto now = [] {
    return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                          std::chrono::steady_clock::now().time_since_epoch())
                                          .count());
  };
  const std::uint64_t before_first = now();
  trace::annotate("first");
  const std::uint64_t after_first = now();
  std::this_thread::sleep_for(30ms);  // the quantity measured, not a synchronisation
  const std::uint64_t before_second = now();
  trace::annotate("second");
  const std::uint64_t after_second = now();
  const auto marks = of_kind(trace::snapshot(), trace::event_kind::annotation);
  trace::stop();
  REQUIRE(marks.size() == 2);
  // Between the clock reads around each, give or take 1 ms (ticks left unconverted, or converted
  // at the wrong rate, are off by far more: the TSC runs at GHz, and 30 ms apart).
  constexpr std::uint64_t slack = 1'000'000;
  CHECK(marks[0].time_ns + slack >= before_first);
  CHECK(marks[0].time_ns <= after_first + slack);
  CHECK(marks[1].time_ns + slack >= before_second);
  CHECK(marks[1].time_ns <= after_second + slack);
}

TEST_CASE("tracing without a runtime is refused") {
  CHECK(trace::start() == grove::errc::not_running);
  CHECK(trace::snapshot().empty());
  CHECK(trace::write_perfetto("/tmp/never-written").error() == grove::errc::not_running);
}
