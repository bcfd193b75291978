// top_server.cpp: the runtime's side of tools/top.
//
// When runtime_config::top_socket (or GROVE_TOP_SOCKET) names a path, the runtime listens there on
// a Unix-domain socket (mode 0600: the owner only) and answers from a thread of its own, so the
// answer comes even when every worker is held by a process that never yields. Each connection
// sends one line and gets one answer, then is closed:
//   "snapshot <n> <mailbox|reductions|stack|arena|recent>\n"
// (recent: by reductions since the previous "recent" snapshot of any client, etop's view: the
// server keeps one grove::reductions_window) answered with tab-separated lines, ending with "end":
//   system   <processes> <process limit> <spawned> <dead letters> <global queue>
//   worker   <index> <run queue> <context switches> <steals> <parks> <timers fired>     (per worker)
//   process  <pid> <status> <waiting on> <mailbox> <reductions> <stack bytes> <scoped 0|1> <arena bytes> <name>
//            [<reductions in the interval>: recent only]
//            (the top n by the order; scoped: a scoped_process, a foreign thread's)
//   interval <ms>                                     (recent only: the interval those cover)
//   metric   <a sample line of the metrics page: grove_supervisor_* and grove_pool_* families>
//   end
// Everything comes from what processes and workers publish (system_info, top_processes, the
// collectors named supervisors and pools add to grove/metrics.hpp's page): nothing is stopped or
// asked. A client that sends nothing for 2 s, or more than 256 bytes, is dropped.
// Rejected: answering over the metrics endpoint only (it needs a worker to take the connection, so
// it cannot answer while every worker is busy, the moment one most wants top); TCP (a port anyone
// on the host can reach).
#include "top_server.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iterator>

#include <fmt/format.h>

#include <grove/introspection.hpp>
#include <grove/metrics.hpp>
#include <grove/logger.hpp>

