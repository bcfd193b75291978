// process_info and system_info.
#include "support/fixture.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <string>
#include <vector>

#include <memory_resource>

#include <grove/arena.hpp>
#include <grove/blocking.hpp>
#include <grove/net.hpp>

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
  CHECK(info->answered);
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

namespace {
// A named frame for the stack trace of a parked process to show; noinline: it keeps its frame.
[[gnu::noinline]] void wait_for_orders(grove::pid parent) {
  grove::send(parent, go{});
  grove::receive([](go) {});
  asm volatile("");  // not a tail call
}
[[gnu::noinline]] std::string describe_myself() {
  auto info = grove::process_info(grove::self());
  asm volatile("");
  return info && !info->stacktrace.empty() ? grove::stack_trace::function_name(info->stacktrace.frames()[0]) : "";
}
}  // namespace

TEST_CASE("process_info of a parked process shows where it waits: the receive and every caller up to its function") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  const grove::pid self = me.pid();
  grove::pid p = grove::spawn([self] { wait_for_orders(self); });
  grove::receive([](go) {});
  REQUIRE(grove_test::wait_until([&] {
    auto s = grove::process_summary_of(p);
    return s && s->waiting_on == grove::wait_reason::receive;
  }));
  auto info = grove::process_info(p);
  REQUIRE(info);
  CHECK(info->answered);
  REQUIRE(!info->stacktrace.empty());
  const std::string text = info->stacktrace.to_string();
  CHECK(text.find("wait_for_orders") != std::string::npos);
  // The call that parks it (grove::receive, a template: its out-of-line part), above its caller.
  CHECK(text.find("grove::detail::receive") != std::string::npos);
  CHECK(text.find("grove::detail::receive") < text.find("wait_for_orders"));
  // It starts at that call: none of the machinery that took the request and answered it.
  CHECK(grove::stack_trace::function_name(info->stacktrace.frames()[0]).find("grove::detail::receive") != std::string::npos);
  for (const char* machinery : {"answer_info", "drain_inbox", "handle_signal", "details_of"})
    CHECK_MESSAGE(text.find(machinery) == std::string::npos, machinery);
  // It still waits, and goes on when told.
  auto ref = grove::monitor(p);
  grove::send(p, go{});
  auto d = grove::receive([](grove::down d) { return d; });
  CHECK(d.ref == ref);
  CHECK(d.reason.is_normal());
}

TEST_CASE("process_info of itself: the stack trace starts at the caller of process_info") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  const grove::pid self = me.pid();
  grove::spawn([self] { grove::send(self, describe_myself()); });
  const std::string first = grove::receive([](std::string s) { return s; });
  CHECK(first.find("describe_myself") != std::string::npos);
}

// ---- Published summaries: answers that never wait for the process ----

namespace {
grove::process_status status_of(grove::pid p) {
  auto s = grove::process_summary_of(p);
  REQUIRE(s);
  return s->status;
}
}  // namespace

TEST_CASE("a process computing without runtime calls is described as running; one queued behind it as runnable") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  const grove::pid self = me.pid();
  const unsigned workers = grove_test::test_workers();
  std::atomic<bool> stop{false};
  std::vector<grove::pid> spinners;
  for (unsigned i = 0; i < workers; ++i)
    spinners.push_back(grove::spawn([&stop, self] {
      grove::send(self, go{});
      while (!stop.load(std::memory_order_relaxed)) {  // never reaches a runtime call
      }
    }));
  for (unsigned i = 0; i < workers; ++i) grove::receive([](go) {});
  // Every worker is now held by a spinner: each is running, and a new process must wait its turn.
  REQUIRE(grove_test::wait_until([&] {
    return std::all_of(spinners.begin(), spinners.end(), [](grove::pid p) { return status_of(p) == grove::process_status::running; });
  }));
  const grove::pid queued = grove::spawn([self] { grove::send(self, go{}); });
  CHECK(status_of(queued) == grove::process_status::runnable);
  // process_info cannot be answered by a spinner: it describes it from what it publishes.
  auto info = grove::process_info(spinners[0], 100ms);
  REQUIRE(info);
  CHECK_FALSE(info->answered);
  CHECK(info->stacktrace.empty());  // only a process that answers says where it stands
  CHECK(info->pid == spinners[0]);
  CHECK(info->status == grove::process_status::running);
  CHECK(info->reductions >= 1);  // its send
  auto s = grove::process_summary_of(spinners[0]);
  REQUIRE(s);
  CHECK(s->waiting_on == grove::wait_reason::none);
  CHECK_FALSE(s->scoped);
  std::vector<grove::monitor_ref> refs;
  for (grove::pid p : spinners) refs.push_back(grove::monitor(p));
  stop = true;
  CHECK(grove::receive([](go) { return true; }, grove::after(patience, [] { return false; })));  // queued ran
  for (std::size_t i = 0; i < refs.size(); ++i) grove::receive([](grove::down) {});
  // Dead: no summary, no details.
  CHECK_FALSE(grove::process_summary_of(spinners[0]).has_value());
  CHECK_FALSE(grove::process_info(spinners[0], 100ms).has_value());
  auto mine = grove::process_summary_of(self);
  REQUIRE(mine);
  CHECK(mine->scoped);
  CHECK(mine->status == grove::process_status::running);
}

