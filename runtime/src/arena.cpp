// arena.cpp: see arena.hpp.
#include "arena.hpp"

#include <algorithm>
#include <cstdint>
#include <exception>
#include <new>

#include <fmt/format.h>

#include <grove/arena.hpp>
#include <grove/errc.hpp>
#include <grove/logger.hpp>

#include "process.hpp"
#include "resources.hpp"
#include "exit_protocol.hpp"
#include "scheduler.hpp"

namespace grove::internal {

process_arena::process_arena(process* owner, std::size_t limit_bytes) : upstream_(owner, limit_bytes), pool_(&upstream_) {
  count_up(resources().arenas);
}

process_arena::~process_arena() {
  pool_.release();
  count_down(resources().arenas);
}

void* process_arena::counting_upstream::do_allocate(std::size_t bytes, std::size_t align) {
  if (limit != 0 && held + bytes > limit && !owner->exiting) {
    // BEAM's max_heap_size: the process is killed, untrappably, and the kill is reported.
    std::string text = fmt::format("arena limit of {} bytes exceeded (holds {}, asked for {} more)", limit, held, bytes);
    exit_reason reason = exit_reason::max_heap_size(text);
    log(log_event{log_level::error, log_kind::max_heap_size, owner->id(), {}, reason,
                  fmt::format("grove: process {} killed: {}", owner->id(), text)});
    mark_exiting(owner, reason);
    // Raised now, unless another exception is unwinding the stack (a destructor allocates): then
    // this allocation is served and the exit is raised after (exit_protocol.cpp).
    if (std::uncaught_exceptions() == 0) raise_exit(owner);
  }
  void* p = ::operator new(bytes, std::align_val_t(align));
  held += bytes;
  publish();
  return p;
}

void process_arena::counting_upstream::do_deallocate(void* p, std::size_t bytes, std::size_t align) {
  ::operator delete(p, std::align_val_t(align));  // unsized: clang 14 has sized deallocation off by default
  held -= bytes;
  publish();
}

void process_arena::counting_upstream::publish() noexcept {
  const std::size_t kib = (held + 1023) / 1024;
  owner->arena_kib.store(static_cast<std::uint32_t>(std::min<std::size_t>(kib, UINT32_MAX)),
                         std::memory_order_relaxed);  // a snapshot for introspection: orders nothing
}

void destroy_arena(process* p) noexcept {
  if (!p->extra || !p->extra->arena) return;
  delete p->extra->arena;
  p->extra->arena = nullptr;
  p->arena_kib.store(0, std::memory_order_relaxed);  // as publish()
}

}  // namespace grove::internal

namespace grove {

using namespace grove::internal;

std::pmr::memory_resource& arena() {
  process* p = current_process();
  if (!p) throw error(errc::not_in_process);
  before_runtime_call(p, false);
  process_extra& ex = p->ensure_extra();
  if (!ex.arena) ex.arena = new process_arena(p, ex.max_heap_bytes);
  return *ex.arena;
}

std::size_t arena_bytes() noexcept {
  process* p = current_process();
  return (p && p->extra && p->extra->arena) ? p->extra->arena->bytes() : 0;
}

}  // namespace grove
