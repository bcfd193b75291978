// grove::dist against a real Erlang node (tests/dist/grove_peer.erl in `erl -name ...@127.0.0.1`):
// messages, links, monitors, exit signals and gen_server calls both ways, with the exact reasons
// OTP gives. Each test says which direction it checks: "Erlang → Grove" means Erlang acts and Grove
// observes.
#include <doctest/doctest.h>

#include <fmt/format.h>

#include <grove/dist/gen_server.hpp>
#include <grove/dist/messages.hpp>
#include <grove/dist/node.hpp>
#include <grove/introspection.hpp>
#include <grove/remote.hpp>

#include <algorithm>
#include <atomic>
#include <map>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "erlang_node.hpp"

using namespace std::chrono_literals;
using dist_test::a;
using dist_test::receive_term;
using grove::term;
using grove_test::patience;

namespace {

term tuple(std::initializer_list<term> e) { return term::tuple(e); }
term self_term() { return term(grove::self()); }

// A Grove process that traps exits and reports each exit_signal and down to `report` as its
// Erlang term ({'EXIT', From, Reason}, {'DOWN', Ref, process, Item, Reason}); obeys {link, P},
// {unlink, P}, {monitor, P} (answering {monitoring, Ref}).
grove::pid grove_trapper(grove::pid report) {
  return grove::spawn([report] {
    grove::trap_exit(true);
    for (;;) {
      grove::receive([report](grove::exit_signal e) { grove::send(report, grove::dist::to_term(e)); },
                     [report](grove::down d) { grove::send(report, grove::dist::to_term(d)); },
                     [report](term t) {
                       if (t.is_record("link", 2)) {
                         grove::link(t[1].as_pid());
                         grove::send(report, a("linked"));
                       } else if (t.is_record("unlink", 2)) {
                         grove::unlink(t[1].as_pid());
                         grove::send(report, a("unlinked"));
                       } else if (t.is_record("monitor", 2)) {
                         grove::send(report, tuple({a("monitoring"), grove::dist::to_term(grove::monitor(t[1].as_pid()))}));
                       }
                     });
    }
  });
}

grove::down wait_down(const grove::monitor_ref& m) {
  return grove::receive(grove::when([&](const grove::down& d) { return d.ref == m; }, [](grove::down d) { return d; }),
                        grove::after(patience, [] {
                          FAIL("no down");
                          return grove::down{};
                        }));
}

grove::exit_signal wait_exit_signal() {
  return grove::receive([](grove::exit_signal e) { return e; }, grove::after(patience, [] {
                          FAIL("no exit_signal");
                          return grove::exit_signal{};
                        }));
}

// The reason of an exit_reason as the term it stands for.
term reason_term(const grove::exit_reason& r) { return grove::dist::to_term(r); }

struct connected {
  dist_test::grove_node g;
  dist_test::erlang_node& erl = dist_test::shared_erlang();
  explicit connected(grove::dist::node_options o = {}, grove::runtime_config rc = {}) : g(std::move(o), std::move(rc)) {
    REQUIRE(erl.wait_until_up());
  }
};

}  // namespace

TEST_CASE("both ways: nodes ping each other, list each other, and messages go by pid and by registered name") {
  connected c;
  auto& erl = c.erl;
  CHECK(grove::dist::ping(erl.name()));
  const auto connected_nodes = grove::dist::nodes();
  CHECK(std::find(connected_nodes.begin(), connected_nodes.end(), erl.name()) != connected_nodes.end());
  CHECK(erl.run("ping", {term(grove::atom(c.g.name()))}) == a("pong"));  // our net_kernel answers
  // Grove → Erlang pid, and back to a Grove pid.
  const term echo = erl.run("spawn_echo", {});
  REQUIRE(echo.is_pid());
  CHECK(echo.as_pid().is_remote());
  CHECK(grove::remote::node_name(echo.as_pid().node()) == erl.name());
  grove::send(echo.as_pid(), tuple({self_term(), term::binary("hello")}));
  CHECK(receive_term([](const term& t) { return t.is_record("echoed", 2); })[1] == term::binary("hello"));
  // C++ values travel as their terms.
  grove::send(echo.as_pid(), tuple({self_term(), term(std::int64_t{1} << 40)}));
  CHECK(receive_term([](const term& t) { return t.is_record("echoed", 2); })[1] == term(std::int64_t{1} << 40));
  // Erlang → {inbox, GroveNode} ! Msg; Grove → {peer, ErlangNode} ! Msg.
  grove::register_name("inbox", grove::self());
  CHECK(erl.run("send_to", {tuple({a("inbox"), term(grove::atom(c.g.name()))}), a("by_name")}) == a("ok"));
  CHECK(receive_term([](const term& t) { return t.is_atom(); }) == a("by_name"));
  grove::unregister("inbox");
  grove::dist::send("peer", erl.name(), tuple({a("echo"), self_term(), a("reg_send")}));
  CHECK(receive_term([](const term& t) { return t.is_atom(); }) == a("reg_send"));
  // A message sent from a thread that is not a process (SEND without a sender).
  std::thread([pid = echo.as_pid(), me = grove::self()] { grove::send(pid, tuple({term(me), a("from_a_thread")})); }).join();
  CHECK(receive_term([](const term& t) { return t.is_record("echoed", 2); })[1] == a("from_a_thread"));
  grove::send(echo.as_pid(), a("stop"));
}

