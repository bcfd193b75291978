// grove/services/server.hpp: servers (OTP's gen_server) — a process that owns a state and serves
// typed calls and casts one at a time.
//
//   struct counter {                                    // the behaviour: a plain class
//     struct get {};                                    // requests are plain types
//     struct add { int by; };
//     int n = 0;
//     explicit counter(int start) : n(start) {}         // init (a throw fails the start)
//     int handle_call(get) { return n; }                // a call's reply type is what its handler returns
//     void handle_cast(add a) { n += a.by; }
//   };
//   auto c = svc::start_link<counter>({.name = "counter"}, 10).value();   // server_ref<counter>
//   svc::cast(c, counter::add{5});
//   svc::outcome<int> n = svc::call(c, counter::get{});                   // 15 (default timeout 5 s)
//
// A behaviour B may have, all optional except what its requests need:
//   R    handle_call(Req)                       reply with the return value (void: an empty reply;
//   R    handle_call(Req, const call_info&)     outcome<T>: reply a value or a failure) — call_info
//                                               has the caller and its deadline, which travels;
//   void handle_call(Req, reply_to<R>)          reply later, from anywhere (Req must name
//                                               `using reply_type = R;`): OTP's noreply + reply/2;
//   void handle_cast(Msg)                       casts: no reply;
//   void handle_info(grove::any_message)        any other message (timers, downs, exit signals
//                                               when trapping) — without it they are dropped;
//   void terminate(const grove::exit_reason&)   runs when the server stops: stop(), its parent's
//                                               exit signal when trapping exits, or a handler that
//                                               threw (then the server exits with that exception).
// The constructor is init; the destructor always runs when the server ends (unwinding), terminate
// only in the cases above, as in OTP. The state lives on the heap, so the parked process keeps only
// the loop's few frames (see hibernate_after below).
//
// call's semantics (OTP's, runtime/DESIGN.md §5): the caller monitors the server and makes a process alias
// for the reply, then waits for the reply, the monitor's down or the timeout, whichever comes first:
//   - the timeout passes: grove::errc::timeout (errc::deadline_exceeded for a deadline), not later;
//   - the server is not alive: grove::errc::noproc, at once (the monitor fires at once);
//   - the server dies during the call: errc::exited, with the server's exit reason;
//   - a reply that comes after the caller stopped waiting goes to the deactivated alias and is
//     dropped: it never lands in the caller's mailbox (OTP 24);
//   - a server that calls itself gets errc::call_to_self at once instead of a deadlock;
//   - a ref of another behaviour's server gets errc::bad_request (the server survives).
// A call or cast from one process to one server is handled in send order. Call from a process or a
// scoped_process; cast from anywhere. All functions here are thread-safe.
//
// Supervision: start_link links the server to the caller, so a supervisor's start function can use
// it (grove/services/child_spec.hpp: server_child). A server that traps exits runs terminate(reason)
// and exits with the reason when its parent (the linker) sends an exit signal, as gen_server does.
//
// hibernate_after (OTP's start option) is not provided: it would save nothing here. Grove parks a
// process by copying out only its live stack (runtime/src/scheduler.cpp), and a waiting server's live
// stack is its loop's frames (~1 KiB; server_test measures it), with the state on the heap; OTP's
// hibernation saves the heap garbage and the stack, and a C++ state has no garbage to collect.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>

#include <grove/message.hpp>
#include <grove/pid.hpp>
#include <grove/process.hpp>
#include <grove/registry.hpp>

#include <grove/services/deadline.hpp>
#include <grove/services/detail/common.hpp>
#include <grove/services/detail/server.hpp>
#include <grove/services/outcome.hpp>

#include <grove/detail/visibility.hpp>
GROVE_PUBLIC_BEGIN

namespace grove::services {

// OTP's default call timeout.
inline constexpr std::chrono::milliseconds default_call_timeout{5000};
// A timeout that never passes.
inline constexpr std::chrono::milliseconds infinity = std::chrono::milliseconds::max();

struct server_options {
  std::string name{};              // registered name (grove::register_name) if not empty; taken
                                   // names fail the start with errc::init_failed
  bool trap_exit = false;          // see the file comment (Supervision); other exit signals then
                                   // reach handle_info as exit_signal messages
  std::size_t max_heap_bytes = 0;  // the server process's arena limit (spawn_options)
  std::chrono::milliseconds init_timeout = infinity;  // the start waits this long for init, then
                                                      // kills the server: grove::errc::timeout
};

// Who called, and until when the caller waits.
class call_info {
 public:
  call_info() = default;
  call_info(grove::pid caller, services::deadline d) noexcept : caller_(caller), deadline_(d) {}
  grove::pid caller() const noexcept { return caller_; }
  const services::deadline& deadline() const noexcept { return deadline_; }

