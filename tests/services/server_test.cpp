// Servers (grove/services/server.hpp): call, cast, start, stop, and OTP's call semantics
// (runtime/DESIGN.md §5): timeout not later than asked, noproc at once, the server's exit reason, no late
// replies, no self-call deadlock; servers under supervisors.
#include "helpers.hpp"

#include <optional>
#include <stdexcept>
#include <thread>

#include <grove/supervisor.hpp>

using namespace svc_test;
namespace sup = grove::supervisor;

namespace {

struct counter {
  struct get {};
  struct add {
    int by;
  };
  struct crash {
    std::string why;
  };
  struct die {
    std::string why;
  };
  struct hold {  // replied later: on release (or never)
    using reply_type = int;
  };
  struct release {};
  struct time_left {};  // the caller's time left, in ms
  struct call_myself {};
  struct hand_off {  // the reply is sent by another process
    using reply_type = std::string;
  };
  struct fail {};  // replies a failure, the server goes on
  struct is_holding {};
  struct quit {  // replies, then stops the server
    std::string why;
  };

  int n = 0;
  std::shared_ptr<event_log> log;
  std::optional<svc::reply_to<int>> held;

  counter(int start, std::shared_ptr<event_log> l) : n(start), log(std::move(l)) {}

  int handle_call(get) { return n; }
  void handle_cast(add a) { n += a.by; }
  int handle_call(crash c) { throw std::runtime_error(c.why); }
  int handle_call(die d) { grove::exit(grove::exit_reason(d.why)); }
  void handle_call(hold, svc::reply_to<int> r) { held.emplace(std::move(r)); }
  void handle_cast(release) {
    if (held) (*held)(n);
  }
  long long handle_call(time_left, const svc::call_info& from) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(from.deadline().remaining()).count();
  }
  std::string handle_call(call_myself) {
    auto r = svc::call(svc::server_ref<counter>(grove::self()), get{});
    return r.error().message();
  }
  void handle_call(hand_off, svc::reply_to<std::string> r) {
    grove::spawn([r = std::move(r)]() mutable { r("from a helper"); });
  }
  svc::outcome<int> handle_call(fail) { return grove::errc::bad_argument; }
  bool handle_call(is_holding) const { return held.has_value() && held->is_pending(); }
  svc::stop_reply<int> handle_call(quit q) {
    log->add("quit asked");
    return {grove::exit_reason(q.why), n};
  }
  void handle_info(grove::any_message m) {
    if (m.is<std::string>()) log->add("info " + *m.get<std::string>());
  }
  void terminate(const grove::exit_reason& why) { log->add("terminate " + why.to_string()); }
};

struct other {  // another behaviour, to misuse a ref
  struct ping {};
  int handle_call(ping) { return 1; }
};

struct fails_init {
  explicit fails_init(int) { throw std::runtime_error("no config"); }
  int handle_call(int) { return 0; }
};

svc::server_ref<counter> start_counter(const std::shared_ptr<event_log>& log, svc::server_options o = {}) {
  auto r = svc::start_link<counter>(o, 0, log);
  REQUIRE(r.has_value());
  return *r;
}

}  // namespace

TEST_CASE("a call returns the handler's reply and a cast changes the server's state") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  auto log = std::make_shared<event_log>();
  auto c = start_counter(log);
  CHECK(svc::call(c, counter::get{}).value() == 0);
  svc::cast(c, counter::add{5});
  svc::cast(c, counter::add{2});
  CHECK(svc::call(c, counter::get{}).value() == 7);  // casts and calls from one caller are served in order
  auto f = svc::call(c, counter::fail{});
  CHECK(f.error() == grove::errc::bad_argument);  // a reply that is a failure; the server goes on
  CHECK(svc::call(c, counter::get{}).value() == 7);
  CHECK(svc::stop(c).has_value());
}

TEST_CASE("a call to a dead server returns noproc at once") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  auto log = std::make_shared<event_log>();
  auto c = start_counter(log);
  REQUIRE(svc::stop(c).has_value());
  auto start = std::chrono::steady_clock::now();
  auto r = svc::call(c, counter::get{}, 20s);
  CHECK(r.error() == grove::errc::noproc);
  CHECK(seconds_since(start) < 10.0);  // at once, not after the 20 s timeout
  CHECK(svc::call(svc::server_ref<counter>(), counter::get{}).error() == grove::errc::noproc);
  CHECK(svc::call(svc::server_ref<counter>::named("nobody"), counter::get{}).error() == grove::errc::noproc);
  svc::cast(c, counter::add{1});  // a cast to a dead server is a no-op
  CHECK(svc::stop(c).error() == grove::errc::noproc);
}

