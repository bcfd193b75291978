// grove/services/task.hpp: tasks (Elixir's Task): run a function in its own process and await its
// result; run a bounded stream of them.
//
//   auto a = svc::async([] { return fetch_a(); });     // task<A>, running now
//   auto b = svc::async([] { return fetch_b(); });
//   svc::outcome<A> ra = a.await(2s);                  // value, or grove::errc::timeout after 2 s
//   svc::outcome<B> rb = svc::await(b, deadline);      // or errc::deadline_exceeded
//
// - An exception in a task surfaces at its await as errc::exception (the failure's reason is
//   exit_reason::exception(what, type)); a task that ends any other way (grove::exit, killed, a
//   non-std exception) surfaces as errc::exited with its exit reason. Neither touches the owner or
//   the other tasks, whose values stay available. (Unlike Elixir's linked Task.async, a task's crash
//   never takes its owner down: partial results need every other result to survive.)
// - A task dies with its owner, whatever the owner's reason (normal included): destroying a pending
//   handle kills the task (an owner that returns or unwinds, an early return, a dropped handle), and
//   a lifeline process watching the owner kills it if the owner ends without destroying the handle.
//   The owner is never linked to its tasks, so a trapping owner sees no exit_signal from them.
// - await(timeout) that times out leaves the task running; await again later, or cancel(). A result
//   that arrives after the handle was cancelled or destroyed is dropped (alias), but one that had
//   already arrived when a handle is destroyed unawaited stays in the mailbox: call cancel(), which
//   removes it, rather than just dropping a handle whose task may have finished.
// - The function runs in another process: capture by value. Grove parks a process by copying its
//   stack out (runtime/src/scheduler.cpp), so a reference to the owner's locals is not valid while
//   the owner waits; heap objects (a shared_ptr, a member of a heap object) are fine.
// A handle belongs to the process that called async: await and cancel only from it. Call async
// from a process or a scoped_process (else every await returns grove::errc::not_in_process).
#pragma once

#include <chrono>
#include <cstddef>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <grove/link.hpp>
#include <grove/message.hpp>

#include <grove/services/deadline.hpp>
#include <grove/services/detail/common.hpp>
#include <grove/services/detail/task.hpp>
#include <grove/services/outcome.hpp>

#include <grove/detail/visibility.hpp>
GROVE_PUBLIC_BEGIN

namespace grove::services {

inline constexpr std::chrono::milliseconds default_await_timeout{5000};  // Elixir's Task.await

template <class V>
class [[nodiscard]] task {
 public:
  task() = default;
  explicit task(detail::task_core c) noexcept : core_(std::move(c)) {}
  task(task&& o) noexcept : core_(std::exchange(o.core_, detail::task_core{})) {}
  task& operator=(task&& o) noexcept {
    if (this != &o) {
      detail::drop_task(core_);
      core_ = std::exchange(o.core_, detail::task_core{});
    }
    return *this;
  }
  task(const task&) = delete;
  task& operator=(const task&) = delete;
  ~task() { detail::drop_task(core_); }

  grove::pid pid() const noexcept { return core_.pid; }
  // Launched, and its result not yet taken.
  bool is_pending() const noexcept { return core_.pending; }

  // The task's value or failure, waiting until `d` (errc::deadline_exceeded; the task keeps running).
  // A handle whose result was taken returns grove::errc::bad_argument.
  outcome<V> await(const deadline& d) { return take(d, errc::deadline_exceeded); }
  // The same with a timeout (grove::errc::timeout).
  outcome<V> await(std::chrono::milliseconds timeout = default_await_timeout) {
    return take(timeout == std::chrono::milliseconds::max() ? deadline::never() : deadline::after(timeout), grove::errc::timeout);
  }
  // Kills the task if it is still running; its result, if it had arrived, is discarded.
  void cancel() { detail::cancel_and_flush<wire>(core_); }

 private:
  using wire = detail::wire_t<V>;

  outcome<V> take(const deadline& d, failure on_expiry) {
    if (core_.launch_failure.code) {
      failure f = std::exchange(core_.launch_failure, failure(grove::errc::bad_argument));
      return f;
    }
    if (!core_.pending) return grove::errc::bad_argument;
    bool timed_out = false;
    bool got_down = false;
    auto on_result = grove::when([id = core_.reply.id](const detail::reply_msg<wire>& r) { return r.id == id; },
                                 [](detail::reply_msg<wire> r) { return detail::from_wire<V>(std::move(r.value)); });
    auto on_down = grove::when([mon = core_.monitor](const down& m) { return m.ref == mon; },
                               [&got_down](down m) {
                                 got_down = true;
                                 return outcome<V>(failure::from_exit(std::move(m.reason)));
                               });
    outcome<V> out = detail::receive_by(
        d,
        [&timed_out, on_expiry] {
          timed_out = true;
          return outcome<V>(on_expiry);
        },
        on_result, on_down);
    if (!timed_out) detail::finish_task(core_, got_down);
    return out;
  }