TEST_CASE("both ways: aliases, and a message to an inactive alias is dropped") {
  connected c;
  auto& erl = c.erl;
  // Grove → an Erlang alias.
  const term erl_alias = erl.run("make_alias", {self_term()});
  REQUIRE(erl_alias.is_reference());
  grove::dist::send_to_alias(erl_alias, a("first"));
  CHECK(receive_term([](const term& t) { return t.is_record("via_alias", 2); })[1] == a("first"));
  // Erlang → a Grove alias (as the reference Erlang knows it by).
  const grove::alias mine = grove::make_alias();
  CHECK(erl.run("alias_reply", {grove::dist::to_term(mine), a("to_my_alias")}) == a("ok"));
  CHECK(receive_term([](const term& t) { return t.is_atom(); }) == a("to_my_alias"));
  CHECK(grove::unalias(mine));
  CHECK(erl.run("alias_reply", {grove::dist::to_term(mine), a("too_late")}) == a("ok"));
  // Behind it, a plain message: it comes, and the one to the dead alias never does.
  CHECK(erl.run("send_to", {self_term(), a("after")}) == a("ok"));
  CHECK(receive_term([](const term& t) { return t.is_atom(); }) == a("after"));
}

TEST_CASE("Erlang → Grove: a linked Erlang process exits with a custom reason; trapping and non-trapping Grove processes") {
  connected c;
  auto& erl = c.erl;
  const term reason = tuple({a("custom"), 1, term::binary("why")});
  // A trapping Grove process gets {'EXIT', ErlPid, Reason} as an exit_signal.
  grove::pid trapper = grove_trapper(grove::self());
  const term linker = erl.run("linker", {term(trapper), self_term()});
  CHECK(receive_term([](const term& t) { return t.is_record("linked", 2); })[1] == linker);
  grove::send(linker.as_pid(), tuple({a("go"), reason}));
  const term exit = receive_term([](const term& t) { return t.is_record("EXIT", 3); });
  CHECK(exit[1] == linker);
  CHECK(exit[2] == reason);
  // A non-trapping one dies of it, with that reason.
  grove::pid victim = grove::spawn([] { grove::receive([](term) {}); });
  const grove::monitor_ref m = grove::monitor(victim);
  const term linker2 = erl.run("linker", {term(victim), self_term()});
  receive_term([](const term& t) { return t.is_record("linked", 2); });
  grove::send(linker2.as_pid(), tuple({a("go"), reason}));
  const grove::down d = wait_down(m);
  CHECK(reason_term(d.reason) == reason);
  CHECK(d.reason.text() == "custom");
  grove::exit(trapper, grove::exit_reason::kill());
}

TEST_CASE("Grove → Erlang: a linked Grove process exits with a custom reason, throws, or is killed") {
  connected c;
  auto& erl = c.erl;
  const term trapper = erl.run("trapper", {self_term()});
  receive_term([](const term& t) { return t.is_record("trapper", 2); });
  SUBCASE("a custom reason reaches the trapping Erlang process unchanged") {
    const term reason = tuple({a("shutdown"), a("maintenance")});
    grove::pid p = grove::spawn([reason] {
      grove::receive([](term) {});
      grove::exit(grove::dist::to_exit_reason(reason));
    });
    grove::send(trapper.as_pid(), tuple({a("link"), term(p)}));
    CHECK(receive_term([](const term& t) { return t.is_record("link_result", 2); })[1] == a("true"));
    grove::send(p, a("go"));
    const term got = receive_term([](const term& t) { return t.is_record("got_exit", 3); });
    CHECK(got[1] == term(p));
    CHECK(got[2] == reason);
  }
  SUBCASE("an exception: {exception, <<What>>}") {
    grove::pid p = grove::spawn([] {
      grove::receive([](term) {});
      throw std::runtime_error("disk on fire");
    });
    grove::send(trapper.as_pid(), tuple({a("link"), term(p)}));
    receive_term([](const term& t) { return t.is_record("link_result", 2); });
    grove::send(p, a("go"));
    const term got = receive_term([](const term& t) { return t.is_record("got_exit", 3); });
    CHECK(got[2] == tuple({a("exception"), term::binary("disk on fire")}));
  }
  SUBCASE("killed by Erlang's exit(P, kill): dies killed, and its link says killed") {
    grove::pid p = grove::spawn([] {
      grove::trap_exit(true);  // kill cannot be trapped
      for (;;) grove::receive([](term) {});
    });
    const grove::monitor_ref m = grove::monitor(p);
    grove::send(trapper.as_pid(), tuple({a("link"), term(p)}));
    receive_term([](const term& t) { return t.is_record("link_result", 2); });
    CHECK(erl.run("exit2", {term(p), a("kill")}) == a("ok"));
    CHECK(wait_down(m).reason.is_killed());
    const term got = receive_term([](const term& t) { return t.is_record("got_exit", 3); });
    CHECK(got[2] == a("killed"));
  }
  grove::send(trapper.as_pid(), tuple({a("die"), a("normal")}));
}

