// remote.hpp: the runtime's side of grove/remote.hpp (design in remote.cpp).
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>

#include <grove/exit_reason.hpp>
#include <grove/pid.hpp>
#include <grove/remote.hpp>
#include <grove/runtime.hpp>

#include <grove/detail/message_node.hpp>

namespace grove::internal {

// Per runtime: the installed router and this node's name on the wire.
struct remote_seam {
  std::atomic<remote::router*> router{nullptr};  // shared: seq_cst with `users` (remote.cpp, "Removal")
  std::atomic<std::uint32_t> users{0};           // shared: calls into `router` in progress
  mutable std::mutex lock;
  std::string node_name;                         // guarded by lock; empty: not distributed
  std::uint32_t creation = 0;                    // guarded by lock
};

// A node `n` (a message, or a signal node of signal_nodes.hpp) addressed to remote `to`: handed to
// the router, or answered as Erlang answers for a node it cannot reach. Consumes n. A message's
// sender is the calling process (the null pid on a foreign thread). Any thread.
void route_remote(grove::runtime::state& rt, pid to, detail::message_node* n) noexcept;
// After the calling process sent a message to remote `to`: waits at the router's gate if it has one
// (router::busy). May park; may unwind a process killed meanwhile.
void wait_after_remote_send(grove::runtime::state& rt, pid to);
// An exit signal from `from` to remote `to` (exit/2, or through a link).
void route_remote_exit(grove::runtime::state& rt, pid to, pid from, const exit_reason& reason, bool via_link) noexcept;
// A monitor by registered name on another node (grove::monitor(name, node)).
void route_remote_name_monitor(grove::runtime::state& rt, pid watcher, std::uint32_t node, std::string_view name,
                               std::uint64_t ref) noexcept;
// This runtime's node name: the router's, or grove::local_node_name.
std::string this_node_name(const grove::runtime::state& rt);

}  // namespace grove::internal
