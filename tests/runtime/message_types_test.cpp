// Messages that do what users mean (grove/message.hpp): a string literal or C string arrives as the
// std::string it spells (by pid, name, alias and send_after), a wide one as std::wstring, a null one
// is refused with errc::bad_argument; grove::raw carries a pointer on purpose; receive returns the
// common type of its clauses and an after clause alone waits. What send and receive refuse at compile
// time is tested by tests/compile_fail. And unmatched mail speaks up: past
// runtime_config::unmatched_mail_warning a process is reported once, naming the types piling up
// (a busy process that never receives included), and process_info shows them.
#include "support/fixture.hpp"

#include <atomic>
#include <string>

#include "support/log_capture.hpp"

using namespace std::chrono_literals;
using grove_test::patience;

namespace {
struct table {
  int rows = 0;
};
struct ready {};
struct go {};
}  // namespace

TEST_CASE("a string literal, a C string and a wide literal arrive as the std::string (std::wstring) they spell") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  const grove::pid self = me.pid();
  auto text = [] { return grove::receive([](std::string s) { return s; }, grove::after(patience, [] { return std::string("none"); })); };
  grove::send(self, "hello");
  CHECK(text() == "hello");
  const char* c_string = "from a pointer";
  grove::send(self, c_string);
  CHECK(text() == "from a pointer");
  char buffer[] = "from a buffer";  // a mutable array: copied at the send, the buffer may change after
  grove::send(self, buffer);
  buffer[0] = 'X';
  CHECK(text() == "from a buffer");
  grove::register_name("literal_test", self);
  grove::send("literal_test", "by name");
  CHECK(text() == "by name");
  const char unterminated[3] = {'a', 'b', 'c'};  // a buffer with no terminator: never read past its end
  grove::send(self, unterminated);
  CHECK(text() == "abc");
  const grove::alias a = grove::make_alias();
  grove::send(a, "by alias");
  CHECK(text() == "by alias");
  (void)grove::unalias(a);
  (void)grove::send_after(self, "later", 1ms);
  CHECK(text() == "later");
  grove::send(self, L"wide");
  CHECK(grove::receive([](std::wstring s) { return s; }, grove::after(patience, [] { return std::wstring(); })) == L"wide");
  const char* null_string = nullptr;
  bool refused = false;
  try {
    grove::send(self, null_string);
  } catch (const grove::error& e) {
    refused = e.code() == grove::errc::bad_argument;
  }
  CHECK(refused);
  CHECK(grove::process_info(self)->mailbox_length == 0);  // nothing half-sent
}

TEST_CASE("grove::raw carries a pointer that the sender vouches for; receive returns its clauses' common type") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  const grove::pid self = me.pid();
  static table shared{42};  // outlives every receiver
  grove::send(self, grove::raw{&shared});
  CHECK(grove::receive([](grove::raw<table*> t) { return t.value->rows; }, grove::after(patience, [] { return -1; })) == 42);
  // int and long: the result is long, whichever clause runs.
  grove::send(self, 7);
  auto r = grove::receive([](int n) { return n; }, [](long n) { return n * 2; }, grove::after(patience, [] { return 0; }));
  static_assert(std::is_same_v<decltype(r), long>);
  CHECK(r == 7);
  grove::send(self, 8L);
  CHECK(grove::receive([](int n) { return n; }, [](long n) { return n * 2; }) == 16);
  // An after clause alone waits for its timeout (Erlang's receive after T -> ok end).
  CHECK(grove::receive(grove::after(1ms, [] { return 5; })) == 5);
}