  detail::task_core core_;
};

// Runs fn() in a new process linked to the caller; see the file comment. fn may return a value,
// void, or an outcome<T> (then the task's result is that outcome).
template <class F>
auto async(F fn) -> task<detail::value_t<std::invoke_result_t<std::decay_t<F>&>>> {
  using R = std::invoke_result_t<std::decay_t<F>&>;
  return task<detail::value_t<R>>(detail::launch<R>(std::move(fn)));
}

// Free forms of task::await, as in the issue's `await(handle, timeout)`.
template <class V>
outcome<V> await(task<V>& t, std::chrono::milliseconds timeout = default_await_timeout) {
  return t.await(timeout);
}
template <class V>
outcome<V> await(task<V>& t, const deadline& d) {
  return t.await(d);
}

// ---- partial results ----

// Runs every function as a task under one deadline and returns, per function, its value or its
// failure: errc::deadline_exceeded (still running at the deadline: it is killed), errc::exception
// (what it threw), errc::exited (its process was killed; the reason). Each function takes no
// arguments or the deadline (const deadline&), so it can pass the time left on. Returns at the
// deadline at the latest, earlier once all have finished.
template <class... F>
auto gather(const deadline& d, F... fns)
    -> std::tuple<outcome<detail::value_t<detail::deadline_result_t<F>>>...> {
  auto tasks = std::make_tuple(async([d, fn = std::move(fns)]() mutable { return detail::invoke_with_deadline(fn, d); })...);
  auto results = std::apply([&d](auto&... t) { return std::tuple<decltype(t.await(d))...>{t.await(d)...}; }, tasks);
  std::apply([](auto&... t) { (t.cancel(), ...); }, tasks);  // stops the late ones, drops their results
  return results;
}
// The same over a vector of functions of one type.
template <class F>
auto gather(const deadline& d, std::vector<F> fns) -> std::vector<outcome<detail::value_t<detail::deadline_result_t<F>>>> {
  using V = detail::value_t<detail::deadline_result_t<F>>;
  std::vector<task<V>> tasks;
  tasks.reserve(fns.size());
  for (F& fn : fns) tasks.push_back(async([d, fn = std::move(fn)]() mutable { return detail::invoke_with_deadline(fn, d); }));
  std::vector<outcome<V>> results;
  results.reserve(tasks.size());
  for (task<V>& t : tasks) results.push_back(t.await(d));
  for (task<V>& t : tasks) t.cancel();
  return results;
}

// ---- streams ----

struct stream_options {
  std::size_t max_concurrency = 8;  // tasks running at once (>= 1; 0 fails every item with bad_argument)
  bool ordered = true;              // results in input order; false: as they complete
  services::deadline deadline{};    // items not finished by then: errc::deadline_exceeded (killed,
                                    // or never started)
};

template <class V>
struct stream_item {
  std::size_t index = 0;  // the input's position
  outcome<V> result;
};

// A lazy stream of task results (Elixir's Task.async_stream): next() keeps up to max_concurrency
// tasks running and returns the next result, in input order or as they complete. Destroying it
// kills the tasks still running. Use it only from the process that made it.
template <class V>
class [[nodiscard]] task_stream {
 public:
  using launcher = std::function<detail::task_core(std::size_t index)>;

  task_stream(std::size_t count, launcher launch, stream_options o)
      : count_(count), launch_(std::move(launch)), options_(o) {}
  task_stream(task_stream&&) noexcept = default;
  task_stream& operator=(task_stream&&) = delete;
  ~task_stream() {
    for (auto& [index, core] : running_) detail::drop_task(core);
  }