TEST_CASE("a call with a 1 s timeout returns timeout after at least 1 s and before 2 s") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  auto log = std::make_shared<event_log>();
  auto c = start_counter(log);
  auto start = std::chrono::steady_clock::now();
  auto r = svc::call(c, counter::hold{}, 1s);  // never answered
  const double took = seconds_since(start);
  CHECK(r.error() == grove::errc::timeout);
  CHECK(took >= 1.0);
  CHECK(took < 2.0);
}

TEST_CASE("a call with a deadline returns deadline_exceeded, and the server sees the caller's deadline") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  auto log = std::make_shared<event_log>();
  auto c = start_counter(log);
  auto left = svc::call(c, counter::time_left{}, svc::deadline::after(10s));
  REQUIRE(left.has_value());
  CHECK(*left > 0);
  CHECK(*left <= 10000);
  auto start = std::chrono::steady_clock::now();
  auto r = svc::call(c, counter::hold{}, svc::deadline::after(1s));
  CHECK(r.error() == svc::errc::deadline_exceeded);
  CHECK(seconds_since(start) >= 1.0);
  CHECK(seconds_since(start) < 2.0);
  // A deadline already passed: no wait at all.
  CHECK(svc::call(c, counter::hold{}, svc::deadline::after(0s)).error() == svc::errc::deadline_exceeded);
}

TEST_CASE("a reply that comes after the caller gave up never lands in the caller's mailbox") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  auto log = std::make_shared<event_log>();
  auto c = start_counter(log);
  REQUIRE(svc::call(c, counter::hold{}, 1s).error() == grove::errc::timeout);
  svc::cast(c, counter::release{});  // now the server answers the call we gave up on
  // A call after the late reply was sent: one sender, one order, so the late reply reached (and was
  // dropped at) our door before this reply.
  CHECK(svc::call(c, counter::get{}).value() == 0);
  CHECK(mailbox_is_empty());
}

TEST_CASE("the caller gets the server's exit reason when the server dies during the call") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  auto log = std::make_shared<event_log>();
  {
    auto c = start_counter(log, {});
    grove::trap_exit(true);  // start_link linked us: keep the test alive
    auto r = svc::call(c, counter::die{"bad_state"});
    CHECK(r.error() == svc::errc::exited);
    CHECK(r.failure().reason == grove::exit_reason("bad_state"));
  }
  {
    auto c = svc::start<counter>({}, 0, log).value();  // not linked
    auto watcher = grove::monitor(c.pid());
    auto killer = grove::spawn([pid = c.pid()] { grove::exit(pid, grove::exit_reason::kill()); });
    (void)killer;
    auto r = svc::call(c, counter::hold{}, 20s);  // killed while the call waits (or before: noproc)
    CHECK((r.error() == svc::errc::exited || r.error() == grove::errc::noproc));
    if (r.error() == svc::errc::exited) CHECK(r.failure().reason.is_killed());
    CHECK(wait_down(watcher).is_killed());
  }
  grove::trap_exit(false);
}

TEST_CASE("a server that calls itself gets call_to_self instead of a deadlock") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  auto log = std::make_shared<event_log>();
  auto c = start_counter(log);
  auto r = svc::call(c, counter::call_myself{}, 20s);
  REQUIRE(r.has_value());
  CHECK(*r == svc::make_error_code(svc::errc::call_to_self).message());
}

TEST_CASE("a handler that throws crashes the server with that reason, after terminate") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  grove::trap_exit(true);
  auto log = std::make_shared<event_log>();
  auto c = start_counter(log);
  auto watcher = grove::monitor(c.pid());
  auto r = svc::call(c, counter::crash{"division by zero"});
  CHECK(r.error() == svc::errc::exited);
  CHECK(r.failure().reason.is_exception());
  CHECK(r.failure().reason.text() == "division by zero");
  CHECK(r.failure().to_string().find("division by zero") != std::string::npos);
  auto reason = wait_down(watcher);
  CHECK(reason.is_exception());
  CHECK(reason.text() == "division by zero");
  CHECK(log->has("terminate exception: division by zero"));
  grove::trap_exit(false);
}

