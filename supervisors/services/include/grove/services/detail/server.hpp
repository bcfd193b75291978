// grove/services/detail/server.hpp: how server.hpp's templates reach the server loop
// (src/server.cpp). Internal; not part of the API.
//
// A request travels as one call_msg (or cast_msg) holding a job: a small object made by the caller's
// template code, which knows the behaviour type B and the request type, and run by the server loop,
// which knows neither (it sees a void* to its B and a table of functions, behaviour_ops). So the loop
// is compiled once, in server.cpp, and a request a behaviour cannot handle is a compile error at the
// call site, not a message that waits for ever.
#pragma once

#include <chrono>
#include <concepts>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include <grove/exit_reason.hpp>
#include <grove/link.hpp>
#include <grove/message.hpp>
#include <grove/pid.hpp>

#include <grove/services/deadline.hpp>
#include <grove/services/detail/common.hpp>
#include <grove/services/outcome.hpp>

#include <grove/detail/visibility.hpp>
GROVE_PUBLIC_BEGIN

namespace grove::services {

class call_info;
template <class R>
class reply_to;
template <class R>
struct stop_reply;
struct server_options;

namespace detail {

// What the loop knows about a behaviour. Its address identifies the behaviour type.
struct behaviour_ops {
  void (*destroy)(void* self) noexcept;
  void (*info)(void* self, any_message&& m);             // null: other messages are dropped
  void (*terminate)(void* self, const exit_reason& why);  // null: no terminate hook
};

template <class B>
concept has_info = requires(B& b, any_message&& m) { b.handle_info(std::move(m)); };
template <class B>
concept has_terminate = requires(B& b, const exit_reason& r) { b.terminate(r); };

template <class B>
inline constexpr behaviour_ops ops_for{
    [](void* self) noexcept { delete static_cast<B*>(self); },
    has_info<B> ? +[](void* self, any_message&& m) {
      if constexpr (has_info<B>) static_cast<B*>(self)->handle_info(std::move(m));
    } : nullptr,
    has_terminate<B> ? +[](void* self, const exit_reason& why) {
      if constexpr (has_terminate<B>) static_cast<B*>(self)->terminate(why);
    } : nullptr,
};

// A running behaviour: owns the B (destroyed with it).
class server_instance {
 public:
  server_instance() = default;
  server_instance(void* self, const behaviour_ops* ops) noexcept : self_(self), ops_(ops) {}
  server_instance(server_instance&& o) noexcept
      : self_(std::exchange(o.self_, nullptr)), ops_(std::exchange(o.ops_, nullptr)) {}
  server_instance& operator=(server_instance&& o) noexcept {
    std::swap(self_, o.self_);
    std::swap(ops_, o.ops_);
    return *this;
  }
  ~server_instance() {
    if (self_) ops_->destroy(self_);
  }
  void* self() const noexcept { return self_; }
  const behaviour_ops* ops() const noexcept { return ops_; }

 private:
  void* self_ = nullptr;
  const behaviour_ops* ops_ = nullptr;
};

// Makes the behaviour inside the new server process (its constructor is OTP's init).
struct server_factory {
  virtual ~server_factory() = default;
  virtual server_instance make() = 0;
};
template <class B, class... A>
struct server_factory_of final : server_factory {
  std::tuple<A...> args;
  template <class... U>
  explicit server_factory_of(U&&... u) : args(std::forward<U>(u)...) {}
  server_instance make() override {
    B* b = std::apply([](A&... a) { return new B(std::move(a)...); }, args);
    return server_instance(b, &ops_for<B>);
  }
};

struct call_job {
  const behaviour_ops* behaviour = nullptr;  // the B the caller expects
  virtual ~call_job() = default;
  // Handles the request and replies (or hands on a reply_to). A reason: the handler asked to stop
  // after its reply (stop_reply), and the loop stops with it.
  virtual std::optional<exit_reason> run(void* self) = 0;
  virtual void reject(failure f) = 0;    // replies f instead
};
struct cast_job {
  const behaviour_ops* behaviour = nullptr;
  virtual ~cast_job() = default;
  virtual void run(void* self) = 0;
};
template <class B, class Req>
struct call_job_of;  // server.hpp

struct call_msg {
  std::unique_ptr<call_job> job;
};
struct cast_msg {
  std::unique_ptr<cast_job> job;
};

// Which handle_call form B has for Req (server.hpp lists the three), and what it replies.
template <class Req>
concept names_reply_type = requires { typename Req::reply_type; };
template <class B, class Req>
concept deferred_call = names_reply_type<Req> && requires(B& b, Req&& r, reply_to<typename Req::reply_type>&& t) {
  b.handle_call(std::move(r), std::move(t));
};
template <class B, class Req>
concept info_call = requires(B& b, Req&& r, const call_info& i) { b.handle_call(std::move(r), i); };
template <class B, class Req>
concept plain_call = requires(B& b, Req&& r) { b.handle_call(std::move(r)); };
template <class B, class Req>
concept handles_call = deferred_call<B, Req> || info_call<B, Req> || plain_call<B, Req>;
template <class B, class Msg>
concept handles_cast = requires(B& b, Msg&& m) { b.handle_cast(std::move(m)); };

// A handler's return type, with stop_reply<R> read as R (what the caller gets).
template <class R>
struct unstop {
  using type = R;
  static constexpr bool stops = false;
};
template <class R>
struct unstop<stop_reply<R>> {
  using type = R;
  static constexpr bool stops = true;
};

template <class B, class Req>
struct call_reply {
  static_assert(handles_call<B, Req>,
                "the behaviour has no handle_call for this request type: add R handle_call(Req), "
                "R handle_call(Req, const call_info&), or void handle_call(Req, reply_to<Req::reply_type>)");
};
template <class B, class Req>
  requires deferred_call<B, Req>
struct call_reply<B, Req> {
  using type = typename Req::reply_type;
};
template <class B, class Req>
  requires(!deferred_call<B, Req> && info_call<B, Req>)
struct call_reply<B, Req> {
  using handler = decltype(std::declval<B&>().handle_call(std::declval<Req&&>(), std::declval<const call_info&>()));
  using type = typename unstop<handler>::type;
};
template <class B, class Req>
  requires(!deferred_call<B, Req> && !info_call<B, Req> && plain_call<B, Req>)
struct call_reply<B, Req> {
  using handler = decltype(std::declval<B&>().handle_call(std::declval<Req&&>()));
  using type = typename unstop<handler>::type;
};
template <class B, class Req>
using call_reply_t = typename call_reply<B, std::remove_cvref_t<Req>>::type;

// The caller's side of one call (server.cpp): checks, a monitor on the target, an alias for the reply.
struct call_state {
  grove::pid target;
  monitor_ref monitor;
  alias reply;
  failure early;  // set when the call cannot start (not_in_process, noproc, call_to_self)
  bool got_down = false;
};
call_state begin_call(grove::pid target);
// After the receive: unalias, and demonitor with flush unless the down was received (acts on
// signals, so it may end a process that was killed meanwhile: never call it from a destructor).
void finish_call(call_state& st);
// The same without the flush, for an unwinding (call_guard).
void abandon_call(call_state& st) noexcept;
struct call_guard {
  call_state& st;
  ~call_guard() { abandon_call(st); }  // a no-op once finish_call has run
};

outcome<grove::pid> start_server(const server_options& o, bool link, std::unique_ptr<server_factory> f);
outcome<void> stop_server(grove::pid target, exit_reason reason, const deadline& d);

}  // namespace detail
}  // namespace grove::services

GROVE_PUBLIC_END