  // The next result, or nullopt when every input has been reported.
  std::optional<stream_item<V>> next() {
    for (;;) {
      if (auto item = pop_ready()) return item;
      if (emitted_ == count_) return std::nullopt;
      const bool expired = options_.deadline.has_passed();
      while (!expired && options_.max_concurrency > 0 && running_.size() < options_.max_concurrency && launched_ < count_) {
        const std::size_t i = launched_++;
        running_.emplace_back(i, launch_(i));
        if (running_.back().second.launch_failure.code) {
          store(i, running_.back().second.launch_failure);
          running_.pop_back();
        }
      }
      if (auto item = pop_ready()) return item;
      if (running_.empty()) {
        // Nothing can run: no concurrency allowed, or the deadline passed. Report the rest.
        const failure why = options_.max_concurrency == 0 ? failure(grove::errc::bad_argument) : failure(errc::deadline_exceeded);
        while (launched_ < count_) store(launched_++, why);
        continue;
      }
      wait_one();
    }
  }
  // The remaining results, in the stream's order.
  std::vector<stream_item<V>> collect() {
    std::vector<stream_item<V>> out;
    while (auto item = next()) out.push_back(std::move(*item));
    return out;
  }

 private:
  using wire = detail::wire_t<V>;

  void store(std::size_t index, outcome<V> r) {
    if (options_.ordered) {
      done_.emplace(index, std::move(r));
    } else {
      ready_.push_back(stream_item<V>{index, std::move(r)});
    }
  }
  std::optional<stream_item<V>> pop_ready() {
    if (options_.ordered) {
      auto it = done_.find(emitted_);
      if (it == done_.end()) return std::nullopt;
      stream_item<V> item{it->first, std::move(it->second)};
      done_.erase(it);
      ++emitted_;
      return item;
    }
    if (ready_.empty()) return std::nullopt;
    stream_item<V> item = std::move(ready_.front());
    ready_.pop_front();
    ++emitted_;
    return item;
  }
  // Waits for one running task to finish (or the deadline, which stops them all).
  void wait_one() {
    auto find = [this](auto&& is_it) {
      std::size_t k = 0;
      while (k < running_.size() && !is_it(running_[k].second)) ++k;
      return k;
    };
    struct finished {
      std::size_t k;
      outcome<V> result;
      bool got_down;
    };
    auto on_result = grove::when(
        [&](const detail::reply_msg<wire>& r) {
          return find([&](const detail::task_core& c) { return c.reply.id == r.id; }) < running_.size();
        },
        [&](detail::reply_msg<wire> r) {
          std::size_t k = find([&](const detail::task_core& c) { return c.reply.id == r.id; });
          return std::optional<finished>(finished{k, detail::from_wire<V>(std::move(r.value)), false});
        });
    auto on_down = grove::when(
        [&](const down& m) { return find([&](const detail::task_core& c) { return c.monitor == m.ref; }) < running_.size(); },
        [&](down m) {
          std::size_t k = find([&](const detail::task_core& c) { return c.monitor == m.ref; });
          return std::optional<finished>(finished{k, failure::from_exit(std::move(m.reason)), true});
        });
    std::optional<finished> f =
        detail::receive_by(options_.deadline, [] { return std::optional<finished>(); }, on_result, on_down);
    if (f) {
      auto [index, core] = std::move(running_[f->k]);
      running_.erase(running_.begin() + static_cast<std::ptrdiff_t>(f->k));
      detail::finish_task(core, f->got_down);
      store(index, std::move(f->result));
      return;
    }
    auto late = std::move(running_);
    running_.clear();
    for (auto& [index, core] : late) {
      detail::cancel_and_flush<wire>(core);
      store(index, errc::deadline_exceeded);
    }
  }

  std::size_t count_;
  launcher launch_;
  stream_options options_;
  std::size_t launched_ = 0;
  std::size_t emitted_ = 0;
  std::vector<std::pair<std::size_t, detail::task_core>> running_;  // in launch order
  std::map<std::size_t, outcome<V>> done_;                           // ordered: finished, not yet emitted
  std::deque<stream_item<V>> ready_;                                 // unordered: finished, not yet emitted
};

// Runs fn(input) for each input as tasks, at most options.max_concurrency at once; see task_stream.
// fn is copied into each task; inputs are moved into theirs.
template <class In, class F>
auto async_stream(std::vector<In> inputs, F fn, stream_options options = {})
    -> task_stream<detail::value_t<std::invoke_result_t<F&, In&&>>> {
  using R = std::invoke_result_t<F&, In&&>;
  using V = detail::value_t<R>;
  const std::size_t n = inputs.size();
  auto shared = std::make_shared<std::pair<std::vector<In>, F>>(std::move(inputs), std::move(fn));
  return task_stream<V>(
      n,
      [shared](std::size_t i) {
        return detail::launch<R>([input = std::move(shared->first[i]), fn = shared->second]() mutable {
          return fn(std::move(input));
        });
      },
      options);
}

}  // namespace grove::services

GROVE_PUBLIC_END
