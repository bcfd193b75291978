// Uses grove::runtime alone, as an application that found it with find_package or pkg-config.
#include <cstdio>

#include <grove/grove.hpp>

int main() {
  grove::runtime rt({.workers = 2});
  grove::scoped_process me;
  const grove::pid self = me.pid();
  grove::spawn([self] { grove::send(self, 42); });
  const int v = grove::receive([](int x) { return x; });
  // A message made inside the library (a down) matches the application's handler: one type
  // identity across the library boundary, shared libraries included.
  const grove::pid gone = grove::spawn([] {});
  auto m = grove::monitor(gone);
  const bool down = grove::receive([&](const grove::down& d) { return d.ref == m; });
  std::printf("runtime: got %d, down %s\n", v, down ? "yes" : "no");
  return v == 42 && down ? 0 : 1;
}
