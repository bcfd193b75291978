// Links, monitors and exit signals: Erlang's rules (runtime/DESIGN.md §5), from a scoped_process that
// watches through monitors.
#include "support/fixture.hpp"

#include <string>

using namespace std::chrono_literals;
using grove_test::patience;

namespace {

struct go {};
struct ping {
  grove::pid from;
};
struct pong {};

// The reason the monitored process exited with (fails the test after `patience`).
grove::exit_reason wait_down(const grove::monitor_ref& ref) {
  return grove::receive(grove::when([&](const grove::down& d) { return d.ref == ref; }, [](grove::down d) { return d.reason; }),
                        grove::after(patience, [] {
                          FAIL("no down message");
                          return grove::exit_reason::normal();
                        }));
}

// Whether `p` is alive and answering messages.
bool answers(grove::pid p) {
  grove::send(p, ping{grove::self()});
  return grove::receive([](pong) { return true; }, grove::after(patience, [] { return false; }));
}

// A process that answers pings until told otherwise; traps exits if asked and forwards every
// exit_signal it receives to `report`.
grove::pid responder(grove::pid report, bool trap) {
  return grove::spawn([report, trap] {
    grove::trap_exit(trap);
    for (;;) {
      grove::receive([](ping p) { grove::send(p.from, pong{}); },
                     [report](grove::exit_signal e) { grove::send(report, std::move(e)); });
    }
  });
}

grove::exit_signal wait_exit_signal() {
  return grove::receive([](grove::exit_signal e) { return e; }, grove::after(patience, [] {
                          FAIL("no exit_signal message");
                          return grove::exit_signal{};
                        }));
}

}  // namespace

TEST_CASE("a linked process that does not trap exits dies with the same reason") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  auto victim = grove::spawn_monitor([] {
    grove::spawn_link([] { grove::exit(grove::exit_reason("boom")); });
    grove::receive([](go) {});
  });
  auto reason = wait_down(victim.monitor);
  CHECK(reason.what_kind() == grove::exit_reason::kind::user);
  CHECK(reason.text() == "boom");
}

TEST_CASE("a normal exit through a link leaves a process that does not trap exits alive") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  auto survivor = responder(me.pid(), false);
  auto watcher = grove::monitor(survivor);
  auto child = grove::spawn_monitor([survivor] {
    grove::link(survivor);
    // returns: exit reason normal
  });
  CHECK(wait_down(child.monitor).is_normal());
  CHECK(answers(survivor));
  grove::exit(survivor, grove::exit_reason::kill());
  CHECK(wait_down(watcher).is_killed());
}

TEST_CASE("a process that traps exits receives exit signals as messages, normal ones too") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  auto trapper = responder(me.pid(), true);
  CHECK(answers(trapper));  // trap_exit is set before it answers
  auto crasher = grove::spawn([trapper] {
    grove::link(trapper);
    grove::exit(grove::exit_reason("boom"));
  });
  auto e = wait_exit_signal();
  CHECK(e.from == crasher);
  CHECK(e.reason.text() == "boom");
  auto quiet = grove::spawn([trapper] { grove::link(trapper); });
  auto e2 = wait_exit_signal();
  CHECK(e2.from == quiet);
  CHECK(e2.reason.is_normal());
  CHECK(answers(trapper));
  grove::exit(trapper, grove::exit_reason::kill());
}

TEST_CASE("kill sent directly cannot be trapped and the target dies killed") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  auto trapper = responder(me.pid(), true);
  CHECK(answers(trapper));
  auto ref = grove::monitor(trapper);
  grove::exit(trapper, grove::exit_reason::kill());
  CHECK(wait_down(ref).is_killed());
  CHECK_FALSE(grove::is_alive(trapper));
}