TEST_CASE("both ways: kill through a link is an ordinary, trappable reason; sent directly it kills") {
  connected c;
  auto& erl = c.erl;
  // Erlang process exits with reason kill while linked to a trapping Grove process: trapped as kill.
  grove::pid trapper = grove_trapper(grove::self());
  const term linker = erl.run("linker", {term(trapper), self_term()});
  receive_term([](const term& t) { return t.is_record("linked", 2); });
  grove::send(linker.as_pid(), tuple({a("go"), a("kill")}));
  CHECK(receive_term([](const term& t) { return t.is_record("EXIT", 3); })[2] == a("kill"));
  // Grove exit(ErlPid, kill): the Erlang process dies killed (its monitor says so).
  const term sleeper = erl.run("sleeper", {});
  grove::send(trapper, tuple({a("monitor"), sleeper}));
  receive_term([](const term& t) { return t.is_record("monitoring", 2); });
  grove::exit(sleeper.as_pid(), grove::exit_reason::kill());
  CHECK(receive_term([](const term& t) { return t.is_record("DOWN", 5); })[4] == a("killed"));
  // A Grove process that exits with kill through a link: the trapping Erlang process gets kill.
  const term etrapper = erl.run("trapper", {self_term()});
  receive_term([](const term& t) { return t.is_record("trapper", 2); });
  grove::pid p = grove::spawn([] {
    grove::receive([](term) {});
    grove::exit(grove::exit_reason::kill());
  });
  grove::send(etrapper.as_pid(), tuple({a("link"), term(p)}));
  receive_term([](const term& t) { return t.is_record("link_result", 2); });
  grove::send(p, a("go"));
  CHECK(receive_term([](const term& t) { return t.is_record("got_exit", 3); })[2] == a("kill"));
  grove::exit(trapper, grove::exit_reason::kill());
  grove::send(etrapper.as_pid(), tuple({a("die"), a("normal")}));
}

TEST_CASE("both ways: exit/2 with normal is ignored by a process that does not trap; another reason kills it") {
  connected c;
  auto& erl = c.erl;
  // Erlang → Grove
  grove::pid p = grove::spawn([] { grove::receive([](term) {}); });
  const grove::monitor_ref m = grove::monitor(p);
  CHECK(erl.run("exit2", {term(p), a("normal")}) == a("ok"));
  CHECK(erl.run("exit2", {term(p), tuple({a("bye"), 2})}) == a("ok"));  // after the normal one, in order
  const grove::down d = wait_down(m);
  CHECK(reason_term(d.reason) == tuple({a("bye"), 2}));
  // Grove → Erlang: watch an Erlang sleeper from Erlang, send it normal then a reason.
  const term sleeper = erl.run("sleeper", {});
  const term watcher = erl.run("watcher", {sleeper, self_term()});
  receive_term([](const term& t) { return t.is_record("watching", 2); });
  grove::exit(sleeper.as_pid(), grove::exit_reason::normal());
  grove::exit(sleeper.as_pid(), grove::dist::to_exit_reason(tuple({a("bye"), 3})));
  const term down = receive_term([](const term& t) { return t.is_record("down", 4); });
  CHECK(down[3] == tuple({a("bye"), 3}));
  (void)watcher;
}

TEST_CASE("both ways: after unlink no exit signal comes through the link") {
  connected c;
  auto& erl = c.erl;
  // Grove unlinks from an Erlang process that then exits: nothing reaches the trapping Grove process.
  grove::pid trapper = grove_trapper(grove::self());
  const term linker = erl.run("linker", {term(trapper), self_term()});
  receive_term([](const term& t) { return t.is_record("linked", 2); });
  grove::send(trapper, tuple({a("unlink"), linker}));
  receive_term([](const term& t) { return t.is_atom("unlinked"); });
  grove::send(linker.as_pid(), tuple({a("go"), a("after_unlink")}));
  // An Erlang process unlinks from a Grove process that then exits: nothing reaches it.
  const term etrapper = erl.run("trapper", {self_term()});
  receive_term([](const term& t) { return t.is_record("trapper", 2); });
  grove::pid p = grove::spawn([] {
    grove::receive([](term) {});
    grove::exit(grove::exit_reason("after_unlink"));
  });
  grove::send(etrapper.as_pid(), tuple({a("link"), term(p)}));
  receive_term([](const term& t) { return t.is_record("link_result", 2); });
  grove::send(etrapper.as_pid(), tuple({a("unlink"), term(p)}));
  receive_term([](const term& t) { return t.is_atom("unlinked"); });
  grove::send(p, a("go"));
  // A marker behind: if an exit had come, it would be before it.
  grove::send(etrapper.as_pid(), tuple({a("exit"), self_term(), a("normal")}));  // normal exit/2 to us: ignored
  CHECK(receive_term([](const term& t) { return t.is_atom("exit_sent"); }) == a("exit_sent"));
  grove::send(trapper, a("marker"));
  CHECK(!grove::receive(grove::when([](const term& t) { return t.is_record("EXIT", 3) || t.is_record("got_exit", 3); },
                                    [](term) { return true; }),
                        grove::after(500ms, [] { return false; })));
  grove::exit(trapper, grove::exit_reason::kill());
  grove::send(etrapper.as_pid(), tuple({a("die"), a("normal")}));
}

TEST_CASE("Erlang → Grove: a thousand link/unlink races leave both sides unlinked (UNLINK_ID)") {
  connected c;
  auto& erl = c.erl;
  grove::pid p = grove::spawn([] {
    grove::trap_exit(true);
    for (;;) grove::receive([](term) {}, [](grove::exit_signal) {});
  });
  // The Erlang process links and unlinks 1,000 times, then asks whether it is linked.
  CHECK(erl.run("spawn_unlinker", {term(p), 1000}) == a("false"));
  // The Grove process agrees once the last signal is in: its link set holds no Erlang pid.
  CHECK(grove_test::wait_until([&] {
    auto info = grove::process_info(p);
    return info && info->links.empty();
  }));
  grove::exit(p, grove::exit_reason::kill());
}

