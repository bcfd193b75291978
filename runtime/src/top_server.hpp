// top_server.hpp: answers tools/top over a Unix-domain socket, from a thread of its own (top_server.cpp).
#pragma once

#include <memory>
#include <string>
#include <thread>

namespace grove::internal {

class top_server {
 public:
  // Listens at `path` (a stale socket file there is replaced; anything else there is an error) and
  // starts the thread. nullptr if it cannot (the reason is logged); the runtime runs on without it.
  static std::unique_ptr<top_server> start(const std::string& path);
  ~top_server();  // stops the thread, closes the socket and removes its file
  top_server(const top_server&) = delete;
  top_server& operator=(const top_server&) = delete;

 private:
  top_server(std::string path, int listen_fd, int stop_fd);
  void serve();

  std::string path_;
  int listen_fd_;
  int stop_fd_;  // an eventfd: written by the destructor
  std::thread thread_;
};

}  // namespace grove::internal
