// Messages: send, selective receive, guards, timeouts, ordering, dead letters, names.
#include "support/fixture.hpp"

#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using grove_test::patience;

namespace {
struct stop {};
struct reply_to {
  grove::pid to;
};
}  // namespace

TEST_CASE("messages that no handler matches stay in the mailbox, in order, for a later receive") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  grove::pid self = me.pid();
  grove::send(self, std::string("first"));
  grove::send(self, 1);
  grove::send(self, std::string("second"));
  grove::send(self, 2);
  // Only ints now: the strings stay.
  CHECK(grove::receive([](int i) { return i; }) == 1);
  CHECK(grove::receive([](int i) { return i; }) == 2);
  auto info = grove::process_info(self);
  REQUIRE(info);
  CHECK(info->mailbox_length == 2);
  CHECK(grove::receive([](std::string s) { return s; }) == "first");
  CHECK(grove::receive([](std::string s) { return s; }) == "second");
}

TEST_CASE("handlers are tried in order, and a guard rejects without consuming") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  for (int i : {3, 10, 4, 20}) grove::send(me.pid(), i);
  auto big = [] { return grove::receive(grove::when([](int n) { return n >= 10; }, [](int n) { return n; })); };
  CHECK(big() == 10);
  CHECK(big() == 20);
  int small = grove::receive(grove::when([](int n) { return n >= 10; }, [](int) { return -1; }), [](int n) { return n; });
  CHECK(small == 3);
  CHECK(grove::receive([](int n) { return n; }) == 4);
}

TEST_CASE("after(0) polls: it returns at once when nothing matches") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  bool timed_out = grove::receive([](int) { return false; }, grove::after(0ms, [] { return true; }));
  CHECK(timed_out);
  grove::send(me.pid(), 5);
  // The message is in our own mailbox already: a poll sees it.
  CHECK(grove::receive([](int n) { return n; }, grove::after(0ms, [] { return -1; })) == 5);
}

TEST_CASE("a receive timeout fires after its time, not before, and not a second late") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  grove::pid self = me.pid();
  grove::spawn([self] {
    auto t0 = std::chrono::steady_clock::now();
    bool timed_out = grove::receive([](int) { return false; }, grove::after(1s, [] { return true; }));
    grove::send(self, std::pair<bool, double>(timed_out, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()));
  });
  auto [timed_out, seconds] = grove::receive([](std::pair<bool, double> r) { return r; });
  CHECK(timed_out);
  CHECK(seconds >= 1.0);
  CHECK(seconds < 2.0);
}

TEST_CASE("a message of a type no handler takes stays; a catch-all any_message takes it") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  grove::send(me.pid(), 3.5);
  bool got_int = grove::receive([](int) { return true; }, grove::after(50ms, [] { return false; }));
  CHECK_FALSE(got_int);
  std::string type;
  double value = 0;
  grove::receive([&](grove::any_message m) {
    type = m.type_name();
    if (double* d = m.get<double>()) value = *d;
  });
  CHECK(type == typeid(double).name());
  CHECK(value == 3.5);
}

TEST_CASE("a send to a dead or never-existing pid is a counted no-op") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  auto s = grove::spawn_monitor([] {});
  grove::receive([](grove::down) {});
  auto before = grove::system_info().dead_letters;
  grove::send(s.pid, 1);
  grove::send(grove::pid::from_parts(999999, 7), 2);
  grove::send(grove::pid(), 3);
  CHECK(grove::system_info().dead_letters == before + 3);
  CHECK(grove::is_alive(me.pid()));
}

TEST_CASE("any movable type can be a message, move-only ones too") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  grove::pid self = me.pid();
  grove::spawn([self] {
    grove::send(self, std::make_unique<int>(7));
    grove::send(self, std::vector<std::string>{"a", "b"});
  });
  CHECK(*grove::receive([](std::unique_ptr<int> p) { return p; }) == 7);
  CHECK(grove::receive([](std::vector<std::string> v) { return v.size(); }) == 2);
}

TEST_CASE("messages from one sender arrive in send order, across many senders at once") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  grove::pid self = me.pid();
  const int senders = 8, each = 2000 * static_cast<int>(grove_test::stress_scale());
  for (int s = 0; s < senders; ++s)
    grove::spawn([self, s, each] {
      for (int i = 0; i < each; ++i) grove::send(self, std::pair<int, int>(s, i));
    });
  std::vector<int> next(senders, 0);
  bool in_order = true;
  for (int k = 0; k < senders * each; ++k) {
    bool got = grove::receive(
        [&](std::pair<int, int> m) {
          in_order = in_order && m.second == next[static_cast<std::size_t>(m.first)]++;
          return true;
        },
        grove::after(patience, [] { return false; }));
    REQUIRE(got);
  }
  CHECK(in_order);
}

TEST_CASE("send and receive by registered name") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  grove::pid self = me.pid();
  auto echo = grove::spawn([] {
    grove::receive([](reply_to r) { grove::send(r.to, std::string("hello")); });
  });
  grove::register_name("echo", echo);
  grove::send("echo", reply_to{self});
  CHECK(grove::receive([](std::string s) { return s; }) == "hello");
  CHECK_FALSE(grove::try_send("nobody", 1));
  CHECK_THROWS_AS(grove::send("nobody", 1), grove::error);
}

TEST_CASE("a busy sender does not starve other processes on its worker") {
  grove_test::runtime_fixture rt({.workers = 1});
  grove::scoped_process me;
  grove::pid self = me.pid();
  std::atomic<bool> stop_flooding{false};
  auto sink = grove::spawn([] {
    for (;;) grove::receive([](int) {}, [](stop) { grove::exit(grove::exit_reason::normal()); });
  });
  auto flooder = grove::spawn([sink, &stop_flooding] {
    while (!stop_flooding.load(std::memory_order_relaxed)) grove::send(sink, 1);  // never blocks
  });
  // A third process on the same single worker still gets to run and answer.
  grove::spawn([self] { grove::send(self, std::string("still scheduled")); });
  CHECK(grove::receive([](std::string s) { return s; }, grove::after(patience, [] { return std::string(); })) == "still scheduled");
  stop_flooding = true;
  auto ref = grove::monitor(flooder);
  grove::receive([&](grove::down d) { CHECK(d.ref == ref); });
  grove::send(sink, stop{});
}

TEST_CASE("a message sent to an active alias arrives; after unalias it is dropped, even one in flight") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  grove::alias a = grove::make_alias();
  CHECK(a.owner == me.pid());
  grove::spawn([a] { grove::send(a, std::string("via alias")); });
  CHECK(grove::receive([](std::string s) { return s; }, grove::after(patience, [] { return std::string(); })) == "via alias");
  // Sent while active, taken in after unalias: dropped.
  grove::send(a, std::string("late"));
  CHECK(grove::unalias(a));
  CHECK_FALSE(grove::unalias(a));
  bool got = grove::receive([](std::string) { return true; }, grove::after(50ms, [] { return false; }));
  CHECK_FALSE(got);
  // Another process cannot deactivate our alias.
  grove::alias b = grove::make_alias();
  grove::spawn([b, self = me.pid()] { grove::send(self, grove::unalias(b)); });
  CHECK(grove::receive([](bool r) { return r; }) == false);
  grove::send(b, 9);
  CHECK(grove::receive([](int v) { return v; }) == 9);
}
