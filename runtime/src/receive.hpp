// receive.hpp: the scheduling points a process passes through (receive.cpp).
#pragma once

#include "process.hpp"

namespace grove::internal {

// Process context: switches the running process back to its worker; returns when a worker resumes
// it (maybe another one: the worker that resumes it passes itself in the transfer).
void park_current(process* p, park_reason why);

// Process context: one reduction (a send, a received message, a spawn); yields at the end of the
// slice, and then acts on signals if asked.
void charge(process* p, bool act_on_signals);

}  // namespace grove::internal
