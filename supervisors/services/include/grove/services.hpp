// grove/services.hpp: Grove's service patterns, one include.
//
//   namespace svc = grove::services;
//   svc::outcome<T>, svc::errc, svc::failure   grove/services/outcome.hpp   the error model
//   svc::deadline                              grove/services/deadline.hpp  one deadline per request
//   svc::start_link, call, cast, stop          grove/services/server.hpp    servers (gen_server)
//   svc::async, await, gather, async_stream    grove/services/task.hpp      tasks, partial results
//   svc::pool                                  grove/services/pool.hpp      bulkheads
//   svc::router                                grove/services/router.hpp    round-robin, least-busy, hashing
//   svc::retry_policy, retry                   grove/services/retry.hpp     retries, only when asked
//   svc::server_child, pool_child              grove/services/child_spec.hpp  under supervisors
// Every blocking operation takes a deadline (or a timeout) and returns an outcome; nothing retries
// unless retry() is asked to. supervisors/services/src/server.cpp opens the design.
#pragma once

#include <grove/services/deadline.hpp>
#include <grove/services/outcome.hpp>
#include <grove/services/pool.hpp>
#include <grove/services/retry.hpp>
#include <grove/services/router.hpp>
#include <grove/services/server.hpp>
#include <grove/services/task.hpp>

#if __has_include(<grove/supervisor.hpp>)
#include <grove/services/child_spec.hpp>

#include <grove/detail/visibility.hpp>
GROVE_PUBLIC_BEGIN
#endif

GROVE_PUBLIC_END
