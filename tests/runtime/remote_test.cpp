// Remote pids and the seam to a distribution layer (grove/remote.hpp), with a router that records
// what the runtime hands it, standing in for grove::dist. The OTP rules are the local ones; these
// tests check that each reaches the router, and that what the router delivers acts as a local
// sender's signal would.
#include "support/fixture.hpp"

#include <grove/remote.hpp>

#include <mutex>
#include <string>
#include <vector>

#include <fmt/format.h>

using namespace std::chrono_literals;
using grove_test::patience;

namespace {

struct go {};
struct note {
  int n;
};

// What the runtime asked of the router, one line each: "send <from> <to> <type>", "link <from> <to>",
// "exit <from> <to> <reason> <link|direct>", "monitor <watcher> <target> <name>", ...
class recording_router final : public grove::remote::router {
 public:
  void send(grove::pid from, grove::pid to, grove::detail::message_node* m) noexcept override {
    const bool is_note = m->type == grove::detail::type_id<note>();
    const int n = is_note ? static_cast<grove::detail::typed_node<note>*>(m)->value.n : -1;
    grove::detail::destroy_node(m);
    add(fmt::format("send {} {} note {}", from, to, n));
  }
  void link(grove::pid from, grove::pid to) noexcept override { add(fmt::format("link {} {}", from, to)); }
  void unlink(grove::pid from, grove::pid to) noexcept override { add(fmt::format("unlink {} {}", from, to)); }
  void exit(grove::pid from, grove::pid to, const grove::exit_reason& r, bool via_link) noexcept override {
    add(fmt::format("exit {} {} {} {}", from, to, r.to_string(), via_link ? "link" : "direct"));
  }
  void monitor(grove::pid watcher, grove::pid target, std::uint64_t ref, std::string_view name) noexcept override {
    add(fmt::format("monitor {} {} {} {}", watcher, target, ref, name));
  }
  void demonitor(grove::pid watcher, grove::pid target, std::uint64_t ref) noexcept override {
    add(fmt::format("demonitor {} {} {}", watcher, target, ref));
  }
  void down(grove::pid from, grove::pid watcher, std::uint64_t ref, const grove::exit_reason& r) noexcept override {
    add(fmt::format("down {} {} {} {}", from, watcher, ref, r.to_string()));
  }

  // Waits until a recorded line equals `line`.
  bool saw(const std::string& line) {
    return grove_test::wait_until([&] {
      std::lock_guard<std::mutex> g(lock_);
      for (const auto& l : lines_)
        if (l == line) return true;
      return false;
    });
  }
  std::vector<std::string> lines() {
    std::lock_guard<std::mutex> g(lock_);
    return lines_;
  }

 private:
  void add(std::string line) noexcept {
    try {
      std::lock_guard<std::mutex> g(lock_);
      lines_.push_back(std::move(line));
    } catch (...) {
    }
  }
  std::mutex lock_;
  std::vector<std::string> lines_;
};

// Installs the router for the test's scope (and removes it before the runtime stops).
struct installed {
  explicit installed(recording_router& r, std::string_view name = "grove@127.0.0.1", std::uint32_t creation = 7) {
    grove::remote::set_router(&r, name, creation);
  }
  ~installed() { grove::remote::set_router(nullptr); }
};

grove::pid erlang_pid(std::uint32_t id, std::uint32_t serial = 0) {
  return grove::pid::remote(grove::remote::node_slot("erl@127.0.0.1"), 3, id, serial);
}

}  // namespace

