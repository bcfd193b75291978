// introspection.hpp: the process_info signal (introspection.cpp answers it; grove/introspection.hpp is the API).
#pragma once

#include <memory>

#include "signal_nodes.hpp"

namespace grove::internal {

struct process;
struct info_request;

// The target's side, in its own context: answers with its own view of itself.
void answer_info(process* p, info_request& req) noexcept;
// For a target that has exited: answers "gone".
void answer_info_gone(info_request& req) noexcept;

}  // namespace grove::internal
