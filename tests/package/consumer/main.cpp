// A program that uses an installed Grove through find_package(grove): built by check_install.cmake.
#include <grove/grove.hpp>
int main() {
  grove::runtime rt({.workers = 2});
  grove::scoped_process me;
  auto self = me.pid();
  grove::spawn([self] { grove::send(self, 42); });
  int v = grove::receive([](int x) { return x; });
  fmt::print("got {}\n", v);
  return v == 42 ? 0 : 1;
}
