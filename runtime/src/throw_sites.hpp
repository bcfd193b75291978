// throw_sites.hpp: where the exception that ends a process was thrown (stack_trace.cpp, "The throw site").
#pragma once

#include <cstdint>
#include <typeinfo>

#include <grove/stack_trace.hpp>

namespace grove::internal {

// Frames kept of a throw site: enough to reach from a throw deep in a library to the process's function.
inline constexpr std::uint32_t max_throw_frames = 48;

// The last exception thrown by a process (not exit_unwind), recorded by note_throw. Owner only.
struct throw_record {
  const void* object = nullptr;          // the thrown object (nullptr once taken)
  const std::type_info* type = nullptr;  // its type
  std::uint32_t count = 0;               // frames stored
  void* frames[max_throw_frames + 1];    // return addresses, innermost first, then a null (safe_dump_to's)
};

// A C++ exception `object` of `type` is about to be thrown on this thread: if the thread runs a
// process, records where. Called by libgrove_throw_traces's __cxa_throw; never throws, and never
// allocates after the process's first throw.
void note_throw(void* object, const std::type_info* type) noexcept;
// Hands note_throw to libgrove_throw_traces if the program links it (runtime start; idempotent).
void attach_throw_traces() noexcept;

// The recorded site of the exception being handled by the calling process, if the record is of that
// exception: `object` its most-derived address (nullptr when unknown: then by `type`). Takes it.
stack_trace throw_site_of(const void* object, const std::type_info* type) noexcept;

}  // namespace grove::internal
