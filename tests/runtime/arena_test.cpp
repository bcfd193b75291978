// Per-process arenas.
#include "support/fixture.hpp"

#include <memory_resource>
#include <string>
#include <vector>

using namespace std::chrono_literals;

TEST_CASE("a process allocates from its own arena, which is released when it exits") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  grove::pid self = me.pid();
  grove::spawn_monitor([self] {
    std::pmr::vector<std::pmr::string> v(&grove::arena());
    for (int i = 0; i < 1000; ++i) v.emplace_back(100, 'x');
    grove::send(self, grove::arena_bytes());
  });
  auto bytes = grove::receive([](std::size_t b) { return b; });
  CHECK(bytes >= 100 * 1000);
  CHECK(grove::receive([](grove::down d) { return d.reason; }).is_normal());
  CHECK(grove::resources_in_use().arenas == 0);
}

TEST_CASE("a process that passes its heap limit is killed with max_heap_size, and links are told") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  grove::trap_exit(true);
  grove::pid hog = grove::spawn(grove::spawn_options{.link = true, .max_heap_bytes = 64 * 1024}, [] {
    std::pmr::vector<char> v(&grove::arena());
    for (;;) v.push_back('x');
  });
  auto e = grove::receive([](grove::exit_signal e) { return e; }, grove::after(grove_test::patience, [] { return grove::exit_signal{}; }));
  CHECK(e.from == hog);
  CHECK(e.reason.what_kind() == grove::exit_reason::kind::max_heap_size);
  CHECK(e.reason.text().find("65536") != std::string_view::npos);
}

TEST_CASE("the heap limit cannot be caught away") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  auto s = grove::try_spawn(grove::spawn_options{.monitor = true, .max_heap_bytes = 64 * 1024}, [] {
    std::pmr::vector<char> v(&grove::arena());
    for (;;) {
      try {
        v.resize(v.size() + 4096);
      } catch (...) {
        // swallowed; the runtime raises the exit again at the next runtime call
      }
      grove::yield();
    }
  });
  REQUIRE(s);
  auto d = grove::receive([](grove::down d) { return d; }, grove::after(grove_test::patience, [] { return grove::down{}; }));
  CHECK(d.ref == s->monitor);
  CHECK(d.reason.what_kind() == grove::exit_reason::kind::max_heap_size);
}