TEST_CASE("Grove → Erlang: a thousand link/unlink races from a Grove process leave both sides unlinked") {
  connected c;
  auto& erl = c.erl;
  const term trapper = erl.run("trapper", {term(grove::self())});
  receive_term([](const term& t) { return t.is_record("trapper", 2); });
  grove::pid p = grove::spawn([far = trapper.as_pid(), me = grove::self()] {
    for (int i = 0; i < 1000; ++i) {
      grove::link(far);
      grove::unlink(far);
    }
    grove::link(far);  // one more, kept: the Erlang side must show exactly this one, then none
    grove::send(me, a("linked_once"));
    grove::receive([](term t) {
      if (t.is_atom("unlink")) return;
    });
    grove::unlink(far);
    grove::send(me, a("unlinked"));
    grove::receive([](term) {});
  });
  receive_term([](const term& t) { return t.is_atom("linked_once"); });
  // Frames from this node reach the Erlang node in the order they were queued, so the run below
  // is read there after every LINK and UNLINK_ID the loop sent.
  CHECK(erl.run("links_of", {trapper}) == term::list({term(p)}));
  grove::send(p, a("unlink"));
  receive_term([](const term& t) { return t.is_atom("unlinked"); });
  CHECK(erl.run("links_of", {trapper}) == term());
  CHECK(!grove::receive(grove::when([](const term& t) { return t.is_record("got_exit", 3); }, [](term) { return true; }),
                        grove::after(200ms, [] { return false; })));
  grove::exit(p, grove::exit_reason::kill());
  grove::send(trapper.as_pid(), tuple({a("die"), a("normal")}));
}

TEST_CASE("both ways: monitors fire with the reason, noproc for a dead process, and demonitor stops them") {
  connected c;
  auto& erl = c.erl;
  // Grove monitors an Erlang process that exits with a reason.
  const term sleeper = erl.run("sleeper", {});
  const grove::monitor_ref m = grove::monitor(sleeper.as_pid());
  CHECK(erl.run("exit2", {sleeper, tuple({a("shutdown"), a("done")})}) == a("ok"));
  grove::down d = wait_down(m);
  CHECK(d.from == sleeper.as_pid());
  CHECK(reason_term(d.reason) == tuple({a("shutdown"), a("done")}));
  // ... and a dead one: noproc.
  const grove::monitor_ref dead = grove::monitor(sleeper.as_pid());
  CHECK(wait_down(dead).reason.what_kind() == grove::exit_reason::kind::noproc);
  // A link to the dead Erlang process: a trapping Grove process gets noproc through it.
  grove::trap_exit(true);
  grove::link(sleeper.as_pid());
  const grove::exit_signal e = wait_exit_signal();
  CHECK(e.from == sleeper.as_pid());
  CHECK(e.reason.what_kind() == grove::exit_reason::kind::noproc);
  grove::trap_exit(false);
  // Erlang monitors a Grove process that exits with a reason, then a dead one: noproc.
  grove::pid p = grove::spawn([] {
    grove::receive([](term) {});
    grove::exit(grove::exit_reason("gone_fishing"));
  });
  erl.run("watcher", {term(p), self_term()});
  const term ref = receive_term([](const term& t) { return t.is_record("watching", 2); })[1];
  grove::send(p, a("go"));
  const term down = receive_term([](const term& t) { return t.is_record("down", 4); });
  CHECK(down[1] == ref);
  CHECK(down[2] == term(p));
  CHECK(down[3] == a("gone_fishing"));
  erl.run("watcher", {term(p), self_term()});
  receive_term([](const term& t) { return t.is_record("watching", 2); });
  CHECK(receive_term([](const term& t) { return t.is_record("down", 4); })[3] == a("noproc"));
  // Demonitor: a monitor given up before its target exits says nothing.
  const term s2 = erl.run("sleeper", {});
  const grove::monitor_ref m2 = grove::monitor(s2.as_pid());
  CHECK(grove::demonitor(m2));
  CHECK(erl.run("exit2", {s2, a("kill")}) == a("ok"));
  const grove::monitor_ref m3 = grove::monitor(s2.as_pid());  // behind the demonitor: fires with noproc
  CHECK(wait_down(m3).reason.what_kind() == grove::exit_reason::kind::noproc);
  CHECK(!grove::receive(grove::when([&](const grove::down& x) { return x.ref == m2; }, [](grove::down) { return true; }),
                        grove::after(200ms, [] { return false; })));
}

