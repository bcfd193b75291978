// perfetto_encoder_probe: what runtime/src/perfetto_encoder.hpp's COST line says: 10^6 slice_begin
// (one int annotation, one flow id, a category) + slice_end pairs into a grown buffer, best of 5, and
// the size of the same events in the JSON trace event format.
//   build/release/bench/grove/perfetto_encoder_probe
#include "perfetto_encoder.hpp"
#include <chrono>
#include <cstdio>
#include <string>
using namespace grove::internal;
int main() {
  constexpr int pairs = 1'000'000;
  perfetto_encoder e(1);
  e.process_track(1, 4242, "grove");
  e.thread_track(2, 4242, 4243, "worker 0");
  double best = 1e9; std::size_t bytes = 0;
  for (int round = 0; round < 5; ++round) {
    e.clear_bytes();
    const auto t0 = std::chrono::steady_clock::now();
    std::uint64_t ts = 1'000'000'000'000;
    for (int i = 0; i < pairs; ++i) {
      const std::uint64_t flow[] = {static_cast<std::uint64_t>(i)};
      const annotation args[] = {{"pid", std::int64_t{i}}};
      e.slice_begin(2, ts, "run", {.category = "sched", .annotations = args, .flow_ids = flow});
      ts += 1500;
      e.slice_end(2, ts);
      ts += 700;
    }
    const auto t1 = std::chrono::steady_clock::now();
    const double ns = std::chrono::duration<double, std::nano>(t1 - t0).count() / (2.0 * pairs);
    if (ns < best) best = ns;
    bytes = e.bytes().size();
  }
  // The same events in the JSON trace event format (flow as an "s" event bound to the slice).
  std::string json = "[";
  char line[256];
  std::uint64_t ts = 1'000'000'000'000;
  for (int i = 0; i < pairs; ++i) {
    int n = std::snprintf(line, sizeof line,
        "{\"name\":\"run\",\"cat\":\"sched\",\"ph\":\"B\",\"ts\":%.3f,\"pid\":4242,\"tid\":4243,\"args\":{\"pid\":%d}},\n"
        "{\"name\":\"run\",\"cat\":\"sched\",\"ph\":\"s\",\"id\":%d,\"ts\":%.3f,\"pid\":4242,\"tid\":4243},\n",
        ts / 1000.0, i, i, ts / 1000.0);
    json.append(line, n); ts += 1500;
    n = std::snprintf(line, sizeof line, "{\"ph\":\"E\",\"ts\":%.3f,\"pid\":4242,\"tid\":4243},\n", ts / 1000.0);
    json.append(line, n); ts += 700;
  }
  std::printf("%.1f ns/event (best of 5), %.1f bytes/event protobuf, %.1f bytes/event JSON (%.1fx)\n", best,
              bytes / (2.0 * pairs), json.size() / (2.0 * pairs), double(json.size()) / bytes);
}
