// server.cpp: servers (grove/services/server.hpp): the caller's side of call, the start handshake,
// stop, and the server loop. The map of supervisors/services/ starts here.
//
// ## What a server is
// An ordinary Grove process that owns one behaviour object (on the heap: the parked process keeps
// only the loop's frames) and serves requests one at a time. Requests arrive as call_msg / cast_msg
// holding a job made by the caller's template code (detail/server.hpp), so the loop below is compiled
// once and knows no request types. Only the public runtime API is used (runtime/DESIGN.md §6, principle 1).
//
// ## call, in numbered steps (the caller's side: begin_call, do_call in server.hpp, finish_call)
// 1. Checks: a calling process (else not_in_process); a live target (else noproc, at once); not
//    ourselves (else call_to_self: we would wait for our own reply).
// 2. monitor(target), then make_alias(). The monitor answers "the server died" (down with its reason,
//    or noproc at once if it died between the check and the monitor); the alias is where the reply
//    goes. monitor before send: a server that dies after the send is seen.
// 3. send(target, call_msg{job}); the job carries the alias and call_info{caller, deadline}.
// 4. receive the reply_msg with our alias's id, or the monitor's down, or give up at the deadline.
// 5. unalias (a reply still on its way is now dropped by the runtime, never delivered: OTP 24's
//    guarantee) and demonitor with flush (a down that raced the reply is removed), unless the down
//    was what we received.
// If the caller is killed in step 4, call_guard undoes step 2 without flushing (a flush acts on
// signals, which must not throw during an unwinding); the runtime drops both with the process anyway.
//
// ## The server loop (serve)
// One selective receive per request, in this order: a call (run the job, or reject it with
// bad_request if it was made for another behaviour), a cast, a stop request, an exit signal from the
// parent (only a trapping server receives these as messages), anything else (handle_info, or
// dropped). After a stop request, the parent's exit signal or a call whose handler returned
// stop_reply (its reply already sent): terminate(reason), then exit(reason).
// A std::exception from a handler: terminate(exception reason), then rethrown, so the runtime ends
// the process with exit_reason::exception(what) — the reason callers, links and supervisors see.
// A handler that calls grove::exit(reason): terminate(reason), then the exit goes on (OTP catches
// exit/1 in callbacks). Kills and other exit signals pass through untouched (no terminate: OTP does
// not call terminate for a kill either); the destructor of the behaviour always runs.
//
// ## Start (start_server / run_server)
// The starter makes an alias for the acknowledgement and spawns the server (linked for start_link,
// monitored in both cases). The server registers its name (if any) first, as OTP does, then
// constructs the behaviour (its init), then acks. If either fails, the server unlinks from its
// parent before acking the failure and exiting, so the parent gets an error and not an exit signal,
// and the starter waits for the down before returning: nothing is left running and the name is free.
//
// ## Rejected alternatives
// - One message type per request type, matched by the loop: the loop would have to know every
//   request type of B (a type list in the behaviour) and a request to the wrong server would wait for
//   its timeout. The job design keeps behaviours plain classes and answers mismatches at once.
// - std::variant of requests: the same type list, plus a visit per message.
// - A relay process per call with a timeout (as supervisors/src/supervisor.cpp does): aliases give
//   the same "no late reply" guarantee without a process per call.
// - Replies by pid with a ref to match, plus a flush after a timeout: a reply that arrives after the
//   flush would still land in the mailbox; only an alias drops it at the door.
#include <grove/services/server.hpp>

#include <optional>
#include <typeinfo>

#include <grove/grove.hpp>