TEST_CASE("both ways: monitors by registered name name {Name, Node}; an unregistered name is noproc") {
  connected c;
  auto& erl = c.erl;
  // Grove monitors {kv, ErlNode}.
  const std::string kv = dist_test::unique_alive("kv");
  const term kv_pid = erl.run("start_kv", {term(grove::atom(kv))});
  REQUIRE(kv_pid.is_pid());
  const grove::monitor_ref m = grove::monitor(kv, erl.name());
  CHECK(erl.run("exit2", {kv_pid, tuple({a("shutdown"), a("by_test")})}) == a("ok"));
  grove::down d = wait_down(m);
  CHECK(d.name == kv);
  CHECK(d.node == erl.name());
  CHECK(d.from.is_null());
  CHECK(reason_term(d.reason) == tuple({a("shutdown"), a("by_test")}));
  const grove::monitor_ref none = grove::monitor("nobody_here", erl.name());
  d = wait_down(none);
  CHECK(d.name == "nobody_here");
  CHECK(d.reason.what_kind() == grove::exit_reason::kind::noproc);
  // Erlang monitors {svc, GroveNode}.
  grove::pid svc = grove::spawn([] {
    grove::receive([](term) {});
    grove::exit(grove::exit_reason("svc_done"));
  });
  grove::register_name("svc", svc);
  erl.run("watcher_by_name", {a("svc"), term(grove::atom(c.g.name())), self_term()});
  receive_term([](const term& t) { return t.is_record("watching", 2); });
  grove::send(svc, a("go"));
  const term down = receive_term([](const term& t) { return t.is_record("down", 4); });
  CHECK(down[2] == tuple({a("svc"), term(grove::atom(c.g.name()))}));
  CHECK(down[3] == a("svc_done"));
  erl.run("watcher_by_name", {a("nobody_here"), term(grove::atom(c.g.name())), self_term()});
  receive_term([](const term& t) { return t.is_record("watching", 2); });
  CHECK(receive_term([](const term& t) { return t.is_record("down", 4); })[3] == a("noproc"));
}

TEST_CASE("Erlang → Grove: a Grove process busy computing dies of an Erlang exit signal at its next runtime call") {
  // The connection's reader is a process too: it needs a worker the spinning process does not hold
  // (scheduling is cooperative: README, "Rules for code that runs in a process").
  if (grove_test::test_workers() < 2) return;
  connected c;
  auto& erl = c.erl;
  std::atomic<bool> spinning{false}, stop{false};
  grove::pid p = grove::spawn([&] {
    spinning.store(true);
    while (!stop.load()) {
    }
    grove::yield();
    FAIL("survived");
  });
  const grove::monitor_ref m = grove::monitor(p);
  REQUIRE(grove_test::wait_until([&] { return spinning.load(); }));
  CHECK(erl.run("exit2", {term(p), a("interrupted")}) == a("ok"));
  // The signal has arrived (the run answered after sending it, in order); the process computes on.
  stop.store(true);
  CHECK(reason_term(wait_down(m).reason) == a("interrupted"));
}

TEST_CASE("Grove → Erlang: gen_server:call to an Erlang server: reply, timeout, death mid-call, noproc") {
  connected c;
  auto& erl = c.erl;
  const std::string kv = dist_test::unique_alive("kv");
  const term kv_pid = erl.run("start_kv", {term(grove::atom(kv))});
  const grove::dist::server_name server{kv, erl.name()};
  CHECK(grove::dist::call(server, tuple({a("put"), a("k"), 42})).value() == a("ok"));
  CHECK(grove::dist::call(server, tuple({a("get"), a("k")})).value() == term(42));
  CHECK(grove::dist::call(kv_pid.as_pid(), tuple({a("echo"), term::binary("by pid")})).value() == term::binary("by pid"));
  grove::dist::cast(server, tuple({a("put"), a("c"), 7}));
  CHECK(grove::dist::call(server, tuple({a("get"), a("c")})).value() == term(7));  // after the cast
  // A timeout, and the late reply never lands in the mailbox.
  auto slow = grove::dist::call(server, tuple({a("sleep"), 1500}), 200ms);
  CHECK(slow.error() == grove::errc::timeout);
  CHECK(grove::dist::call(server, tuple({a("get"), a("k")}), 5s).value() == term(42));  // after the sleep
  CHECK(!grove::receive([](term) { return true; }, grove::after(200ms, [] { return false; })));
  // The server dies during the call: the caller gets its reason at once.
  auto crashed = grove::dist::call(server, tuple({a("crash"), tuple({a("oops"), 1})}));
  CHECK(crashed.error() == grove::services::errc::exited);
  CHECK(reason_term(crashed.failure().reason) == tuple({a("oops"), 1}));
  // Nobody there: noproc, at once.
  CHECK(grove::dist::call(server, a("anything")).error() == grove::errc::noproc);
  CHECK(grove::dist::call(kv_pid.as_pid(), a("anything")).error() == grove::errc::noproc);
}

namespace {
struct kv_server {
  std::map<term, term> data;
  term handle_call(const term& req, const grove::dist::call_from&) {
    if (req.is_record("put", 3)) {
      data[req[1]] = req[2];
      return a("ok");
    }
    if (req.is_record("get", 2)) {
      auto it = data.find(req[1]);
      return it == data.end() ? a("undefined") : it->second;
    }
    if (req.is_record("sleep", 2)) {
      grove::sleep_for(std::chrono::milliseconds(req[1].as_int()));
      return a("slept");
    }
    if (req.is_record("crash", 2)) grove::exit(grove::dist::to_exit_reason(req[1]));
    return tuple({a("unknown"), req});
  }
  void handle_cast(const term& msg) {
    if (msg.is_record("put", 3)) data[msg[1]] = msg[2];
  }
};
}  // namespace