TEST_CASE("a remote pid names its node by slot, prints as Erlang prints it, and compares by all four parts") {
  const std::uint32_t a = grove::remote::node_slot("a@host");
  const std::uint32_t b = grove::remote::node_slot("b@host");
  CHECK(a != 0);
  CHECK(a != b);
  CHECK(grove::remote::node_slot("a@host") == a);  // a name's slot never changes
  CHECK(grove::remote::node_name(a) == "a@host");
  CHECK(grove::remote::node_name(0).empty());
  const grove::pid p = grove::pid::remote(a, 2, 81, 4);
  CHECK(p.is_remote());
  CHECK(!p.is_null());
  CHECK(p.node() == a);
  CHECK(p.creation() == 2);
  CHECK(p.index() == 81);
  CHECK(p.serial() == 4);
  CHECK(fmt::format("{}", p) == fmt::format("<{}.81.4>", a));
  // Same numbers, another node, another incarnation, or local: four different pids.
  CHECK(p != grove::pid::remote(b, 2, 81, 4));
  CHECK(p != grove::pid::remote(a, 3, 81, 4));
  CHECK(p != grove::pid::from_parts(81, 4));
  CHECK(std::hash<grove::pid>{}(p) != std::hash<grove::pid>{}(grove::pid::from_parts(81, 4)));
  // Erlang's init, <N.0.0>, is a pid too, not the null one.
  CHECK(!grove::pid::remote(a, 2, 0, 0).is_null());
  CHECK_THROWS_AS(grove::remote::node_slot(""), grove::error);
  CHECK_THROWS_AS(grove::remote::node_slot(std::string(256, 'x')), grove::error);
}

TEST_CASE("without a router a remote node cannot be reached: links and monitors are answered noconnection") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  const grove::pid far = erlang_pid(40);
  const auto before = grove::system_info().dead_letters;
  grove::send(far, note{1});
  CHECK(grove::system_info().dead_letters == before + 1);
  const grove::monitor_ref m = grove::monitor(far);
  auto d = grove::receive([](grove::down d) { return d; }, grove::after(patience, [] { return grove::down{}; }));
  CHECK(d.ref == m);
  CHECK(d.from == far);
  CHECK(d.reason == grove::remote::noconnection());
  grove::trap_exit(true);
  grove::link(far);
  auto e = grove::receive([](grove::exit_signal e) { return e; }, grove::after(patience, [] { return grove::exit_signal{}; }));
  CHECK(e.from == far);
  CHECK(e.reason.text() == "noconnection");
  CHECK(grove::remote::this_node() == grove::local_node_name);
}

TEST_CASE("sends, links, exits and monitors addressed to a remote pid reach the router, in order, from the sender") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  recording_router r;
  installed guard(r);
  CHECK(grove::remote::this_node() == "grove@127.0.0.1");
  CHECK(grove::remote::this_creation() == 7);
  const grove::pid far = erlang_pid(40, 1);
  const grove::pid self = me.pid();
  grove::send(far, note{1});
  grove::send(far, note{2});
  grove::link(far);
  grove::unlink(far);
  grove::exit(far, grove::exit_reason("bye"));
  const grove::monitor_ref m = grove::monitor(far);
  CHECK(grove::demonitor(m));
  const grove::monitor_ref by_name = grove::monitor("db", "erl@127.0.0.1");
  CHECK(grove::remote::is_name_target(by_name.target));
  std::vector<std::string> expected = {
      fmt::format("send {} {} note 1", self, far),
      fmt::format("send {} {} note 2", self, far),
      fmt::format("link {} {}", self, far),
      fmt::format("unlink {} {}", self, far),
      fmt::format("exit {} {} bye direct", self, far),
      fmt::format("monitor {} {} {} ", self, far, m.id),
      fmt::format("demonitor {} {} {}", self, far, m.id),
      fmt::format("monitor {} {} {} db", self, by_name.target, by_name.id),
  };
  CHECK(r.lines() == expected);
  // A monitor of a name on this node's own name is a local monitor (nobody holds "nobody": noproc).
  const grove::monitor_ref local = grove::monitor("nobody", "grove@127.0.0.1");
  CHECK(!local.target.is_remote());
  auto d = grove::receive([](grove::down d) { return d; }, grove::after(patience, [] { return grove::down{}; }));
  CHECK(d.ref == local);
  CHECK(d.reason.what_kind() == grove::exit_reason::kind::noproc);
  CHECK(d.node == "grove@127.0.0.1");  // this node's name once distributed
}

