// The aggregator over real sockets (examples/http_aggregator.hpp) in short phases, asserting its
// shape with generous margins, as tests/services/aggregator_test.cpp does in-process.
#include <doctest/doctest.h>

#include "http/helpers.hpp"

#include "../../examples/http_aggregator.hpp"

namespace agg = http_aggregator;
namespace demo = aggregator_demo;

TEST_CASE("the aggregator over HTTP has the expected shape in every phase, and only the retry phase retries") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  // Half the demo's times (100 ms backends, 650 ms degraded, a 600 ms deadline), 3 s per phase.
  std::vector<demo::phase_result> r;
  const auto phases = agg::phases(std::chrono::seconds(3), 10, 0.5);
  for (const auto& p : phases) {
    r.push_back(agg::run_phase(p));
    MESSAGE(agg::format(p, r.back()));
  }
  for (const auto& p : r) {
    CHECK(p.requests >= 10);
    CHECK(p.errors == 0);  // the aggregator always answers, in full or in part, over HTTP
    CHECK(p.full + p.partial == p.requests);
    for (int b = 0; b < demo::backend_count; ++b) CHECK(p.calls_to(b) == p.requests);
    CHECK(p.percentile(100) < 5000);  // every answer well inside the clients' 5 s: the 600 ms deadline holds
  }
  const auto &a = r[0], &b = r[1], &c = r[2], &d = r[3];
  CHECK(a.calls[0][3] + a.calls[1][3] + a.calls[2][3] > 0);  // A: overloaded backends answer 503
  CHECK(b.miss_share(1) > 0.5);                             // B: the shared pool starves first and third too
  CHECK(b.miss_share(0) + b.miss_share(2) > 0.2);
  CHECK(c.miss_share(1) > 0.5);                             // C: only second misses
  CHECK(c.miss_share(0) < 0.25);
  CHECK(c.miss_share(2) < 0.25);
  CHECK(a.retries == 0);
  CHECK(b.retries == 0);
  CHECK(c.retries == 0);
  CHECK(d.retries > 0);                                     // D: second's 503s retried, and counted
  CHECK(d.miss_share(1) < 0.5);
  CHECK(d.full > 0);
}
