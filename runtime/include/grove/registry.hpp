// grove/registry.hpp: registered names, as Erlang's register/whereis/unregister.
//
// A name maps to one live process; a process has at most one name; the name is removed when the
// process exits. All functions are thread-safe and callable from processes and foreign threads.
// Send by name with grove::send(name, msg) (message.hpp).
#pragma once

#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include <grove/pid.hpp>

#include <grove/detail/visibility.hpp>
GROVE_PUBLIC_BEGIN

namespace grove {

// Registers `p` under `name`. Throws grove::error: errc::name_taken if a live process holds the name,
// errc::already_named if `p` has a name, errc::noproc if `p` is not alive, errc::bad_argument for an
// empty name.
void register_name(std::string_view name, pid p);
// As register_name, returning the error instead of throwing (a default error_code on success).
std::error_code try_register_name(std::string_view name, pid p) noexcept;
// Removes the name; false if no process held it.
bool unregister(std::string_view name) noexcept;
// The process registered as `name`, or the null pid.
pid whereis(std::string_view name) noexcept;
// All registered names, in no particular order.
std::vector<std::string> registered();

}  // namespace grove

GROVE_PUBLIC_END
