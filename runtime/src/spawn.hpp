// spawn.hpp: where a scheduled process starts running (spawn.cpp).
#pragma once

#include "context.hpp"

namespace grove::internal {

// The entry of every process context (worker.cpp makes it with make_context): runs the process's
// function, then its exit protocol; never returns.
void process_main(transfer t);

}  // namespace grove::internal