TEST_CASE("a start whose init throws returns init_failed, leaves nothing running and sends no exit signal") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  const std::size_t before = grove::system_info().process_count;
  auto r = svc::start_link<fails_init>({}, 1);
  REQUIRE(!r.has_value());
  CHECK(r.error() == svc::errc::init_failed);
  CHECK(r.failure().reason.text() == "no config");
  CHECK(grove::system_info().process_count == before);
  CHECK(mailbox_is_empty());  // we do not trap exits and are alive: no exit signal came
}

TEST_CASE("a server registered by name is reachable by name, and a taken name fails the start") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  auto log = std::make_shared<event_log>();
  auto c = start_counter(log, {.name = "counter"});
  auto by_name = svc::server_ref<counter>::named("counter");
  CHECK(by_name.pid() == c.pid());
  svc::cast(by_name, counter::add{3});
  CHECK(svc::call(by_name, counter::get{}).value() == 3);
  auto second = svc::start_link<counter>({.name = "counter"}, 0, log);
  CHECK(second.error() == svc::errc::init_failed);
  CHECK(second.failure().reason.text() == "already_started");
  CHECK(svc::stop(by_name).has_value());
  CHECK(grove::whereis("counter").is_null());
}

TEST_CASE("stop runs terminate and the server exits with the given reason") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  grove::trap_exit(true);
  auto log = std::make_shared<event_log>();
  auto c = start_counter(log);
  auto watcher = grove::monitor(c.pid());
  CHECK(svc::stop(c, grove::exit_reason("maintenance")).has_value());
  CHECK(wait_down(watcher) == grove::exit_reason("maintenance"));
  CHECK(log->has("terminate maintenance"));
  grove::trap_exit(false);
}

TEST_CASE("a server that traps exits runs terminate when its parent exits") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  auto log = std::make_shared<event_log>();
  const grove::pid test = me.pid();
  auto parent = grove::spawn_monitor([test, log] {
    auto c = svc::start_link<counter>({.trap_exit = true}, 0, log).value();
    grove::send(test, c.pid());
    grove::receive([](go) {});
    grove::exit(grove::exit_reason::shutdown());
  });
  const grove::pid server = receive_one<grove::pid>();
  auto watcher = grove::monitor(server);
  grove::send(parent.pid, go{});
  CHECK(wait_down(parent.monitor).is_shutdown());
  CHECK(wait_down(watcher).is_shutdown());
  CHECK(log->has("terminate shutdown"));
}

TEST_CASE("handle_info receives the messages that are neither calls nor casts") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  auto log = std::make_shared<event_log>();
  auto c = start_counter(log);
  grove::send(c.pid(), std::string("hello"));
  grove::send(c.pid(), 42);  // handle_info ignores ints: dropped
  CHECK(svc::call(c, counter::get{}).value() == 0);  // after the info (one sender, one order)
  CHECK(log->has("info hello"));
}

TEST_CASE("a deferred reply can be sent later or by another process, and the server serves others meanwhile") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  auto log = std::make_shared<event_log>();
  auto c = start_counter(log);
  CHECK(svc::call(c, counter::hand_off{}).value() == "from a helper");
  auto held = svc::async([c] { return svc::call(c, counter::hold{}, patience); });
  REQUIRE(grove_test::wait_until([&] { return svc::call(c, counter::is_holding{}).value(); }));
  svc::cast(c, counter::add{1});  // served while the hold waits
  svc::cast(c, counter::release{});
  auto r = held.await(patience);
  REQUIRE(r.has_value());
  CHECK(*r == 1);
}

TEST_CASE("a call through a ref of another behaviour returns bad_request and the server goes on") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  auto log = std::make_shared<event_log>();
  auto c = start_counter(log);
  svc::server_ref<other> wrong(c.pid());
  CHECK(svc::call(wrong, other::ping{}).error() == svc::errc::bad_request);
  CHECK(svc::call(c, counter::get{}).value() == 0);
}

TEST_CASE("calls outside a process return not_in_process, and casts work from any thread") {
  grove_test::runtime_fixture rt;
  auto log = std::make_shared<event_log>();
  grove::pid server;
  {
    grove::scoped_process me;
    server = svc::start<counter>({}, 0, log).value().pid();
  }
  std::error_code code;
  std::thread t([&] {
    svc::server_ref<counter> c(server);
    code = svc::call(c, counter::get{}).error();
    svc::cast(c, counter::add{4});
  });
  t.join();
  CHECK(code == grove::errc::not_in_process);
  grove::scoped_process me;
  CHECK(svc::call(svc::server_ref<counter>(server), counter::get{}).value() == 4);
}

