// stack_trace.cpp: capturing and printing call stacks, and the throw site of a process's crash.
//
// ## Capture and print
// Capture is Boost.Stacktrace's safe_dump_to (the unwinder's _Unwind_Backtrace: no allocation, no
// lock, so it may run inside __cxa_throw); printing is Boost.Stacktrace's frame over libbacktrace
// (libboost_stacktrace_backtrace), which reads the ELF symbol tables and DWARF line tables of each
// loaded binary. Every captured address is a return address, so a frame is looked up at address - 1
// (the call instruction), or the line shown would be the one after the call.
// Rejected: glibc's backtrace_symbols (names of exported symbols only, no static functions, no
// lines); forking addr2line (Boost's addr2line backend: a process per frame, from a worker thread);
// GCC 12's <stacktrace> (Debian's GCC 12 ships no libstdc++_libbacktrace to link it with).
//
// ## The throw site (note_throw, throw_site_of)
// By the time an exception reaches the catch in a process's entry (grove/process.hpp, entry_ops),
// the stack between the throw and the catch is gone. So the site is recorded at the throw:
// libgrove_throw_traces (throw_traces.cpp) wraps __cxa_throw and calls note_throw first (the runtime
// hands it note_throw when it starts, attach_throw_traces, if the library is linked), which, on
// a thread running a Grove process, stores the thrown object's address, its type and the frames in
// the process's throw_record (allocated at its first throw, freed with the process). At the catch,
// exception_reason asks throw_site_of for the frames of *that* object: the record's object and type
// must be the caught one's (the most-derived address of the std::exception caught), so an exception
// thrown in another process and rethrown here (std::rethrow_exception: no __cxa_throw) gets no site
// rather than a wrong one, unless it sits at the address of this process's last, freed exception
// and has its type. An exception not derived from std::exception is matched by type alone (its
// address is not at hand in catch (...)): a stale record of the same type matches. A `throw;` keeps the
// first site (it does not call __cxa_throw); a new exception thrown in a catch block replaces it.
// exit_unwind (how a decided exit unwinds) is never recorded: kills and exits cost nothing more.
// Cost: +0.95 us per crash by a thrown exception (617,783 -> 389,338 restarts/s), nothing measurable
// for grove::exit or a returned reason: bench/RESULTS.md, "Throw-site traces", with the command.
// Rejected: capturing in the process's catch (the frames are unwound by then); a thread_local record
// (a process that parks while its exception unwinds may resume on another worker); the hook inside
// libgrove itself (it would interpose every throw of the host program without being asked).
#include <grove/stack_trace.hpp>

#include <cxxabi.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <typeinfo>

#include <boost/stacktrace/frame.hpp>
#include <boost/stacktrace/safe_dump_to.hpp>
#include <fmt/format.h>

#include <grove/exit_reason.hpp>
#include <grove/process.hpp>

#include "process.hpp"
#include "scheduler.hpp"
#include "throw_sites.hpp"

// Defined by libgrove_throw_traces, if the program links it (weak: null otherwise).
extern "C" __attribute__((weak, visibility("default"))) void grove_throw_traces_attach(void (*observer)(void*, const std::type_info*) noexcept) noexcept;

namespace grove {

namespace {

std::uintptr_t lookup_address(std::uintptr_t frame) noexcept { return frame ? frame - 1 : frame; }

}  // namespace

stack_trace stack_trace::current(std::size_t max_frames) {
  if (max_frames == 0) return {};
  std::vector<const void*> raw(max_frames + 1);
  // skip 1: this function's own frame (safe_dump_to skips itself)
  const std::size_t stored = boost::stacktrace::safe_dump_to(1, raw.data(), raw.size() * sizeof(const void*));
  std::vector<std::uintptr_t> frames;
  frames.reserve(stored);
  for (std::size_t i = 0; i < stored && raw[i]; ++i) frames.push_back(reinterpret_cast<std::uintptr_t>(raw[i]));
  return stack_trace(std::move(frames));
}

std::string stack_trace::function_name(std::uintptr_t frame) {
  std::string name = boost::stacktrace::frame(reinterpret_cast<const void*>(lookup_address(frame))).name();
  return name.empty() ? std::string("??") : name;
}

std::string stack_trace::to_string(std::string_view indent) const {
  std::string out;
  for (std::size_t i = 0; i < frames_.size(); ++i) {
    const boost::stacktrace::frame f(reinterpret_cast<const void*>(lookup_address(frames_[i])));
    std::string name = f.name();
    fmt::format_to(std::back_inserter(out), "{}#{} {:#018x} in {}", indent, i, frames_[i], name.empty() ? "??" : name);
    if (std::size_t line = f.source_line()) fmt::format_to(std::back_inserter(out), " at {}:{}", f.source_file(), line);
    out.push_back('\n');
  }
  return out;
}

std::string exit_reason::exception_type() const {
  const std::string* mangled = kind_ == kind::exception ? payload<std::string>() : nullptr;
  if (!mangled || mangled->empty()) return {};
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> demangled(abi::__cxa_demangle(mangled->c_str(), nullptr, nullptr, &status),
                                                  std::free);
  return status == 0 && demangled ? std::string(demangled.get()) : *mangled;
}

namespace internal {

void note_throw(void* object, const std::type_info* type) noexcept {
  process* p = current_process();
  if (!p || !type || *type == typeid(exit_unwind) || p->exiting) return;
  process_extra* ex;
  try {
    ex = &p->ensure_extra();
  } catch (...) {
    return;  // out of memory: no site for this one
  }
  if (!ex->last_throw) {
    ex->last_throw.reset(new (std::nothrow) throw_record);
    if (!ex->last_throw) return;
  }
  throw_record& r = *ex->last_throw;
  r.object = object;
  r.type = type;
  // skip 2: note_throw and the __cxa_throw wrapper; the first frame is the throw expression's function
  const std::size_t stored = boost::stacktrace::safe_dump_to(2, r.frames, sizeof r.frames);
  r.count = stored ? static_cast<std::uint32_t>(stored - 1) : 0;  // stored counts the null at the end
}

void attach_throw_traces() noexcept {
  if (grove_throw_traces_attach) grove_throw_traces_attach(&note_throw);
}

stack_trace throw_site_of(const void* object, const std::type_info* type) noexcept {
  process* p = current_process();
  if (!p || !p->extra || !p->extra->last_throw) return {};
  throw_record& r = *p->extra->last_throw;
  const bool same_type = type && r.type && *r.type == *type;
  const bool same = object ? r.object == object && same_type : same_type;
  if (!same || r.count == 0) return {};
  try {
    std::vector<std::uintptr_t> frames(r.count);
    for (std::uint32_t i = 0; i < r.count; ++i) frames[i] = reinterpret_cast<std::uintptr_t>(r.frames[i]);
    r.object = nullptr;  // taken: a later rethrow_exception of another object must not match it
    r.type = nullptr;
    return stack_trace(std::move(frames));
  } catch (...) {
    return {};  // out of memory: the report goes without it
  }
}

}  // namespace internal

}  // namespace grove