TEST_CASE("kill arriving through a link is an ordinary reason: trapped as a message, or fatal as kill") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  auto trapper = responder(me.pid(), true);
  auto plain = responder(me.pid(), false);
  CHECK(answers(trapper));
  CHECK(answers(plain));
  auto plain_ref = grove::monitor(plain);
  auto killer = grove::spawn([trapper, plain] {
    grove::link(trapper);
    grove::link(plain);
    grove::exit(grove::exit_reason::kill());  // dies with reason kill (not killed)
  });
  auto e = wait_exit_signal();
  CHECK(e.from == killer);
  CHECK(e.reason.is_kill());
  CHECK(wait_down(plain_ref).is_kill());  // not converted to killed
  CHECK(answers(trapper));
  grove::exit(trapper, grove::exit_reason::kill());
}

TEST_CASE("exit with any other reason kills a process that does not trap exits, and reaches a trapping one as a message") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  auto plain = responder(me.pid(), false);
  auto trapper = responder(me.pid(), true);
  CHECK(answers(trapper));
  auto ref = grove::monitor(plain);
  grove::exit(plain, grove::exit_reason("stop_now"));
  CHECK(wait_down(ref).text() == "stop_now");
  grove::exit(trapper, grove::exit_reason("stop_now"));
  auto e = wait_exit_signal();
  CHECK(e.from == me.pid());
  CHECK(e.reason.text() == "stop_now");
  grove::exit(trapper, grove::exit_reason::kill());
}

TEST_CASE("exit with reason normal leaves another process alive, but ends the caller itself") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  auto plain = responder(me.pid(), false);
  grove::exit(plain, grove::exit_reason::normal());
  CHECK(answers(plain));
  auto self_ender = grove::spawn_monitor([] {
    grove::exit(grove::self(), grove::exit_reason::normal());
    grove::receive([](go) {});  // never reached
  });
  CHECK(wait_down(self_ender.monitor).is_normal());
  grove::exit(plain, grove::exit_reason::kill());
}

TEST_CASE("an exception escaping a process ends it with a reason that carries what()") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  auto s = grove::spawn_monitor([] { throw std::runtime_error("division by zero"); });
  auto reason = wait_down(s.monitor);
  CHECK(reason.is_exception());
  CHECK(reason.text() == "division by zero");
  CHECK(reason.to_string() == "exception: division by zero");
}

TEST_CASE("monitoring a dead pid gives a down with noproc at once, on a foreign thread too") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  auto s = grove::spawn_monitor([] {});
  CHECK(wait_down(s.monitor).is_normal());
  auto late = grove::monitor(s.pid);
  CHECK(late.target == s.pid);
  CHECK(wait_down(late).what_kind() == grove::exit_reason::kind::noproc);
  auto never = grove::monitor(grove::pid::from_parts(123456, 99));
  CHECK(wait_down(never).what_kind() == grove::exit_reason::kind::noproc);
}

TEST_CASE("each monitor call makes an independent monitor with its own down") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  auto target = responder(me.pid(), false);
  auto a = grove::monitor(target);
  auto b = grove::monitor(target);
  CHECK(a.id != b.id);
  grove::exit(target, grove::exit_reason("bye"));
  CHECK(wait_down(b).text() == "bye");
  CHECK(wait_down(a).text() == "bye");
}

TEST_CASE("demonitor stops the down, and with flush removes one already delivered") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  auto target = responder(me.pid(), false);
  auto ref = grove::monitor(target);
  CHECK(grove::demonitor(ref));
  auto ref2 = grove::monitor(target);
  grove::exit(target, grove::exit_reason("bye"));
  CHECK(wait_down(ref2).text() == "bye");  // after this, any down for `ref` would have arrived (same sender)
  bool stray = grove::receive([&](const grove::down& d) { return d.ref == ref; }, grove::after(0s, [] { return false; }));
  CHECK_FALSE(stray);

  auto gone = grove::spawn_monitor([] {});
  // Wait until its down is in our mailbox, without taking it: poll (which moves arrivals into the
  // mailbox) until process_info counts one message.
  CHECK(grove_test::wait_until([] {
    grove::receive([](go) {}, grove::after(0s));
    return grove::process_info(grove::self())->mailbox_length == 1;
  }));
  CHECK(grove::demonitor(gone.monitor, true) == false);  // it had fired already
  bool flushed_away = grove::receive([&](const grove::down& d) { return d.ref == gone.monitor; },
                                     grove::after(0s, [] { return true; }));
  CHECK(flushed_away);
}

