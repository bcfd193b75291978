// expect: a raw pointer cannot cross processes
#include <grove/message.hpp>

void use(grove::pid to) {
  static int table[4];
#ifdef GROVE_EXPECT_OK
  grove::send(to, grove::raw{&table[0]});  // vouched for: a static outlives every receiver
#else
  grove::send(to, &table[0]);
#endif
}