TEST_CASE("summaries say what a waiting process waits on") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  const grove::pid self = me.pid();
  const grove::pid receiver = grove::spawn([] { grove::receive([](go) {}); });
  const grove::pid sleeper = grove::spawn([] { grove::sleep_for(std::chrono::hours(1)); });
  auto l = grove::net::listener::listen(grove::net::address::loopback(0));
  REQUIRE(l);
  const grove::pid acceptor = grove::spawn([&l] { (void)l->accept(); });
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  const grove::pid blocker = grove::spawn([&fds, self] {
    char b = 0;
    const auto n = grove::run_blocking([&] { return ::read(fds[0], &b, 1); });
    grove::send(self, static_cast<int>(n));
  });
  auto waits_on = [](grove::pid p, grove::wait_reason why) {
    return grove_test::wait_until([&] {
      auto s = grove::process_summary_of(p);
      return s && s->status == grove::process_status::waiting && s->waiting_on == why;
    });
  };
  CHECK(waits_on(receiver, grove::wait_reason::receive));
  CHECK(waits_on(sleeper, grove::wait_reason::sleep));
  CHECK(waits_on(acceptor, grove::wait_reason::io));
  CHECK(waits_on(blocker, grove::wait_reason::blocking_call));
  CHECK(std::string(grove::to_string(grove::wait_reason::blocking_call)) == "blocking_call");
  CHECK(std::string(grove::to_string(grove::process_status::runnable)) == "runnable");
  // process_info of a waiting receiver is its own answer; of the blocked one, its summary.
  auto answered = grove::process_info(receiver);
  REQUIRE(answered);
  CHECK(answered->answered);
  auto blocked = grove::process_info(blocker, 100ms);
  REQUIRE(blocked);
  CHECK_FALSE(blocked->answered);
  CHECK(blocked->waiting_on == grove::wait_reason::blocking_call);
  REQUIRE(::write(fds[1], "x", 1) == 1);
  CHECK(grove::receive([](int n) { return n; }, grove::after(patience, [] { return -1; })) == 1);
  std::vector<grove::monitor_ref> refs;
  for (grove::pid p : {receiver, sleeper, acceptor}) {
    refs.push_back(grove::monitor(p));
    grove::exit(p, grove::exit_reason::kill());
  }
  for (std::size_t i = 0; i < refs.size(); ++i) grove::receive([](grove::down) {});
  ::close(fds[0]);
  ::close(fds[1]);
}