TEST_CASE("an idle server waits with a small stack, which is what hibernate_after would save") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  auto log = std::make_shared<event_log>();
  auto c = start_counter(log);
  CHECK(svc::call(c, counter::get{}).value() == 0);
  auto info = grove::process_info(c.pid(), patience);
  REQUIRE(info.has_value());
  MESSAGE("an idle server's live stack: " << info->stack_bytes << " bytes");
  CHECK(info->stack_bytes < 16 * 1024);
}

TEST_CASE("a server under a one_for_one supervisor is restarted after its handler throws, and callers get the reason") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  grove::trap_exit(true);
  auto log = std::make_shared<event_log>();
  const grove::pid sup_pid = sup::start_link({.strategy = sup::strategy::one_for_one, .intensity = 5},
                                             {svc::server_child<counter>("counter", {.name = "counter"}, 10, log)});
  auto c = svc::server_ref<counter>::named("counter");
  const grove::pid first = c.pid();
  REQUIRE(!first.is_null());
  svc::cast(c, counter::add{1});
  CHECK(svc::call(c, counter::get{}).value() == 11);
  auto r = svc::call(c, counter::crash{"corrupt entry"});
  CHECK(r.error() == svc::errc::exited);
  CHECK(r.failure().reason.is_exception());
  CHECK(r.failure().reason.text() == "corrupt entry");
  // The supervisor restarts it under the same name, with its initial state.
  REQUIRE(grove_test::wait_until([&] {
    grove::pid p = c.pid();
    return !p.is_null() && p != first;
  }));
  CHECK(svc::call(c, counter::get{}).value() == 10);
  auto children = sup::which_children(sup_pid);
  REQUIRE(children.has_value());
  REQUIRE(children->size() == 1);
  CHECK(children->front().pid == c.pid());
  CHECK(!sup::stop(sup_pid));
  grove::trap_exit(false);
}

TEST_CASE("a server child whose init fails makes its supervisor's start fail with init's reason") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  grove::trap_exit(true);  // the failed supervisor's exit signal comes as a message
  auto r = sup::try_start_link({.logger = sup::logger{}}, {svc::server_child<fails_init>("config", {}, 1)});
  REQUIRE_FALSE(r);
  CHECK(r.error() == sup::errc::start_failed);
  CHECK(r.error().child_id == "config");
  CHECK(r.error().reason.is_exception());
  CHECK(r.error().reason.text() == "no config");
  auto e = grove::receive([](grove::exit_signal e) { return e; }, grove::after(grove_test::patience, [] { return grove::exit_signal{}; }));
  const auto* f = e.reason.payload<sup::failed_to_start_child>();
  REQUIRE(f != nullptr);
  CHECK(f->reason.text() == "no config");
  grove::trap_exit(false);
}

TEST_CASE("a handler that ends the server with grove::exit(reason) runs terminate(reason) first, as OTP catches exit/1") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  grove::trap_exit(true);  // linked to the server, which exits abnormally
  auto log = std::make_shared<event_log>();
  auto c = start_counter(log);
  auto watcher = grove::monitor(c.pid());
  auto r = svc::call(c, counter::die{"bad_state"});
  CHECK(r.error() == svc::errc::exited);
  CHECK(r.failure().reason.text() == "bad_state");
  CHECK(wait_down(watcher).text() == "bad_state");
  CHECK(log->has("terminate bad_state"));
  // A kill from outside runs no terminate (OTP cannot either).
  auto log2 = std::make_shared<event_log>();
  auto k = start_counter(log2);
  auto w2 = grove::monitor(k.pid());
  grove::exit(k.pid(), grove::exit_reason::kill());
  CHECK(wait_down(w2).is_killed());
  CHECK_FALSE(log2->has("terminate killed"));
}

TEST_CASE("a handle_call that returns stop_reply replies first, then terminate runs and the server exits with the reason") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  grove::trap_exit(true);  // linked to the server, which exits abnormally
  auto log = std::make_shared<event_log>();
  auto c = start_counter(log);
  svc::cast(c, counter::add{41});
  auto watcher = grove::monitor(c.pid());
  auto r = svc::call(c, counter::quit{"upgrade"});
  REQUIRE(r.has_value());
  CHECK(*r == 41);  // the reply came, although the server stops
  CHECK(wait_down(watcher).text() == "upgrade");
  CHECK(log->has("quit asked"));
  CHECK(log->has("terminate upgrade"));
  CHECK(svc::call(c, counter::get{}).error() == grove::errc::noproc);
}
