// supervisor_chaos: kill random processes anywhere in a supervision tree for a while, then watch it
// converge back to its full shape.
//
//   supervisor_chaos [seconds=2] [workers=1000 (200 in sanitizer builds)] [kills_per_second=500] [threads=0]
//
// The tree: a root supervisor (one_for_one) over 10 group supervisors that take turns being
// one_for_one, one_for_all and rest_for_one (intensity 25 in 1 s each), each over a tenth of the
// workers. A chaos process sends `kill` (untrappable) to a random process below the root, K times a
// second: one kill in ten hits a group supervisor (its workers die with it, through their links; the
// root restarts the group), the rest hit workers. Groups that lose too many workers too fast give up
// and are restarted by the root. The root itself is spared: nothing is above it to restart it.
// After the chaos the demo waits for the full shape (every group and every worker running) and says
// how long that took, checks that the processes alive are exactly the tree, stops the tree and the
// runtime, and checks that nothing leaked. Exit status 1 if a check fails.
//
// Expected output (the summary; figures vary):
//   chaos for 10.0 s: 4510 kills sent (452 at supervisors, 4058 at workers)
//     supervisors reported 4590 crashes, 4551 restarts, 39 give-ups (each restarted by its parent)
//     converged to the full shape in 12.3 ms: 10 groups and 1000 workers running          ok
//     processes alive 1011 = root + 10 groups + 1000 workers                                ok
//     root supervisor never restarted: still alive                                          ok
//     leaked after stop: 0 processes, 0 stacks, 0 arenas, 0 timers                          ok
#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <grove/grove.hpp>
#include <grove/supervisor.hpp>
#include <random>
#include <string>

namespace sup = grove::supervisor;
using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

