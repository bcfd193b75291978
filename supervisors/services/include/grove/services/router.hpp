// grove/services/router.hpp: choosing one of a group of workers for each request: round-robin,
// least-busy, or consistent hashing by key.
//
//   svc::router r(svc::routing::consistent_hash);
//   for (auto w : workers) r.add(w);
//   if (auto to = r.pick(user_id)) {                     // a route: the worker, counted in flight
//     auto reply = svc::call(svc::server_ref<shard>(to->worker()), get{user_id}, deadline);
//   }                                                    // destroyed: no longer in flight
//
// - round_robin: the live members in turn.
// - least_busy: the member with the fewest requests in flight through this router (a proxy's
//   least-connections rule); ties go round-robin. "In flight" = routes not yet destroyed, counted
//   across every process sharing the router.
// - consistent_hash: a ring with `virtual_nodes` points per member. The same key reaches the same
//   member while that member lives, and when a member joins or leaves only the keys of the arcs it
//   takes or gives move: about 1/N of them, all to (or from) that member.
// Membership is explicit (add/remove); a member that has died is dropped when a pick meets it, so a
// pick never returns a dead worker that it could have known about (one may still die the moment
// after). The router sends nothing itself and never retries: a call that fails through a route is
// the caller's to handle (retry.hpp, when asked).
//
// A router is a handle on shared state: copies share members and counts, and every function is
// thread-safe (a mutex held for a few map operations, never across a Grove call that could block).
// A shared table is used rather than a router process, as Erlang systems use ETS for this: picking
// is a lookup on the request's own path, and a process would add a message round trip per request
// and serialise every caller.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include <grove/pid.hpp>

#include <grove/services/outcome.hpp>

#include <grove/detail/visibility.hpp>
GROVE_PUBLIC_BEGIN

namespace grove::services {

enum class routing { round_robin, least_busy, consistent_hash };

namespace detail {
struct router_state;
}

// One routed request: the worker, counted in flight until the route is destroyed (or done()).
// Move-only.
class route {
 public:
  route(route&& o) noexcept : state_(std::move(o.state_)), worker_(o.worker_) {}
  route& operator=(route&& o) noexcept;
  route(const route&) = delete;
  route& operator=(const route&) = delete;
  ~route() { done(); }

  grove::pid worker() const noexcept { return worker_; }
  // No longer in flight (idempotent).
  void done() noexcept;

 private:
  friend class router;
  route(std::shared_ptr<detail::router_state> s, grove::pid w) noexcept : state_(std::move(s)), worker_(w) {}
  std::shared_ptr<detail::router_state> state_;
  grove::pid worker_;
};

class router {
 public:
  explicit router(routing strategy = routing::round_robin, std::size_t virtual_nodes = 160);

  routing strategy() const noexcept { return strategy_; }
  // Adds a member (a no-op if present). false for the null pid.
  bool add(grove::pid worker);
  // Removes a member; false if it was not one.
  bool remove(grove::pid worker);
  std::vector<grove::pid> members() const;
  std::size_t size() const;
  // Requests in flight to `worker` through this router.
  std::size_t in_flight(grove::pid worker) const;

  // A live member by the strategy (consistent_hash without a key: grove::errc::bad_argument); errc::no_workers
  // if none is alive.
  outcome<route> pick();
  // By key: consistent_hash hashes it (std::hash<K>, then mixed); the other strategies ignore it.
  template <class K>
  outcome<route> pick(const K& key) {
    return pick_hash(static_cast<std::uint64_t>(std::hash<K>{}(key)));
  }
  outcome<route> pick_hash(std::uint64_t key_hash);

 private:
  outcome<route> pick_impl(bool has_key, std::uint64_t key_hash);
  routing strategy_;
  std::shared_ptr<detail::router_state> state_;
};

}  // namespace grove::services

GROVE_PUBLIC_END