TEST_CASE("a process whose unmatched mail passes the threshold is reported once, with the types; process_info shows them") {
  grove_test::log_capture logs;
  grove_test::runtime_fixture rt({.unmatched_mail_warning = 100});
  grove::scoped_process me;
  const grove::pid self = me.pid();
  // It waits for longs; the sender means 1L but writes 1 (an int), and adds a few strings.
  const grove::pid p = grove::spawn([self] {
    grove::register_name("accounts", grove::self());
    grove::send(self, ready{});
    long total = 0;
    for (;;) {
      const long n = grove::receive([](long v) { return v; });
      if (n < 0) break;
      total += n;
    }
    grove::send(self, total);
  });
  REQUIRE(grove::receive([](ready) { return true; }, grove::after(patience, [] { return false; })));
  // 99 messages: taken in together they reach 99 in its saved queue, one under the threshold; the
  // long matches, 98 stay.
  grove::send(p, 3L);
  for (int i = 0; i < 89; ++i) grove::send(p, 1);
  for (int i = 0; i < 9; ++i) grove::send(p, "x");
  auto queue_is = [&](std::size_t n) {
    return grove_test::wait_until([&] {
      auto i = grove::process_info(p);
      return i && i->mailbox_length == n;
    });
  };
  REQUIRE(queue_is(98));
  CHECK(logs.of(grove::log_kind::unmatched_mail).empty());
  grove::send(p, 1);
  grove::send(p, 1);  // the 100th unmatched message
  REQUIRE(grove_test::wait_until([&] { return logs.of(grove::log_kind::unmatched_mail).size() == 1; }));
  const auto e = logs.of(grove::log_kind::unmatched_mail)[0];
  CHECK(e.level == grove::log_level::warning);
  CHECK(std::string(grove::to_string(e.kind)) == "unmatched_mail");
  CHECK(e.process == p);
  CHECK(e.name == "accounts");
  CHECK(e.text.find("100 messages") != std::string::npos);
  CHECK(e.text.find("int x91") != std::string::npos);
  CHECK(e.text.find("basic_string") != std::string::npos);
  for (int i = 0; i < 200; ++i) grove::send(p, 1);  // more: no second report
  REQUIRE(queue_is(300));
  const auto info = grove::process_info(p);
  REQUIRE(info);
  REQUIRE(info->mailbox_types.size() == 2);
  CHECK(info->mailbox_types[0].type == "int");
  CHECK(info->mailbox_types[0].count == 291);
  CHECK(info->mailbox_types[1].count == 9);
  grove::send(p, -1L);
  CHECK(grove::receive([](long total) { return total; }, grove::after(patience, [] { return -2L; })) == 3);
  CHECK(logs.of(grove::log_kind::unmatched_mail).size() == 1);
}

TEST_CASE("a busy process that never receives is reported too; a threshold of 0 reports nothing") {
  SUBCASE("busy") {
    grove_test::log_capture logs;
    grove_test::runtime_fixture rt({.unmatched_mail_warning = 50});
    grove::scoped_process me;
    std::atomic<bool> stop{false};
    // It computes and yields (taking its mail in, as every yield does), never receiving.
    const grove::pid p = grove::spawn([&] {
      while (!stop.load(std::memory_order_relaxed)) grove::yield();
    });
    for (int i = 0; i < 60; ++i) grove::send(p, go{});
    CHECK(grove_test::wait_until([&] { return logs.of(grove::log_kind::unmatched_mail).size() == 1; }));
    if (!logs.of(grove::log_kind::unmatched_mail).empty()) CHECK(logs.of(grove::log_kind::unmatched_mail)[0].process == p);
    stop = true;
  }
  SUBCASE("never") {
    grove_test::log_capture logs;
    grove_test::runtime_fixture rt({.unmatched_mail_warning = 0});
    grove::scoped_process me;
    const grove::pid p = grove::spawn([] { grove::receive([](go) {}); });
    for (int i = 0; i < 20'000; ++i) grove::send(p, i);
    CHECK(grove_test::wait_until([&] {
      auto i = grove::process_info(p);
      return i && i->mailbox_length == 20'000;
    }));
    CHECK(logs.of(grove::log_kind::unmatched_mail).empty());
    grove::send(p, go{});
  }
}
