// supervisor.cpp: the caller's side of supervisors: start_link and the management calls
// (grove/supervisor.hpp). The supervisor's side is supervisor_process.cpp.
//
// A call is: monitor the supervisor; send request{from, ref = the monitor's id}; receive the reply
// with that ref, or the down of that monitor (the supervisor died: errc::noproc, never a wait for
// the timeout); demonitor with flush. With a finite timeout the call runs in a short-lived relay
// process instead, which the caller waits for with after(timeout): on timeout the caller kills the
// relay, waits for its down and drops a reply it may have relayed just before (it comes before the
// down: one sender, one order). So a late reply lands in the dead relay's mailbox, never in the
// caller's (OTP 24 gets the same guarantee from process aliases, which Grove's API does not have).
#include <fmt/format.h>

#include <grove/grove.hpp>
#include <grove/supervisor.hpp>

#include "protocol.hpp"

namespace grove::supervisor {

namespace {

using internal::init_ack;
using internal::op;
using internal::relayed_reply;
using internal::reply;
using internal::request;

// infinity, or a timeout too long to represent (grove/duration.hpp): no relay, no after clause.
bool is_infinite(std::chrono::milliseconds t) { return grove::is_forever(t); }


reply call_direct(grove::pid sup, request req) {
  const bool stopping = req.what == op::stop;
  const monitor_ref mon = monitor(sup);
  const std::uint64_t ref = mon.id;
  req.from = self();
  req.ref = ref;
  send(sup, std::move(req));
  bool died = false;
  reply out =
      receive(when([ref, stopping](const reply& r) { return !stopping && r.ref == ref; }, [](reply r) { return r; }),
              when([mon](const down& d) { return d.ref == mon; },
                   [&](down d) {
                     died = true;
                     reply r;
                     r.ref = ref;
                     // stop: the down is the answer; noproc means it was not alive to stop
                     if (!stopping || d.reason.what_kind() == exit_reason::kind::noproc)
                       r.code = make_error_code(grove::errc::noproc);
                     return r;
                   }));
  if (!died) demonitor(mon, true);
  return out;
}

reply call_relayed(grove::pid sup, request req, std::chrono::milliseconds timeout, grove::pid me) {
  reply out;
  auto spawned = try_spawn(spawn_options{.monitor = true}, [sup, me, req = std::move(req)]() mutable {
    reply r = call_direct(sup, std::move(req));
    send(me, relayed_reply{self(), std::move(r)});
  });
  if (!spawned) {
    out.code = spawned.error();
    return out;
  }
  const grove::pid relay = spawned->pid;
  const monitor_ref mon = spawned->monitor;
  enum class got { answer, relay_died, timeout };
  auto is_answer = [relay](const relayed_reply& r) { return r.relay == relay; };
  got g = receive(when(is_answer,
                       [&](relayed_reply r) {
                         out = std::move(r.answer);
                         return got::answer;
                       }),
                  when([mon](const down& d) { return d.ref == mon; }, [](down) { return got::relay_died; }),
                  after(timeout, [] { return got::timeout; }));
  switch (g) {
    case got::answer:
      demonitor(mon, true);
      break;
    case got::relay_died:
      out.code = make_error_code(grove::errc::noproc);
      break;  // killed from outside
    case got::timeout:
      exit(relay, exit_reason::kill());
      receive(when([mon](const down& d) { return d.ref == mon; }, [](down) {}));
      receive(when(is_answer, [](relayed_reply) {}), after(std::chrono::milliseconds(0)));
      out = reply{};
      out.code = make_error_code(grove::errc::timeout);
      break;
  }
  return out;
}

reply call(grove::pid sup, request req, std::chrono::milliseconds timeout) {
  const grove::pid me = self();
  reply out;
  if (me.is_null()) {
    out.code = make_error_code(grove::errc::not_in_process);
  } else if (sup == me) {
    out.code = make_error_code(errc::calling_self);
  } else if (is_infinite(timeout)) {
    out = call_direct(sup, std::move(req));
  } else {
    out = call_relayed(sup, std::move(req), timeout, me);
  }
  return out;
}

// A start_error with only a code and its sentence.
start_error plain_error(std::error_code code, std::string message) {
  start_error e(code);
  e.message = std::move(message);
  return e;
}

start_result start(const flags& f, std::vector<child_spec> specs, std::chrono::milliseconds timeout) {
  if (problem p = validate(f, specs)) return plain_error(p.code, std::move(p.message));
  const grove::pid parent = self();
  if (parent.is_null())
    return plain_error(make_error_code(grove::errc::not_in_process),
                       "supervisor start failed: start_link needs a calling process (a process or a scoped_process)");
  auto spawned = try_spawn(spawn_options{.link = true, .monitor = true, .trap_exit = true},
                           [parent, f, specs = std::move(specs)]() mutable {
                             internal::run_supervisor(parent, std::move(f), std::move(specs));
                           });
  if (!spawned) return plain_error(spawned.error(), fmt::format("supervisor start failed: {}", spawned.error().message()));
  const grove::pid sup = spawned->pid;
  const monitor_ref mon = spawned->monitor;
  auto is_down = [mon](const down& d) { return d.ref == mon; };
  enum class got { ack, down, timeout };
  init_ack ack;
  exit_reason died;
  auto on_ack = when([sup](const init_ack& a) { return a.supervisor == sup; },
                     [&](init_ack a) {
                       ack = std::move(a);
                       return got::ack;
                     });
  auto on_down = when(is_down, [&](down d) {
    died = std::move(d.reason);
    return got::down;
  });
  got g = is_infinite(timeout) ? receive(on_ack, on_down)
                              : receive(on_ack, on_down, after(timeout, [] { return got::timeout; }));
  switch (g) {
    case got::ack:
      if (!ack.failure.code) {
        demonitor(mon, true);
        return sup;
      }
      // It stopped its children and is exiting, with {shutdown, {failed_to_start_child, ...}} (or
      // normal, for a taken name). Wait until it has: its exit signal comes before its down, so a
      // parent that does not trap exits dies of it here (OTP), and one that traps keeps it as a message.
      receive(when(is_down, [](down) {}));
      return std::move(ack.failure);
    case got::down:
      // It was ended from outside during its start. If we trap exits, its exit_signal is ours to drop.
      receive(when([sup](const exit_signal& e) { return e.from == sup; }, [](exit_signal) {}),
              after(std::chrono::milliseconds(0)));
      return plain_error(make_error_code(grove::errc::noproc),
                         fmt::format("supervisor start failed: the supervisor exited while starting: {}", died));
    case got::timeout:
      unlink(sup);
      exit(sup, exit_reason::kill());  // stuck in a start function: nothing else can stop it
      receive(when(is_down, [](down) {}));
      receive(when([sup](const init_ack& a) { return a.supervisor == sup; }, [](init_ack) {}),
              after(std::chrono::milliseconds(0)));
      return plain_error(make_error_code(grove::errc::timeout),
                         fmt::format("supervisor start failed: not started within {} ms", timeout.count()));
  }
  return plain_error(make_error_code(grove::errc::timeout), "unreachable");
}

}  // namespace

pid start_link(const flags& f, std::vector<child_spec> specs, std::chrono::milliseconds timeout) {
  start_result r = start(f, std::move(specs), timeout);
  if (r) return *r;
  start_error e = r.error();
  if (e.code.category() == grove_category()) throw grove::error(static_cast<grove::errc>(e.code.value()), e.message);
  throw error(std::move(e));
}

start_result try_start_link(const flags& f, std::vector<child_spec> specs, std::chrono::milliseconds timeout) {
  return start(f, std::move(specs), timeout);
}

child_spec supervisor_child(std::string id, flags f, std::vector<child_spec> specs) {
  child_spec spec;
  spec.id = std::move(id);
  spec.type = child_type::supervisor;
  // A nested supervisor that fails to start: its own exit reason, {shutdown, {failed_to_start_child,
  // Id, Reason}}, is this child's reason, as in OTP.
  spec.start = [f = std::move(f), specs = std::move(specs)]() -> start_return {
    start_result r = try_start_link(f, specs);
    if (r) return *r;
    const start_error e = r.error();
    if (e.code == errc::start_failed) return internal::failed_to_start_reason(e.child_id, e.reason);
    if (e.reason.is_normal()) return e.code;
    return e.reason;
  };
  return spec;
}

namespace {

// The pid a start call answered with, or its error.
start_result pid_or_error(const reply& x) {
  if (!x.code) return x.pid;
  if (x.failure.code) return x.failure;
  return start_error(x.code);
}

}  // namespace

start_result start_child(pid sup, child_spec spec, std::chrono::milliseconds timeout) {
  return pid_or_error(call(sup, request{.what = op::start_child, .spec = std::move(spec)}, timeout));
}

start_result start_child(pid sup, std::any args, std::chrono::milliseconds timeout) {
  return pid_or_error(call(sup, request{.what = op::start_dynamic, .args = std::move(args)}, timeout));
}

std::error_code terminate_child(pid sup, std::string_view id, std::chrono::milliseconds timeout) {
  return call(sup, request{.what = op::terminate_id, .id = std::string(id)}, timeout).code;
}

std::error_code terminate_child(pid sup, pid child, std::chrono::milliseconds timeout) {
  return call(sup, request{.what = op::terminate_pid, .child = child}, timeout).code;
}

start_result restart_child(pid sup, std::string_view id, std::chrono::milliseconds timeout) {
  return pid_or_error(call(sup, request{.what = op::restart_child, .id = std::string(id)}, timeout));
}

std::error_code delete_child(pid sup, std::string_view id, std::chrono::milliseconds timeout) {
  return call(sup, request{.what = op::delete_child, .id = std::string(id)}, timeout).code;
}

result<std::vector<child_info>> which_children(pid sup, std::chrono::milliseconds timeout) {
  reply x = call(sup, request{.what = op::which_children}, timeout);
  if (x.code) return x.code;
  return std::move(x.children);
}

result<child_counts> count_children(pid sup, std::chrono::milliseconds timeout) {
  reply x = call(sup, request{.what = op::count_children}, timeout);
  if (x.code) return x.code;
  return x.counts;
}

std::error_code stop(pid sup, exit_reason reason, std::chrono::milliseconds timeout) {
  return call(sup, request{.what = op::stop, .reason = std::move(reason)}, timeout).code;
}

const char* to_string(strategy e) noexcept {
  switch (e) {
    case strategy::one_for_one: return "one_for_one";
    case strategy::one_for_all: return "one_for_all";
    case strategy::rest_for_one: return "rest_for_one";
    case strategy::simple_one_for_one: return "simple_one_for_one";
  }
  return "unknown";
}

const char* to_string(auto_shutdown e) noexcept {
  switch (e) {
    case auto_shutdown::never: return "never";
    case auto_shutdown::any_significant: return "any_significant";
    case auto_shutdown::all_significant: return "all_significant";
  }
  return "unknown";
}

const char* to_string(child_state e) noexcept {
  switch (e) {
    case child_state::running: return "running";
    case child_state::restarting: return "restarting";
    case child_state::stopped: return "stopped";
  }
  return "unknown";
}

}  // namespace grove::supervisor