namespace grove::internal {

namespace {

constexpr int client_patience_ms = 2000;
constexpr std::size_t max_command_bytes = 256;

void report(const std::string& text) noexcept {
  try {
    log(log_event{log_level::error, log_kind::top_socket, {}, {}, {}, text});
  } catch (...) {
  }
}

std::string clean(std::string s) {
  for (char& c : s)
    if (c == '\t' || c == '\n' || c == '\r') c = ' ';
  return s;
}

std::string process_line(const process_summary& p) {
  return fmt::format("process\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}", p.pid, to_string(p.status), to_string(p.waiting_on),
                     p.mailbox_length, p.reductions, p.stack_bytes, p.scoped ? 1 : 0, p.arena_bytes, clean(p.registered_name));
}

std::string answer(const std::string& command, reductions_window& window) {
  unsigned n = 20;
  char order[16] = "reductions";
  if (std::sscanf(command.c_str(), "snapshot %u %15s", &n, order) < 1) return "error\tunknown command\nend\n";
  process_order by = process_order::reductions;
  const bool recent = std::strcmp(order, "recent") == 0;
  if (std::strcmp(order, "mailbox") == 0) by = process_order::mailbox_length;
  else if (std::strcmp(order, "stack") == 0) by = process_order::stack_bytes;
  else if (std::strcmp(order, "arena") == 0) by = process_order::arena_bytes;
  else if (std::strcmp(order, "reductions") != 0 && !recent) return "error\tunknown order\nend\n";
  std::string out;
  auto o = std::back_inserter(out);
  const system_details s = system_info();
  fmt::format_to(o, "system\t{}\t{}\t{}\t{}\t{}\n", s.process_count, s.process_limit, s.spawned, s.dead_letters,
                 s.global_queue_length);
  for (std::size_t i = 0; i < s.workers.size(); ++i) {
    const worker_details& w = s.workers[i];
    fmt::format_to(o, "worker\t{}\t{}\t{}\t{}\t{}\t{}\n", i, w.run_queue_length, w.context_switches, w.steals, w.parks,
                   w.timers_fired);
  }
  if (recent) {
    for (const process_activity& a : window.top(std::min(n, 1000u)))
      fmt::format_to(o, "{}\t{}\n", process_line(a.process), a.reductions);
    fmt::format_to(o, "interval\t{}\n", std::chrono::duration_cast<std::chrono::milliseconds>(window.last_interval()).count());
  } else {
    for (const process_summary& p : top_processes(std::min(n, 1000u), by)) fmt::format_to(o, "{}\n", process_line(p));
  }
  // Named supervisors' and pools' samples, from the collectors they put on the metrics page (they
  // read only atomics: no worker is needed).
  const std::string page = metrics::prometheus_text();
  for (std::size_t at = 0; at < page.size();) {
    std::size_t end = page.find('\n', at);
    if (end == std::string::npos) end = page.size();
    const std::string_view line(page.data() + at, end - at);
    if (line.starts_with("grove_supervisor_") || line.starts_with("grove_pool_"))
      fmt::format_to(o, "metric\t{}\n", clean(std::string(line)));
    at = end + 1;
  }
  out += "end\n";
  return out;
}

// Waits for `events` on fd for up to the client's patience; false on timeout, error, or a stop.
bool wait_for(int fd, short events, int stop_fd) {
  pollfd p[2] = {{fd, events, 0}, {stop_fd, POLLIN, 0}};
  return ::poll(p, 2, client_patience_ms) > 0 && !p[1].revents && (p[0].revents & events);
}

// One client: a line in, the answer out. Never blocks the thread for long, nor a stop at all.
void serve_client(int fd, int stop_fd, reductions_window& window) {
  std::string line;
  char buf[128];
  while (line.find('\n') == std::string::npos && line.size() <= max_command_bytes) {
    if (!wait_for(fd, POLLIN, stop_fd)) return;
    const ssize_t got = ::read(fd, buf, sizeof buf);
    if (got <= 0) return;
    line.append(buf, static_cast<std::size_t>(got));
  }
  if (line.size() > max_command_bytes) return;
  std::string reply;
  try {
    reply = answer(line.substr(0, line.find('\n')), window);
  } catch (...) {
    reply = "error\tthe runtime could not answer\nend\n";
  }
  for (std::size_t at = 0; at < reply.size();) {
    if (!wait_for(fd, POLLOUT, stop_fd)) return;
    const ssize_t put = ::send(fd, reply.data() + at, reply.size() - at, MSG_NOSIGNAL);
    if (put <= 0) return;
    at += static_cast<std::size_t>(put);
  }
}

}  // namespace

std::unique_ptr<top_server> top_server::start(const std::string& path) {
  sockaddr_un addr{};
  if (path.empty() || path.size() >= sizeof addr.sun_path) {
    report(fmt::format("grove: top socket path '{}' is empty or too long; tools/top cannot attach", path));
    return nullptr;
  }
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size());
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode)) {
      report(fmt::format("grove: {} exists and is not a socket; tools/top cannot attach", path));
      return nullptr;
    }
    // A socket someone answers on (another program given the same GROVE_TOP_SOCKET) is theirs;
    // one nobody answers on is a stale file of an earlier run, replaced.
    const int probe = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const bool live = probe >= 0 && ::connect(probe, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
    if (probe >= 0) ::close(probe);
    if (live) {
      report(fmt::format("grove: another program answers on {}; tools/top cannot attach to this one", path));
      return nullptr;
    }
    ::unlink(path.c_str());
  }
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return nullptr;
  // 0600 before anyone can connect (nobody can before listen); chmod, not umask: umask is the
  // whole process's, and other threads create files.
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::chmod(path.c_str(), 0600) != 0 ||
      ::listen(fd, 16) != 0) {
    report(fmt::format("grove: cannot listen on {}: {}; tools/top cannot attach", path, std::strerror(errno)));
    ::close(fd);
    return nullptr;
  }
  const int stop = ::eventfd(0, EFD_CLOEXEC);
  if (stop < 0) {
    ::close(fd);
    ::unlink(path.c_str());
    return nullptr;
  }
  try {
    return std::unique_ptr<top_server>(new top_server(path, fd, stop));
  } catch (...) {
    ::close(fd);
    ::close(stop);
    ::unlink(path.c_str());
    return nullptr;
  }
}

top_server::top_server(std::string path, int listen_fd, int stop_fd)
    : path_(std::move(path)), listen_fd_(listen_fd), stop_fd_(stop_fd), thread_([this] { serve(); }) {}

top_server::~top_server() {
  const std::uint64_t one = 1;
  (void)!::write(stop_fd_, &one, sizeof one);
  thread_.join();
  ::close(listen_fd_);
  ::close(stop_fd_);
  ::unlink(path_.c_str());
}

void top_server::serve() {
  reductions_window window;  // "recent" snapshots: from the server's start, then from the previous one
  for (;;) {
    pollfd p[2] = {{listen_fd_, POLLIN, 0}, {stop_fd_, POLLIN, 0}};
    if (::poll(p, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (p[1].revents) return;
    if (!(p[0].revents & POLLIN)) continue;
    const int c = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (c < 0) {
      // Out of fds (EMFILE) or the like: the connection stays queued; retry in 100 ms, not in a spin.
      pollfd s{stop_fd_, POLLIN, 0};
      if (::poll(&s, 1, 100) > 0) return;
      continue;
    }
    serve_client(c, stop_fd_, window);
    ::close(c);
  }
}

}  // namespace grove::internal
