// supervisor_process.cpp: what a supervisor process does. The map of supervisors/ starts here.
//
// ## What it is
// A supervisor is an ordinary Grove process that traps exits (spawned with trap_exit, linked to the
// process that called start_link: its parent). Its state (this class) belongs to it alone. Other
// processes change it only by sending it messages: management requests (protocol.hpp), exit signals
// from its children and its parent, and the restart_due messages it sends itself. It uses the public
// runtime API and nothing else (runtime/DESIGN.md §6, principle 1).
//
// ## State and invariants
// - children_ holds the children in start order (static children: spec order, then start_child
//   appends; simple_one_for_one: dynamic children in start order). A restarted child keeps its place.
// - A child is running (pid set, in by_pid_, linked to us), restarting (no pid; a restart_due is on
//   its way: a backoff timer, or a retry in our own mailbox, carrying the child's current
//   `generation`), or stopped (no pid; terminated by request, or a transient child that ended).
// - by_pid_ maps exactly the running children; by_id_ every static child; by_key_ every child.
// - Each running child's end is handled exactly once: either its exit_signal reaches serve() (the
//   child crashed or ended), or stop_child() consumes its exit_signal and down while stopping it
//   (shutdown.cpp); both clear the pid first. An exit_signal from a pid we no longer supervise is
//   stale and ignored, as OTP does.
//
// ## The protocol, in numbered steps
// 1. Start (run): register the name if any (taken: init_ack already_started with the holder's pid,
//    exit normal); start each spec in order (start()). If one fails, stop the started ones in
//    reverse order, send the parent init_ack with the start_error (the child's id and reason) and
//    exit with {shutdown, {failed_to_start_child, Id, Reason}}, as OTP 25 does: the linked parent
//    gets that exit signal too (it dies of it unless it traps exits), and nothing is left running.
//    Otherwise send init_ack and serve.
// 2. A child exits (child_exited): by its restart type, OTP's do_restart: permanent → report
//    child_crashed and restart; transient → the same unless the reason is normal or shutdown-like
//    (then stopped, or forgotten if dynamic); temporary → report if abnormal and forget. A significant
//    child that is not restarted may trigger auto_shutdown (step 6).
// 3. Restart (restart): count the restart in the intensity window (restart_intensity.hpp, O(1)
//    amortised) and report child_crashed with that count; over the limit → give up (step 5). With a
//    backoff policy the restart is delayed: the group's other members are stopped now, the child
//    shows `restarting`, a send_after timer brings restart_due later. Otherwise restart the group now.
// 4. Restart the group (restart_group): one_for_one and simple_one_for_one: the child alone;
//    rest_for_one: it and the children after it; one_for_all: every child. Members still running are
//    stopped in reverse start order, temporary members are forgotten (OTP's terminate_children), and
//    the members are started in start order, one child_restarted report each. If a start fails:
//    restart_failed report, that child and the unstarted rest show `restarting`, and a restart_due
//    with count = true is sent (after the backoff delay, if any; at once otherwise, through our own
//    mailbox so that calls and exits queued meanwhile are served first: OTP's try_again_restart).
//    That retry counts toward the intensity like any restart, so a child that cannot start makes
//    its supervisor give up.
// 5. Give up (give_up): report gave_up, dump the flight recorder if one records (grove/trace.hpp),
//    stop every child in reverse start order, exit `shutdown`.
//    Our own supervisor sees a child exit with `shutdown` and applies *its* restart rules: escalation.
// 6. Stop (shut_down): on the parent's exit signal (any reason, even normal: OTP's gen_server), on an
//    exit signal from the null pid that is not normal (runtime::stop, or a foreign thread), on a stop
//    request, on auto_shutdown, on giving up. Children stop in reverse start order, each with its
//    shutdown policy (shutdown.cpp); a simple_one_for_one's all at once. Then exit with the reason.
// A spawn that fails with not_running means runtime::stop is under way: the supervisor stops its
// children and exits `shutdown` without reporting restart failures.
//
// ## Rejected alternatives
// - Management calls that lock the supervisor's state from the caller's thread: faster, but then the
//   state has two owners and every restart path needs the lock (principle 4: own your state).
// - OTP's list of restart times, walked on every restart: O(restarts in the window); the ring buffer
//   of restart_intensity.hpp is O(1) amortised with the same answers.
// - A receive per expected message during a group restart (wait for child A's down, then B's, ...):
//   kept for ordered stops (OTP's order is the contract), but a simple_one_for_one's children are
//   stopped with one receive loop over all of them (shutdown.cpp), O(n) instead of O(n²).
// - Backoff by sleeping in the supervisor: it would stop serving calls and other children's exits;
//   a send_after timer per delayed child keeps the supervisor responsive and costs O(1).
#include "supervisor_process.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <exception>
#include <typeinfo>