TEST_CASE("Erlang → Grove: gen_server:call to a Grove server: reply, timeout, death mid-call, noproc") {
  connected c;
  auto& erl = c.erl;
  const term grove_node = term(grove::atom(c.g.name()));
  grove::pid svc = grove::dist::start_gen_server<kv_server>({.name = "kv"});
  const auto erl_call = [&](const term& req, int timeout_ms) {
    return erl.run("call_name", {a("kv"), grove_node, req, timeout_ms});
  };
  CHECK(erl_call(tuple({a("put"), a("k"), term::binary("v")}), 5000) == tuple({a("ok"), a("ok")}));
  CHECK(erl_call(tuple({a("get"), a("k")}), 5000) == tuple({a("ok"), term::binary("v")}));
  CHECK(erl.run("call", {term(svc), tuple({a("get"), a("k")}), 5000}) == tuple({a("ok"), term::binary("v")}));
  // A timeout: Erlang's caller exits {timeout, {gen_server, call, ...}}.
  const term slow = erl_call(tuple({a("sleep"), 1500}), 200);
  REQUIRE(slow.is_record("exit", 2));
  CHECK(slow[1].is_record("timeout", 2));
  // The server dies during the call: {exit, {Reason, {gen_server, call, ...}}}.
  const term crashed = erl_call(tuple({a("crash"), tuple({a("oops"), 2})}), 5000);
  REQUIRE(crashed.is_record("exit", 2));
  CHECK(crashed[1][0] == tuple({a("oops"), 2}));
  CHECK(!grove::is_alive(svc));
  // Nobody registered: {exit, {noproc, ...}}.
  const term none = erl_call(tuple({a("get"), a("k")}), 5000);
  REQUIRE(none.is_record("exit", 2));
  CHECK(none[1][0] == a("noproc"));
}

TEST_CASE("both ways: funs pass through a Grove node and still work where they came from") {
  connected c;
  auto& erl = c.erl;
  const term funs = erl.run("make_funs", {});
  REQUIRE(funs.is_proper_list());
  REQUIRE(funs.size() == 3);
  for (const term& f : funs.elements()) CHECK(f.type() == term::kind::fun);
  // Back to Erlang, in a message built here: atoms that came as cache references, and the pid the
  // closure holds, must still mean what they meant.
  CHECK(erl.run("apply_funs", {funs}) == term::list({5, 37, a("true")}));
}

TEST_CASE("both ways: a 10 MB binary, and 100,000 messages in order") {
  connected c;
  auto& erl = c.erl;
  std::string big(10 * 1024 * 1024, '\0');
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>(i * 131 + (i >> 12));
  const term echo = erl.run("spawn_echo", {});
  grove::send(echo.as_pid(), tuple({self_term(), term::binary(big)}));
  const term back = receive_term([](const term& t) { return t.is_record("echoed", 2); });
  CHECK(back[1].as_binary() == big);
  // Grove → Erlang: 100,000 in order, checked there.
  const int n = 100'000;
  const term receiver = erl.run("receive_many", {n, self_term()});
  const term rpid = receive_term([](const term& t) { return t.is_record("receiver", 2); })[1];
  for (int i = 1; i <= n; ++i) grove::send(rpid.as_pid(), tuple({a("seq"), i}));
  CHECK(receive_term([](const term& t) { return t.is_record("received", 2); })[1] == a("ok"));
  (void)receiver;
  // Erlang → Grove: 100,000 in order, checked here.
  CHECK(erl.run("send_many", {self_term(), n}) == a("ok"));
  int expected = 1;
  bool in_order = true;
  while (expected <= n) {
    const term t = receive_term([](const term& x) { return x.is_record("seq", 2); });
    if (t.is_nil()) break;  // timed out (already failed)
    if (t[1].as_int() != expected) in_order = false;
    ++expected;
  }
  CHECK(in_order);
  CHECK(expected == n + 1);
  CHECK(receive_term([](const term& t) { return t.is_atom("done"); }) == a("done"));
  grove::send(echo.as_pid(), a("stop"));
}

TEST_CASE("both ways: thousands of distinct atoms, long atoms and third nodes' pids cross through the atom cache intact") {
  connected c;
  auto& erl = c.erl;
  const term echo = erl.run("spawn_echo", {});
  std::string long_name;
  for (int i = 0; i < 255; ++i) long_name += "\xC3\xA9";  // 255 characters, 510 bytes: two length bytes
  const term third(grove::pid::remote(grove::remote::node_slot("third@127.0.0.1"), 5, 11, 2));
  // 6,000 atoms, three times the 2,048 entries of Erlang's cache; each message also names atoms sent
  // long before (their entries replaced since) and, now and then, more than a header can name.
  const int n = 6000;
  std::vector<term> atoms;
  for (int i = 0; i < n; ++i) atoms.push_back(a(fmt::format("interop_atom_{}", i).c_str()));
  bool all_back = true;
  for (int i = 0; i + 20 <= n && all_back; i += 20) {
    std::vector<term> elements(atoms.begin() + i, atoms.begin() + i + 20);
    if (i >= 2500)
      for (int k = 0; k < 10; ++k) elements.push_back(atoms[static_cast<std::size_t>((i * 7 + k * 131) % i)]);
    if (i % 1000 == 0) {
      elements.insert(elements.end(), atoms.begin(), atoms.begin() + 300);  // past 255 in one frame
      elements.push_back(term(grove::atom(long_name)));
      elements.push_back(third);
    }
    const term message = term::list(elements);
    grove::send(echo.as_pid(), tuple({self_term(), message}));
    const term back = receive_term([](const term& t) { return t.is_record("echoed", 2); });
    all_back = back[1] == message;
  }
  CHECK(all_back);
  grove::send(echo.as_pid(), a("stop"));
}

