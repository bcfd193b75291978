// Registered names.
#include "support/fixture.hpp"

#include <algorithm>

using namespace std::chrono_literals;

namespace {
struct go {};
}  // namespace

TEST_CASE("a registered name finds its process, and dies with it") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  auto s = grove::spawn_monitor([] { grove::receive([](go) {}); });
  grove::register_name("worker", s.pid);
  CHECK(grove::whereis("worker") == s.pid);
  auto names = grove::registered();
  CHECK(std::find(names.begin(), names.end(), "worker") != names.end());
  auto info = grove::process_info(s.pid);
  REQUIRE(info);
  CHECK(info->registered_name == "worker");
  grove::send("worker", go{});
  grove::receive([](grove::down) {});
  CHECK(grove::whereis("worker").is_null());
  // The name is free again.
  grove::register_name("worker", me.pid());
  CHECK(grove::whereis("worker") == me.pid());
}

TEST_CASE("registering a taken name, a second name, a dead pid or an empty name is a clear error") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  auto a = grove::spawn([] { grove::receive([](go) {}); });
  auto b = grove::spawn([] { grove::receive([](go) {}); });
  grove::register_name("a", a);
  CHECK(grove::try_register_name("a", b) == grove::errc::name_taken);
  CHECK(grove::try_register_name("a2", a) == grove::errc::already_named);
  CHECK(grove::try_register_name("", b) == grove::errc::bad_argument);
  CHECK(grove::try_register_name("ghost", grove::pid::from_parts(4242, 9)) == grove::errc::noproc);
  bool threw = false;
  try {
    grove::register_name("a", b);
  } catch (const grove::error& e) {
    threw = e.code() == grove::errc::name_taken;
  }
  CHECK(threw);
  CHECK(grove::whereis("a") == a);
  grove::send(a, go{});
  grove::send(b, go{});
}

TEST_CASE("unregister frees the name; unregistering an unknown name returns false") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  grove::register_name("me", me.pid());
  CHECK(grove::unregister("me"));
  CHECK_FALSE(grove::unregister("me"));
  CHECK(grove::whereis("me").is_null());
  CHECK_FALSE(grove::unregister("never"));
}
