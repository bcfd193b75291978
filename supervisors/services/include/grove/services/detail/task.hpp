// grove/services/detail/task.hpp: the parts of a task that task.hpp, gather and streams share.
// Internal; not part of the API. src/task.cpp opens with the design.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <type_traits>
#include <utility>

#include <grove/link.hpp>
#include <grove/message.hpp>
#include <grove/pid.hpp>
#include <grove/process.hpp>

#include <grove/services/detail/common.hpp>
#include <grove/services/outcome.hpp>

#include <grove/detail/visibility.hpp>
GROVE_PUBLIC_BEGIN

namespace grove::services::detail {

// One launched task, as its owner sees it.
struct task_core {
  grove::pid pid;          // the task process (null if the launch failed)
  monitor_ref monitor;     // the owner's monitor on it
  alias reply;             // where its result comes (inactive once taken or cancelled)
  failure launch_failure;  // why it could not be launched (not_in_process, process_limit)
  bool pending = false;    // launched, result not yet taken, not cancelled
};

// Step 1 of a launch (task.cpp): the owner's alias, or launch_failure.
task_core begin_launch();
// Step 3: records the spawn's outcome (on failure: unalias, launch_failure).
void end_launch(task_core& c, const result<spawned>& r);
// After the result (or the down) was received: unalias, demonitor (flush unless the down was it).
// Acts on signals: never from a destructor.
void finish_task(task_core& c, bool got_down);
// Stops a pending task: kill, unalias, demonitor; with flush, also removes its down if it had
// already arrived (acts on signals: never from a destructor).
void cancel_task(task_core& c, bool flush) noexcept(false);
// The destructor's form: never acts on signals, never yields.
void drop_task(task_core& c) noexcept;

// cancel_task with flush, plus the removal of a result of wire type W already in the mailbox.
template <class W>
void cancel_and_flush(task_core& c) {
  if (!c.pending) return;
  const std::uint64_t id = c.reply.id;
  cancel_task(c, true);
  grove::receive(grove::when([id](const reply_msg<W>& r) { return r.id == id; }, [](reply_msg<W>) {}),
                 grove::after(std::chrono::nanoseconds(0)));
}

// Run by a new task first (task.cpp): starts its lifeline, which kills the task if `owner` dies.
void watch_owner(grove::pid owner);

// Launches fn() as a task of the calling process (task.cpp, steps 1-3).
template <class R, class F>
task_core launch(F&& fn) {
  using W = wire_t<R>;
  task_core c = begin_launch();
  if (c.launch_failure.code) return c;
  const grove::pid owner = grove::self();
  auto r = grove::try_spawn(spawn_options{.monitor = true},
                            [owner, to = c.reply, fn = std::forward<F>(fn)]() mutable {
                              watch_owner(owner);
                              outcome<W> out = run_catching<R>(fn);
                              grove::send(to, reply_msg<W>{to.id, std::move(out)});
                            });
  end_launch(c, r);
  return c;
}

}  // namespace grove::services::detail

GROVE_PUBLIC_END