TEST_CASE("Grove → Erlang: senders to a node that stops reading wait past busy_limit_bytes, lose nothing, and can be killed or released") {
  grove::dist::node_options o;
  o.busy_limit_bytes = 256 * 1024;
  dist_test::grove_node g(o);
  dist_test::erlang_node erl(dist_test::unique_alive("busy"));
  REQUIRE(erl.wait_until_up());
  // 40 MB of 1 KB messages: far past what the kernel's socket buffers hold for a reader that stopped.
  const int n = 40'000;
  const term payload = term::binary(std::string(1024, 'p'));
  (void)erl.run("receive_many", {n, self_term()});
  const term rpid = receive_term([](const term& t) { return t.is_record("receiver", 2); })[1];
  erl.pause();  // SIGSTOP: its socket stays open, nothing is read from it
  struct progress {
    std::atomic<int> sent{0};
  };
  auto a_progress = std::make_shared<progress>();
  const grove::pid test = grove::self();
  const auto sender = [&](std::shared_ptr<progress> pr, int count) {
    return grove::spawn([=] {
      for (int i = 1; i <= count; ++i) {
        grove::send(rpid.as_pid(), tuple({a("seq"), i, payload}));
        pr->sent.store(i, std::memory_order_relaxed);
      }
      grove::send(test, tuple({a("sent_all"), term(grove::self())}));
    });
  };
  const auto gated = [](grove::pid p) {  // parked in the gate's receive (a sender never receives otherwise)
    auto s = grove::process_summary_of(p);
    return s && s->status == grove::process_status::waiting && s->waiting_on == grove::wait_reason::receive;
  };
  const grove::pid a_sender = sender(a_progress, n);
  REQUIRE(grove_test::wait_until([&] { return gated(a_sender); }));
  CHECK(a_progress->sent.load() < n);
  // A second sender is held too (the queue is still past the limit), and a kill ends its wait.
  const grove::spawned b = grove::spawn_monitor([=] {
    for (;;) grove::send(rpid.as_pid(), a("never_read"));
  });
  REQUIRE(grove_test::wait_until([&] { return gated(b.pid); }));
  grove::exit(b.pid, grove::exit_reason::kill());
  const grove::down d = grove::receive(grove::when([&](const grove::down& x) { return x.ref == b.monitor; }, [](grove::down x) { return x; }),
                                       grove::after(patience, [] { return grove::down{}; }));
  CHECK(d.reason.text() == "killed");
  // Senders that must not park are not held (they queue): one inside an exit_deferral (whose sends
  // must not raise), and one whose captures send as the exit protocol destroys them.
  grove::spawn([=] {
    {
      grove::exit_deferral deferred;
      grove::send(rpid.as_pid(), a("sent_deferred"));
    }
    grove::send(test, a("deferred_not_held"));
  });
  CHECK(receive_term([](const term& t) { return t.is_atom("deferred_not_held"); }) == a("deferred_not_held"));
  struct sends_when_destroyed {  // sends only from a process other than the one that made it
    grove::pid to;
    grove::pid maker = grove::self();
    ~sends_when_destroyed() {
      if (grove::self() != maker) grove::send(to, grove::term(grove::atom("sent_at_exit")));
    }
  };
  const grove::spawned e = grove::spawn_monitor([guard = sends_when_destroyed{rpid.as_pid()}] { (void)guard; });
  const grove::down e_down = grove::receive(grove::when([&](const grove::down& x) { return x.ref == e.monitor; }, [](grove::down x) { return x; }),
                                            grove::after(patience, [] { return grove::down{}; }));
  CHECK(e_down.reason.text() == "normal");
  // The node reads again: the held sender finishes, and every message arrived, in order.
  erl.resume();
  const term all = receive_term([](const term& t) { return t.is_record("sent_all", 2); });
  CHECK(all[1] == term(a_sender));
  CHECK(receive_term([](const term& t) { return t.is_record("received", 2); })[1] == a("ok"));
  // Held again, then the connection goes down: the sender goes on (its later messages find no node).
  (void)erl.run("receive_many", {n, self_term()});
  (void)receive_term([](const term& t) { return t.is_record("receiver", 2); });
  erl.pause();
  auto c_progress = std::make_shared<progress>();
  const grove::pid c_sender = sender(c_progress, n);
  REQUIRE(grove_test::wait_until([&] { return gated(c_sender); }));
  CHECK(grove::dist::disconnect(erl.name()));
  CHECK(receive_term([](const term& t) { return t.is_record("sent_all", 2); })[1] == term(c_sender));
  erl.resume();
}

TEST_CASE("Erlang → Grove: the Erlang node goes away: noconnection to every link and monitor across") {
  dist_test::grove_node g;
  dist_test::erlang_node erl(dist_test::unique_alive("doomed"));
  REQUIRE(erl.wait_until_up());
  grove::pid trapper = grove_trapper(grove::self());
  const term linker = erl.run("linker", {term(trapper), self_term()});
  receive_term([](const term& t) { return t.is_record("linked", 2); });
  grove::pid victim = grove::spawn([] { grove::receive([](term) {}); });
  const grove::monitor_ref vm = grove::monitor(victim);
  const term linker2 = erl.run("linker", {term(victim), self_term()});
  receive_term([](const term& t) { return t.is_record("linked", 2); });
  const term sleeper = erl.run("sleeper", {});
  const grove::monitor_ref m = grove::monitor(sleeper.as_pid());
  const grove::monitor_ref by_name = grove::monitor("peer", erl.name());
  erl.halt();
  CHECK(receive_term([](const term& t) { return t.is_record("EXIT", 3); }) == tuple({a("EXIT"), linker, a("noconnection")}));
  CHECK(reason_term(wait_down(vm).reason) == a("noconnection"));  // not trapping: died of it
  grove::down d = wait_down(m);
  CHECK(d.from == sleeper.as_pid());
  CHECK(d.reason.text() == "noconnection");
  d = wait_down(by_name);
  CHECK(d.name == "peer");
  CHECK(d.reason.text() == "noconnection");
  CHECK(grove::dist::nodes().empty());
  // A link to a process of the gone node (not reachable any more): noconnection at once.
  grove::trap_exit(true);
  grove::link(linker2.as_pid());
  CHECK(wait_exit_signal().reason.text() == "noconnection");
  // The connection logs its report after it has told the links and monitors.
  CHECK(grove_test::wait_until([&] { return g.reports().find("down, the peer closed the connection") != std::string::npos; }));
  grove::exit(trapper, grove::exit_reason::kill());
}

