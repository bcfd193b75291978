// Uses grove::dist alone: an Erlang term through the external format and back, without a node.
#include <cstdio>

#include <grove/dist/node.hpp>
#include <grove/grove.hpp>
#include <grove/term.hpp>

int main() {
  grove::runtime rt({.workers = 2});
  const grove::term t = grove::term::tuple({grove::atom("hello"), grove::term::binary("dist"), 42});
  const grove::term back = grove::binary_to_term(grove::term_to_binary(t));
  std::printf("dist: %s, alive %d\n", back.to_string().c_str(), grove::dist::is_alive() ? 1 : 0);
  return back == t && !grove::dist::is_alive() ? 0 : 1;
}