 private:
  grove::pid caller_;
  services::deadline deadline_;
};

// The right to answer one call later (a handle_call taking a reply_to). Move-only; may be sent to
// another process, which may answer. Replies once: later calls do nothing. If it is dropped without
// a reply, the caller waits for its timeout (or the server's exit), as in OTP.
template <class R>
class reply_to {
 public:
  reply_to(reply_to&& o) noexcept : to_(std::exchange(o.to_, alias{})), info_(o.info_) {}
  reply_to& operator=(reply_to&& o) noexcept {
    to_ = std::exchange(o.to_, alias{});
    info_ = o.info_;
    return *this;
  }
  reply_to(const reply_to&) = delete;
  reply_to& operator=(const reply_to&) = delete;

  const call_info& info() const noexcept { return info_; }
  const services::deadline& deadline() const noexcept { return info_.deadline(); }
  grove::pid caller() const noexcept { return info_.caller(); }
  bool is_pending() const noexcept { return static_cast<bool>(to_); }

  // Sends the reply (a value, or for R = outcome<T> a T or a failure). Never blocks.
  template <class V = R>
    requires(!std::is_void_v<V>)
  void operator()(std::type_identity_t<V> value) {
    if (!to_) return;
    alias to = std::exchange(to_, alias{});
    grove::send(to, detail::reply_msg<detail::wire_t<R>>{to.id, detail::to_wire<R>(std::move(value))});
  }
  template <class V = R>
    requires std::is_void_v<V>
  void operator()() {
    if (!to_) return;
    alias to = std::exchange(to_, alias{});
    grove::send(to, detail::reply_msg<detail::unit>{to.id, detail::unit{}});
  }


 private:
  template <class B, class Req>
  friend struct detail::call_job_of;
  reply_to(alias to, call_info info) noexcept : to_(to), info_(info) {}

  alias to_;
  call_info info_;
};

// A typed handle on a server of behaviour B: its pid, or a registered name looked up at each call
// (so a ref by name follows a supervised server across restarts). Copyable; cheap.
template <class B>
class server_ref {
 public:
  server_ref() = default;
  explicit server_ref(grove::pid p) noexcept : pid_(p) {}
  static server_ref named(std::string name) {
    server_ref r;
    r.name_ = std::move(name);
    return r;
  }
  // The server's pid: the one given, or the name's current holder (null if none).
  grove::pid pid() const noexcept { return name_.empty() ? pid_ : grove::whereis(name_); }
  const std::string& name() const noexcept { return name_; }

