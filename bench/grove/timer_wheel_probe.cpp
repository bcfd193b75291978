// bench/grove/timer_wheel_probe.cpp: what a pending timer costs in runtime/src/timer_wheel.hpp.
//
//   g++ -std=c++20 -O2 -Iruntime/src bench/grove/timer_wheel_probe.cpp -o /tmp/twp && /tmp/twp
//
// With 1,000,000 pending timers (deadlines uniform over 10 s; nodes in one array but touched in random
// order, as process control blocks would be), it prints ns per insert and remove, ns per fired timer,
// ns per advance across an idle hour, and bytes per timer: the median [min, max] of 5 rounds. Single
// thread, no lock: the worker's lock around the wheel is not part of these figures. The numbers pair
// with the MEASURED paragraph of timer_wheel.hpp's design comment; re-run this when the wheel changes.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <numeric>
#include <random>
#include <vector>

#include "timer_wheel.hpp"

namespace {

using grove::internal::timer_node;
using grove::internal::timer_wheel;

constexpr std::size_t pending_count = 1'000'000;
constexpr std::size_t churn_count = 100'000;  // removed then re-inserted while ~1M stay pending
constexpr std::uint64_t ms_ns = 1'000'000;
constexpr std::uint64_t s_ns = 1'000 * ms_ns;
constexpr std::uint64_t spread_ns = 10 * s_ns;    // deadlines uniform over [now + 1 ms, now + 10 s]
constexpr std::uint64_t advance_step_ns = ms_ns;  // how often a busy worker would advance
constexpr std::uint64_t hour_ns = 3600 * s_ns;
constexpr std::uint64_t start_ns = 1'000 * s_ns;
constexpr int round_count = 5;

// A cheap generator for the callbacks, so the measured cost is the wheel's, not mt19937's.
struct xorshift {
  std::uint64_t state;
  std::uint64_t operator()() noexcept {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
  }
  std::uint64_t deadline_after(std::uint64_t now) noexcept {
    return now + ms_ns + (*this)() % (spread_ns - ms_ns);
  }
};

using clock_type = std::chrono::steady_clock;

double ns_since(clock_type::time_point t0) {
  return std::chrono::duration<double, std::nano>(clock_type::now() - t0).count();
}

template <class T>
void keep(const T& v) {
  asm volatile("" : : "g"(&v) : "memory");
}

struct round_result {
  double fill_ns_per_insert;
  double insert_ns;
  double remove_ns;
  double fire_rearm_ns_per_fired;
  double fire_drain_ns_per_fired;
  double remove_all_ns;
  double idle_steps_ns_per_advance;
  double idle_jump_ns;
};

round_result run_round(int round) {
  std::mt19937_64 rng(1234 + static_cast<std::uint64_t>(round));
  xorshift fast{0x9e3779b97f4a7c15ULL + static_cast<std::uint64_t>(round)};
  auto nodes = std::make_unique<timer_node[]>(pending_count);
  std::vector<std::uint32_t> order(pending_count);
  std::iota(order.begin(), order.end(), 0u);
  std::shuffle(order.begin(), order.end(), rng);
  std::vector<std::uint64_t> deadlines(pending_count);
  for (auto& d : deadlines) d = fast.deadline_after(start_ns);

  round_result r{};
  timer_wheel wheel(start_ns);

  // Fill: empty to 1M, nodes in random order.
  auto t0 = clock_type::now();
  for (std::size_t i = 0; i < pending_count; ++i) wheel.insert(&nodes[order[i]], deadlines[i]);
  r.fill_ns_per_insert = ns_since(t0) / pending_count;

  // Churn at 1M pending: remove 100k random nodes, then insert them again.
  std::shuffle(order.begin(), order.end(), rng);
  t0 = clock_type::now();
  for (std::size_t i = 0; i < churn_count; ++i) wheel.remove(&nodes[order[i]]);
  r.remove_ns = ns_since(t0) / churn_count;
  t0 = clock_type::now();
  for (std::size_t i = 0; i < churn_count; ++i) wheel.insert(&nodes[order[i]], deadlines[i]);
  r.insert_ns = ns_since(t0) / churn_count;

  // Fire at a steady 1M pending: advance every 1 ms over 10 s; each fired node is re-armed 1 ms..10 s on.
  std::uint64_t now = start_ns;
  std::size_t fired = 0;
  t0 = clock_type::now();
  for (std::uint64_t end = now + spread_ns; now < end;) {
    now += advance_step_ns;
    fired += wheel.advance(now, [&](timer_node* n) { wheel.insert(n, fast.deadline_after(now)); });
  }
  r.fire_rearm_ns_per_fired = ns_since(t0) / static_cast<double>(fired);
  if (wheel.size() != pending_count)
    std::fprintf(stderr, "timer_wheel_probe: size %zu, expected %zu\n", wheel.size(), pending_count);

  // Fire, draining: the same advances with no re-arm, until the wheel is empty.
  fired = 0;
  t0 = clock_type::now();
  while (!wheel.empty()) {
    now += advance_step_ns;
    fired += wheel.advance(now, [](timer_node* n) { keep(n); });
  }
  r.fire_drain_ns_per_fired = ns_since(t0) / static_cast<double>(fired);

  // Remove all: 1M down to empty, in random order.
  for (std::size_t i = 0; i < pending_count; ++i) wheel.insert(&nodes[i], fast.deadline_after(now));
  std::shuffle(order.begin(), order.end(), rng);
  t0 = clock_type::now();
  for (std::size_t i = 0; i < pending_count; ++i) wheel.remove(&nodes[order[i]]);
  r.remove_all_ns = ns_since(t0) / pending_count;

  // An idle hour: 16 timers days away; advance every 1 ms, then across a whole hour in one call.
  for (std::size_t i = 0; i < 16; ++i)
    wheel.insert(&nodes[i], now + (i + 2) * 24 * hour_ns + fast() % hour_ns);
  constexpr std::uint64_t idle_steps = hour_ns / advance_step_ns;
  t0 = clock_type::now();
  for (std::uint64_t i = 0; i < idle_steps; ++i) {
    now += advance_step_ns;
    fired += wheel.advance(now, [](timer_node* n) { keep(n); });
  }
  r.idle_steps_ns_per_advance = ns_since(t0) / static_cast<double>(idle_steps);
  constexpr int jumps = 1000;
  t0 = clock_type::now();
  for (int i = 0; i < jumps; ++i) {
    now += hour_ns;
    fired += wheel.advance(now, [](timer_node* n) { keep(n); });
  }
  r.idle_jump_ns = ns_since(t0) / jumps;
  keep(fired);
  wheel.clear();
  return r;
}

void print_row(const char* what, const char* unit, std::vector<round_result>& rounds,
               double round_result::*field) {
  std::vector<double> v;
  for (const auto& r : rounds) v.push_back(r.*field);
  std::sort(v.begin(), v.end());
  std::printf("  %-52s %8.1f %-18s [%.1f, %.1f]\n", what, v[v.size() / 2], unit, v.front(), v.back());
}

}  // namespace

