// grove/services/child_spec.hpp: servers and pools as supervisor children (grove/supervisor.hpp).
//
//   namespace sup = grove::supervisor;
//   sup::start_link({.strategy = sup::strategy::one_for_one, .intensity = 3},
//                   {svc::server_child<cache>("cache", {.name = "cache"}, 1024),
//                    svc::pool_child("db_pool", {.size = 5, .max_waiting = 20, .name = "db_pool"})});
//   auto c = svc::server_ref<cache>::named("cache");   // follows the server across restarts
//
// The start function runs in the supervisor and start_links the server there (so it is linked to
// the supervisor and its init has finished when the supervisor goes on, as OTP's start functions
// do). Give supervised servers a name and call them by name: a restart makes a new pid. Servers that
// should run terminate() when their supervisor stops them need server_options::trap_exit (as in OTP).
// Needs grove::supervisors (linked by grove::services when that target exists).
#pragma once

#include <string>
#include <tuple>
#include <utility>

#include <grove/supervisor.hpp>

#include <grove/services/pool.hpp>
#include <grove/services/server.hpp>

#include <grove/detail/visibility.hpp>
GROVE_PUBLIC_BEGIN

namespace grove::services {

namespace detail {
// A failed start as a child's reason: the failure's own reason (init's exception, already_started
// with the holder's pid), or its code when it has none (a timeout).
inline supervisor::start_return start_failure(const failure& f) {
  if (!f.reason.is_normal()) return f.reason;
  return f.code;
}
}  // namespace detail

// A worker child spec whose start function is start_link<B>(options, args...) (args copied for
// each start). A failed start (init threw, name taken) is a failed child start, with init's reason.
template <class B, class... A>
supervisor::child_spec server_child(std::string id, server_options options, A... args) {
  supervisor::child_spec spec;
  spec.id = std::move(id);
  spec.start = [options = std::move(options), args = std::make_tuple(std::move(args)...)]() -> supervisor::start_return {
    auto r = std::apply([&options](const A&... a) { return start_link<B>(options, a...); }, args);
    if (!r) return detail::start_failure(r.failure());
    return r->pid();
  };
  return spec;
}

// A worker child spec for a pool (pool::start_link).
inline supervisor::child_spec pool_child(std::string id, pool_options options) {
  supervisor::child_spec spec;
  spec.id = std::move(id);
  spec.start = [options = std::move(options)]() -> supervisor::start_return {
    auto r = pool::start_link(options);
    if (!r) return detail::start_failure(r.failure());
    return r->pid();
  };
  return spec;
}

}  // namespace grove::services

GROVE_PUBLIC_END
