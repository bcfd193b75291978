// task.cpp: tasks (grove/services/task.hpp): launching, the lifeline, taking a result, cancelling.
// gather and task_stream are templates over these steps (task.hpp).
//
// ## A task, in numbered steps
// 1. begin_launch: the owner makes an alias for the result (the owner must be a process).
// 2. launch (detail/task.hpp): spawn the task with a monitor (the owner's), not linked to the owner.
//    The task first starts its lifeline (watch_owner), then runs fn, catching std::exceptions into
//    the result (a failure), sends the result to the alias, and returns.
// 3. end_launch records the spawn's outcome; a failed spawn becomes the failure the first await
//    returns.
// 4. await receives the result (by alias id) or the monitor's down (the task ended without a
//    result: exited, with its reason) or gives up at the deadline, leaving everything in place for
//    another await.
// 5. finish_task (after a result or down): unalias, demonitor with flush unless the down came.
// 6. cancel_task: exit(task, kill), unalias (a result on its way is dropped), demonitor (with flush:
//    a down already in the mailbox goes too; cancel_and_flush also removes an arrived result).
//
// ## The lifeline: why the owner's death stops its tasks, and a task's death never stops the owner
// A link between owner and task would carry deaths both ways: a task that exits abnormally (a
// grove::exit in fn, a kill) would end its owner, which is wrong for partial results, and a dying
// task cannot unlink first (Grove rethrows a pending exit at any link operation: an exit cannot be
// refused). So the task is only monitored by its owner, and at its start it spawns a lifeline: a
// tiny process, linked to the task and trapping exits, that monitors the owner.
//   - the owner ends (any reason, normal included; or it was already gone: down{noproc} at once) →
//     the lifeline kills the task and ends;
//   - the task ends (any reason) → its exit signal reaches the lifeline as a message → it ends.
// The lifeline parks in one receive (a few hundred bytes). Besides it, the handle's destructor kills
// the task at once when an owner returns or unwinds, so the lifeline matters for owners that end
// without destroying their handles (a handle moved into a message or onto the heap, a scoped_process
// whose thread goes on after its exit).
//
// ## Destructors never act on signals
// A destructor that drained the mailbox could meet an exit signal and throw Grove's unwinding
// exception out of a noexcept destructor (std::terminate). So drop_task only kills, unaliases and
// demonitors without flush, which never yield and never drain; the one thing it cannot do is remove
// a result that had already been drained into the mailbox (task.hpp tells users to cancel()). A
// scoped_process that has exited throws grove::error from these calls: drop_task swallows that (the
// kill, which needs no calling process, has been sent).
//
// ## Rejected alternatives
// - Link owner and task (Elixir's Task.async): deaths travel both ways (above).
// - A task that traps exits: the owner's death would be a message the running fn never reads.
// - A task process that runs fn in a child and watches both: the same two processes, plus a hop
//   for every result; the lifeline is off the result's path.
// - Results by pid + ref: a result that arrives after a timed-out await would stay in the mailbox
//   for ever if the handle is then dropped; the alias drops it at the door.
#include <grove/services/task.hpp>

#include <grove/grove.hpp>

namespace grove::services::detail {

task_core begin_launch() {
  task_core c;
  if (grove::self().is_null()) {
    c.launch_failure = grove::errc::not_in_process;
    return c;
  }
  c.reply = make_alias();
  return c;
}

void end_launch(task_core& c, const result<spawned>& r) {
  if (!r) {
    unalias(c.reply);
    c.reply = alias{};
    c.launch_failure = failure(r.error());
    return;
  }
  c.pid = r->pid;
  c.monitor = r->monitor;
  c.pending = true;
}

void finish_task(task_core& c, bool got_down) {
  if (!c.pending) return;
  c.pending = false;
  unalias(c.reply);
  if (!got_down) demonitor(c.monitor, true);
}

void watch_owner(pid owner) {
  const pid task = grove::self();
  grove::spawn(spawn_options{.link = true, .trap_exit = true}, [owner, task] {
    const monitor_ref m = monitor(owner);
    grove::receive(grove::when([m](const down& d) { return d.ref == m; },
                               [task](down) { grove::exit(task, exit_reason::kill()); }),
                   grove::when([task](const exit_signal& e) { return e.from == task; }, [](exit_signal) {}));
  });
}

void cancel_task(task_core& c, bool flush) {
  if (!c.pending) return;
  c.pending = false;
  grove::exit(c.pid, exit_reason::kill());  // 6.
  unalias(c.reply);
  demonitor(c.monitor, flush);
}

void drop_task(task_core& c) noexcept {
  if (!c.pending) return;
  c.pending = false;
  grove::exit(c.pid, exit_reason::kill());  // needs no calling process
  try {
    unalias(c.reply);
    demonitor(c.monitor, false);
  } catch (const std::exception&) {
    // a scoped_process that has exited: its aliases and monitors went with it
  }
}

}  // namespace grove::services::detail
