// grove/blocking.hpp: running a call that blocks off the workers (BEAM's dirty schedulers, tokio's
// spawn_blocking).
//
//   auto bytes = grove::run_blocking([&] { return std::filesystem::file_size(path); });
//   auto addrs = grove::run_blocking([&] { return lookup(host); });   // getaddrinfo, a C library...
//
// From a process, run_blocking parks the caller and runs fn on one of the runtime's blocking
// threads (runtime_config::blocking_threads, made as needed; further calls wait in order for a free
// one), then resumes the caller with what fn returned, or rethrows what it threw. The caller keeps
// its execution stack meanwhile, so fn may use the caller's locals by reference exactly as if it
// were called in place. The processes that already ran on that execution stack (one in
// runtime_config::stack_slots, ~1/stack_slots of them) wait for fn to return before they run again;
// new processes run on the other stacks. So keep fn to the blocking work itself, and do not make it
// wait for something a Grove process must do: that process may be one of those waiting.
//
// A blocking call cannot be interrupted: a kill, or any exit signal, that arrives while fn runs
// takes effect when fn returns (the caller then ends without using the result). Messages that
// arrive meanwhile stay in the mailbox. runtime::stop cannot end a caller whose fn is still running:
// it reports it as left behind, and the caller unwinds (killed) when fn returns.
//
// fn runs on a plain thread: Grove calls in it are made as from a foreign thread (self() is the
// null pid). From a foreign thread (with or without a scoped_process) fn simply runs on that thread.
#pragma once

#include <exception>
#include <optional>
#include <type_traits>
#include <utility>

#include <grove/detail/visibility.hpp>
GROVE_PUBLIC_BEGIN

namespace grove {

namespace detail {
// Runs call(ctx) on a blocking thread while the calling process waits (see the file comment); on
// a foreign thread, runs it here. call must not throw (run_blocking's wrapper catches).
void run_blocking_erased(void (*call)(void* ctx) noexcept, void* ctx);
}  // namespace detail

template <class F>
std::invoke_result_t<F&> run_blocking(F&& fn) {
  using R = std::invoke_result_t<F&>;
  struct context {
    F& fn;
    // A reference result is kept as a pointer.
    using stored = std::conditional_t<std::is_reference_v<R>, std::remove_reference_t<R>*, R>;
    std::conditional_t<std::is_void_v<R>, bool, std::optional<stored>> result{};
    std::exception_ptr error;
  } ctx{fn, {}, {}};
  detail::run_blocking_erased(
      [](void* c) noexcept {
        auto& x = *static_cast<context*>(c);
        try {
          if constexpr (std::is_void_v<R>) {
            x.fn();
            x.result = true;
          } else if constexpr (std::is_reference_v<R>) {
            x.result.emplace(&x.fn());
          } else {
            x.result.emplace(x.fn());
          }
        } catch (...) {
          x.error = std::current_exception();
        }
      },
      &ctx);
  if (ctx.error) std::rethrow_exception(ctx.error);
  if constexpr (std::is_reference_v<R>) {
    return static_cast<R>(**ctx.result);
  } else if constexpr (!std::is_void_v<R>) {
    return std::move(*ctx.result);
  }
}

}  // namespace grove

GROVE_PUBLIC_END
