// supervisor_tree: a supervision tree under injected crashes, with a live view.
//
//   supervisor_tree [seconds=2] [pool_workers=1000] [pool_crashes_per_second=200] [workers=0]
//
// The tree (grove/supervisor.hpp):
//   app    one_for_one   over the three below (intensity 10 in 5 s)
//   pool   one_for_one   N workers that crash at random, R crashes a second in all
//   chain  rest_for_one  db → cache → api, one crash every 2 s (intensity 3 in 5 s)
//   pair   one_for_all   left, right, one crash every second (intensity 10 in 5 s)
// At 40% of the run a storm crashes db four times in a row: more than chain's intensity, so chain
// stops its children and exits `shutdown`, and app restarts it (escalation). The view redraws in
// place four times a second on a terminal (once a second otherwise, one short line per supervisor):
// each supervisor with its children alive, restarts in the last second (the total now minus the
// total a second ago, so never above the total) and in total, and give-ups. Injection then stops
// and the summary checks that the numbers agree: every injected crash was seen by a supervisor;
// restarts (one per crash, as OTP counts them for the intensity) = crashes injected, since each
// crash that exceeded an intensity was answered by the parent restarting that subtree; the processes
// alive are exactly the tree; and after stopping nothing is left (resources_in_use). Exit status 1 if
// a number disagrees.
//
// Expected output (the summary; figures vary):
//   summary after 10.1 s
//     crashes injected         2047   (pool 2036, chain 5, pair 6)
//     crashes seen             2047   = injected (one report each)                                   ok
//     restarts                 2047   = injected - 1 over an intensity + 1 by a parent               ok
//     give-ups                    1   each one's subtree restarted by its parent (last below)
//     processes restarted      2062   (children started again, subtrees included)
//     processes alive          1009   = app + 3 supervisors + 1000 + 3 + 2 workers                   ok
//     last give-up: supervisor chain <0.1003.1>: gave up: 4 restarts in 5000 ms exceed intensity 3 ...
//     leaked after stop           0   (0 processes, 0 stacks, 0 arenas, 0 timers: resources_in_use)  ok
#include <deque>

#include <fmt/format.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <grove/grove.hpp>
#include <grove/supervisor.hpp>
#include <mutex>
#include <random>
#include <stdexcept>
#include <string>

namespace sup = grove::supervisor;
using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

namespace {

struct crash {};  // tells a worker to crash

// What the demo counts, shared by the workers, the logger (in supervisor processes) and main.
enum sup_index { app_i, pool_i, chain_i, pair_i, sup_count };
constexpr std::array<const char*, sup_count> sup_names{"app", "pool", "chain", "pair"};
constexpr std::array<const char*, sup_count> sup_strategies{"one_for_one", "one_for_one", "rest_for_one",
                                                            "one_for_all"};

struct counters {
  std::atomic<bool> injecting{true};
  std::array<std::atomic<long>, sup_count> injected{};   // by the supervisor of the crashing worker
  std::array<std::atomic<long>, sup_count> seen{};       // injected crashes reported (crashed or shutdown_error)
  std::array<std::atomic<long>, sup_count> crashed{};    // child_crashed reports
  std::array<std::atomic<long>, sup_count> restarted{};  // child_restarted reports (processes started again)
  std::array<std::atomic<long>, sup_count> gave_up{};
  std::atomic<long> seen_while_stopped{0};  // injected crashes that hit a child being stopped: not restarts
  std::mutex lock;
  std::string last_give_up;  // guarded by lock
};

counters stats;

int index_of(const std::string& name) {
  for (int i = 0; i < sup_count; ++i)
    if (name == sup_names[static_cast<std::size_t>(i)]) return i;
  return -1;
}

// The global logger: counts, and keeps the last give-up for the view. Runs in supervisor processes.
void count_report(const sup::crash_report& r) {
  const int i = index_of(r.supervisor_name);
  if (i < 0) return;
  const auto k = static_cast<std::size_t>(i);
  const bool injected = r.exception == "injected crash";
  switch (r.kind) {
    case sup::report_kind::child_crashed:
      stats.crashed[k].fetch_add(1);
      if (injected) stats.seen[k].fetch_add(1);
      break;
    case sup::report_kind::shutdown_error:
      if (injected) {  // it crashed just as it was being stopped
        stats.seen[k].fetch_add(1);
        stats.seen_while_stopped.fetch_add(1);
      }
      break;
    case sup::report_kind::child_restarted:
      stats.restarted[k].fetch_add(1);
      break;
    case sup::report_kind::gave_up: {
      stats.gave_up[k].fetch_add(1);
      std::lock_guard<std::mutex> g(stats.lock);
      stats.last_give_up = sup::format_report(r);
      break;
    }
    default:
      break;
  }
}

[[noreturn]] void inject(int owner) {
  stats.injected[static_cast<std::size_t>(owner)].fetch_add(1);
  throw std::runtime_error("injected crash");
}

// A worker that crashes when told to.
sup::child_spec obedient(const std::string& id, int owner) {
  return sup::worker(id, [owner] { grove::receive([owner](crash) { inject(owner); }); });
}

// A pool worker: crashes by itself after an exponentially distributed time (mean `mean_ms`), while
// injection is on; also crashes when told to.
sup::child_spec pool_worker(const std::string& id, double mean_ms) {
  return sup::worker(id, [mean_ms] {
    std::mt19937_64 rng(grove::self().bits() * 0x9E3779B97F4A7C15ull);
    std::exponential_distribution<double> next(1.0 / mean_ms);
    for (;;) {
      const auto delay = std::chrono::microseconds(static_cast<long long>(next(rng) * 1000.0));
      grove::receive([](crash) { inject(pool_i); }, grove::after(delay, [] {
                       if (stats.injecting.load()) inject(pool_i);
                     }));
    }
  });
}

struct row {
  long alive = 0, children = 0, restarts_total = 0, restarts_last_second = 0, gave_up = 0;
};

long restarts_of(std::size_t k) { return stats.crashed[k].load() - stats.gave_up[k].load(); }

class view {
 public:
  explicit view(bool tty) : tty_(tty) {}

