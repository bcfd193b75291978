#include "support/protoc.hpp"

#include <doctest/doctest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace grove_test {

std::string protoc_decode_raw_file(const std::string& path) {
  const std::string command = "protoc --decode_raw < '" + path + "' 2>&1";
  std::FILE* pipe = ::popen(command.c_str(), "r");
  REQUIRE_MESSAGE(pipe != nullptr, "popen failed: " << std::strerror(errno));
  std::string text;
  char chunk[4096];
  for (std::size_t n; (n = std::fread(chunk, 1, sizeof chunk, pipe)) > 0;) text.append(chunk, n);
  const int status = ::pclose(pipe);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
    FAIL("protoc not found: these tests need it (Debian: apt-get install -y protobuf-compiler; tools/setup installs it). "
         << text);
  REQUIRE_MESSAGE((WIFEXITED(status) && WEXITSTATUS(status) == 0), "protoc --decode_raw failed: " << text);
  return text;
}

std::string protoc_decode_raw(std::string_view bytes) {
  const char* dir = std::getenv("TMPDIR");
  std::string path = std::string(dir != nullptr && *dir != '\0' ? dir : "/tmp") + "/grove_protoc_XXXXXX";
  const int fd = ::mkstemp(path.data());
  REQUIRE_MESSAGE(fd >= 0, "mkstemp failed: " << std::strerror(errno));
  std::size_t written = 0;
  while (written < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + written, bytes.size() - written);
    if (n <= 0) break;
    written += static_cast<std::size_t>(n);
  }
  ::close(fd);
  if (written != bytes.size()) ::unlink(path.c_str());
  REQUIRE(written == bytes.size());
  struct unlink_at_end {
    const std::string& p;
    ~unlink_at_end() { ::unlink(p.c_str()); }
  } cleanup{path};
  return protoc_decode_raw_file(path);
}

}  // namespace grove_test
