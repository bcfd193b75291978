// file.cpp: grove::file (grove/file.hpp has the contract). Each call is one run_blocking around the
// plain syscalls, retried on EINTR and, for writes, until every byte is written.
#include <grove/file.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

#include <grove/blocking.hpp>

#include "resources.hpp"

namespace grove {

using internal::count_down;
using internal::count_up;
using internal::resources;

namespace {

std::error_code errno_code(int e) { return {e, std::generic_category()}; }
std::error_code last_error() { return errno_code(errno); }

int open_flags(file::mode m) {
  switch (m) {
    case file::read_only: return O_RDONLY;
    case file::write_truncate: return O_WRONLY | O_CREAT | O_TRUNC;
    case file::append: return O_WRONLY | O_CREAT | O_APPEND;
    case file::read_write: return O_RDWR | O_CREAT;
  }
  return O_RDONLY;
}

int open_fd(const std::filesystem::path& path, int flags) {
  int fd;
  do fd = ::open(path.c_str(), flags | O_CLOEXEC, 0644);
  while (fd < 0 && errno == EINTR);
  return fd;
}

// Writes all of data at the position (offset < 0) or at offset. Runs on a blocking thread.
std::error_code write_fully(int fd, std::string_view data, std::int64_t offset) {
  const char* p = data.data();
  std::size_t left = data.size();
  while (left > 0) {
    const ssize_t n = offset < 0 ? ::write(fd, p, left) : ::pwrite(fd, p, left, offset);
    if (n < 0) {
      if (errno == EINTR) continue;
      return last_error();
    }
    p += n;
    left -= static_cast<std::size_t>(n);
    if (offset >= 0) offset += n;
  }
  return {};
}

result<std::size_t> read_once(int fd, void* buf, std::size_t n, std::int64_t offset) {
  for (;;) {
    const ssize_t got = offset < 0 ? ::read(fd, buf, n) : ::pread(fd, buf, n, offset);
    if (got >= 0) return static_cast<std::size_t>(got);
    if (errno != EINTR) return last_error();
  }
}

}  // namespace

file::file(int fd) noexcept : fd_(fd) { count_up(resources().fds); }
file::~file() { release(); }
file::file(file&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
file& file::operator=(file&& o) noexcept {
  if (this != &o) {
    release();
    fd_ = std::exchange(o.fd_, -1);
  }
  return *this;
}

void file::release() noexcept {
  if (fd_ < 0) return;
  ::close(fd_);  // after close(2) the fd is gone whatever it returns (EINTR included, on Linux)
  fd_ = -1;
  count_down(resources().fds);
}

result<file> file::open(const std::filesystem::path& path, mode m) {
  // errno is the blocking thread's: read it there.
  const auto [fd, e] = run_blocking([&] {
    const int fd = open_fd(path, open_flags(m));
    return std::pair{fd, fd < 0 ? errno : 0};
  });
  if (fd < 0) return errno_code(e);
  return file(fd);
}

result<std::size_t> file::read(void* buf, std::size_t n) {
  if (fd_ < 0) return errno_code(EBADF);
  return run_blocking([&] { return read_once(fd_, buf, n, -1); });
}

result<std::size_t> file::read_at(std::uint64_t offset, void* buf, std::size_t n) {
  if (fd_ < 0) return errno_code(EBADF);
  if (offset > static_cast<std::uint64_t>(std::numeric_limits<off_t>::max())) return errno_code(EINVAL);
  return run_blocking([&] { return read_once(fd_, buf, n, static_cast<std::int64_t>(offset)); });
}

std::error_code file::write(std::string_view data) {
  if (fd_ < 0) return errno_code(EBADF);
  return run_blocking([&] { return write_fully(fd_, data, -1); });
}

std::error_code file::write_at(std::uint64_t offset, std::string_view data) {
  if (fd_ < 0) return errno_code(EBADF);
  if (offset > static_cast<std::uint64_t>(std::numeric_limits<off_t>::max())) return errno_code(EINVAL);
  return run_blocking([&] { return write_fully(fd_, data, static_cast<std::int64_t>(offset)); });
}

std::error_code file::sync() {
  if (fd_ < 0) return errno_code(EBADF);
  return run_blocking([&] { return ::fsync(fd_) == 0 ? std::error_code{} : last_error(); });
}

std::error_code file::sync_data() {
  if (fd_ < 0) return errno_code(EBADF);
  return run_blocking([&] { return ::fdatasync(fd_) == 0 ? std::error_code{} : last_error(); });
}

result<std::uint64_t> file::size() const {
  if (fd_ < 0) return errno_code(EBADF);
  struct stat st{};
  if (::fstat(fd_, &st) != 0) return last_error();  // metadata the kernel holds: does not wait for the disk
  return static_cast<std::uint64_t>(st.st_size);
}

std::error_code file::close() {
  if (fd_ < 0) return errno_code(EBADF);
  const int fd = std::exchange(fd_, -1);
  count_down(resources().fds);
  return run_blocking([fd] { return ::close(fd) == 0 || errno == EINTR ? std::error_code{} : last_error(); });
}

result<std::string> file::read_all(const std::filesystem::path& path, std::size_t max_bytes) {
  return run_blocking([&]() -> result<std::string> {
    const int fd = open_fd(path, O_RDONLY);
    if (fd < 0) return last_error();
    struct closer {
      int fd;
      ~closer() { ::close(fd); }
    } c{fd};
    struct stat st{};
    if (::fstat(fd, &st) != 0) return last_error();
    if (S_ISDIR(st.st_mode)) return errno_code(EISDIR);
    std::string out;
    // The size is a hint: a file may grow or shrink meanwhile, and /proc files say 0.
    if (st.st_size > 0 && static_cast<std::uint64_t>(st.st_size) <= max_bytes) out.reserve(static_cast<std::size_t>(st.st_size));
    char chunk[64 * 1024];
    for (;;) {
      auto n = read_once(fd, chunk, sizeof chunk, -1);
      if (!n) return n.error();
      if (*n == 0) return out;
      if (*n > max_bytes - out.size()) return errno_code(EFBIG);
      out.append(chunk, *n);
    }
  });
}

std::error_code file::write_all(const std::filesystem::path& path, std::string_view data, write_options o) {
  return run_blocking([&]() -> std::error_code {
    const int fd = open_fd(path, O_WRONLY | O_CREAT | (o.append ? O_APPEND : O_TRUNC));
    if (fd < 0) return last_error();
    std::error_code ec = write_fully(fd, data, -1);
    if (!ec && o.sync && ::fsync(fd) != 0) ec = last_error();
    if (::close(fd) != 0 && !ec && errno != EINTR) ec = last_error();
    return ec;
  });
}

}  // namespace grove