  void draw(double t, double total, long rate, const std::array<row, sup_count>& rows, long alive_processes) {
    std::string out;
    if (tty_) {
      if (lines_ > 0) out += fmt::format("\x1b[{}A", lines_);  // back to the top of the last frame
      std::vector<std::string> lines;
      lines.push_back(fmt::format("grove supervision tree: {:5.1f} s of {:.1f} s, pool crashes {}/s", t, total, rate));
      lines.push_back(fmt::format("  {:<8} {:<13} {:>9} {:>7} {:>12} {:>14} {:>8}", "", "strategy", "children", "alive",
                                  "restarts/1s", "restarts total", "gave up"));
      for (int i = 0; i < sup_count; ++i) {
        const auto k = static_cast<std::size_t>(i);
        const row& r = rows[k];
        const std::string branch = i == 0 ? "" : i == sup_count - 1 ? "└ " : "├ ";
        lines.push_back(fmt::format("  {:<8} {:<13} {:>9} {:>7} {:>12} {:>14} {:>8}", branch + sup_names[k],
                                    sup_strategies[k], r.children, r.alive, r.restarts_last_second, r.restarts_total,
                                    r.gave_up));
      }
      long injected = 0, seen = 0;
      for (int i = 0; i < sup_count; ++i) {
        injected += stats.injected[static_cast<std::size_t>(i)].load();
        seen += stats.seen[static_cast<std::size_t>(i)].load();
      }
      lines.push_back(
          fmt::format("  crashes injected {}, seen {}; processes alive {}", injected, seen, alive_processes));
      std::string last;
      {
        std::lock_guard<std::mutex> g(stats.lock);
        last = stats.last_give_up;
      }
      lines.push_back("  last give-up: " + (last.empty() ? std::string("none yet") : last.substr(0, 100) + "..."));
      for (auto& l : lines) out += "\x1b[2K" + l + "\n";
      lines_ = static_cast<int>(lines.size());
    } else {
      // Piped: one short line per supervisor per frame, under the time.
      for (int i = 0; i < sup_count; ++i) {
        const row& r = rows[static_cast<std::size_t>(i)];
        out += fmt::format("{:<8} {:<6} alive {:>4}/{:<4} restarts in the last second {:>4}, total {:>5}, gave up {}\n",
                           i == 0 ? fmt::format("t={:.1f}s", t) : std::string(), sup_names[static_cast<std::size_t>(i)],
                           r.alive, r.children, r.restarts_last_second, r.restarts_total, r.gave_up);
      }
    }
    std::fwrite(out.data(), 1, out.size(), stdout);
    std::fflush(stdout);
  }

