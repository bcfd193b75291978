// expect: two clauses return types with no common type
// expect: receive_results_have_no_common_type<int, std::[^>]*basic_string<char
#include <string>

#include <grove/message.hpp>

void use() {
#ifdef GROVE_EXPECT_OK
  long r = grove::receive([](int n) { return n; }, [](long n) { return n; });  // common type: long
  (void)r;
#else
  grove::receive([](int n) { return n; }, [](double) { return std::string("x"); });
#endif
}