TEST_CASE("a process that exits tells its remote links and remote watchers through the router") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  recording_router r;
  installed guard(r);
  const grove::pid far = erlang_pid(41);
  grove::pid p = grove::spawn([] {
    grove::receive([](go) {});
    grove::exit(grove::exit_reason("disk_full"));
  });
  const std::uint64_t ref = grove::remote::new_ref();
  grove::remote::deliver_link(p, far);
  grove::remote::deliver_monitor(p, far, ref);
  // The link and the monitor are acted on before the message behind them (same sender, in order).
  grove::send(p, go{});
  CHECK(r.saw(fmt::format("exit {} {} disk_full link", p, far)));
  CHECK(r.saw(fmt::format("down {} {} {} disk_full", p, far, ref)));
}

TEST_CASE("a link or monitor from a remote process to a dead one is answered noproc through the router") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  recording_router r;
  installed guard(r);
  const grove::pid far = erlang_pid(42);
  grove::pid dead = grove::spawn([] {});
  REQUIRE(grove_test::wait_until([&] { return !grove::is_alive(dead); }));
  grove::remote::deliver_link(dead, far);
  grove::remote::deliver_monitor(dead, far, 99);
  CHECK(r.saw(fmt::format("exit {} {} noproc link", dead, far)));
  CHECK(r.saw(fmt::format("down {} {} 99 noproc", dead, far)));
  // A message to a dead pid is a dead letter, as from a local sender.
  const auto before = grove::system_info().dead_letters;
  grove::remote::deliver_message(dead, grove::detail::make_node<note>(note{3}));
  CHECK(grove::system_info().dead_letters == before + 1);
}

TEST_CASE("exit signals from a remote process follow OTP's rules: trapped, ignored, or fatal with the reason") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  recording_router r;
  installed guard(r);
  const grove::pid far = erlang_pid(43);
  SUBCASE("a trapping process receives the exit signal as a message, with the remote sender") {
    grove::pid p = grove::spawn([self = me.pid()] {
      grove::trap_exit(true);
      grove::send(self, go{});
      grove::receive([self](grove::exit_signal e) { grove::send(self, std::move(e)); });
    });
    REQUIRE(grove::receive([](go) { return true; }, grove::after(patience, [] { return false; })));
    grove::remote::deliver_link(p, far);
    grove::remote::deliver_exit(p, far, grove::exit_reason("timeout_upstream"), true);
    auto e = grove::receive([](grove::exit_signal e) { return e; }, grove::after(patience, [] { return grove::exit_signal{}; }));
    CHECK(e.from == far);
    CHECK(e.reason.text() == "timeout_upstream");
  }
  SUBCASE("a process busy computing dies of a remote link's exit at its next runtime call") {
    std::atomic<bool> spinning{false}, stop{false};
    grove::pid p = grove::spawn([&] {
      spinning.store(true);
      while (!stop.load()) {
      }
      grove::yield();
      FAIL("survived the exit signal");
    });
    const grove::monitor_ref m = grove::monitor(p);
    REQUIRE(grove_test::wait_until([&] { return spinning.load(); }));
    grove::remote::deliver_link(p, far);
    grove::remote::deliver_exit(p, far, grove::exit_reason("crashed"), true);
    stop.store(true);
    auto d = grove::receive([](grove::down d) { return d; }, grove::after(patience, [] { return grove::down{}; }));
    CHECK(d.ref == m);
    CHECK(d.reason.text() == "crashed");
  }
  SUBCASE("a link exit after an unlink is ignored; kill sent directly kills a trapping process") {
    grove::pid p = grove::spawn([] {
      grove::trap_exit(true);
      for (;;) grove::receive([](go) {});
    });
    const grove::monitor_ref m = grove::monitor(p);
    grove::remote::deliver_link(p, far);
    grove::remote::deliver_unlink(p, far);
    grove::remote::deliver_exit(p, far, grove::exit_reason("late"), true);  // the link is gone
    grove::remote::deliver_exit(p, far, grove::exit_reason::kill(), false);
    auto d = grove::receive([](grove::down d) { return d; }, grove::after(patience, [] { return grove::down{}; }));
    CHECK(d.ref == m);
    CHECK(d.reason.is_killed());
  }
}