 private:
  bool tty_;
  int lines_ = 0;
};

// Crashes a child of `sup_name` (if it is running).
void crash_child(const char* sup_name, const std::string& id) {
  grove::pid s = grove::whereis(sup_name);
  if (s.is_null()) return;
  auto kids = sup::which_children(s);
  if (!kids) return;
  for (auto& c : *kids)
    if (c.id == id && !c.pid.is_null()) grove::send(c.pid, crash{});
}

grove::pid child_of(const char* sup_name, const std::string& id) {
  grove::pid s = grove::whereis(sup_name);
  if (s.is_null()) return {};
  auto kids = sup::which_children(s);
  if (kids)
    for (auto& c : *kids)
      if (c.id == id) return c.pid;
  return {};
}

// Waits (pacing the demo) until `pred` holds or `limit` passes.
template <class P>
bool wait_for(P pred, std::chrono::milliseconds limit) {
  const auto end = clock_type::now() + limit;
  while (!pred()) {
    if (clock_type::now() > end) return false;
    grove::receive([](crash) {}, grove::after(2ms));
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  const double seconds = argc > 1 ? std::atof(argv[1]) : 2.0;
  const long pool_size = argc > 2 ? std::atol(argv[2]) : 1000;
  const long rate = argc > 3 ? std::atol(argv[3]) : 200;
  const unsigned threads = argc > 4 ? static_cast<unsigned>(std::atoi(argv[4])) : 0;
  const bool tty = isatty(STDOUT_FILENO) != 0;

  int failures = 0;
  {
    grove::runtime rt({.workers = threads});
    grove::scoped_process me;
    sup::set_logger(&count_report);
    const long baseline = static_cast<long>(grove::system_info().process_count);

    // The tree.
    const double mean_ms = rate > 0 ? 1000.0 * static_cast<double>(pool_size) / static_cast<double>(rate) : 1e12;
    std::vector<sup::child_spec> pool;
    for (long i = 0; i < pool_size; ++i) pool.push_back(pool_worker(fmt::format("worker{}", i), mean_ms));
    sup::flags pool_flags{
        .strategy = sup::strategy::one_for_one, .intensity = static_cast<int>(std::max(100L, 4 * rate)), .period = 1s};
    pool_flags.name = "pool";
    sup::flags chain_flags{.strategy = sup::strategy::rest_for_one, .intensity = 3, .period = 5s};
    chain_flags.name = "chain";
    sup::flags pair_flags{.strategy = sup::strategy::one_for_all, .intensity = 10, .period = 5s};
    pair_flags.name = "pair";
    sup::flags app_flags{.strategy = sup::strategy::one_for_one, .intensity = 10, .period = 5s};
    app_flags.name = "app";
    grove::pid app = sup::start_link(
        app_flags,
        {sup::supervisor_child("pool", pool_flags, std::move(pool)),
         sup::supervisor_child("chain", chain_flags,
                               {obedient("db", chain_i), obedient("cache", chain_i), obedient("api", chain_i)}),
         sup::supervisor_child("pair", pair_flags, {obedient("left", pair_i), obedient("right", pair_i)})});
    const long tree_processes = 1 + 3 + pool_size + 3 + 2;

    // Run: redraw, inject into chain and pair, and the storm.
    view v(tty);
    const auto t0 = clock_type::now();
    const auto frame = tty ? 250ms : 1000ms;
    auto next_frame = t0;
    auto next_chain = t0 + 2000ms, next_pair = t0 + 1000ms;
    bool stormed = false;
    // Totals at each frame of the last second: "restarts/1s" is the total now minus the total one
    // second ago (or at the start, in the first second), so it never exceeds the total.
    struct sample {
      clock_type::time_point at;
      std::array<long, sup_count> totals;
    };
    std::deque<sample> history{{t0, {}}};
    std::mt19937 rng(7);
    const std::array<const char*, 3> chain_ids{"db", "cache", "api"};
    const std::array<const char*, 2> pair_ids{"left", "right"};
    auto elapsed = [&] { return std::chrono::duration<double>(clock_type::now() - t0).count(); };
    while (elapsed() < seconds) {
      const auto now = clock_type::now();
      if (!stormed && elapsed() >= 0.4 * seconds) {
        stormed = true;
        for (int k = 0; k < 4; ++k) {  // one more than chain's intensity
          grove::pid db = child_of("chain", "db");
          if (db.is_null()) wait_for([&] { return !(db = child_of("chain", "db")).is_null(); }, 5s);
          grove::send(db, crash{});
          wait_for([&] { return child_of("chain", "db") != db; }, 5s);
        }
      }
      if (now >= next_chain) {
        crash_child("chain", chain_ids[rng() % chain_ids.size()]);
        next_chain += 2000ms;
      }
      if (now >= next_pair) {
        crash_child("pair", pair_ids[rng() % pair_ids.size()]);
        next_pair += 1000ms;
      }
      if (now >= next_frame) {
        std::array<row, sup_count> rows;
        // The sample nearest one second ago (frames come late by a little: half a frame of slack).
        while (history.size() > 1 && history[1].at <= now - 1s + frame / 2) history.pop_front();
        for (int i = 0; i < sup_count; ++i) {
          const auto k = static_cast<std::size_t>(i);
          row& r = rows[k];
          if (auto c = sup::count_children(grove::whereis(sup_names[k]))) {
            r.alive = static_cast<long>(c->active);
            r.children = static_cast<long>(c->specs);
          }
          r.restarts_total = restarts_of(k);
          r.restarts_last_second = r.restarts_total - history.front().totals[k];
          r.gave_up = stats.gave_up[k].load();
        }
        v.draw(elapsed(), seconds, rate, rows, static_cast<long>(grove::system_info().process_count) - baseline);
        sample now_totals{now, {}};
        for (std::size_t k = 0; k < static_cast<std::size_t>(sup_count); ++k) now_totals.totals[k] = rows[k].restarts_total;
        history.push_back(now_totals);
        next_frame += frame;
      }
      grove::receive([](crash) {}, grove::after(10ms));  // pacing
    }

    // Stop injecting; let the last crashes be seen and the tree fill up again.
    stats.injecting = false;
    auto total = [](const auto& a) {
      long s = 0;
      for (auto& x : a) s += x.load();
      return s;
    };
    auto full = [&] {
      for (int i = 0; i < sup_count; ++i) {
        auto c = sup::count_children(grove::whereis(sup_names[static_cast<std::size_t>(i)]));
        if (!c || c->active != c->specs) return false;
      }
      return true;
    };
    wait_for([&] { return total(stats.seen) == total(stats.injected) && full(); }, 30s);
    const long injected = total(stats.injected), seen = total(stats.seen), gave_up = total(stats.gave_up);
    long restarts = 0;
    for (std::size_t k = 0; k < sup_count; ++k) restarts += restarts_of(k);
    const long alive = static_cast<long>(grove::system_info().process_count) - baseline;
    const double ran = elapsed();

    auto line = [&](const char* label, long value, const std::string& note, int check) {
      // check: -1 none, 0 mismatch, 1 ok
      if (check == 0) ++failures;
      std::printf("  %-20s %8ld   %-62s %s\n", label, value, note.c_str(), check < 0 ? "" : check ? "ok" : "MISMATCH");
    };
    std::string last;
    {
      std::lock_guard<std::mutex> g(stats.lock);
      last = stats.last_give_up;
    }
    const long stopped_crashes = stats.seen_while_stopped.load();
    const long by_parent = stats.crashed[app_i].load();
    std::printf("summary after %.1f s\n", ran);
    line("crashes injected", injected,
         fmt::format("(pool {}, chain {}, pair {})", stats.injected[pool_i].load(), stats.injected[chain_i].load(),
                     stats.injected[pair_i].load()),
         -1);
    line("crashes seen", seen, "= injected (one report each)", seen == injected);
    line("restarts", restarts,
         fmt::format("= injected - {} over an intensity + {} by a parent{}", gave_up, by_parent,
                     stopped_crashes ? fmt::format(" - {} hit while stopping", stopped_crashes) : std::string()),
         restarts == injected - stopped_crashes && by_parent == gave_up);
    line("give-ups", gave_up, gave_up ? "each one's subtree restarted by its parent (last below)" : "", -1);
    line("processes restarted", total(stats.restarted), "(children started again, subtrees included)", -1);
    line("processes alive", alive, fmt::format("= app + 3 supervisors + {} + 3 + 2 workers", pool_size),
         alive == tree_processes);
    if (!last.empty()) std::printf("  last give-up: %s\n", last.c_str());

    const auto stop_ref = grove::monitor(app);
    sup::stop(app);
    grove::receive(grove::when([&](const grove::down& d) { return d.ref == stop_ref; }, [](grove::down) {}));
    sup::reset_logger();
  }  // the scoped_process, then the runtime: stopped and released
  const grove::resource_usage u = grove::resources_in_use();
  const bool clean = u.processes == 0 && u.stack_images == 0 && u.arenas == 0 && u.timers == 0;
  if (!clean) ++failures;
  std::printf("  %-20s %8zu   %-62s %s\n", "leaked after stop", u.processes + u.stack_images + u.arenas + u.timers,
              fmt::format("({} processes, {} stacks, {} arenas, {} timers: resources_in_use)", u.processes,
                          u.stack_images, u.arenas, u.timers)
                  .c_str(),
              clean ? "ok" : "LEAK");
  return failures == 0 ? 0 : 1;
}