namespace {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr long default_workers = 200;  // CTest runs examples without arguments, sanitizers included
#else
constexpr long default_workers = 1000;
#endif

struct never {};
struct stop_chaos {};
struct chaos_done {};

struct counters {
  std::atomic<long> kills_at_supervisors{0}, kills_at_workers{0};
  std::atomic<long> crashed{0}, restarted{0}, gave_up{0};
};
counters stats;

void count_report(const sup::crash_report& r) {
  switch (r.kind) {
    case sup::report_kind::child_crashed:
      stats.crashed.fetch_add(1, std::memory_order_relaxed);
      break;
    case sup::report_kind::child_restarted:
      stats.restarted.fetch_add(1, std::memory_order_relaxed);
      break;
    case sup::report_kind::gave_up:
      stats.gave_up.fetch_add(1, std::memory_order_relaxed);
      break;
    default:
      break;
  }
}

struct shape {
  long groups = 0, workers = 0;
};

// Groups running and workers running, as the supervisors count them (cheap: for the progress line).
shape count(grove::pid root) {
  shape s;
  auto top = sup::which_children(root);
  if (!top) return s;
  for (auto& g : *top) {
    if (g.state != sup::child_state::running) continue;
    ++s.groups;
    if (auto c = sup::count_children(g.pid)) s.workers += static_cast<long>(c->active);
  }
  return s;
}

// Groups running and workers running and alive, by asking the supervisors (a worker whose kill is
// still on its way is running for its supervisor but no longer alive).
shape measure(grove::pid root) {
  shape s;
  auto top = sup::which_children(root);
  if (!top) return s;
  for (auto& g : *top) {
    if (g.state != sup::child_state::running) continue;
    ++s.groups;
    if (auto kids = sup::which_children(g.pid))
      for (auto& k : *kids) s.workers += k.state == sup::child_state::running && grove::is_alive(k.pid);
  }
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  const double seconds = argc > 1 ? std::atof(argv[1]) : 2.0;
  const long workers_wanted = argc > 2 ? std::atol(argv[2]) : default_workers;
  const long kill_rate = argc > 3 ? std::atol(argv[3]) : 500;
  const unsigned threads = argc > 4 ? static_cast<unsigned>(std::atoi(argv[4])) : 0;
  const bool tty = isatty(STDOUT_FILENO) != 0;
  constexpr long groups = 10;
  const long per_group = std::max(1L, workers_wanted / groups);
  const long workers = per_group * groups;

  int failures = 0;
  auto check = [&](bool ok) {
    if (!ok) ++failures;
    return ok ? "ok" : "FAILED";
  };
  {
    grove::runtime rt({.workers = threads});
    grove::scoped_process me;
    sup::set_logger(&count_report);
    const long baseline = static_cast<long>(grove::system_info().process_count);

    const sup::strategy kinds[] = {sup::strategy::one_for_one, sup::strategy::one_for_all, sup::strategy::rest_for_one};
    std::vector<sup::child_spec> group_specs;
    for (long g = 0; g < groups; ++g) {
      std::vector<sup::child_spec> kids;
      for (long w = 0; w < per_group; ++w) {
        auto k = sup::worker(fmt::format("w{}", w), [] { grove::receive([](never) {}); });
        k.shutdown = sup::shutdown_policy::brutal_kill();
        kids.push_back(std::move(k));
      }
      sup::flags f{.strategy = kinds[g % 3], .intensity = 25, .period = 1s};
      group_specs.push_back(sup::supervisor_child(fmt::format("group{}", g), f, std::move(kids)));
    }
    grove::pid root = sup::start_link({.strategy = sup::strategy::one_for_one, .intensity = 1'000'000, .period = 1s},
                                      std::move(group_specs));
    const long tree = 1 + groups + workers;

    // The chaos process.
    const grove::pid main_pid = me.pid();
    grove::pid chaos = grove::spawn([root, kill_rate, main_pid] {
      std::mt19937_64 rng(2024);
      const auto interval = std::chrono::nanoseconds(1'000'000'000 / std::max(1L, kill_rate));
      auto next = clock_type::now();
      for (bool going = true; going;) {
        auto top = sup::which_children(root);
        if (top && !top->empty()) {
          const auto& g = (*top)[rng() % top->size()];
          if (!g.pid.is_null()) {
            if (rng() % 10 == 0) {
              grove::exit(g.pid, grove::exit_reason::kill());
              stats.kills_at_supervisors.fetch_add(1, std::memory_order_relaxed);
            } else if (auto kids = sup::which_children(g.pid); kids && !kids->empty()) {
              grove::pid w = (*kids)[rng() % kids->size()].pid;
              if (!w.is_null()) {
                grove::exit(w, grove::exit_reason::kill());
                stats.kills_at_workers.fetch_add(1, std::memory_order_relaxed);
              }
            }
          }
        }
        next += interval;
        going = grove::receive([](stop_chaos) { return false; },
                               grove::after(next - clock_type::now(), [] { return true; }));
      }
      grove::send(main_pid, chaos_done{});
    });

    const auto t0 = clock_type::now();
    auto elapsed = [&] { return std::chrono::duration<double>(clock_type::now() - t0).count(); };
    const auto frame = tty ? 250ms : 1000ms;
    const auto end = t0 + std::chrono::duration_cast<clock_type::duration>(std::chrono::duration<double>(seconds));
    while (clock_type::now() < end) {
      grove::receive([](never) {},
                     grove::after(std::min<clock_type::duration>(frame, end - clock_type::now())));  // pacing
      shape s = count(root);
      std::string status = fmt::format(
          "t={:4.1f}s  kills {} ({} supervisors, {} workers) | running: groups {}/{}, workers {}/{} | restarts {}, "
          "give-ups {}",
          elapsed(), stats.kills_at_supervisors.load() + stats.kills_at_workers.load(),
          stats.kills_at_supervisors.load(), stats.kills_at_workers.load(), s.groups, groups, s.workers, workers,
          stats.crashed.load() - stats.gave_up.load(), stats.gave_up.load());
      if (tty) {
        std::printf("\r\x1b[2K%s", status.c_str());
      } else {
        std::printf("%s\n", status.c_str());
      }
      std::fflush(stdout);
    }
    grove::send(chaos, stop_chaos{});
    grove::receive([](chaos_done) {});
    const double chaos_seconds = elapsed();
    if (tty) std::printf("\n");

    // Converge.
    const auto c0 = clock_type::now();
    shape s;
    const auto deadline = c0 + 60s;
    while ((s = measure(root)).groups != groups || s.workers != workers) {
      if (clock_type::now() > deadline) break;
      grove::receive([](never) {}, grove::after(1ms));
    }
    const double converge_ms = std::chrono::duration<double, std::milli>(clock_type::now() - c0).count();
    const bool full = s.groups == groups && s.workers == workers;
    // The chaos process may still be on its way out: give the count a moment to settle.
    auto alive_now = [&] { return static_cast<long>(grove::system_info().process_count) - baseline; };
    for (auto end = clock_type::now() + 10s; alive_now() != tree && clock_type::now() < end;)
      grove::receive([](never) {}, grove::after(1ms));
    const long alive = alive_now();
    const long kills = stats.kills_at_supervisors.load() + stats.kills_at_workers.load();
    auto line = [&](const std::string& text, bool ok) { std::printf("  %-84s %s\n", text.c_str(), check(ok)); };
    std::printf("chaos for %.1f s: %ld kills sent (%ld at supervisors, %ld at workers)\n", chaos_seconds, kills,
                stats.kills_at_supervisors.load(), stats.kills_at_workers.load());
    std::printf("  supervisors reported %ld crashes, %ld restarts, %ld give-ups (each restarted by its parent)\n",
                stats.crashed.load(), stats.crashed.load() - stats.gave_up.load(), stats.gave_up.load());
    line(fmt::format("converged to the full shape in {:.1f} ms: {} groups and {} workers running", converge_ms,
                     s.groups, s.workers),
         full);
    line(fmt::format("processes alive {} = root + {} groups + {} workers", alive, groups, workers), alive == tree);
    line(fmt::format("root supervisor never restarted: {}", grove::is_alive(root) ? "still alive" : "gone"),
         grove::is_alive(root));

    auto ref = grove::monitor(root);
    sup::stop(root);
    grove::receive(grove::when([&](const grove::down& d) { return d.ref == ref; }, [](grove::down) {}));
    sup::reset_logger();
  }
  const grove::resource_usage u = grove::resources_in_use();
  const bool clean = u.processes == 0 && u.stack_images == 0 && u.arenas == 0 && u.timers == 0;
  std::printf("  %-84s %s\n",
              fmt::format("leaked after stop: {} processes, {} stacks, {} arenas, {} timers", u.processes,
                          u.stack_images, u.arenas, u.timers)
                  .c_str(),
              check(clean));
  return failures == 0 ? 0 : 1;
}
