// Chaos: a two-level tree (a root over group supervisors over workers) while a killer process sends
// kill to random group supervisors and workers; afterwards the tree must be back to its full shape
// (every group and every worker running, the root never restarted) and, once stopped, nothing may be
// left: no process (system_info) and, at the fixture's teardown, no control block, stack, arena or
// timer (resources_in_use).
//
// Size: GROVE_STRESS_SCALE 1 (CI) runs ~1,000 workers for ~3 s; scale 10 and above runs the full
// 10,000 workers for 30 s; sanitizer builds run a fifth of the workers for 2 s.
#include <fmt/format.h>

#include <atomic>
#include <random>

#include "helpers.hpp"

using namespace sup_test;

namespace {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool sanitized = true;
#else
constexpr bool sanitized = false;
#endif

struct never {};
struct chaos_done {
  std::size_t group_kills;
  std::size_t worker_kills;
};

struct report_counts {
  std::atomic<std::size_t> crashed{0}, restarted{0}, gave_up{0}, other{0};
  sup::logger logger() {
    return [this](const sup::crash_report& r) {
      switch (r.kind) {
        case sup::report_kind::child_crashed:
          crashed.fetch_add(1, std::memory_order_relaxed);
          break;
        case sup::report_kind::child_restarted:
          restarted.fetch_add(1, std::memory_order_relaxed);
          break;
        case sup::report_kind::gave_up:
          gave_up.fetch_add(1, std::memory_order_relaxed);
          break;
        default:
          other.fetch_add(1, std::memory_order_relaxed);
          break;
      }
    };
  }
};

// Whether the tree has its full shape: `groups` running groups of `per_group` running workers.
bool full_shape(grove::pid root, std::size_t groups, std::size_t per_group) {
  auto top = sup::which_children(root, std::chrono::seconds(5));
  if (!top || top->size() != groups) return false;
  for (auto& g : *top) {
    if (g.state != sup::child_state::running) return false;
    auto kids = sup::which_children(g.pid, std::chrono::seconds(5));
    if (!kids || kids->size() != per_group) return false;
    for (auto& k : *kids)
      if (k.state != sup::child_state::running || !grove::is_alive(k.pid)) return false;
  }
  return true;
}

}  // namespace

TEST_CASE("a supervision tree under random kills converges back to its full shape with nothing leaked") {
  const unsigned scale = grove_test::stress_scale();
  std::size_t workers = std::min<std::size_t>(10'000, 1'000 * std::size_t{scale});
  auto chaos_time = std::chrono::seconds(std::min(30u, 3 * scale));
  if (sanitized) {
    workers /= 5;
    chaos_time = std::chrono::seconds(2);
  }
  const std::size_t groups = workers >= 10'000 ? 100 : 20;
  const std::size_t per_group = workers / groups;
  workers = groups * per_group;

  report_counts reports;
  std::vector<std::atomic<std::uint64_t>> slots(workers);  // each worker's latest pid, for the killer
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  const std::size_t baseline = grove::system_info().process_count;

  sup::flags group_flags{.strategy = sup::strategy::one_for_one, .intensity = 20, .period = std::chrono::seconds(1)};
  group_flags.logger = reports.logger();
  std::vector<sup::child_spec> group_specs;
  for (std::size_t g = 0; g < groups; ++g) {
    std::vector<sup::child_spec> kids;
    for (std::size_t w = 0; w < per_group; ++w) {
      sup::child_spec k;
      k.id = fmt::format("w{}", w);
      k.shutdown = sup::shutdown_policy::brutal_kill();
      auto* slot = &slots[g * per_group + w];
      k.start = [slot]() -> grove::result<grove::pid> {
        auto r = grove::try_spawn(grove::spawn_options{.link = true}, [] { grove::receive([](never) {}); });
        if (!r) return r.error();
        slot->store(r->pid.bits(), std::memory_order_relaxed);  // only a hint for the killer
        return r->pid;
      };
      kids.push_back(std::move(k));
    }
    group_specs.push_back(sup::supervisor_child(fmt::format("g{}", g), group_flags, std::move(kids)));
  }
  sup::flags root_flags{
      .strategy = sup::strategy::one_for_one, .intensity = 1'000'000, .period = std::chrono::seconds(1)};
  root_flags.logger = reports.logger();
  grove::pid root = sup::start_link(root_flags, std::move(group_specs));
  CHECK(grove::system_info().process_count == baseline + 1 + groups + workers);

  // The killer: a kill every millisecond or so, one in ten at a group supervisor.
  const grove::pid main_pid = me.pid();
  grove::spawn([&, root, main_pid] {
    std::mt19937_64 rng(12345);
    std::size_t group_kills = 0, worker_kills = 0;
    const auto end = std::chrono::steady_clock::now() + chaos_time;
    while (std::chrono::steady_clock::now() < end) {
      if (rng() % 10 == 0) {
        auto top = sup::which_children(root);
        if (top && !top->empty()) {
          grove::pid g = (*top)[rng() % top->size()].pid;
          if (!g.is_null()) {
            grove::exit(g, grove::exit_reason::kill());
            ++group_kills;
          }
        }
      } else {
        grove::pid w = grove::pid::from_bits(slots[rng() % slots.size()].load(std::memory_order_relaxed));
        grove::exit(w, grove::exit_reason::kill());  // a no-op if it is already dead
        ++worker_kills;
      }
      grove::receive([](never) {}, grove::after(std::chrono::milliseconds(1)));  // pacing, not synchronisation
    }
    grove::send(main_pid, chaos_done{group_kills, worker_kills});
  });
  auto done = grove::receive([](chaos_done d) { return d; }, grove::after(chaos_time + std::chrono::seconds(120), [] {
                               return chaos_done{0, 0};
                             }));
  CHECK(done.group_kills + done.worker_kills > 0);

  const auto t0 = std::chrono::steady_clock::now();
  CHECK(grove_test::wait_until([&] { return full_shape(root, groups, per_group); }, std::chrono::seconds(120)));
  const double converge_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CHECK(grove::is_alive(root));
  CHECK(grove_test::wait_until([&] { return grove::system_info().process_count == baseline + 1 + groups + workers; }));
  MESSAGE(workers << " workers in " << groups << " groups, " << chaos_time.count()
                  << " s of chaos: " << done.group_kills << " group kills, " << done.worker_kills << " worker kills; "
                  << reports.crashed.load() << " crashes, " << reports.restarted.load() << " restarts, "
                  << reports.gave_up.load() << " give-ups; converged in " << converge_s << " s");

  auto ref = grove::monitor(root);
  CHECK(sup::stop(root) == std::error_code{});
  CHECK(wait_down(ref).is_normal());
  CHECK(grove_test::wait_until([&] { return grove::system_info().process_count == baseline; }));
}
