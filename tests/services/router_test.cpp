// Routers (grove/services/router.hpp): round-robin, least-busy, consistent hashing (sticky keys, and
// about 1/N of the keys moving when a member joins or leaves), dead members.
#include "helpers.hpp"

#include <map>
#include <string>

using namespace svc_test;

namespace {

// n idle processes that live until told to stop (or the runtime stops).
std::vector<grove::pid> idle_workers(int n) {
  std::vector<grove::pid> out;
  for (int i = 0; i < n; ++i) out.push_back(grove::spawn([] { grove::receive([](go) {}); }));
  return out;
}

grove::pid owner_of(svc::router& r, const std::string& key) {
  auto route = r.pick(key);
  REQUIRE(route.has_value());
  return route->worker();
}

std::map<std::string, grove::pid> owners(svc::router& r, int keys) {
  std::map<std::string, grove::pid> out;
  for (int k = 0; k < keys; ++k) {
    std::string key = "user-" + std::to_string(k);
    out[key] = owner_of(r, key);
  }
  return out;
}

}  // namespace

TEST_CASE("round robin visits the workers in turn") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  auto ws = idle_workers(3);
  svc::router r(svc::routing::round_robin);
  for (auto w : ws) r.add(w);
  std::vector<grove::pid> seen;
  for (int i = 0; i < 6; ++i) seen.push_back(r.pick().value().worker());
  for (int i = 0; i < 3; ++i) CHECK(seen[static_cast<std::size_t>(i)] == seen[static_cast<std::size_t>(i + 3)]);
  CHECK(seen[0] != seen[1]);
  CHECK(seen[1] != seen[2]);
  CHECK(seen[0] != seen[2]);
}

TEST_CASE("least busy picks the worker with the fewest requests in flight") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  auto ws = idle_workers(3);
  svc::router r(svc::routing::least_busy);
  for (auto w : ws) r.add(w);
  // Three requests held in flight: least-busy spreads them, one per worker.
  std::vector<svc::route> held;
  for (int i = 0; i < 3; ++i) held.push_back(r.pick().value());
  for (auto w : ws) CHECK(r.in_flight(w) == 1);
  // The second one finishes: its worker is now the least busy, and gets the next request.
  const grove::pid freed = held[1].worker();
  held.erase(held.begin() + 1);
  CHECK(r.in_flight(freed) == 0);
  auto next = r.pick().value();
  CHECK(next.worker() == freed);
  CHECK(r.in_flight(freed) == 1);
  // Two more on top of one worker: the others stay preferred.
  held.push_back(std::move(next));
  auto a = r.pick().value();
  auto b = r.pick().value();
  CHECK(a.worker() != b.worker());
}

TEST_CASE("consistent hashing sends the same key to the same worker while it lives") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  auto ws = idle_workers(5);
  svc::router r(svc::routing::consistent_hash);
  for (auto w : ws) r.add(w);
  auto first = owners(r, 500);
  auto second = owners(r, 500);
  CHECK(first == second);
  std::map<grove::pid, int> load;
  for (auto& [key, w] : first) ++load[w];
  CHECK(load.size() == 5);  // every worker owns some keys
  CHECK(r.pick().error() == grove::errc::bad_argument);  // hashing needs a key
  svc::router copy = r;  // copies share the ring
  CHECK(owner_of(copy, "user-7") == first["user-7"]);
}

TEST_CASE("consistent hashing moves about 1/N of the keys, all to the new worker, when one joins") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  auto ws = idle_workers(9);
  svc::router r(svc::routing::consistent_hash);
  for (int i = 0; i < 8; ++i) r.add(ws[static_cast<std::size_t>(i)]);
  const int keys = 5000;
  auto before = owners(r, keys);
  r.add(ws[8]);
  auto after = owners(r, keys);
  int moved = 0;
  for (auto& [key, w] : after) {
    if (w != before[key]) {
      ++moved;
      CHECK(w == ws[8]);  // only to the newcomer
    }
  }
  const double share = static_cast<double>(moved) / keys;
  MESSAGE("keys moved when a 9th worker joined: " << moved << " of " << keys << " (1/9 = 11.1%)");
  CHECK(share > 0.05);
  CHECK(share < 0.20);
}

TEST_CASE("consistent hashing moves only the leaving worker's keys when one leaves") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  auto ws = idle_workers(8);
  svc::router r(svc::routing::consistent_hash);
  for (auto w : ws) r.add(w);
  const int keys = 5000;
  auto before = owners(r, keys);
  const grove::pid leaving = ws[3];
  CHECK(r.remove(leaving));
  CHECK(!r.remove(leaving));
  auto after = owners(r, keys);
  int moved = 0;
  for (auto& [key, w] : after) {
    if (w != before[key]) {
      ++moved;
      CHECK(before[key] == leaving);  // only the leaver's keys move
    }
    CHECK(w != leaving);
  }
  const double share = static_cast<double>(moved) / keys;
  MESSAGE("keys moved when 1 of 8 workers left: " << moved << " of " << keys << " (1/8 = 12.5%)");
  CHECK(share > 0.05);
  CHECK(share < 0.22);
}

TEST_CASE("a dead worker is dropped when a pick meets it, and its keys move to the others") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  auto ws = idle_workers(4);
  svc::router r(svc::routing::consistent_hash);
  for (auto w : ws) r.add(w);
  auto before = owners(r, 1000);
  const grove::pid victim = before["user-1"];
  auto watcher = grove::monitor(victim);
  grove::exit(victim, grove::exit_reason::kill());
  wait_down(watcher);
  auto after = owners(r, 1000);
  CHECK(r.size() == 3);
  for (auto& [key, w] : after) {
    CHECK(w != victim);
    if (before[key] != victim) CHECK(w == before[key]);  // the others keep their keys
  }
  svc::router rr(svc::routing::round_robin);
  rr.add(victim);
  CHECK(rr.pick().error() == svc::errc::no_workers);
  CHECK(rr.size() == 0);
  CHECK(!rr.add(grove::pid()));
}
