// grove/file.hpp: files for processes, read and written on the runtime's blocking threads.
//
//   auto text = grove::file::read_all("/etc/hostname");                  // result<std::string>
//   if (auto ec = grove::file::write_all("/tmp/state", data, {.sync = true})) ...;
//   auto log = grove::file::open("/tmp/app.log", grove::file::append).value();
//   log.write("started\n");
//   log.sync();                                                           // fsync
//
// Every call that touches the disk runs on a blocking thread (grove/blocking.hpp) while the calling
// process parks, so a slow disk (a page-cache flush, an NFS mount) holds one of
// runtime_config::blocking_threads and never a worker: the other processes and every timer go on.
// Readiness cannot do this: epoll refuses regular files (grove/io.hpp), which are always "ready",
// and read(2) on one blocks in the kernel. read_all and write_all do their whole job (open, the
// reads or writes, fsync, close) in one trip to a blocking thread.
//
// Errors are std::error_codes, errno in std::generic_category (ENOENT, EACCES, ENOSPC, EISDIR, ...);
// a read past max_bytes is EFBIG. As with run_blocking, a disk call cannot be interrupted: a kill
// that comes meanwhile takes effect when the call returns, and the file is closed as the process
// unwinds. A file owns its fd (move-only; resources_in_use().fds counts it) and closes it when
// destroyed; close() reports close(2)'s error, which some file systems use for deferred write
// errors. From a foreign thread the calls run on that thread; they need a running runtime only
// from a process.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <string>
#include <string_view>
#include <system_error>

#include <grove/errc.hpp>

#include <grove/detail/visibility.hpp>
GROVE_PUBLIC_BEGIN

namespace grove {

class file {
 public:
  enum mode {
    read_only,       // O_RDONLY
    write_truncate,  // O_WRONLY | O_CREAT | O_TRUNC, 0644
    append,          // O_WRONLY | O_CREAT | O_APPEND, 0644
    read_write,      // O_RDWR | O_CREAT, 0644
  };
  static result<file> open(const std::filesystem::path& path, mode m = read_only);

  file() noexcept = default;
  ~file();
  file(file&& o) noexcept;
  file& operator=(file&& o) noexcept;
  file(const file&) = delete;
  file& operator=(const file&) = delete;

  // Reads at most n bytes at the file position (0: end of file), or at `offset` (pread; the
  // position does not move).
  result<std::size_t> read(void* buf, std::size_t n);
  result<std::size_t> read_at(std::uint64_t offset, void* buf, std::size_t n);
  // Writes all of data at the file position (the end, for append), or at `offset` (pwrite).
  std::error_code write(std::string_view data);
  std::error_code write_at(std::uint64_t offset, std::string_view data);
  std::error_code sync();       // fsync: data and metadata reach the disk
  std::error_code sync_data();  // fdatasync: the data, and the metadata needed to read it back
  result<std::uint64_t> size() const;
  // Closes the fd now and says whether close(2) failed; a closed file's calls return EBADF.
  std::error_code close();

  explicit operator bool() const noexcept { return fd_ >= 0; }
  int native_handle() const noexcept { return fd_; }

  // The whole file, if it is at most max_bytes long (else EFBIG).
  static result<std::string> read_all(const std::filesystem::path& path,
                                      std::size_t max_bytes = std::numeric_limits<std::size_t>::max());
  struct write_options {
    bool append = false;  // add to the end instead of replacing the contents
    bool sync = false;    // fsync before closing: the data is on the disk when write_all returns
  };
  static std::error_code write_all(const std::filesystem::path& path, std::string_view data, write_options o);
  static std::error_code write_all(const std::filesystem::path& path, std::string_view data) { return write_all(path, data, {}); }

 private:
  explicit file(int fd) noexcept;
  void release() noexcept;  // closes without offloading (the destructor, move-assignment)
  int fd_ = -1;
};

}  // namespace grove

GROVE_PUBLIC_END