 private:
  grove::pid pid_;
  std::string name_;
};

// What a handle_call returns to reply and then stop the server, OTP's {stop, Reason, Reply, State}:
// the caller gets `reply` first, then terminate(reason) runs and the server exits with `reason`.
//   svc::stop_reply<int> handle_call(shutdown_now) { return {grove::exit_reason::normal(), n}; }
template <class R>
struct stop_reply {
  exit_reason reason;
  R reply;
};
template <>
struct stop_reply<void> {
  exit_reason reason;
};

// What call(server_ref<B>, Req) returns: outcome<V>, V being the handler's reply type (void for an
// empty reply; T for outcome<T>; R for stop_reply<R>).
template <class B, class Req>
using call_result_t = outcome<detail::value_t<detail::call_reply_t<B, Req>>>;

namespace detail {

template <class B, class Req>
struct call_job_of final : call_job {
  Req req;
  alias to;
  call_info info;
  using reply = call_reply_t<B, Req>;
  using wire = wire_t<reply>;
  call_job_of(Req&& r, alias a, call_info i) : req(std::move(r)), to(a), info(i) { behaviour = &ops_for<B>; }
  std::optional<exit_reason> run(void* self) override {
    B& b = *static_cast<B*>(self);
    if constexpr (deferred_call<B, Req>) {
      b.handle_call(std::move(req), reply_to<reply>(to, info));
      return std::nullopt;
    } else {
      auto handle = [&]() -> decltype(auto) {
        if constexpr (info_call<B, Req>) {
          return b.handle_call(std::move(req), info);
        } else {
          return b.handle_call(std::move(req));
        }
      };
      using handler_t = typename call_reply<B, Req>::handler;
      if constexpr (unstop<handler_t>::stops) {  // reply, then the loop stops (OTP's {stop, Reason, Reply, State})
        handler_t r = handle();
        if constexpr (std::is_void_v<reply>) {
          grove::send(to, reply_msg<wire>{to.id, unit{}});
        } else {
          grove::send(to, reply_msg<wire>{to.id, to_wire<reply>(std::move(r.reply))});
        }
        return std::move(r.reason);
      } else if constexpr (std::is_void_v<reply>) {
        handle();
        grove::send(to, reply_msg<wire>{to.id, unit{}});
        return std::nullopt;
      } else {
        grove::send(to, reply_msg<wire>{to.id, to_wire<reply>(handle())});
        return std::nullopt;
      }
    }
  }
  void reject(failure f) override { grove::send(to, reply_msg<wire>{to.id, outcome<wire>(std::move(f))}); }
};

template <class B, class Msg>
struct cast_job_of final : cast_job {
  Msg msg;
  explicit cast_job_of(Msg&& m) : msg(std::move(m)) { behaviour = &ops_for<B>; }
  void run(void* self) override { static_cast<B*>(self)->handle_cast(std::move(msg)); }
};

template <class B, class Req>
call_result_t<B, Req> do_call(grove::pid target, Req&& req, const deadline& d, failure on_expiry) {
  using req_t = std::remove_cvref_t<Req>;
  using reply = call_reply_t<B, req_t>;
  using wire = wire_t<reply>;
  using out_t = call_result_t<B, req_t>;
  call_state st = begin_call(target);
  if (st.early.code) return out_t(st.early);
  call_guard guard{st};
  grove::send(st.target, call_msg{std::make_unique<call_job_of<B, req_t>>(req_t(std::forward<Req>(req)), st.reply,
                                                                           call_info(grove::self(), d))});
  const std::uint64_t id = st.reply.id;
  const monitor_ref mon = st.monitor;
  auto on_reply = grove::when([id](const reply_msg<wire>& r) { return r.id == id; },
                              [](reply_msg<wire> r) { return out_t(from_wire<value_t<reply>>(std::move(r.value))); });
  auto on_down = grove::when([mon](const down& m) { return m.ref == mon; },
                             [&st](down m) {
                               st.got_down = true;
                               return out_t(failure::from_exit(std::move(m.reason)));
                             });
  out_t out = receive_by(d, [on_expiry] { return out_t(on_expiry); }, on_reply, on_down);
  finish_call(st);
  return out;
}

}  // namespace detail

// Starts a server of behaviour B, constructing B(args...) inside the new process (args are copied
// or moved in), linked to the caller (start_link) or not (start), and waits until the constructor
// has returned (OTP's init). Errors: errc::init_failed (the constructor threw: the failure's reason
// is the exception; or the name was taken), grove::errc::timeout (options.init_timeout passed),
// grove::errc::not_in_process. On failure nothing is left running, and a linking caller gets the error, not
// an exit signal.
template <class B, class... A>
outcome<server_ref<B>> start_link(const server_options& options, A&&... args) {
  auto f = std::make_unique<detail::server_factory_of<B, std::decay_t<A>...>>(std::forward<A>(args)...);
  outcome<grove::pid> p = detail::start_server(options, true, std::move(f));
  if (!p) return p.failure();
  return server_ref<B>(*p);
}
template <class B, class... A>
outcome<server_ref<B>> start(const server_options& options, A&&... args) {
  auto f = std::make_unique<detail::server_factory_of<B, std::decay_t<A>...>>(std::forward<A>(args)...);
  outcome<grove::pid> p = detail::start_server(options, false, std::move(f));
  if (!p) return p.failure();
  return server_ref<B>(*p);
}

// Calls the server and waits up to `timeout` (see the file comment); grove::errc::timeout when it passes.
template <class B, class Req>
call_result_t<B, std::remove_cvref_t<Req>> call(const server_ref<B>& server, Req&& request,
                                                std::chrono::milliseconds timeout = default_call_timeout) {
  const deadline d = timeout == infinity ? deadline::never() : deadline::after(timeout);
  return detail::do_call<B>(server.pid(), std::forward<Req>(request), d, grove::errc::timeout);
}
// The same with a deadline (the server sees it in call_info); errc::deadline_exceeded when it passes.
template <class B, class Req>
call_result_t<B, std::remove_cvref_t<Req>> call(const server_ref<B>& server, Req&& request, const deadline& d) {
  return detail::do_call<B>(server.pid(), std::forward<Req>(request), d, errc::deadline_exceeded);
}

// Sends a cast (no reply, never blocks, a no-op for a dead server or a missing name, as in OTP).
template <class B, class Msg>
void cast(const server_ref<B>& server, Msg&& msg) {
  using msg_t = std::remove_cvref_t<Msg>;
  static_assert(detail::handles_cast<B, msg_t>, "the behaviour has no handle_cast for this message type");
  const grove::pid p = server.pid();
  if (p.is_null()) return;
  grove::send(p, detail::cast_msg{std::make_unique<detail::cast_job_of<B, msg_t>>(msg_t(std::forward<Msg>(msg)))});
}

// Stops the server (OTP's gen_server:stop): it runs terminate(reason) and exits with `reason`; returns
// once it has exited. grove::errc::noproc if it was not alive, grove::errc::timeout if it had not exited in time
// (it still stops when it gets to the request).
template <class B>
outcome<void> stop(const server_ref<B>& server, exit_reason reason = exit_reason::normal(),
                   std::chrono::milliseconds timeout = infinity) {
  const deadline d = timeout == infinity ? deadline::never() : deadline::after(timeout);
  return detail::stop_server(server.pid(), std::move(reason), d);
}

}  // namespace grove::services

GROVE_PUBLIC_END