int main() {
  std::vector<round_result> rounds;
  for (int i = 0; i < round_count; ++i) rounds.push_back(run_round(i));
  std::printf(
      "timer_wheel_probe: %zu pending timers, deadlines uniform over 10 s, advance every 1 ms;\n"
      "median [min, max] of %d rounds\n",
      pending_count, round_count);
  print_row("insert, 1M pending", "ns/insert", rounds, &round_result::insert_ns);
  print_row("remove, 1M pending", "ns/remove", rounds, &round_result::remove_ns);
  print_row("insert, filling an empty wheel to 1M", "ns/insert", rounds, &round_result::fill_ns_per_insert);
  print_row("remove, emptying a 1M wheel", "ns/remove", rounds, &round_result::remove_all_ns);
  print_row("advance, steady 1M pending (callback re-inserts)", "ns/fired timer", rounds,
            &round_result::fire_rearm_ns_per_fired);
  print_row("advance, draining 1M (no re-insert)", "ns/fired timer", rounds,
            &round_result::fire_drain_ns_per_fired);
  print_row("advance across an idle hour, every 1 ms", "ns/advance", rounds,
            &round_result::idle_steps_ns_per_advance);
  print_row("advance across an idle hour in one call", "ns/advance", rounds, &round_result::idle_jump_ns);
  std::printf(
      "  bytes per timer: %zu (node, in the process control block) + %zu per wheel (%.4f per timer at 1M)\n",
      sizeof(timer_node), sizeof(timer_wheel), static_cast<double>(sizeof(timer_wheel)) / pending_count);
  return 0;
}
