// registry.cpp: see registry.hpp.
#include "registry.hpp"

#include <grove/errc.hpp>
#include <grove/registry.hpp>

#include "process_table.hpp"
#include "scheduler.hpp"

namespace grove::internal {

std::error_code registry::add(std::string_view name, pid p) {
  if (name.empty()) return make_error_code(errc::bad_argument);
  process* q = table_.acquire(p);
  if (!q) return make_error_code(errc::noproc);
  std::error_code result;
  {
    std::lock_guard<std::mutex> g(lock_);
    if ((q->control.load(std::memory_order_acquire) & ctl_exited) != 0) {  // acquire: after its exit began
      result = make_error_code(errc::noproc);
    } else if (auto it = by_name_.find(name); it != by_name_.end()) {
      result = make_error_code(errc::name_taken);
    } else if (by_pid_.count(p)) {
      result = make_error_code(errc::already_named);
    } else {
      by_name_.emplace(std::string(name), p);
      by_pid_.emplace(p, std::string(name));
      // release: the process reads it (acquire) in its exit protocol; the lock orders the rest
      q->has_name.store(true, std::memory_order_release);
    }
  }
  table_.release(q, -1);
  return result;
}

bool registry::remove(std::string_view name) noexcept {
  std::lock_guard<std::mutex> g(lock_);
  auto it = by_name_.find(name);
  if (it == by_name_.end()) return false;
  by_pid_.erase(it->second);
  by_name_.erase(it);
  return true;
}

void registry::remove_process(pid p) noexcept {
  std::lock_guard<std::mutex> g(lock_);
  auto it = by_pid_.find(p);
  if (it == by_pid_.end()) return;
  by_name_.erase(it->second);
  by_pid_.erase(it);
}

pid registry::find(std::string_view name) const {
  std::lock_guard<std::mutex> g(lock_);
  auto it = by_name_.find(name);
  return it == by_name_.end() ? pid() : it->second;
}

std::string registry::name_of(pid p) const {
  std::lock_guard<std::mutex> g(lock_);
  auto it = by_pid_.find(p);
  return it == by_pid_.end() ? std::string() : it->second;
}

std::vector<std::string> registry::names() const {
  std::lock_guard<std::mutex> g(lock_);
  std::vector<std::string> out;
  out.reserve(by_name_.size());
  for (auto& [name, p] : by_name_) out.push_back(name);
  return out;
}

}  // namespace grove::internal

namespace grove {

using namespace grove::internal;

std::error_code try_register_name(std::string_view name, pid p) noexcept {
  runtime_state* rt = current_runtime();
  if (!rt) return make_error_code(errc::not_running);
  try {
    return rt->names.add(name, p);
  } catch (const std::bad_alloc&) {
    return std::make_error_code(std::errc::not_enough_memory);
  }
}

void register_name(std::string_view name, pid p) {
  std::error_code ec = try_register_name(name, p);
  if (!ec) return;
  std::string what = std::string("register_name(\"").append(name).append("\")");
  if (ec.category() == grove_category()) throw error(static_cast<errc>(ec.value()), what);
  throw std::system_error(ec, what);
}

bool unregister(std::string_view name) noexcept {
  runtime_state* rt = current_runtime();
  return rt && rt->names.remove(name);
}

pid whereis(std::string_view name) noexcept {
  runtime_state* rt = current_runtime();
  if (!rt) return pid();
  try {
    return rt->names.find(name);
  } catch (...) {
    return pid();
  }
}

std::vector<std::string> registered() {
  runtime_state* rt = current_runtime();
  return rt ? rt->names.names() : std::vector<std::string>{};
}

}  // namespace grove