TEST_CASE("demonitor of an unknown reference returns false and changes nothing") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  CHECK_FALSE(grove::demonitor(grove::monitor_ref{987654, me.pid()}));
  CHECK_FALSE(grove::demonitor(grove::monitor_ref{}, true));
}

TEST_CASE("after unlink no exit signal from that link arrives") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  grove::trap_exit(true);
  grove::pid self = me.pid();
  auto partner = grove::spawn([self] {
    grove::link(self);
    grove::send(self, go{});
    grove::receive([](go) {});
    grove::exit(grove::exit_reason("late"));
  });
  grove::receive([](go) {});
  grove::unlink(partner);
  auto ref = grove::monitor(partner);
  grove::send(partner, go{});
  CHECK(wait_down(ref).text() == "late");
  bool got_exit = grove::receive([](grove::exit_signal) { return true; }, grove::after(0s, [] { return false; }));
  CHECK_FALSE(got_exit);
}

TEST_CASE("linking to a dead process throws noproc, or delivers an exit_signal when trapping") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  auto s = grove::spawn_monitor([] {});
  CHECK(wait_down(s.monitor).is_normal());
  bool threw = false;
  try {
    grove::link(s.pid);
  } catch (const grove::error& e) {
    threw = e.code() == grove::errc::noproc;
  }
  CHECK(threw);
  grove::trap_exit(true);
  grove::link(s.pid);
  auto e = wait_exit_signal();
  CHECK(e.from == s.pid);
  CHECK(e.reason.what_kind() == grove::exit_reason::kind::noproc);
}

TEST_CASE("spawn_link links before the child runs, so an instant crash still reaches a trapping parent") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  grove::trap_exit(true);
  for (int i = 0; i < 20; ++i) {
    grove::pid child = grove::spawn_link([] { throw std::logic_error("instant"); });
    auto e = wait_exit_signal();
    CHECK(e.from == child);
    CHECK(e.reason.text() == "instant");
  }
}

TEST_CASE("from one sender, messages and the exit signal arrive in send order") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  grove::trap_exit(true);
  grove::pid self = me.pid();
  const int n = 500;
  grove::spawn_link([self, n] {
    for (int i = 0; i < n; ++i) grove::send(self, i);
    grove::exit(grove::exit_reason("done"));
  });
  int expected = 0;
  bool in_order = true;
  bool exited = false;
  while (!exited) {
    grove::receive([&](int i) { in_order = in_order && i == expected++; },
                   [&](grove::exit_signal e) {
                     exited = true;
                     CHECK(e.reason.text() == "done");
                   },
                   grove::after(patience, [&] {
                     FAIL("stalled");
                     exited = true;
                   }));
  }
  CHECK(in_order);
  CHECK(expected == n);
}

TEST_CASE("a linked chain propagates a crash to every process that does not trap exits") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  const int length = 50;
  std::vector<grove::pid> chain;
  std::vector<grove::monitor_ref> refs;
  grove::pid prev;
  for (int i = 0; i < length; ++i) {
    grove::pid p = grove::spawn([prev] {
      if (prev) grove::link(prev);
      grove::receive([](go) {});
    });
    chain.push_back(p);
    refs.push_back(grove::monitor(p));
    prev = p;
  }
  // Links are made as each process starts; wait until every one is in place before the crash.
  for (int i = 0; i < length; ++i) {
    std::size_t expected = (i == 0 || i == length - 1) ? 1 : 2;
    CHECK(grove_test::wait_until([&] {
      auto info = grove::process_info(chain[static_cast<std::size_t>(i)]);
      return info && info->links.size() == expected;
    }));
  }
  grove::exit(chain.front(), grove::exit_reason("chain"));
  for (auto& r : refs) CHECK(wait_down(r).text() == "chain");
}

