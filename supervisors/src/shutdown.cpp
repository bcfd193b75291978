// shutdown.cpp: OTP's shutdown protocol, for one child or many at once.
//
// The protocol (OTP supervisor:shutdown/1 and terminate_dynamic_children/1):
//   1. monitor each child, so its end is seen even if it unlinked itself from the supervisor (a
//      supervisor waiting for an exit_signal from such a child would hang);
//   2. send it exit(shutdown), or exit(kill) for brutal_kill;
//   3. wait for the down messages, up to the policy's timeout; then send kill to those still alive
//      and wait for the rest (kill cannot be refused, so that wait ends);
//   4. leave no exit_signal from these children in the mailbox: each child's exit_signal (through
//      the link) comes before its down (one sender, one order), so the wait in 3 takes both kinds
//      and the exit_signal is consumed by the time the down is.
// The reason: the down's, except when the down says noproc (the child had already ended when it was
// monitored): then the exit_signal's. A child can end between setting its exited flag and sending its
// link signals, so that noproc down can overtake its exit_signal; while the link is still in our link
// set the exit_signal is on its way, and we wait for it (OTP's unlink_flush does the same with
// process_info(self(), links)).
// Many at once: one receive takes the oldest message that is a down for one of our monitors or an
// exit_signal from one of the children, so each message is looked at a bounded number of times and
// stopping n children costs O(n), not O(n²) rescans of the mailbox.
#include "shutdown.hpp"

#include <algorithm>
#include <chrono>
#include <grove/grove.hpp>
#include <unordered_map>

namespace grove::supervisor::internal {

namespace {

struct never_sent {};  // a message type nobody sends: receive(after(0)) needs a handler

bool linked_to(pid p) {
  auto me = process_info(self());
  return me && std::find(me->links.begin(), me->links.end(), p) != me->links.end();
}

}  // namespace

bool is_normal_or_shutdown(const exit_reason& why) noexcept {
  return why.is_normal() || why.is_shutdown() ||
         (why.what_kind() == exit_reason::kind::user && why.text() == "shutdown");
}

bool stopped_cleanly(const exit_reason& why, shutdown_policy policy, restart_type restart) noexcept {
  if (policy.what() == shutdown_policy::kind::brutal_kill && why.is_killed()) return true;
  if (policy.what() != shutdown_policy::kind::brutal_kill && why.is_shutdown()) return true;
  return restart != restart_type::permanent && is_normal_or_shutdown(why);
}

void rethrow_if_exiting() {
  // Any runtime call checks whether this process is being ended inside a catch block and, if so,
  // rethrows its exit: a poll of the mailbox is the cheapest such call.
  receive([](never_sent) {}, after(std::chrono::nanoseconds(0)));
}

std::vector<exit_reason> stop_processes(const std::vector<pid>& pids, shutdown_policy policy) {
  const std::size_t n = pids.size();
  std::vector<exit_reason> reasons(n);
  if (n == 0) return reasons;
  std::vector<monitor_ref> mons(n);
  std::vector<exit_reason> exit_reasons(n);
  std::vector<char> down_seen(n, 0), exit_seen(n, 0);

  // 1, 2.
  for (std::size_t i = 0; i < n; ++i) mons[i] = monitor(pids[i]);
  const exit_reason signal =
      policy.what() == shutdown_policy::kind::brutal_kill ? exit_reason::kill() : exit_reason::shutdown();
  for (std::size_t i = 0; i < n; ++i) exit(pids[i], signal);

  // Index lookups: a linear scan for a few children (the common one-at-a-time case), hash maps for many.
  constexpr std::size_t few = 8;
  std::unordered_map<std::uint64_t, std::size_t> by_ref;
  std::unordered_map<pid, std::size_t> by_pid;
  if (n > few) {
    by_ref.reserve(n);
    by_pid.reserve(n);
    for (std::size_t i = 0; i < n; ++i) {
      by_ref.emplace(mons[i].id, i);
      by_pid.emplace(pids[i], i);
    }
  }
  auto ref_index = [&](std::uint64_t id) -> std::ptrdiff_t {
    if (n > few) {
      auto it = by_ref.find(id);
      return it == by_ref.end() ? -1 : static_cast<std::ptrdiff_t>(it->second);
    }
    for (std::size_t i = 0; i < n; ++i)
      if (mons[i].id == id) return static_cast<std::ptrdiff_t>(i);
    return -1;
  };
  auto pid_index = [&](pid p) -> std::ptrdiff_t {
    if (n > few) {
      auto it = by_pid.find(p);
      return it == by_pid.end() ? -1 : static_cast<std::ptrdiff_t>(it->second);
    }
    for (std::size_t i = 0; i < n; ++i)
      if (pids[i] == p) return static_cast<std::ptrdiff_t>(i);
    return -1;
  };

  // 3, 4.
  std::size_t remaining = n;
  auto is_ours = [&](const down& d) { return ref_index(d.ref.id) >= 0; };
  auto take_down = [&](down d) {
    auto i = static_cast<std::size_t>(ref_index(d.ref.id));
    down_seen[i] = 1;
    reasons[i] = std::move(d.reason);
    --remaining;
    return false;
  };
  auto from_child = [&](const exit_signal& e) { return pid_index(e.from) >= 0; };
  auto take_exit = [&](exit_signal e) {
    auto i = static_cast<std::size_t>(pid_index(e.from));
    exit_seen[i] = 1;
    exit_reasons[i] = std::move(e.reason);
    return false;
  };
  // false: wait for ever (infinity, after the kill, or a timeout too long to represent)
  bool timed = policy.what() == shutdown_policy::kind::timeout && !grove::is_forever(policy.time());
  const auto start = std::chrono::steady_clock::now();
  const auto room = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::time_point::max() - start);
  const auto deadline = start + (timed ? std::min(policy.time(), room) : std::chrono::milliseconds(0));
  while (remaining > 0) {
    if (timed) {
      bool expired = receive(when(is_ours, take_down), when(from_child, take_exit),
                             after(deadline - std::chrono::steady_clock::now(), [] { return true; }));
      if (expired) {
        for (std::size_t i = 0; i < n; ++i)
          if (!down_seen[i]) exit(pids[i], exit_reason::kill());
        timed = false;
      }
    } else {
      receive(when(is_ours, take_down), when(from_child, take_exit));
    }
  }

  for (std::size_t i = 0; i < n; ++i) {
    if (reasons[i].what_kind() != exit_reason::kind::noproc) continue;
    if (!exit_seen[i] && linked_to(pids[i])) {
      const pid p = pids[i];
      receive(when([p](const exit_signal& e) { return e.from == p; },
                   [&](exit_signal e) {
                     exit_seen[i] = 1;
                     exit_reasons[i] = std::move(e.reason);
                   }));
    }
    if (exit_seen[i]) reasons[i] = exit_reasons[i];
  }
  return reasons;
}

}  // namespace grove::supervisor::internal