#include <grove/trace.hpp>

#include "shutdown.hpp"

namespace grove::supervisor::internal {

namespace {

std::uint64_t splitmix64(std::uint64_t& state) noexcept {
  std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}


// A trace annotation (grove/trace.hpp) for a start or a report, formatted only while recorded.
template <typename... Args>
void annotate_trace(fmt::format_string<Args...> format, Args&&... args) noexcept {
  if (!grove::trace::is_recording(grove::trace::event_kind::annotation)) return;
  try {
    grove::trace::annotate(fmt::format(format, std::forward<Args>(args)...));
  } catch (...) {
    // Out of memory for the text: the trace goes without it.
  }
}

}  // namespace

supervisor_process::supervisor_process(pid parent, flags f)
    : self_(grove::self()),
      parent_(parent),
      flags_(std::move(f)),
      simple_(flags_.strategy == strategy::simple_one_for_one),
      intensity_(flags_.intensity, flags_.period),
      rng_state_(self_.bits() ^ static_cast<std::uint64_t>(clock::now().time_since_epoch().count())) {}

// ---- 1. start ----

exit_reason failed_to_start_reason(const std::string& id, const exit_reason& reason) {
  return exit_reason::user<failed_to_start_child>("shutdown", failed_to_start_child{id, reason},
                                                  fmt::format("failed_to_start_child '{}': {}", id, reason));
}

void supervisor_process::run(std::vector<child_spec> specs) {
  if (!flags_.name.empty()) {
    if (std::error_code ec = try_register_name(flags_.name, self_)) {
      start_error e;
      e.code = make_error_code(errc::already_started);
      e.pid = whereis(flags_.name);
      e.message = fmt::format("supervisor start failed: the name '{}' cannot be registered: {}", flags_.name, ec.message());
      fail_start(std::move(e), exit_reason::normal());  // OTP: {error, {already_started, Pid}}, exit normal
    }
    register_metrics();
  }
  if (simple_) {
    template_ = std::make_shared<const child_spec>(std::move(specs.front()));
  } else {
    const std::size_t n = specs.size();
    for (std::size_t i = 0; i < n; ++i) {
      child_it c = add_child(std::make_shared<const child_spec>(std::move(specs[i])), {});
      start_outcome out = start(c);
      if (!out.why.empty()) {
        report(report_kind::start_failed, *c, {}, out.reason, out.why);
        start_error e = failed_start(*c, out);
        e.message = fmt::format("supervisor start failed: child '{}' (spec {} of {}): {}", c->spec->id, i + 1, n, out.why);
        stop_all();
        exit_reason exit_with = failed_to_start_reason(c->spec->id, out.reason);
        fail_start(std::move(e), std::move(exit_with));
      }
    }
  }
  send(parent_, init_ack{self_, {}});
  serve();
  grove::exit(exit_reason::normal());  // not reached: serve() ends only by exiting
}

void supervisor_process::fail_start(start_error e, exit_reason exit_with) {
  send(parent_, init_ack{self_, std::move(e)});  // before our exit: the parent finds the details first
  grove::exit(std::move(exit_with));
}

start_error supervisor_process::failed_start(const child& c, const start_outcome& out) const {
  start_error e;
  e.code = make_error_code(errc::start_failed);
  e.child_id = c.spec->id;
  e.reason = out.reason;
  e.message = fmt::format("child '{}' failed to start: {}", c.spec->id, out.why);
  return e;
}

// ---- serving ----

void supervisor_process::serve() {
  for (;;) {
    receive([this](exit_signal e) { on_exit_signal(std::move(e)); }, [this](request r) { on_request(std::move(r)); },
            [this](restart_due t) { on_restart_due(t); },
            [](any_message) {});  // anything else is not for us: dropped (OTP logs it)
  }
}

void supervisor_process::on_exit_signal(exit_signal e) {
  if (e.from == parent_) shut_down(std::move(e.reason));  // 6.
  if (e.from.is_null()) {
    if (!e.reason.is_normal()) shut_down(std::move(e.reason));
    return;
  }
  auto it = by_pid_.find(e.from);
  if (it == by_pid_.end()) return;  // stale: a child we stopped or forgot
  child_exited(it->second, std::move(e.reason));
}

void supervisor_process::on_restart_due(const restart_due& t) {
  auto it = by_key_.find(t.key);
  if (it == by_key_.end()) return;
  child_it c = it->second;
  if (c->state != child_state::restarting || c->generation != t.generation) return;  // stale
  c->timer = {};
  if (t.count && !intensity_.add(clock::now())) give_up(c, {});
  restart_group(c);
}

// ---- children ----

supervisor_process::child_it supervisor_process::add_child(std::shared_ptr<const child_spec> spec, std::any args) {
  children_.push_back(child{});
  child_it c = std::prev(children_.end());
  c->key = next_key_++;
  c->spec = std::move(spec);
  c->args = std::move(args);
  by_key_.emplace(c->key, c);
  if (!simple_) by_id_.emplace(c->spec->id, c);
  return c;
}

void supervisor_process::forget(child_it c) {
  disarm(*c);
  if (c->state == child_state::running) by_pid_.erase(c->pid);
  by_key_.erase(c->key);
  if (!simple_) by_id_.erase(c->spec->id);
  children_.erase(c);
}

supervisor_process::start_outcome supervisor_process::start(child_it c) {
  const child_spec& spec = *c->spec;
  if (c->args.has_value() && !spec.start_with)
    return {"start_child passed arguments, but the template has no start_with", exit_reason("bad_start_args")};
  start_return r = exit_reason("no_start_function");
  try {
    if (spec.start_with && (c->args.has_value() || !spec.start)) {
      r = spec.start_with(c->args);
    } else {
      r = spec.start();
    }
  } catch (const std::exception& e) {
    return {fmt::format("start function threw: {}", e.what()), exit_reason::exception(e.what(), typeid(e).name())};
  } catch (...) {
    rethrow_if_exiting();  // our own exit unwinding through the start function: let it go on
    return {"start function threw something that is not a std::exception", exit_reason::exception("unknown exception")};
  }
  if (!r.started()) {
    const std::error_code* ec = r.reason().payload<std::error_code>();
    const bool stopping = ec && *ec == make_error_code(grove::errc::not_running);
    if (r.reason().is_normal()) return {"start function returned no pid", exit_reason("no_pid")};
    return {fmt::format("start function returned an error: {}", r.reason()), r.reason(), stopping};
  }
  const pid p = r.pid();
  if (p == self_ || by_pid_.count(p))
    return {fmt::format("start function returned {}, which is already supervised here", p), exit_reason("already_supervised")};
  link(p);  // a no-op when the start function linked, as it should (child_spec.hpp)
  c->pid = p;
  c->state = child_state::running;
  c->started_at = clock::now();
  by_pid_.emplace(p, c);
  annotate_trace("supervisor: started {} {}", c->spec->id, p);  // OTP's progress report
  return {};
}

// 2.
void supervisor_process::child_exited(child_it c, exit_reason why) {
  const pid old = c->pid;
  by_pid_.erase(old);
  c->pid = {};
  c->state = child_state::stopped;
  const child_spec& spec = *c->spec;
  if (spec.backoff && clock::now() - c->started_at >= spec.backoff->reset_after) c->backoff_count = 0;
  const bool expected = is_normal_or_shutdown(why);
  if (spec.restart == restart_type::permanent || (spec.restart == restart_type::transient && !expected)) {
    c->last_exit = std::move(why);
    restart(c, old);
    return;
  }
  // Not restarted: a transient child that ended normally, or a temporary child.
  if (!expected) report(report_kind::child_crashed, *c, old, why);
  const bool ends_us = spec.significant && auto_shutdown_due();
  if (ends_us) report(report_kind::auto_shutdown, *c, old, why);
  if (spec.restart == restart_type::temporary || simple_) forget(c);
  if (ends_us) shut_down(exit_reason::shutdown());
}

// 3.
void supervisor_process::restart(child_it c, pid crashed) {
  const bool within = intensity_.add(clock::now());
  counters_->restarts.fetch_add(1, std::memory_order_relaxed);  // a snapshot for the metrics page; only this process adds
  report(report_kind::child_crashed, *c, crashed, c->last_exit);  // after add: its count includes this restart
  if (!within) give_up(c, crashed);
  clock::duration delay = next_delay(*c);
  if (delay <= clock::duration::zero()) {
    restart_group(c);
    return;
  }
  if (flags_.strategy == strategy::one_for_all || flags_.strategy == strategy::rest_for_one) {
    std::vector<child_it> group = group_of(c);
    for (auto m = group.rbegin(); m != group.rend(); ++m)
      if (*m != c) stop_child(**m);
    for (child_it m : group) {
      if (m == c) continue;
      if (m->spec->restart == restart_type::temporary) {
        forget(m);
      } else {
        m->state = child_state::restarting;  // stopped and disarmed above; started with c's group later
      }
    }
  }
  arm(*c, delay, false);
}

// 4.
void supervisor_process::restart_group(child_it trigger) {
  if (flags_.strategy == strategy::one_for_one || simple_) {  // the common case: no group to build
    restart_member(trigger, trigger);
    return;
  }
  std::vector<child_it> group = group_of(trigger);
  for (auto m = group.rbegin(); m != group.rend(); ++m)
    if (*m != trigger && (*m)->state == child_state::running) stop_child(**m);
  std::erase_if(group, [&](child_it m) {
    if (m == trigger || m->spec->restart != restart_type::temporary) return false;
    forget(m);
    return true;
  });
  for (std::size_t i = 0; i < group.size(); ++i) {
    if (group[i]->state == child_state::running) continue;
    if (restart_member(group[i], trigger)) continue;
    for (std::size_t j = i + 1; j < group.size(); ++j) {
      disarm(*group[j]);
      group[j]->state = child_state::restarting;  // started again with group[i]'s retry
    }
    return;
  }
}

bool supervisor_process::restart_member(child_it m, child_it trigger) {
  disarm(*m);
  start_outcome out = start(m);
  if (out.runtime_stopping) shut_down(exit_reason::shutdown());
  if (!out.why.empty()) {
    m->state = child_state::restarting;
    report(report_kind::restart_failed, *m, {}, m->last_exit, out.why);
    retry_later(m);
    return false;
  }
  report(report_kind::child_restarted, *m, m->pid, trigger->last_exit);
  return true;
}

void supervisor_process::retry_later(child_it c) {
  // OTP's try_again_restart: through our own mailbox, so what is queued meanwhile is served first.
  arm(*c, next_delay(*c), true);
}

void supervisor_process::arm(child& c, clock::duration delay, bool count) {
  disarm(c);
  c.state = child_state::restarting;
  restart_due due{c.key, ++c.generation, count};
  if (delay <= clock::duration::zero()) {
    send(self_, due);
  } else {
    c.timer = send_after(self_, due, delay);
  }
}

void supervisor_process::disarm(child& c) {
  if (c.timer) cancel_timer(c.timer);
  c.timer = {};
  ++c.generation;  // a retry already in the mailbox is now stale
}

clock::duration supervisor_process::next_delay(child& c) {
  if (!c.spec->backoff) return clock::duration::zero();
  const double u = static_cast<double>(splitmix64(rng_state_) >> 11) * 0x1.0p-53 * 2.0 - 1.0;  // uniform in [-1, 1)
  return std::chrono::duration_cast<clock::duration>(c.spec->backoff->delay(++c.backoff_count, u));
}

std::vector<supervisor_process::child_it> supervisor_process::group_of(child_it c) {
  std::vector<child_it> group;
  switch (flags_.strategy) {
    case strategy::one_for_one:
    case strategy::simple_one_for_one:
      group.push_back(c);
      break;
    case strategy::rest_for_one:
      for (child_it m = c; m != children_.end(); ++m) group.push_back(m);
      break;
    case strategy::one_for_all:
      for (child_it m = children_.begin(); m != children_.end(); ++m) group.push_back(m);
      break;
  }
  return group;
}

// ---- stopping ----

void supervisor_process::stop_child(child& c) {
  if (c.state == child_state::restarting) disarm(c);
  if (c.state != child_state::running) {
    c.state = child_state::stopped;
    return;
  }
  const pid p = c.pid;
  by_pid_.erase(p);
  c.pid = {};
  c.state = child_state::stopped;
  const shutdown_policy policy = c.spec->effective_shutdown();
  exit_reason why = std::move(stop_processes({p}, policy).front());
  if (!stopped_cleanly(why, policy, c.spec->restart)) report(report_kind::shutdown_error, c, p, why);
}

void supervisor_process::stop_all() {
  if (simple_ && template_) {
    std::vector<pid> pids;
    std::vector<child*> running;
    for (child& c : children_) {
      if (c.state == child_state::running) {
        pids.push_back(c.pid);
        running.push_back(&c);
        by_pid_.erase(c.pid);
        c.pid = {};
      }
      disarm(c);
      c.state = child_state::stopped;
    }
    const shutdown_policy policy = template_->effective_shutdown();
    std::vector<exit_reason> why = stop_processes(pids, policy);  // all at once (OTP: terminate_dynamic_children)
    for (std::size_t i = 0; i < pids.size(); ++i)
      if (!stopped_cleanly(why[i], policy, template_->restart))
        report(report_kind::shutdown_error, *running[i], pids[i], why[i]);
    return;
  }
  for (auto c = children_.rbegin(); c != children_.rend(); ++c) stop_child(*c);
}

bool supervisor_process::auto_shutdown_due() const {
  switch (flags_.auto_shutdown) {
    case auto_shutdown::never:
      return false;
    case auto_shutdown::any_significant:
      return true;
    case auto_shutdown::all_significant:
      return std::none_of(children_.begin(), children_.end(),
                          [](const child& c) { return c.spec->significant && c.state != child_state::stopped; });
  }
  return false;
}

// 5.
void supervisor_process::give_up(child_it c, pid crashed) {
  report(report_kind::gave_up, *c, crashed, c->last_exit);
  // The flight recorder's last seconds before it, if tracing records into one (grove/trace.hpp).
  grove::trace::dump(fmt::format("supervisor {} {} gave up", flags_.name.empty() ? std::string("(unnamed)") : flags_.name,
                                 grove::self()));
  shut_down(exit_reason::shutdown());
}

// 6.
void supervisor_process::shut_down(exit_reason why) {
  stop_all();
  grove::exit(std::move(why));
}

// ---- requests ----

child_info supervisor_process::info_of(const child& c) const {
  return child_info{c.spec->id, c.pid, c.state, c.spec->type, c.spec->restart};
}

// A child that a management call has just added: start it, or report the failure and forget it.
start_result supervisor_process::start_added(child_it c) {
  start_outcome s = start(c);
  if (s.why.empty()) return c->pid;
  report(report_kind::start_failed, *c, {}, s.reason, s.why);
  start_error e = failed_start(*c, s);
  forget(c);
  return e;
}

void supervisor_process::on_request(request r) {
  reply out;
  out.ref = r.ref;
  auto answer_with = [&out](const start_result& started) {
    if (started) {
      out.pid = *started;
    } else {
      out.failure = started.error();
      out.code = out.failure.code;
    }
  };
  auto find_id = [&](std::error_code& ec) -> child_it {
    if (simple_) {
      ec = make_error_code(errc::simple_one_for_one);
      return children_.end();
    }
    auto it = by_id_.find(r.id);
    if (it == by_id_.end()) {
      ec = make_error_code(errc::not_found);
      return children_.end();
    }
    return it->second;
  };
  switch (r.what) {
    case op::start_child: {
      if (simple_) {
        out.code = make_error_code(errc::simple_one_for_one);
        break;
      }
      if (!r.spec) {
        out.code = make_error_code(errc::invalid_child_spec);
        break;
      }
      std::string why = check_spec(*r.spec, flags_, false);
      if (!why.empty()) {
        out.code = make_error_code(errc::invalid_child_spec);
        break;
      }
      if (auto it = by_id_.find(r.spec->id); it != by_id_.end()) {
        out.code =
            make_error_code(it->second->state == child_state::running ? errc::already_started : errc::already_present);
        out.failure.code = out.code;
        out.failure.child_id = r.spec->id;
        out.failure.pid = it->second->pid;  // OTP's {already_started, Pid}
        out.failure.message = fmt::format("child '{}' is {}", r.spec->id,
                                          it->second->state == child_state::running ? "already started" : "already present");
        break;
      }
      answer_with(start_added(add_child(std::make_shared<const child_spec>(std::move(*r.spec)), {})));
      break;
    }
    case op::start_dynamic: {
      if (!simple_) {
        out.code = make_error_code(errc::not_simple_one_for_one);
        break;
      }
      answer_with(start_added(add_child(template_, std::move(r.args))));
      break;
    }
    case op::terminate_id: {
      child_it c = find_id(out.code);
      if (out.code) break;
      stop_child(*c);
      if (c->spec->restart == restart_type::temporary) forget(c);
      break;
    }
    case op::terminate_pid: {
      auto it = by_pid_.find(r.child);
      if (it == by_pid_.end()) {
        out.code = make_error_code(errc::not_found);
        break;
      }
      child_it c = it->second;
      stop_child(*c);
      if (simple_ || c->spec->restart == restart_type::temporary) forget(c);
      break;
    }
    case op::restart_child: {
      child_it c = find_id(out.code);
      if (out.code) break;
      if (c->state == child_state::running) {
        out.code = make_error_code(errc::running);
      } else if (c->state == child_state::restarting) {
        out.code = make_error_code(errc::restarting);
      } else if (start_outcome s = start(c); !s.why.empty()) {
        report(report_kind::start_failed, *c, {}, s.reason, s.why);
        out.failure = failed_start(*c, s);
        out.code = out.failure.code;
      } else {
        out.pid = c->pid;
      }
      break;
    }
    case op::delete_child: {
      child_it c = find_id(out.code);
      if (out.code) break;
      if (c->state == child_state::running) {
        out.code = make_error_code(errc::running);
      } else if (c->state == child_state::restarting) {
        out.code = make_error_code(errc::restarting);
      } else {
        forget(c);
      }
      break;
    }
    case op::which_children:
      out.children.reserve(children_.size());
      for (const child& c : children_) out.children.push_back(info_of(c));
      break;
    case op::count_children:
      for (const child& c : children_) {
        ++out.counts.specs;
        if (c.state == child_state::running) ++out.counts.active;
        if (c.spec->type == child_type::supervisor) {
          ++out.counts.supervisors;
        } else {
          ++out.counts.workers;
        }
      }
      if (simple_) out.counts.specs = 1;  // OTP: the template is the one spec
      break;
    case op::stop:
      shut_down(std::move(r.reason));  // the caller waits for our down
  }
  send(r.from, std::move(out));
}

// ---- reports ----

const logger* supervisor_process::active_logger() {
  if (flags_.logger) return *flags_.logger ? &*flags_.logger : nullptr;
  global_logger_changed(logger_version_, global_logger_);
  return global_logger_ && *global_logger_ ? global_logger_.get() : nullptr;
}

void supervisor_process::report(report_kind kind, const child& c, pid p, const exit_reason& why, std::string text) {
  annotate_trace("supervisor: {} {} {}: {}", kind, c.spec->id, p, why);
  const logger* l = active_logger();
  if (!l) return;  // silenced: build nothing (the restarts benchmark runs this way, as OTP's with logging off)
  crash_report r;
  r.kind = kind;
  r.supervisor = self_;
  r.supervisor_name = flags_.name;
  r.child_id = c.spec->id;
  r.child = p;
  r.reason = why;
  r.exception = !text.empty() ? std::move(text) : why.is_exception() ? std::string(why.text()) : std::string();
  r.restarts_in_window = intensity_.count(clock::now());
  r.intensity = flags_.intensity;
  r.period = flags_.period;
  try {
    (*l)(r);
  } catch (const std::exception&) {
    // A logger's failure is not the supervisor's: dropped (crash_report.hpp).
  } catch (...) {
    rethrow_if_exiting();
  }
}

// ---- Metrics ----
// A named supervisor puts grove_supervisor_restarts_total{supervisor="<name>"} (restarts counted as
// OTP counts them for the intensity: one per child crash it answered) on grove::metrics's page. The
// collector runs on the scraping thread and reads only the shared counters; it is removed when the
// supervisor's process ends (its destructor runs as the exit unwinds).
void supervisor_process::register_metrics() {
  metrics_.id = grove::metrics::add_collector([c = counters_, name = flags_.name](std::string& out) {
    grove::metrics::write_family(out, "grove_supervisor_restarts_total", grove::metrics::kind::counter,
                                 "Children restarted after a crash (as counted for the restart intensity).",
                                 {{grove::metrics::label("supervisor", name),
                                   static_cast<double>(c->restarts.load(std::memory_order_relaxed))}});
  });
}

supervisor_process::metrics_registration::~metrics_registration() {
  if (id) grove::metrics::remove_collector(id);
}

void run_supervisor(pid parent, flags f, std::vector<child_spec> specs) {
  supervisor_process s(parent, std::move(f));
  s.run(std::move(specs));
}

}  // namespace grove::supervisor::internal
