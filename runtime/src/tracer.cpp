// tracer.cpp: recording trace events (grove/trace.hpp) into per-worker rings, and reading them.
//
// ## Recording
// Every recording site is `if (tracing(kind, process)) record(...)`: one relaxed load of trace_mask
// and a branch while tracing is off. trace_mask is the union of the kinds recorded for every
// process and those any process's flags have selected since start (trace_process); an event
// past it is recorded if its kind is one for all, or if its process's flags (one byte in the
// process, padding before) select it: an out-of-line check only for events that may be recorded.
// The process of an event is the one it is about: the sender of a send, the receiver of a receive,
// the one that runs, the caller of link or annotate, the receiver of an exit signal or a down, the
// first one a steal takes. record() runs on the recording thread: a worker writes its own ring
// (worker::trace_out) with no lock and no RMW; any other thread (a foreign sender, a scoped
// process, a blocking thread) writes the one shared ring under foreign_lock. An event is six words:
//   w[0] time (the trace clock's ticks: "Timestamps" below)
//   w[1] kind | arg << 8 | worker << 16 (0xFFFF: not a worker) | x << 32
//   w[2..5] a, b, c, d, per kind:
//     spawn            a parent, b child
//     exit             a pid, arg exit_reason::kind, b text id (intern_trace_text)
//     send             a sender, b receiver, c message node address, d message_type*
//     receive          a receiver, x messages passed over, b messages left (saved), c node address,
//                      d message_type*
//     receive_timeout  a pid, arg wait_reason
//     run_begin        a pid, x run-queue length
//     run_end          a pid, arg park_reason | wait_reason << 4
//     link, monitor    a caller, b other, arg signal_outcome (none or noproc)
//     unlink, demonitor a caller, b other
//     down             a watcher, b target, arg exit_reason::kind, c text id (intern_reason_text)
//     exit_signal      a receiver, b sender, arg exit_reason::kind, x signal_outcome, c text id,
//                      d 1 through a link
//     steal            a first process taken, b victim worker, x processes taken
//     annotation       a caller (0: not a process), c text id
//     wake             a woken, b waker (0: none), arg wake_cause
//     timer_fire       a target, c message node address, d message_type* (paired as a send is)
//     io_wait          a waiter, x fd, arg 1 writable
// Pids are their bits. A send and the receive of its message are paired when read: the newest
// earlier send of the same node address to the same receiver with the same type. A node's address
// is reused once it is freed (received, or dropped: a dead letter, an exit, an inactive alias), and
// some nodes are delivered without a send event (down and exit messages), so the
// address alone could pair a receive with an older, unrelated send; with receiver and type too, a
// wrong arrow needs the same type between the same two processes at a reused address.
//
// ## Reading while recording (a seqlock per ring)
// The owner writes slot h % capacity then publishes head = h + 1 (release), with a release fence
// *before* the slot's words, so a reader that copied any word of a newer write is ordered after
// the head store that preceded it. A reader loads head (h1), copies slots [h1 - capacity, h1),
// fences (acquire) and loads head again (h2): the slots of events below h2 - capacity + 1 may have
// been rewritten while it copied, so only [max(h1, h2 + 1) - capacity, h1) is kept. Every word is
// a relaxed atomic: a torn copy is dropped, never a data race (ThreadSanitizer checks it).
//
// ## Dump on a signal (options::dump_signal)
// Only when asked: start() installs a handler (sigaction, SA_RESTART, the old disposition kept)
// that writes one byte to a non-blocking pipe, the only async-signal-safe work it does; a thread
// of the tracer's blocks reading the pipe and calls dump(). stop() (and the runtime's end) puts the
// old disposition back, then closes the pipe's write end, which ends the thread, and joins it.
// Rejected: doing the dump in the handler (it allocates and takes locks); signalfd (it needs the
// signal blocked in every thread of the host, which is the host's to decide).
//
// ## Timestamps
// Where the kernel's own clocksource is the TSC (it then vouches that the TSC is invariant and the
// same on every CPU: it switches away from it otherwise) and the CPU says constant_tsc and
// nonstop_tsc, events are stamped with rdtsc (12-17 ns a read on the reference VM against 31-39 ns
// for CLOCK_MONOTONIC through the vDSO: `build/release/bench/grove/clock_probe`).
// Ticks become CLOCK_MONOTONIC nanoseconds when the rings are read, on the line through two (ticks,
// ns) samples, one taken at the first start and one at the read, each the tightest of five
// rdtsc/clock/rdtsc triples (Go's tracer stamps with cputicks the same way). A read at least 2 ms
// after the first sample (it waits out the rest otherwise) puts the line's error at a few
// nanoseconds a millisecond; NTP's slewing of CLOCK_MONOTONIC (<= 500 ppm) bounds it over hours.
// Elsewhere, or with GROVE_TRACE_CLOCK=monotonic, events are stamped with now_ns().
//
// ## Cost (bench/RESULTS.md, "Tracing": bench/harness/trace_overhead.sh)
// Off: a relaxed load and a branch a site, within noise on the wall clock. On: five events a ring
// hop (send, wake, receive, run end, run begin), 25-29 ns each with the TSC, 37-46 ns
// with clock_gettime: ring -35 to -38% and -44 to -50% (Go 1.19's tracer: -95% on its ring).
//
// ## Rejected
// A lock per ring (a worker would take it for every event); one shared MPSC queue (an RMW per
// event on a shared line, and no flight-recorder overwrite); recording strings (names, reasons) in
// the events: exits, downs, exit signals and annotations intern their text under a lock (rare next
// to messages; a text repeated by a restart loop is kept once), and names are looked up when the
// trace is written.
#include "tracer.hpp"