TEST_CASE("top_processes finds the longest mailboxes, the most reductions and the deepest stacks without asking") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  const grove::pid self = me.pid();
  constexpr int count = 40;
  std::vector<grove::pid> ps;
  for (int k = 0; k < count; ++k) ps.push_back(grove::spawn([] { grove::receive([](go) {}); }));
  for (int k = 0; k < count; ++k)
    for (int m = 0; m < k; ++m) grove::send(ps[static_cast<std::size_t>(k)], m);  // ints nobody receives
  grove::register_name("longest", ps.back());
  // The saved queues fill as each process takes its mail in; wait until the top three settle.
  std::vector<grove::process_summary> top;
  CHECK(grove_test::wait_until([&] {
    top = grove::top_processes(3, grove::process_order::mailbox_length);
    return top.size() == 3 && top[0].mailbox_length == count - 1 && top[1].mailbox_length == count - 2 &&
           top[2].mailbox_length == count - 3;
  }));
  REQUIRE(top.size() == 3);
  CHECK(top[0].pid == ps[count - 1]);
  CHECK(top[0].registered_name == "longest");
  CHECK(top[1].pid == ps[count - 2]);
  CHECK(top[2].pid == ps[count - 3]);
  // Reductions: a process that has sent 5,000 messages (to the null pid: dead letters) leads.
  const grove::pid sender = grove::spawn([self] {
    for (int i = 0; i < 5000; ++i) grove::send(grove::pid(), i);
    grove::send(self, go{});
    grove::receive([](go) {});
  });
  grove::receive([](go) {});
  auto by_reductions = grove::top_processes(1, grove::process_order::reductions);
  REQUIRE(by_reductions.size() == 1);
  CHECK(by_reductions[0].pid == sender);
  CHECK(by_reductions[0].reductions >= 5000);
  // Stacks: a process parked under a 32 KiB frame.
  const grove::pid deep = grove::spawn([self] {
    volatile char frame[32 * 1024];
    frame[0] = 1;
    grove::send(self, go{});
    grove::receive([](go) {});
    frame[sizeof frame - 1] = frame[0];
  });
  grove::receive([](go) {});
  CHECK(grove_test::wait_until([&] {
    auto t = grove::top_processes(1, grove::process_order::stack_bytes);
    return t.size() == 1 && t[0].pid == deep && t[0].stack_bytes >= 32 * 1024;
  }));
  // processes(): all of them, this scoped_process included; none once they are gone.
  ps.push_back(sender);
  ps.push_back(deep);
  auto all = grove::processes();
  CHECK(all.size() == ps.size() + 1);
  for (grove::pid p : ps) CHECK(std::find(all.begin(), all.end(), p) != all.end());
  CHECK(std::find(all.begin(), all.end(), self) != all.end());
  CHECK(grove::top_processes(0, grove::process_order::reductions).empty());
  CHECK(grove::top_processes(1000, grove::process_order::reductions).size() == ps.size() + 1);
  std::vector<grove::monitor_ref> refs;
  for (grove::pid p : ps) {
    refs.push_back(grove::monitor(p));
    grove::send(p, go{});
  }
  for (std::size_t i = 0; i < refs.size(); ++i) grove::receive([](grove::down) {});
  CHECK(grove::processes() == std::vector<grove::pid>{self});
}

TEST_CASE("an answer that comes after process_info gave up does not stay behind in the asker's mailbox") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  const grove::pid self = me.pid();
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  struct asked {};
  // In a blocking call the target cannot answer; it does when the call returns, then tells the
  // asker (after the answer: one sender, one receiver, in order).
  const grove::pid target = grove::spawn([&fds] {
    const grove::pid asker = grove::receive([](grove::pid p) { return p; });
    char b = 0;
    (void)grove::run_blocking([&] { return ::read(fds[0], &b, 1); });
    grove::send(asker, go{});  // its runtime call takes the pending request in first: the late answer
    grove::receive([](go) {});
  });
  const grove::pid asker = grove::spawn([self, target] {
    grove::send(target, grove::self());
    REQUIRE(grove_test::wait_until([&] {
      auto s = grove::process_summary_of(target);
      return s && s->waiting_on == grove::wait_reason::blocking_call;
    }));
    auto info = grove::process_info(target, 100ms);
    const bool described = info && !info->answered;
    grove::send(self, asked{});
    grove::receive([](go) {});                           // the target is back: its answer came before
    grove::receive([](asked) {}, grove::after(0ms, [] {}));  // take in whatever has arrived
    grove::send(self, described && grove::process_info(grove::self())->mailbox_length == 0);
  });
  grove::receive([](asked) {});
  REQUIRE(::write(fds[1], "x", 1) == 1);
  CHECK(grove::receive([](bool ok) { return ok; }, grove::after(patience, [] { return false; })));
  auto m = grove::monitor(target);
  grove::send(target, go{});
  grove::receive([&](const grove::down& d) { CHECK(d.ref == m); });
  (void)asker;
  ::close(fds[0]);
  ::close(fds[1]);
}

TEST_CASE("Grove's enumerations print by name with fmt") {
  CHECK(fmt::format("{}", grove::errc::noproc) == "noproc");
  CHECK(fmt::format("[{:>8}]", grove::errc::timeout) == "[ timeout]");  // the string options apply
  CHECK(fmt::format("{}", grove::process_status::waiting) == "waiting");
  CHECK(fmt::format("{}", grove::wait_reason::io) == "io");
  CHECK(fmt::format("{}", grove::log_kind::unmatched_mail) == "unmatched_mail");
  CHECK(fmt::format("{}", grove::log_level::warning) == "warning");
  CHECK(fmt::format("{}", grove::trace::event_kind::exit_signal) == "exit_signal");
  CHECK(fmt::format("{}", grove::trace::signal_outcome::trapped) == "trapped");
  CHECK(fmt::format("{}", grove::trace::wake_cause::blocking_call) == "blocking_call");
  for (unsigned k = 0; k <= static_cast<unsigned>(grove::trace::event_kind::io_wait); ++k)
    CHECK(std::string(grove::trace::to_string(static_cast<grove::trace::event_kind>(k))) != "unknown");
  for (unsigned k = 0; k <= static_cast<unsigned>(grove::trace::wake_cause::blocking_call); ++k)
    CHECK(std::string(grove::trace::to_string(static_cast<grove::trace::wake_cause>(k))) != "unknown");
  // exit_reason too, with the string options (this file includes no fmt/format.h: it links all the same)
  CHECK(fmt::format("[{:>8}] [{:.4}]", grove::exit_reason::killed(), grove::exit_reason::shutdown()) == "[  killed] [shut]");
  // Every errc has a name of its own, distinct from its sentence.
  for (int e = static_cast<int>(grove::errc::process_limit); e <= static_cast<int>(grove::errc::end_of_file); ++e) {
    const auto code = static_cast<grove::errc>(e);
    CHECK(std::string(grove::to_string(code)) != "unknown");
    CHECK(std::string(grove::to_string(code)) != grove::make_error_code(code).message());
  }
}