TEST_CASE("a monitor by registered name gets a down naming {name, node}, with the holder's pid and reason") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  grove::pid db = grove::spawn([] {
    grove::receive([](go) {});
    grove::exit(grove::exit_reason("db_lost"));
  });
  grove::register_name("db", db);
  auto ref = grove::monitor("db");
  CHECK(ref.target == db);
  grove::send(db, go{});
  auto d = grove::receive([](grove::down d) { return d; }, grove::after(patience, [] { return grove::down{}; }));
  CHECK(d.ref == ref);
  CHECK(d.from == db);
  CHECK(d.name == "db");
  CHECK(d.node == grove::local_node_name);
  CHECK(d.reason.text() == "db_lost");
  // A monitor by pid names no {name, node}.
  auto p = grove::spawn_monitor([] {});
  auto by_pid = grove::receive([](grove::down d) { return d; }, grove::after(patience, [] { return grove::down{}; }));
  CHECK(by_pid.ref == p.monitor);
  CHECK(by_pid.name.empty());
  CHECK(by_pid.node.empty());
}

TEST_CASE("a monitor by a name nobody holds gets noproc at once, from a process and from a foreign thread") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  auto ref = grove::monitor("nobody");
  CHECK(ref.target.is_null());
  auto d = grove::receive([](grove::down d) { return d; }, grove::after(patience, [] { return grove::down{}; }));
  CHECK(d.ref == ref);
  CHECK(d.reason.what_kind() == grove::exit_reason::kind::noproc);
  CHECK(d.name == "nobody");
  CHECK(d.from.is_null());
  const grove::pid self = me.pid();
  grove::spawn([self] {
    auto r = grove::monitor("nobody_either");
    auto got = grove::receive([](grove::down d) { return d; });
    grove::send(self, got.ref == r && got.reason.what_kind() == grove::exit_reason::kind::noproc && got.name == "nobody_either");
  });
  CHECK(grove::receive([](bool ok) { return ok; }, grove::after(patience, [] { return false; })));
  CHECK_THROWS_AS(grove::monitor(std::string_view{}), grove::error);
}

TEST_CASE("a monitor by name stays on the process that held the name, and demonitor stops it") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  grove::pid first = grove::spawn([] { grove::receive([](go) {}); });
  grove::register_name("svc", first);
  auto ref = grove::monitor("svc");
  // The name moves to another process: the monitor does not follow it (OTP resolves it once).
  REQUIRE(grove::unregister("svc"));
  grove::pid second = grove::spawn([] { grove::receive([](go) {}); });
  grove::register_name("svc", second);
  grove::send(second, go{});
  grove::send(first, go{});
  auto d = grove::receive([](grove::down d) { return d; }, grove::after(patience, [] { return grove::down{}; }));
  CHECK(d.ref == ref);
  CHECK(d.from == first);
  CHECK(d.name == "svc");
  // demonitor (with flush) of a name monitor: no down ever arrives.
  grove::pid third = grove::spawn([] { grove::receive([](go) {}); });
  grove::register_name("svc3", third);
  auto r3 = grove::monitor("svc3");
  CHECK(grove::demonitor(r3, true));
  grove::exit(third, grove::exit_reason::kill());
  auto gone = grove::monitor(third);  // a plain monitor sees the death...
  CHECK(grove::receive([](grove::down d) { return d; }, grove::after(patience, [] { return grove::down{}; })).ref == gone);
  CHECK_FALSE(grove::receive([](grove::down) { return true; }, grove::after(0ms, [] { return false; })));  // ...the name one not
}
