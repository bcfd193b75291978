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

namespace grove::services {

// A worker child spec whose start function is start_link<B>(options, args...) (args copied for
// each start). A failed start (init threw, name taken) is a failed child start.
template <class B, class... A>
supervisor::child_spec server_child(std::string id, server_options options, A... args) {
  supervisor::child_spec spec;
  spec.id = std::move(id);
  spec.start = [options = std::move(options), args = std::make_tuple(std::move(args)...)]() -> grove::result<grove::pid> {
    auto r = std::apply([&options](const A&... a) { return start_link<B>(options, a...); }, args);
    if (!r) return r.error();
    return r->pid();
  };
  return spec;
}

// A worker child spec for a pool (pool::start_link).
inline supervisor::child_spec pool_child(std::string id, pool_options options) {
  supervisor::child_spec spec;
  spec.id = std::move(id);
  spec.start = [options = std::move(options)]() -> grove::result<grove::pid> {
    auto r = pool::start_link(options);
    if (!r) return r.error();
    return r->pid();
  };
  return spec;
}

}  // namespace grove::services
