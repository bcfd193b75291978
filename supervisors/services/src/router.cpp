// router.cpp: routers (grove/services/router.hpp).
//
// ## State and who touches it
// router_state is shared by every copy of a router and every route it made; all of it is guarded by
// `lock` (a std::mutex: held for a few vector and map operations, never across a call that can park
// a process, so a process holding it is never moved to another thread while holding it).
// - members: in order of joining; round_robin and least_busy walk it from `cursor`.
// - in_flight: per member, the routes not yet done. A route of a member that has left decrements
//   nothing (its entry is gone).
// - ring (consistent_hash): `virtual_nodes` points per member, sorted; a key goes to the first point
//   at or after its hash (wrapping). A member's points depend only on its pid, so adding or removing
//   one member moves only the keys of the arcs its points own: ~1/N of the keys, all to or from it.
//
// ## A pick, in steps
// 1. Under the lock, choose by the strategy among the members.
// 2. If the chosen member is not alive (grove::is_alive: a table lookup, never parks), remove it
//    (and its ring points) and choose again; no live member → errc::no_workers.
// 3. Count it in flight and return a route, whose destruction uncounts it.
//
// ## Rejected alternatives
// - A router process (Akka's router actor): a message round trip and a serial point per request; the
//   shared table gives the same answers from the caller's own process (ETS in Erlang systems).
// - Monitoring members to drop them at once: monitors need a process to receive the downs; lazy
//   checking at pick time gives the guarantee that matters (never pick a member known dead).
// - Jump consistent hash: fewer bytes and a perfect spread, but it only removes the last bucket;
//   a ring lets any member leave while the others keep their keys.
#include <grove/services/router.hpp>

#include <algorithm>
#include <mutex>
#include <unordered_map>
#include <utility>

#include <grove/process.hpp>

namespace grove::services {

namespace detail {

namespace {
std::uint64_t mix(std::uint64_t z) noexcept {  // splitmix64's finaliser: spreads nearby inputs
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
}  // namespace

struct router_state {
  std::mutex lock;
  std::size_t virtual_nodes = 0;                          // immutable after construction
  std::vector<grove::pid> members;                        // guarded by lock
  std::unordered_map<grove::pid, std::size_t> in_flight;  // guarded by lock
  std::vector<std::pair<std::uint64_t, grove::pid>> ring; // guarded by lock; sorted
  std::size_t cursor = 0;                                 // guarded by lock

  void add_points(grove::pid p) {
    for (std::size_t i = 0; i < virtual_nodes; ++i) ring.emplace_back(mix(p.bits() ^ mix(i + 1)), p);
    std::sort(ring.begin(), ring.end());
  }
  bool erase(grove::pid p) {
    auto it = std::find(members.begin(), members.end(), p);
    if (it == members.end()) return false;
    members.erase(it);
    in_flight.erase(p);
    ring.erase(std::remove_if(ring.begin(), ring.end(), [p](const auto& point) { return point.second == p; }), ring.end());
    return true;
  }
};

}  // namespace detail

route& route::operator=(route&& o) noexcept {
  if (this != &o) {
    done();
    state_ = std::move(o.state_);
    worker_ = o.worker_;
  }
  return *this;
}

void route::done() noexcept {
  if (!state_) return;
  {
    std::lock_guard<std::mutex> g(state_->lock);
    auto it = state_->in_flight.find(worker_);
    if (it != state_->in_flight.end() && it->second > 0) --it->second;
  }
  state_.reset();
}

router::router(routing strategy, std::size_t virtual_nodes)
    : strategy_(strategy), state_(std::make_shared<detail::router_state>()) {
  state_->virtual_nodes = virtual_nodes == 0 ? 1 : virtual_nodes;
}

bool router::add(grove::pid worker) {
  if (worker.is_null()) return false;
  std::lock_guard<std::mutex> g(state_->lock);
  if (std::find(state_->members.begin(), state_->members.end(), worker) != state_->members.end()) return true;
  state_->members.push_back(worker);
  state_->in_flight.emplace(worker, 0);
  if (strategy_ == routing::consistent_hash) state_->add_points(worker);
  return true;
}

bool router::remove(grove::pid worker) {
  std::lock_guard<std::mutex> g(state_->lock);
  return state_->erase(worker);
}

std::vector<grove::pid> router::members() const {
  std::lock_guard<std::mutex> g(state_->lock);
  return state_->members;
}

std::size_t router::size() const {
  std::lock_guard<std::mutex> g(state_->lock);
  return state_->members.size();
}

std::size_t router::in_flight(grove::pid worker) const {
  std::lock_guard<std::mutex> g(state_->lock);
  auto it = state_->in_flight.find(worker);
  return it == state_->in_flight.end() ? 0 : it->second;
}

outcome<route> router::pick() {
  if (strategy_ == routing::consistent_hash) return grove::errc::bad_argument;
  return pick_impl(false, 0);
}

outcome<route> router::pick_hash(std::uint64_t key_hash) { return pick_impl(true, key_hash); }

outcome<route> router::pick_impl(bool has_key, std::uint64_t key_hash) {
  detail::router_state& s = *state_;
  std::lock_guard<std::mutex> g(s.lock);
  for (;;) {
    if (s.members.empty()) return errc::no_workers;
    grove::pid chosen;
    switch (strategy_) {  // 1.
      case routing::round_robin:
        chosen = s.members[s.cursor++ % s.members.size()];
        break;
      case routing::least_busy: {
        const std::size_t n = s.members.size();
        const std::size_t start = s.cursor++ % n;
        std::size_t best = start;
        for (std::size_t k = 1; k < n; ++k) {
          const std::size_t i = (start + k) % n;
          if (s.in_flight[s.members[i]] < s.in_flight[s.members[best]]) best = i;
        }
        chosen = s.members[best];
        break;
      }
      case routing::consistent_hash: {
        if (!has_key) return grove::errc::bad_argument;
        const std::uint64_t h = detail::mix(key_hash);
        auto it = std::lower_bound(s.ring.begin(), s.ring.end(), std::pair<std::uint64_t, grove::pid>(h, grove::pid()));
        if (it == s.ring.end()) it = s.ring.begin();
        chosen = it->second;
        break;
      }
    }
    if (!grove::is_alive(chosen)) {  // 2.
      s.erase(chosen);
      continue;
    }
    ++s.in_flight[chosen];  // 3.
    return route(state_, chosen);
  }
}

}  // namespace grove::services
