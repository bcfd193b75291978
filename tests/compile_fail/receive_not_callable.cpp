// expect: a clause is not callable
#include <grove/message.hpp>

struct ping {};

void use() {
#ifdef GROVE_EXPECT_OK
  grove::receive([](ping) {});
#else
  grove::receive(ping{});
#endif
}