namespace grove::services::detail {

namespace {

struct init_ack {
  std::uint64_t id = 0;
  failure why;  // no code: started
};

struct stop_msg {
  exit_reason reason;
};

[[noreturn]] void fail_init(pid parent, const alias& ack, failure why) {
  if (!parent.is_null()) unlink(parent);  // before the ack: the parent gets the error, not our exit
  exit_reason reason = why.reason.is_normal() ? exit_reason("init_failed") : why.reason;
  grove::send(ack, init_ack{ack.id, std::move(why)});
  grove::exit(std::move(reason));
}

[[noreturn]] void serve(server_instance& inst, pid parent) {
  const behaviour_ops* ops = inst.ops();
  void* self = inst.self();
  bool terminated = false;  // terminate has run (it runs at most once)
  try {
    for (;;) {
      std::optional<exit_reason> stop;
      grove::receive(
          [&](call_msg m) {
            if (m.job->behaviour != ops) {
              m.job->reject(failure(errc::bad_request));
            } else {
              stop = m.job->run(self);  // a stop_reply: replied, now stop
            }
          },
          [&](cast_msg m) {
            if (m.job->behaviour == ops) m.job->run(self);  // another behaviour's cast: dropped
          },
          [&](stop_msg m) { stop = std::move(m.reason); },
          grove::when([parent](const exit_signal& e) { return !parent.is_null() && e.from == parent; },
                      [&](exit_signal e) { stop = std::move(e.reason); }),
          [&](any_message m) {
            if (ops->info) ops->info(self, std::move(m));
          });
      if (stop) {
        if (ops->terminate) {
          terminated = true;
          ops->terminate(self, *stop);
        }
        grove::exit(std::move(*stop));
      }
    }
  } catch (const std::exception& e) {
    if (ops->terminate) ops->terminate(self, exit_reason::exception(e.what(), typeid(e).name()));
    throw;  // the runtime ends the process with exit_reason::exception(what)
  } catch (const grove::exit_unwind& e) {
    // A handler (or terminate after a stop) ended the server with grove::exit(reason): OTP catches
    // exit/1 in callbacks and runs terminate(Reason). Not for an exit signal that kills it, nor for
    // the exit this loop raises itself after terminate has run.
    if (e.self && !terminated && ops->terminate) {
      terminated = true;
      ops->terminate(self, e.reason);
    }
    throw;
  }
}

void run_server(pid parent, alias ack, const std::string& name, std::unique_ptr<server_factory> factory) {
  if (!name.empty()) {
    if (std::error_code ec = try_register_name(name, grove::self())) {
      fail_init(parent, ack,
                failure(make_error_code(errc::init_failed), exit_reason::user<pid>("already_started", whereis(name))));
    }
  }
  server_instance inst;
  try {
    inst = factory->make();
  } catch (const std::exception& e) {
    fail_init(parent, ack, failure(make_error_code(errc::init_failed), exit_reason::exception(e.what(), typeid(e).name())));
  }
  factory.reset();  // the arguments are used up
  grove::send(ack, init_ack{ack.id, {}});
  serve(inst, parent);
}

}  // namespace

call_state begin_call(pid target) {
  call_state st;
  const pid me = grove::self();
  if (me.is_null()) {
    st.early = grove::errc::not_in_process;
  } else if (target.is_null() || !is_alive(target)) {
    st.early = grove::errc::noproc;
  } else if (target == me) {
    st.early = errc::call_to_self;
  } else {
    st.target = target;
    st.monitor = monitor(target);  // 2. before the send (a target dead by now: down{noproc} at once)
    st.reply = make_alias();
  }
  return st;
}

void finish_call(call_state& st) {
  if (!st.reply) return;
  const alias a = std::exchange(st.reply, alias{});
  unalias(a);  // 5.
  if (!st.got_down) demonitor(st.monitor, true);
}

void abandon_call(call_state& st) noexcept {
  if (!st.reply) return;
  const alias a = std::exchange(st.reply, alias{});
  try {
    unalias(a);
    if (!st.got_down) demonitor(st.monitor, false);  // unwinding: no flush (see the file comment)
  } catch (const std::exception&) {
    // a scoped_process that has exited: its alias and monitor went with it
  }
}

outcome<pid> start_server(const server_options& o, bool link, std::unique_ptr<server_factory> f) {
  const pid me = grove::self();
  if (me.is_null()) return grove::errc::not_in_process;
  const alias ack = make_alias();
  const pid parent = link ? me : pid();
  auto spawned = try_spawn(
      spawn_options{.link = link, .monitor = true, .trap_exit = o.trap_exit, .max_heap_bytes = o.max_heap_bytes},
      [parent, ack, name = o.name, f = std::move(f)]() mutable { run_server(parent, ack, name, std::move(f)); });
  if (!spawned) {
    unalias(ack);
    return failure(spawned.error());
  }
  const pid p = spawned->pid;
  const monitor_ref mon = spawned->monitor;
  const deadline d = o.init_timeout == infinity ? deadline::never() : deadline::after(o.init_timeout);
  enum class got { started, failed, died, timed_out };
  failure why;
  auto on_ack = grove::when([id = ack.id](const init_ack& a) { return a.id == id; },
                            [&why](init_ack a) {
                              why = std::move(a.why);
                              return why.code ? got::failed : got::started;
                            });
  auto on_down = grove::when([mon](const down& m) { return m.ref == mon; },
                             [&why](down m) {
                               why = failure(make_error_code(errc::init_failed), std::move(m.reason));
                               return got::died;
                             });
  const got g = receive_by(d, [] { return got::timed_out; }, on_ack, on_down);
  unalias(ack);
  auto wait_down = grove::when([mon](const down& m) { return m.ref == mon; }, [](down) {});
  switch (g) {
    case got::started: demonitor(mon, true); return p;
    case got::failed: grove::receive(wait_down); return why;  // it unlinked and is exiting
    case got::died: return why;
    case got::timed_out:
      if (link) unlink(p);
      grove::exit(p, exit_reason::kill());
      grove::receive(wait_down);
      return grove::errc::timeout;
  }
  return grove::errc::timeout;  // not reached
}

outcome<void> stop_server(pid target, exit_reason reason, const deadline& d) {
  const pid me = grove::self();
  if (me.is_null()) return grove::errc::not_in_process;
  if (target.is_null()) return grove::errc::noproc;
  if (target == me) return errc::call_to_self;
  const monitor_ref mon = monitor(target);
  grove::send(target, stop_msg{std::move(reason)});
  enum class got { stopped, was_dead, timed_out };
  auto on_down = grove::when([mon](const down& m) { return m.ref == mon; },
                             [](down m) { return m.reason.what_kind() == exit_reason::kind::noproc ? got::was_dead : got::stopped; });
  const got g = receive_by(d, [] { return got::timed_out; }, on_down);
  if (g == got::timed_out) {
    demonitor(mon, true);
    return grove::errc::timeout;
  }
  if (g == got::was_dead) return grove::errc::noproc;
  return {};
}

}  // namespace grove::services::detail