TEST_CASE("Grove → Erlang: the Grove node stops: Erlang's links and monitors get noconnection") {
  auto& erl = dist_test::shared_erlang();
  term collector;
  std::string first_name;
  {
    dist_test::grove_node g;
    first_name = g.name();
    REQUIRE(erl.wait_until_up());
    collector = erl.run("collector", {});
    grove::pid p = grove::spawn([] { grove::receive([](term) {}); });
    const term trapper = erl.run("trapper", {collector});
    grove::send(trapper.as_pid(), tuple({a("link"), term(p)}));
    grove::send(trapper.as_pid(), tuple({a("monitor"), term(p)}));
    // Both are in place once the trapper has answered them (to the collector).
    CHECK(grove_test::wait_until([&] { return erl.run("collected", {collector}).size() == 3; }));
  }  // dist::stop(), then the runtime stops
  // A second node asks the collector what the first node's going did.
  dist_test::grove_node g2;
  REQUIRE(erl.wait_until_up());
  term seen;
  CHECK(grove_test::wait_until([&] {
    seen = erl.run("collected", {collector});
    return seen.size() == 5;
  }));
  REQUIRE(seen.size() == 5);
  const term exit = seen[3], down = seen[4];  // after {trapper, _}, {link_result, true}, {monitor_ref, _}
  CHECK(exit.is_record("got_exit", 3));
  CHECK(exit[2] == a("noconnection"));
  CHECK(grove::remote::node_name(exit[1].as_pid().node()) == first_name);
  CHECK(down.is_record("got_down", 4));
  CHECK(down[3] == a("noconnection"));
}

TEST_CASE("both ways: a node with another cookie is refused, and the refusal is reported") {
  dist_test::grove_node g;
  // It knocks at our door every 200 ms with the wrong cookie; we knock at its.
  dist_test::erlang_node wrong(dist_test::unique_alive("wrong_cookie"), "not_the_cookie", 60,
                               "grove_peer:ping_forever('" + g.name() + "')");
  CHECK(grove_test::wait_until([&] { return g.reports().find("the peer's digest does not match our cookie") != std::string::npos; }));
  CHECK(grove_test::wait_until([&] {
    CHECK(!grove::dist::ping(wrong.name()));
    return g.reports().find("another cookie") != std::string::npos;
  }));
  CHECK(grove::dist::nodes().empty());
}

// A remote send runs the encoder in the sender's thread, on the sender's stack: it must fit the
// smallest stack a runtime allows (16 KiB), beside a few KB of the sender's own frames, whatever
// the frame's atoms (the header's arrays, ~11 KB of them, live off the stack).
TEST_CASE("Grove → Erlang: a process with the smallest stack sends across and gets its answer") {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  // The sanitizers' redzones and bookkeeping make every frame larger (the dist reader's too): they
  // check this path for memory and races with room for that; the release build checks the size.
  constexpr std::size_t stack_bytes = 64 * 1024;
#else
  constexpr std::size_t stack_bytes = 16 * 1024;
#endif
  connected c({}, grove::runtime_config{.stack_bytes = stack_bytes});
  const term echo = c.erl.run("spawn_echo", {});
  REQUIRE(echo.is_pid());
  const grove::pid me = grove::self();
  const grove::pid small = grove::spawn([echo, me] {
    // The sender's own frames take some of it: 6 KB of locals live across the send.
    volatile char locals[6 * 1024];
    for (std::size_t i = 0; i < sizeof locals; i += 512) locals[i] = static_cast<char>(i);
    std::vector<term> atoms;
    for (int i = 0; i < 300; ++i) atoms.push_back(a(fmt::format("small_stack_atom_{}", i).c_str()));  // past the 255 a header names
    const term msg = term::tuple({a("many"), term::list(atoms), term::binary(std::string(3000, 'x'))});
    grove::send(echo.as_pid(), tuple({term(grove::self()), msg}));
    const term back = grove::receive(grove::when([](const term& t) { return t.is_record("echoed", 2); }, [](const term& t) { return t[1]; }),
                                     grove::after(patience, [] { return term(); }));
    grove::send(me, tuple({a("small_stack_got"), back, term(static_cast<std::int64_t>(locals[512]))}));
  });
  const grove::monitor_ref m = grove::monitor(small);
  const term got = receive_term([](const term& t) { return t.is_record("small_stack_got", 3); });
  REQUIRE(got.is_record("small_stack_got", 3));
  CHECK(got[1][0] == a("many"));
  CHECK(got[1][1].size() == 300);
  CHECK(got[1][1][299] == a("small_stack_atom_299"));
  CHECK(wait_down(m).reason.text() == "normal");
}
