// introspection.hpp: the process_info signal (introspection.cpp answers it; grove/introspection.hpp is the API).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include <grove/introspection.hpp>

#include "signal_nodes.hpp"

namespace grove::internal {

struct process;
struct info_request;

// The target's side, in its own context: answers with its own view of itself. parked_at: the
// return address of the runtime call it was in when it took the request (drain_inbox's caller);
// its stack trace starts there, not in the machinery that answers (nullptr: the whole stack).
void answer_info(process* p, info_request& req, const void* parked_at) noexcept;
// For a target that has exited: answers "gone".
void answer_info_gone(info_request& req) noexcept;

// runtime_config::unmatched_mail_warning of the running runtime (one runs at a time); 0: never.
// shared: relaxed, set before the runtime's workers start, which orders it for them.
inline std::atomic<std::uint32_t> unmatched_mail_threshold{10'000};

// The commonest message types in p's saved queue, most first (at most `top`). Owner only: O(queue).
std::vector<message_type_count> saved_types(const process* p, std::size_t top);
// Logs p's unmatched mail (the threshold was just reached), once per process. Owner only.
void report_unmatched_mail(process* p) noexcept;

}  // namespace grove::internal
