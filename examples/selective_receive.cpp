// selective_receive: how receive picks messages. A process finds nine messages waiting and takes
// them out of order: the last one sent first (it is the only one of its type), then only the strings,
// then the ints, which stayed in the mailbox in the order they came; a guard picks the first int above
// 10, leaving the others; after(0) polls an empty mailbox without waiting; and after(50 ms) gives up
// when nothing arrives.
//
// Expected output:
//   strings first: "apple" "pear"
//   then the ints, still in order: 1 2 3
//   the guard takes the first int above 10: 12
//   the others stay, in order: 5 7
//   after(0) on an empty mailbox: nothing waiting
//   after(50 ms): no message in time
#include <chrono>
#include <string>

#include <fmt/format.h>

#include <grove/grove.hpp>

using namespace std::chrono_literals;

namespace {
struct start {};
struct done {};
}  // namespace

int main() {
  grove::runtime rt;
  grove::scoped_process me;
  const grove::pid main = me.pid();

  const grove::pid reader = grove::spawn([main] {
    grove::receive([](start) {});  // sent last: every other message is in the mailbox by now

    // Only strings match: the ints are skipped, and stay.
    std::string a = grove::receive([](std::string s) { return s; });
    std::string b = grove::receive([](std::string s) { return s; });
    fmt::print("strings first: \"{}\" \"{}\"\n", a, b);
    int x = grove::receive([](int n) { return n; });
    int y = grove::receive([](int n) { return n; });
    int z = grove::receive([](int n) { return n; });
    fmt::print("then the ints, still in order: {} {} {}\n", x, y, z);

    // A guard: the oldest int above 10 is taken; the smaller ones wait.
    int big = grove::receive(grove::when([](int n) { return n > 10; }, [](int n) { return n; }));
    fmt::print("the guard takes the first int above 10: {}\n", big);
    int first = grove::receive([](int n) { return n; });
    int second = grove::receive([](int n) { return n; });
    fmt::print("the others stay, in order: {} {}\n", first, second);

    // after(0) polls: it returns at once if nothing matches.
    std::string polled = grove::receive([](int n) { return fmt::format("got {}", n); },
                                        grove::after(0ms, [] { return std::string("nothing waiting"); }));
    fmt::print("after(0) on an empty mailbox: {}\n", polled);

    // A timeout: nothing arrives within 50 ms.
    std::string waited = grove::receive([](int n) { return fmt::format("got {}", n); },
                                        grove::after(50ms, [] { return std::string("no message in time"); }));
    fmt::print("after(50 ms): {}\n", waited);
    grove::send(main, done{});
  });

  grove::send(reader, 1);
  grove::send(reader, std::string("apple"));
  grove::send(reader, 2);
  grove::send(reader, std::string("pear"));
  grove::send(reader, 3);
  grove::send(reader, 5);
  grove::send(reader, 12);
  grove::send(reader, 7);
  grove::send(reader, start{});  // the last one sent, but the first one taken
  grove::receive([](done) {});
  return 0;
}
