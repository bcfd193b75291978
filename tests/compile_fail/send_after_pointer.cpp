// expect: a raw pointer cannot cross processes
#include <chrono>

#include <grove/timer.hpp>

void use(grove::pid to, double* reading) {
#ifdef GROVE_EXPECT_OK
  (void)grove::send_after(to, *reading, std::chrono::seconds(1));
#else
  (void)grove::send_after(to, reading, std::chrono::seconds(1));
#endif
}
