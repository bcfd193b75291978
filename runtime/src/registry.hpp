// registry.hpp: the table of registered names (grove/registry.hpp is the API).
//
// One mutex-guarded pair of maps (name → pid and pid → name). Registration is rare next to sends,
// and a send by name takes the lock only to look the name up. A process's own PCB records only
// that it has a name (an atomic flag), so it can skip the lock at exit when it has none.
#pragma once

#include <mutex>
#include <string>
#include <string_view>
#include <system_error>
#include <unordered_map>
#include <vector>

#include <grove/pid.hpp>

namespace grove::internal {

class process_table;

class registry {
 public:
  explicit registry(process_table& table) : table_(table) {}
  std::error_code add(std::string_view name, pid p);
  bool remove(std::string_view name) noexcept;
  void remove_process(pid p) noexcept;  // at exit
  pid find(std::string_view name) const;
  std::string name_of(pid p) const;
  std::vector<std::string> names() const;

 private:
  struct string_hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
  };
  process_table& table_;
  mutable std::mutex lock_;
  std::unordered_map<std::string, pid, string_hash, std::equal_to<>> by_name_;  // guarded by lock_
  std::unordered_map<pid, std::string> by_pid_;                                 // guarded by lock_
};

}  // namespace grove::internal
