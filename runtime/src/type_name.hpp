// type_name.hpp: a C++ type's name as typeid gives it, demangled, for introspection, traces and
// crash reports.
#pragma once

#include <cxxabi.h>

#include <cstdlib>
#include <memory>
#include <string>

namespace grove::internal {

// "std::runtime_error" for "St13runtime_error"; the name as given if it does not demangle; "?" for null.
inline std::string demangled(const char* mangled) {
  if (!mangled) return "?";
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> d(abi::__cxa_demangle(mangled, nullptr, nullptr, &status), std::free);
  return status == 0 && d ? std::string(d.get()) : std::string(mangled);
}

}  // namespace grove::internal