TEST_CASE("a down from a remote node reaches the watcher; a monitor by remote name names {name, node}") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  recording_router r;
  installed guard(r);
  const grove::pid far = erlang_pid(44);
  const grove::monitor_ref m = grove::monitor(far);
  grove::remote::deliver_down(me.pid(), far, m.id, grove::exit_reason("shutdown_requested"));
  auto d = grove::receive([](grove::down d) { return d; }, grove::after(patience, [] { return grove::down{}; }));
  CHECK(d.ref == m);
  CHECK(d.from == far);
  CHECK(d.reason.text() == "shutdown_requested");
  CHECK(d.name.empty());
  const grove::monitor_ref by_name = grove::monitor("db", "erl@127.0.0.1");
  grove::remote::deliver_down(me.pid(), by_name.target, by_name.id, grove::exit_reason::noproc());
  d = grove::receive([](grove::down d) { return d; }, grove::after(patience, [] { return grove::down{}; }));
  CHECK(d.ref == by_name);
  CHECK(d.from.is_null());
  CHECK(d.name == "db");
  CHECK(d.node == "erl@127.0.0.1");
  CHECK(d.reason.what_kind() == grove::exit_reason::kind::noproc);
  // A down for a monitor the watcher no longer holds vanishes (demonitor's guarantee).
  const grove::monitor_ref gone = grove::monitor(far);
  CHECK(grove::demonitor(gone));
  grove::remote::deliver_down(me.pid(), far, gone.id, grove::exit_reason("late"));
  CHECK(!grove::receive([](grove::down) { return true; }, grove::after(200ms, [] { return false; })));
}

TEST_CASE("messages and alias messages from a remote process arrive; an inactive alias drops them") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  recording_router r;
  installed guard(r);
  grove::remote::deliver_message(me.pid(), grove::detail::make_node<note>(note{5}));
  CHECK(grove::receive([](note n) { return n.n; }, grove::after(patience, [] { return -1; })) == 5);
  const grove::alias a = grove::make_alias();
  grove::remote::deliver_to_alias(a, grove::detail::make_node<note>(note{6}));
  CHECK(grove::receive([](note n) { return n.n; }, grove::after(patience, [] { return -1; })) == 6);
  CHECK(grove::unalias(a));
  grove::remote::deliver_to_alias(a, grove::detail::make_node<note>(note{7}));
  CHECK(grove::receive([](note n) { return n.n; }, grove::after(200ms, [] { return -1; })) == -1);
}

TEST_CASE("one router at a time; removing it waits for calls in progress, and remote pids stay valid after") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  recording_router r1, r2;
  CHECK_THROWS_AS(grove::remote::set_router(&r1, ""), grove::error);
  grove::remote::set_router(&r1, "grove@127.0.0.1", 1);
  CHECK_THROWS_AS(grove::remote::set_router(&r2, "grove@127.0.0.1", 1), grove::error);
  // Senders on every worker while the router goes away: each send reaches it or is a dead letter.
  const grove::pid far = erlang_pid(45);
  std::atomic<bool> stop{false};
  std::vector<grove::pid> senders;
  for (unsigned i = 0; i < grove_test::test_workers(); ++i)
    senders.push_back(grove::spawn([&stop, far] {
      while (!stop.load(std::memory_order_relaxed)) grove::send(far, note{1});
    }));
  REQUIRE(grove_test::wait_until([&] { return r1.lines().size() > 100; }));
  grove::remote::set_router(nullptr);
  const std::size_t seen = r1.lines().size();
  grove::remote::set_router(&r2, "grove@127.0.0.1", 2);
  REQUIRE(grove_test::wait_until([&] { return r2.lines().size() > 100; }));
  CHECK(r1.lines().size() == seen);  // nothing reached the removed router after set_router returned
  stop.store(true);
  for (grove::pid s : senders) {
    const grove::monitor_ref m = grove::monitor(s);
    grove::receive(grove::when([&](const grove::down& d) { return d.ref == m; }, [](grove::down) {}));
  }
  grove::remote::set_router(nullptr);
}