namespace {
struct counted_request {
  grove::pid from;
};
struct counted_reply {};
}  // namespace

TEST_CASE("system_info counts the reductions of the processes workers ran, a process that never parks included") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  const std::uint64_t before = grove::system_info().reductions;
  grove::pid echo = grove::spawn([] {
    for (;;) grove::receive([](counted_request r) { grove::send(r.from, counted_reply{}); });
  });
  constexpr int n = 100;
  for (int i = 0; i < n; ++i) {
    grove::send(echo, counted_request{me.pid()});
    REQUIRE(grove::receive([](counted_reply) { return true; }, grove::after(patience, [] { return false; })));
  }
  // echo's reductions (a receive and a send a request) are counted as its runs end, and add up to
  // what process_info reports for it.
  CHECK(grove_test::wait_until([&] { return grove::system_info().reductions - before >= 2 * n; }));
  const auto info = grove::process_info(echo);
  REQUIRE(info);
  CHECK(grove::system_info().reductions - before >= info->reductions);
  // A process that never waits (its mailbox always holds its next message): its reductions come
  // as its slices end, when its budget is spent.
  std::atomic<bool> stop{false};
  grove::pid busy = grove::spawn([&stop] {
    while (!stop.load(std::memory_order_relaxed)) {
      grove::send(grove::self(), counted_reply{});
      grove::receive([](counted_reply) {});
    }
  });
  const std::uint64_t mid = grove::system_info().reductions;
  CHECK(grove_test::wait_until([&] { return grove::system_info().reductions - mid >= 10'000; }));
  std::uint64_t by_workers = 0;
  const grove::system_details s = grove::system_info();
  for (const auto& w : s.workers) by_workers += w.reductions;
  CHECK(by_workers == s.reductions);
  stop.store(true, std::memory_order_relaxed);
  grove::exit(echo, grove::exit_reason::kill());
  REQUIRE(grove_test::wait_until([&] { return !grove::is_alive(busy) && !grove::is_alive(echo); }));
}

TEST_CASE("system_info counts the messages processes send and the messages that reach their mailboxes") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  constexpr std::uint64_t k = 500, m = 70;
  const grove::system_details before = grove::system_info();
  grove::pid sink = grove::spawn([&] {
    for (std::uint64_t i = 0; i < k; ++i) grove::receive([](counted_reply) {});
    grove::send(me.pid(), counted_request{grove::self()});
  });
  grove::pid dead = grove::spawn([] {});
  REQUIRE(grove_test::wait_until([&] { return !grove::is_alive(dead); }));
  grove::spawn([sink, dead] {
    for (std::uint64_t i = 0; i < k; ++i) grove::send(sink, counted_reply{});
    for (std::uint64_t i = 0; i < m; ++i) grove::send(dead, counted_reply{});  // sent, never received
  });
  REQUIRE(grove::receive([](counted_request) { return true; }, grove::after(patience, [] { return false; })));
  // The sink's last run ends after its send reaches us: wait for the counts, as for reductions.
  CHECK(grove_test::wait_until([&] {
    const grove::system_details s = grove::system_info();
    return s.messages_sent - before.messages_sent >= k + m + 1 && s.messages_received - before.messages_received >= k;
  }));
  const grove::system_details s = grove::system_info();
  // The 70 to a dead pid are sent and are dead letters, never received.
  CHECK(s.dead_letters - before.dead_letters >= m);
  CHECK((s.messages_sent - before.messages_sent) - (s.messages_received - before.messages_received) >= m);
  std::uint64_t sent = 0, received = 0;
  for (const auto& w : s.workers) {
    sent += w.messages_sent;
    received += w.messages_received;
  }
  CHECK(sent == s.messages_sent);
  CHECK(received == s.messages_received);
}

TEST_CASE("a reductions_window ranks processes by what they did in its last interval, not over their lives") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  const grove::pid self = me.pid();
  struct work {
    int sends;
  };
  // Each worker sends `sends` dead letters when asked, says so, and waits again.
  auto worker = [self] {
    for (;;) {
      const int n = grove::receive([](work w) { return w.sends; });
      if (n < 0) return;
      for (int i = 0; i < n; ++i) grove::send(grove::pid(), i);
      grove::send(self, go{});
    }
  };
  const grove::pid veteran = grove::spawn(worker);
  grove::send(veteran, work{20'000});
  grove::receive([](go) {});  // the veteran has done its 20,000 sends: its counter says so

  grove::reductions_window window;
  const grove::pid newcomer = grove::spawn(worker);  // unseen by the window: all its reductions count
  grove::send(newcomer, work{2'000});
  grove::receive([](go) {});
  auto top = window.top(2);
  REQUIRE(top.size() == 2);
  CHECK(top[0].process.pid == newcomer);
  CHECK(top[0].reductions >= 2'000);
  CHECK(top[1].reductions < 2'000);  // the veteran did only its wait, or another process leads it
  CHECK(window.last_interval() > std::chrono::nanoseconds(0));
  // Over lives, the veteran leads.
  auto lifetime = grove::top_processes(1, grove::process_order::reductions);
  REQUIRE(lifetime.size() == 1);
  CHECK(lifetime[0].pid == veteran);

  // The next interval: the veteran busy again, the newcomer idle; each counts only the new work.
  grove::send(veteran, work{5'000});
  grove::receive([](go) {});
  top = window.top(3);
  REQUIRE(top.size() == 3);
  CHECK(top[0].process.pid == veteran);
  CHECK(top[0].reductions >= 5'000);
  CHECK(top[0].reductions < 20'000);  // the interval's, not the life's
  CHECK(top[0].process.reductions >= 25'000);
  for (const auto& a : top)
    if (a.process.pid == newcomer) CHECK(a.reductions < 100);

  // n = 0: nothing; a process gone since: not listed.
  CHECK(window.top(0).empty());
  const auto ref = grove::monitor(veteran);
  grove::send(veteran, work{-1});
  grove::receive([&](const grove::down& d) { return d.ref == ref; });
  for (const auto& a : window.top(1000)) CHECK(a.process.pid != veteran);
  grove::exit(newcomer, grove::exit_reason::kill());
}

TEST_CASE("arena bytes are published: top_processes finds the biggest heap, of a computing process too") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  const grove::pid self = me.pid();
  const grove::pid small = grove::spawn([self] {
    std::pmr::vector<char> data(10'000, 'x', &grove::arena());
    grove::send(self, go{});
    grove::receive([](go) {});
  });
  grove::receive([](go) {});
  // `hog` holds 1 MiB in its arena and computes without runtime calls: it is never asked.
  std::atomic<bool> stop{false};
  const grove::pid hog = grove::spawn([self, &stop] {
    std::pmr::vector<char> data(1 << 20, 'x', &grove::arena());
    grove::send(self, go{});
    while (!stop.load(std::memory_order_relaxed)) {
    }
  });
  grove::receive([](go) {});
  auto top = grove::top_processes(2, grove::process_order::arena_bytes);
  REQUIRE(top.size() == 2);
  CHECK(top[0].pid == hog);
  CHECK(top[0].arena_bytes >= (1u << 20));
  CHECK(top[1].pid == small);
  CHECK(top[1].arena_bytes >= 10'000);
  CHECK(top[1].arena_bytes < (1u << 20));
  // process_info of the computing process: its published arena (it cannot answer).
  REQUIRE(grove_test::wait_until([&] { return grove::process_summary_of(hog)->status == grove::process_status::running; }));
  auto info = grove::process_info(hog, 50ms);
  REQUIRE(info);
  CHECK(!info->answered);
  CHECK(info->arena_bytes >= (1u << 20));
  stop.store(true, std::memory_order_relaxed);
  REQUIRE(grove_test::wait_until([&] { return !grove::is_alive(hog); }));
  // Gone with its process; a process without an arena shows 0.
  const auto ref = grove::monitor(small);
  grove::send(small, go{});
  grove::receive([&](const grove::down& d) { CHECK(d.ref == ref); });
  const auto all = grove::top_processes(1000, grove::process_order::arena_bytes);
  REQUIRE(all.size() == 1);
  CHECK(all[0].pid == self);
  CHECK(all[0].arena_bytes == 0);
}