#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#include <algorithm>
#include <cerrno>
#include <array>
#include <bit>
#include <cstdlib>
#include <fstream>
#include <string_view>
#include <unordered_map>

#include <fmt/format.h>

#include <grove/exit_reason.hpp>
#include <grove/introspection.hpp>
#include <grove/logger.hpp>

#include "clock.hpp"
#include "delivery.hpp"
#include "process.hpp"
#include "scheduler.hpp"
#include "type_name.hpp"

namespace grove::internal {

namespace {

constexpr std::uint16_t foreign_worker = 0xFFFF;
constexpr std::size_t min_events = 64;
constexpr std::size_t max_events = std::size_t{1} << 22;  // 192 MiB of ring per worker: far past any use
constexpr std::size_t max_texts = 65536;                  // exit reasons' texts kept per runtime

// The trace clock (file comment, "Timestamps").
struct clock_sample {
  std::uint64_t ticks = 0, ns = 0;
};

struct trace_clock {
  bool tsc = false;
  clock_sample first{};
};

#if defined(__x86_64__)
clock_sample sample_clocks() noexcept {
  clock_sample best;
  std::uint64_t window = ~std::uint64_t{0};
  for (int i = 0; i < 5; ++i) {
    const std::uint64_t t0 = __rdtsc();
    const std::uint64_t ns = now_ns();
    const std::uint64_t t1 = __rdtsc();
    if (t1 - t0 < window) {
      window = t1 - t0;
      best = {t0 + (t1 - t0) / 2, ns};
    }
  }
  return best;
}

bool tsc_is_the_kernels_clock() noexcept {
  try {
    std::ifstream source("/sys/devices/system/clocksource/clocksource0/current_clocksource");
    std::string name;
    if (!(source >> name) || name != "tsc") return false;
    std::ifstream cpuinfo("/proc/cpuinfo");
    for (std::string line; std::getline(cpuinfo, line);) {
      if (line.rfind("flags", 0) != 0) continue;
      const std::string flags = line + " ";
      return flags.find(" constant_tsc ") != std::string::npos && flags.find(" nonstop_tsc ") != std::string::npos;
    }
  } catch (...) {
  }
  return false;
}
#endif

// Chosen once, at the first start (before any event is recorded); a function-local static: every
// later call is one load and a branch.
const trace_clock& the_trace_clock() noexcept {
  static const trace_clock clock = [] {
    trace_clock c;
#if defined(__x86_64__)
    const char* forced = std::getenv("GROVE_TRACE_CLOCK");
    if (!(forced && std::string_view(forced) == "monotonic") && tsc_is_the_kernels_clock()) {
      c.tsc = true;
      c.first = sample_clocks();
    }
#endif
    return c;
  }();
  return clock;
}

std::uint64_t trace_timestamp() noexcept {
#if defined(__x86_64__)
  if (the_trace_clock().tsc) return __rdtsc();
#endif
  return now_ns();
}

// Maps recorded timestamps to CLOCK_MONOTONIC nanoseconds (the identity without the TSC).
struct timestamp_converter {
  timestamp_converter() noexcept {
    const trace_clock& c = the_trace_clock();
    if (!c.tsc) return;
#if defined(__x86_64__)
    constexpr std::uint64_t min_span_ns = 2'000'000;
    while (now_ns() < c.first.ns + min_span_ns) {
    }
    const clock_sample now = sample_clocks();
    tsc = true;
    first = c.first;
    ns_per_tick = static_cast<double>(now.ns - first.ns) / static_cast<double>(now.ticks - first.ticks);
#endif
  }
  std::uint64_t operator()(std::uint64_t t) const noexcept {
    if (!tsc) return t;
    const double delta = static_cast<double>(static_cast<std::int64_t>(t - first.ticks)) * ns_per_tick;
    return first.ns + static_cast<std::uint64_t>(static_cast<std::int64_t>(delta));
  }
  bool tsc = false;
  clock_sample first{};
  double ns_per_tick = 1.0;
};

std::size_t ring_capacity(std::size_t requested) {
  return std::bit_ceil(std::clamp(requested, min_events, max_events));
}

void write_slot(trace_ring& r, const std::uint64_t (&words)[6]) noexcept {
  if (r.tid.load(std::memory_order_relaxed) == 0)
    r.tid.store(static_cast<int>(::syscall(SYS_gettid)), std::memory_order_relaxed);  // a label
  const std::uint64_t h = r.head.load(std::memory_order_relaxed);  // only this thread writes it
  // release: a reader that copies any word below is ordered after our earlier head stores (file comment)
  std::atomic_thread_fence(std::memory_order_release);
  trace_slot& s = r.slots[h & r.mask];
  for (int i = 0; i < 6; ++i) s.w[i].store(words[i], std::memory_order_relaxed);
  r.head.store(h + 1, std::memory_order_release);  // release: the slot's words before the new head
}

using raw_event = std::array<std::uint64_t, 6>;

// The events of one ring still intact, oldest first (file comment, "Reading while recording"); at
// most the newest `newest` of them.
void copy_ring(const trace_ring& r, std::vector<raw_event>& out, std::uint64_t newest = ~std::uint64_t{0}) {
  const std::uint64_t cap = std::min(r.mask + 1, newest);
  const std::uint64_t h1 = r.head.load(std::memory_order_acquire);  // acquire: the slots below it are written
  const std::uint64_t from = std::max(h1 > cap ? h1 - cap : 0, r.start_from);  // this start's events only
  std::vector<raw_event> copied(h1 - from);
  for (std::uint64_t i = from; i < h1; ++i)
    for (int k = 0; k < 6; ++k) copied[i - from][k] = r.slots[i & r.mask].w[k].load(std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_acquire);  // the copies before the second look at head
  const std::uint64_t h2 = r.head.load(std::memory_order_relaxed);
  const std::uint64_t intact_from = h2 + 1 > r.mask + 1 ? h2 + 1 - (r.mask + 1) : 0;  // the ring's capacity
  for (std::uint64_t i = std::max(from, intact_from); i < h1; ++i) out.push_back(copied[i - from]);
}

const char* park_words(unsigned park, unsigned wait) {
  switch (park) {
    case 1: return "yield";
    case 2:
      switch (static_cast<wait_reason>(wait)) {
        case wait_reason::receive: return "wait: receive";
        case wait_reason::sleep: return "wait: sleep";
        case wait_reason::io: return "wait: io";
        case wait_reason::blocking_call: return "wait: blocking call";
        case wait_reason::muted: return "wait: muted";
        default: return "wait";
      }
    case 3: return "exit";
    case 4: return "blocking call";
    default: return "preempted";
  }
}

const char* reason_kind_words(unsigned k) {
  switch (static_cast<exit_reason::kind>(k)) {
    case exit_reason::kind::normal: return "normal";
    case exit_reason::kind::shutdown: return "shutdown";
    case exit_reason::kind::kill: return "kill";
    case exit_reason::kind::killed: return "killed";
    case exit_reason::kind::noproc: return "noproc";
    case exit_reason::kind::exception: return "exception";
    case exit_reason::kind::max_heap_size: return "max_heap_size";
    case exit_reason::kind::user: return "";
  }
  return "";
}

// The event kinds a process's trace flags select (grove/trace.hpp, process_flags).
std::uint32_t kinds_of_flags(std::uint8_t flags) noexcept {
  namespace f = trace::process_flags;
  using trace::bit;
  std::uint32_t k = 0;
  if (flags & f::send) k |= bit(event_kind::send);
  if (flags & f::receive) k |= bit(event_kind::receive) | bit(event_kind::receive_timeout) | bit(event_kind::timer_fire);
  if (flags & f::procs)
    k |= bit(event_kind::spawn) | bit(event_kind::exit) | bit(event_kind::link) | bit(event_kind::unlink) |
         bit(event_kind::monitor) | bit(event_kind::demonitor) | bit(event_kind::down) | bit(event_kind::exit_signal);
  if (flags & f::running)
    k |= bit(event_kind::run_begin) | bit(event_kind::run_end) | bit(event_kind::steal) | bit(event_kind::wake) |
         bit(event_kind::io_wait);
  if (flags & f::annotations) k |= bit(event_kind::annotation);
  return k;
}

// The pipe's write end for the signal handler (-1: none). A lock-free atomic: safe in a handler.
std::atomic<int> dump_wake_fd{-1};

extern "C" void dump_signal_handler(int) {
  const int saved = errno;
  const int fd = dump_wake_fd.load(std::memory_order_relaxed);  // relaxed: set before the handler is installed
  if (fd >= 0) {
    const char byte = 1;
    [[maybe_unused]] const ssize_t n = ::write(fd, &byte, 1);  // full pipe: a dump is pending anyway
  }
  errno = saved;
}

// Puts the signal's old disposition back and ends the dumper thread. Caller holds signal_lock.
void uninstall_dump_signal(tracer& t) noexcept {
  if (t.dump_signal == 0) return;
  ::sigaction(t.dump_signal, &t.previous, nullptr);
  dump_wake_fd.store(-1, std::memory_order_relaxed);
  ::close(t.wake_write);  // the thread reads end-of-file and returns
  if (t.dumper.joinable()) t.dumper.join();
  ::close(t.wake_read);
  t.wake_read = t.wake_write = -1;
  t.dump_signal = 0;
}

// Installs the handler for `sig` and starts the dumper thread; an error code if it cannot. A byte
// the handler writes before the thread runs waits in the pipe.
std::error_code install_dump_signal(tracer& t, int sig) {
  if (sig <= 0 || sig >= NSIG || sig == SIGKILL || sig == SIGSTOP) return make_error_code(errc::bad_argument);
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return std::error_code(errno, std::generic_category());
  ::fcntl(fds[1], F_SETFL, O_NONBLOCK);  // the handler never blocks
  dump_wake_fd.store(fds[1], std::memory_order_relaxed);  // before the handler can run
  struct sigaction sa {};
  sa.sa_handler = &dump_signal_handler;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  if (::sigaction(sig, &sa, &t.previous) != 0) {
    const std::error_code ec(errno, std::generic_category());
    dump_wake_fd.store(-1, std::memory_order_relaxed);
    ::close(fds[0]);
    ::close(fds[1]);
    return ec;
  }
  t.dump_signal = sig;
  t.wake_read = fds[0];
  t.wake_write = fds[1];
  try {
    t.dumper = std::thread([fd = fds[0], sig] {
      char buf[64];
      for (;;) {
        const ssize_t n = ::read(fd, buf, sizeof buf);
        if (n == 0) return;  // uninstall closed the write end
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return;
        try {
          (void)trace::dump(fmt::format("signal {} ({})", sig, ::sigabbrev_np(sig) ? ::sigabbrev_np(sig) : "?"));
        } catch (...) {
          // Out of memory for the reason's text: no dump this time.
        }
      }
    });
  } catch (...) {
    uninstall_dump_signal(t);  // the old disposition back, the pipe closed
    return std::make_error_code(std::errc::not_enough_memory);
  }
  return {};
}

}  // namespace

bool traced_process_event(event_kind k, const process* p) noexcept {
  if (trace_all_kinds.load(std::memory_order_relaxed) & trace::bit(k)) return true;  // relaxed: see tracer.hpp
  return p && (kinds_of_flags(p->trace_flags.load(std::memory_order_relaxed)) & trace::bit(k)) != 0;
}

trace_ring::trace_ring(std::size_t capacity)
    : mask(ring_capacity(capacity) - 1), slots(std::make_unique<trace_slot[]>(mask + 1)) {}

void record(event_kind k, std::uint8_t arg, std::uint32_t x, std::uint64_t a, std::uint64_t b, std::uint64_t c,
            std::uint64_t d) noexcept {
  worker* w = this_worker();
  const std::uint16_t widx = w ? static_cast<std::uint16_t>(w->index) : foreign_worker;
  const std::uint64_t words[6] = {trace_timestamp(),
                                  static_cast<std::uint64_t>(k) | std::uint64_t{arg} << 8 | std::uint64_t{widx} << 16 |
                                      std::uint64_t{x} << 32,
                                  a, b, c, d};
  if (w) {
    // acquire: pairs with trace::start's release, so the ring is constructed
    if (trace_ring* r = w->trace_out.load(std::memory_order_acquire)) write_slot(*r, words);
    return;
  }
  runtime_state* rt = current_runtime();
  if (!rt) return;
  try {
    std::lock_guard<std::mutex> g(rt->tracer.foreign_lock);
    if (trace_ring* r = rt->tracer.foreign_out) write_slot(*r, words);
  } catch (...) {
    // A lock that cannot be taken (system error): the event is dropped.
  }
}

std::uint64_t intern_trace_text(std::string_view text) noexcept {
  runtime_state* rt = current_runtime();
  if (!rt) return 0;
  tracer& t = rt->tracer;
  try {
    std::string key(text);
    std::lock_guard<std::mutex> g(t.text_lock);
    if (auto it = t.text_ids.find(key); it != t.text_ids.end()) return it->second;
    if (t.texts.size() >= max_texts) return 0;  // that many different texts: later ones show their kind only
    t.texts.push_back(key);
    try {
      t.text_ids.emplace(std::move(key), t.texts.size());
    } catch (...) {
      t.texts.pop_back();
      throw;
    }
    return t.texts.size();
  } catch (...) {
    return 0;  // out of memory: the event goes without its text
  }
}

std::uint64_t intern_reason_text(const exit_reason& reason) noexcept {
  if (reason.what_kind() < exit_reason::kind::exception) return 0;
  try {
    return intern_trace_text(reason.to_string());
  } catch (...) {
    return 0;
  }
}

namespace {

// Every ring's intact events (at most the newest `newest` of each), in no order.
std::vector<raw_event> copy_rings(tracer& t, std::uint64_t newest = ~std::uint64_t{0}) {
  std::vector<raw_event> raw;
  std::lock_guard<std::mutex> g(t.lock);
  for (std::size_t i = 0; i + 1 < t.rings.size(); ++i) copy_ring(*t.rings[i], raw, newest);
  std::lock_guard<std::mutex> wg(t.foreign_lock);  // the shared ring's writers hold it
  if (t.foreign_out) copy_ring(*t.foreign_out, raw, newest);
  return raw;
}

// The events, ordered by time, message ids paired.
std::vector<trace::event> decode(tracer& t, std::vector<raw_event>& raw) {
  const timestamp_converter to_ns;
  // Sends (and timer fires) before receives at equal times: a receive never precedes its send.
  auto sends = [](const std::array<std::uint64_t, 6>& e) {
    const auto k = static_cast<event_kind>(e[1] & 0xFF);
    return k == event_kind::send || k == event_kind::timer_fire;
  };
  std::stable_sort(raw.begin(), raw.end(), [&](const auto& x, const auto& y) {
    if (x[0] != y[0]) return x[0] < y[0];
    return sends(x) && !sends(y);
  });
  std::vector<std::string> texts;
  {
    std::lock_guard<std::mutex> g(t.text_lock);
    texts = t.texts;
  }
  std::vector<trace::event> out;
  out.reserve(raw.size());
  struct sent {
    std::uint64_t id, to, type;
  };
  std::unordered_map<std::uint64_t, sent> in_flight;  // node address → the newest send of it
  std::uint64_t next_id = 0;
  for (const auto& r : raw) {
    trace::event e;
    e.kind = static_cast<event_kind>(r[1] & 0xFF);
    const unsigned arg = static_cast<unsigned>((r[1] >> 8) & 0xFF);
    const auto widx = static_cast<std::uint16_t>((r[1] >> 16) & 0xFFFF);
    const auto x = static_cast<std::uint32_t>(r[1] >> 32);
    e.time_ns = to_ns(r[0]);
    e.worker = widx == foreign_worker ? -1 : widx;
    e.process = pid::from_bits(r[2]);
    auto reason_text = [&](std::uint64_t id) {  // the text is the reason in full (exit_reason::to_string)
      const std::string* text = id && id <= texts.size() ? &texts[id - 1] : nullptr;
      return text ? *text : std::string(reason_kind_words(arg));
    };
    switch (e.kind) {
      case event_kind::spawn: e.other = pid::from_bits(r[3]); break;
      case event_kind::exit: e.detail = reason_text(r[3]); break;
      case event_kind::send:
        e.other = pid::from_bits(r[3]);
        e.message_type = r[5] ? reinterpret_cast<const detail::message_type*>(r[5])->name() : nullptr;
        e.message_id = ++next_id;
        in_flight[r[4]] = {e.message_id, r[3], r[5]};
        break;
      case event_kind::timer_fire:
        e.message_type = r[5] ? reinterpret_cast<const detail::message_type*>(r[5])->name() : nullptr;
        e.message_id = ++next_id;
        in_flight[r[4]] = {e.message_id, r[2], r[5]};
        break;
      case event_kind::receive: {
        e.message_type = r[5] ? reinterpret_cast<const detail::message_type*>(r[5])->name() : nullptr;
        e.count = x;
        e.queued = static_cast<std::uint32_t>(r[3]);
        auto it = in_flight.find(r[4]);
        if (it != in_flight.end() && it->second.to == r[2] && it->second.type == r[5]) {
          e.message_id = it->second.id;
          in_flight.erase(it);
        }
        break;
      }
      case event_kind::receive_timeout: break;
      case event_kind::run_begin: e.count = x; break;
      case event_kind::run_end: e.detail = park_words(arg & 0xF, arg >> 4); break;
      case event_kind::link:
      case event_kind::monitor:
        e.other = pid::from_bits(r[3]);
        e.outcome = static_cast<trace::signal_outcome>(arg);
        break;
      case event_kind::unlink:
      case event_kind::demonitor: e.other = pid::from_bits(r[3]); break;
      case event_kind::down:
        e.other = pid::from_bits(r[3]);
        e.detail = reason_text(r[4]);
        break;
      case event_kind::exit_signal:
        e.other = pid::from_bits(r[3]);
        e.detail = reason_text(r[4]);
        e.outcome = static_cast<trace::signal_outcome>(x);
        e.count = static_cast<std::uint32_t>(r[5]);
        break;
      case event_kind::steal:
        e.other = {};
        e.count = x;
        e.from_worker = static_cast<int>(r[3]);
        break;
      case event_kind::annotation:
        if (r[4] && r[4] <= texts.size()) e.detail = texts[r[4] - 1];
        break;
      case event_kind::wake:
        e.other = pid::from_bits(r[3]);
        e.cause = static_cast<trace::wake_cause>(arg);
        break;
      case event_kind::io_wait:
        e.count = x;
        e.detail = arg ? "writable" : "readable";
        break;
    }
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace

std::vector<trace::event> trace_snapshot(tracer& t) {
  std::vector<raw_event> raw = copy_rings(t);
  return decode(t, raw);
}

std::vector<received_message> last_received(tracer& t, pid p, std::size_t n) {
  constexpr std::uint64_t window = 4096;  // per ring: a crash report scans ~100 KiB, not the rings
  std::vector<raw_event> raw = copy_rings(t, window);
  std::erase_if(raw, [b = p.bits()](const raw_event& r) {  // keep its receives and the sends to it
    const auto k = static_cast<event_kind>(r[1] & 0xFF);
    if (k == event_kind::receive || k == event_kind::timer_fire) return r[2] != b;
    return k != event_kind::send || r[3] != b;
  });
  const std::vector<trace::event> events = decode(t, raw);
  std::unordered_map<std::uint64_t, pid> senders;  // message id → sender
  std::vector<const trace::event*> taken;
  for (const trace::event& e : events) {
    if (e.kind == event_kind::send && e.message_id) senders.emplace(e.message_id, e.process);
    if (e.kind == event_kind::receive) taken.push_back(&e);
  }
  std::vector<received_message> out;
  for (std::size_t i = taken.size() > n ? taken.size() - n : 0; i < taken.size(); ++i) {
    const trace::event& e = *taken[i];
    auto it = e.message_id ? senders.find(e.message_id) : senders.end();
    out.push_back({demangled(e.message_type), it != senders.end() ? it->second : pid(), e.time_ns});
  }
  return out;
}

void start_tracing_from_environment(tracer& t) noexcept {
  const char* path = std::getenv("GROVE_TRACE");
  if (!path || !*path) return;
  trace::options o;
  if (const char* n = std::getenv("GROVE_TRACE_BUFFER")) {
    char* end = nullptr;
    const unsigned long long v = std::strtoull(n, &end, 10);
    if (end != n && v > 0) o.events_per_worker = static_cast<std::size_t>(v);
  }
  if (const char* s = std::getenv("GROVE_TRACE_SIGNAL"); s && *s) {
    std::string_view name(s);
    if (name.starts_with("SIG")) name.remove_prefix(3);
    if (name == "USR1") o.dump_signal = SIGUSR1;
    else if (name == "USR2") o.dump_signal = SIGUSR2;
    else if (name == "HUP") o.dump_signal = SIGHUP;
    else if (name == "QUIT") o.dump_signal = SIGQUIT;
    else o.dump_signal = std::atoi(s);
  }
  try {
    t.env_path = path;
    o.dump_file = path;  // a give-up dumps there too; the file at stop has the last word
  } catch (...) {
    return;
  }
  try {
    (void)trace::start(o);
  } catch (...) {
    // Out of memory for the rings: the program runs untraced.
    t.env_path.clear();
  }
}

void finish_tracing(tracer& t) noexcept {
  trace::stop();
  try {
    std::lock_guard<std::mutex> sg(t.signal_lock);
    uninstall_dump_signal(t);  // stop did it if it found this runtime; never leave the thread behind
  } catch (...) {
  }
  if (t.env_path.empty()) return;
  try {
    auto written = trace::write_perfetto(t.env_path);
    log(log_event{written ? log_level::info : log_level::error, log_kind::trace, {}, {}, {},
                  written ? fmt::format("grove: trace of {} events written to {} (GROVE_TRACE)", *written, t.env_path)
                          : fmt::format("grove: could not write the trace to {} (GROVE_TRACE)", t.env_path)});
  } catch (...) {
  }
  t.env_path.clear();
}

}  // namespace grove::internal

namespace grove::trace {

using namespace grove::internal;

std::error_code start(const options& o) {
  runtime_state* rt = current_runtime();
  if (!rt || rt->current_phase.load(std::memory_order_acquire) != runtime_state::phase::running)
    return make_error_code(errc::not_running);
  tracer& t = rt->tracer;
  {
    // First, and outside t.lock: the dumper thread being ended may be dumping, which takes it.
    std::lock_guard<std::mutex> sg(t.signal_lock);
    if (t.dump_signal != o.dump_signal) {
      uninstall_dump_signal(t);
      if (o.dump_signal != 0) {
        if (std::error_code ec = install_dump_signal(t, o.dump_signal)) return ec;
      }
    }
  }
  (void)the_trace_clock();  // chosen before the first event
  std::lock_guard<std::mutex> g(t.lock);
  trace_mask.store(0, std::memory_order_relaxed);  // a switch: writers that still see it on write old rings
  trace_all_kinds.store(0, std::memory_order_relaxed);
  if (!t.rings.empty() && t.rings.front()->mask + 1 == ring_capacity(o.events_per_worker)) {
    // The same size: the rings stay, and what an earlier start recorded is skipped by readers
    // (start_from). No memory is added by a restart.
    std::lock_guard<std::mutex> wg(t.foreign_lock);
    for (auto& r : t.rings) r->start_from = r->head.load(std::memory_order_relaxed);  // guarded by lock
  } else {
    // Another size: new rings. The old ones are kept until the runtime ends, since a worker may be
    // writing one as we replace it (about one ring set per size asked for).
    std::vector<std::unique_ptr<trace_ring>> fresh;
    fresh.reserve(rt->workers.size() + 1);
    for (std::size_t i = 0; i <= rt->workers.size(); ++i) fresh.push_back(std::make_unique<trace_ring>(o.events_per_worker));
    t.retired.reserve(t.retired.size() + t.rings.size());  // nothing below throws
    {
      std::lock_guard<std::mutex> wg(t.foreign_lock);
      for (auto& r : t.rings) t.retired.push_back(std::move(r));
      t.rings = std::move(fresh);
      t.foreign_out = t.rings.back().get();
    }
    for (std::size_t i = 0; i < rt->workers.size(); ++i)
      rt->workers[i]->trace_out.store(t.rings[i].get(), std::memory_order_release);  // release: the ring's construction
  }
  t.dump_file = o.dump_file;
  trace_all_kinds.store(o.kinds & all_events, std::memory_order_relaxed);  // relaxed: see tracer.hpp
  trace_mask.store((o.kinds & all_events) | t.flag_kinds, std::memory_order_relaxed);  // flags outlive a start
  t.started.store(true, std::memory_order_relaxed);  // relaxed: a state flag, read by is_recording
  return {};
}

void stop() noexcept {
  if (runtime_state* rt = current_runtime()) {
    rt->tracer.started.store(false, std::memory_order_relaxed);
    try {
      std::lock_guard<std::mutex> sg(rt->tracer.signal_lock);
      uninstall_dump_signal(rt->tracer);
    } catch (...) {
      // The lock cannot be taken (a system error): the handler stays until the runtime ends.
    }
  }
  trace_mask.store(0, std::memory_order_relaxed);
  trace_all_kinds.store(0, std::memory_order_relaxed);
}

bool is_recording() noexcept {
  runtime_state* rt = current_runtime();
  return rt && rt->tracer.started.load(std::memory_order_relaxed);
}

bool is_recording(event_kind k) noexcept {
  // The mask first: off, this costs no current_process() call (pools annotate every checkout).
  return (trace_mask.load(std::memory_order_relaxed) & bit(k)) != 0 && traced_process_event(k, current_process());
}

const char* to_string(event_kind k) noexcept {
  switch (k) {
    case event_kind::spawn: return "spawn";
    case event_kind::exit: return "exit";
    case event_kind::send: return "send";
    case event_kind::receive: return "receive";
    case event_kind::receive_timeout: return "receive_timeout";
    case event_kind::run_begin: return "run_begin";
    case event_kind::run_end: return "run_end";
    case event_kind::link: return "link";
    case event_kind::unlink: return "unlink";
    case event_kind::monitor: return "monitor";
    case event_kind::demonitor: return "demonitor";
    case event_kind::down: return "down";
    case event_kind::exit_signal: return "exit_signal";
    case event_kind::steal: return "steal";
    case event_kind::annotation: return "annotation";
    case event_kind::wake: return "wake";
    case event_kind::timer_fire: return "timer_fire";
    case event_kind::io_wait: return "io_wait";
  }
  return "unknown";
}

const char* to_string(signal_outcome o) noexcept {
  switch (o) {
    case signal_outcome::none: return "none";
    case signal_outcome::noproc: return "noproc";
    case signal_outcome::ignored: return "ignored";
    case signal_outcome::trapped: return "trapped";
    case signal_outcome::exits: return "exits";
  }
  return "unknown";
}

const char* to_string(wake_cause c) noexcept {
  switch (c) {
    case wake_cause::message: return "message";
    case wake_cause::signal: return "signal";
    case wake_cause::timeout: return "timeout";
    case wake_cause::io: return "io";
    case wake_cause::blocking_call: return "blocking_call";
    case wake_cause::unmuted: return "unmuted";
  }
  return "unknown";
}

std::error_code trace_process(grove::pid target, std::uint8_t flags) {
  runtime_state* rt = current_runtime();
  if (!rt) return make_error_code(errc::not_running);
  tracer& t = rt->tracer;
  std::lock_guard<std::mutex> g(t.lock);  // against start and stop of the kinds' union
  if (!t.started.load(std::memory_order_relaxed)) return make_error_code(errc::not_running);
  process* q = rt->table.acquire(target);
  if (!q) return make_error_code(errc::noproc);
  // acquire: after the exit's fetch_or (exit_protocol.cpp): an exited process is not alive, though
  // its PCB is not yet reused.
  const bool exited = (q->control.load(std::memory_order_acquire) & ctl_exited) != 0;
  if (!exited)
    q->trace_flags.store(flags & (process_flags::all | process_flags::set_on_spawn), std::memory_order_relaxed);  // a switch
  rt->table.release(q, worker_index_for(*rt));
  if (exited) return make_error_code(errc::noproc);
  // The union only grows (flags outlive stop and start): a kind no process selects any more costs
  // the out-of-line check at its sites while tracing, and records nothing.
  t.flag_kinds |= kinds_of_flags(flags);
  trace_mask.store(trace_all_kinds.load(std::memory_order_relaxed) | t.flag_kinds, std::memory_order_relaxed);
  return {};
}

void annotate(std::string_view text) noexcept {
  if ((trace_mask.load(std::memory_order_relaxed) & bit(event_kind::annotation)) == 0) return;  // as tracing()
  process* p = current_process();
  if (!traced_process_event(event_kind::annotation, p)) return;
  record(event_kind::annotation, 0, 0, p ? p->id().bits() : 0, 0, intern_trace_text(text));
}

std::size_t dump(std::string_view why) noexcept {
  runtime_state* rt = current_runtime();
  if (!rt || !is_recording()) return 0;
  try {
    std::string path;
    {
      std::lock_guard<std::mutex> g(rt->tracer.lock);
      path = rt->tracer.dump_file;
    }
    if (path.empty()) return 0;
    const std::uint64_t now = now_ns();
    std::uint64_t last = rt->tracer.last_dump_ns.load(std::memory_order_relaxed);
    if (last != 0 && now - last < 1'000'000'000) return 0;  // one a second
    if (!rt->tracer.last_dump_ns.compare_exchange_strong(last, now, std::memory_order_relaxed)) return 0;  // another dumps
    auto written = write_perfetto(path);
    log(log_event{written ? log_level::info : log_level::error, log_kind::trace, {}, {}, {},
                  written ? fmt::format("grove: flight recorder ({} events) written to {}: {}", *written, path, why)
                          : fmt::format("grove: could not write the flight recorder to {}: {}", path, why)});
    return written ? *written : 0;
  } catch (...) {
    return 0;
  }
}

std::vector<event> snapshot() {
  runtime_state* rt = current_runtime();
  if (!rt) return {};
  return trace_snapshot(rt->tracer);
}

}  // namespace grove::trace
