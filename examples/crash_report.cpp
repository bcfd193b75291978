// crash_report: what a crash tells you, and where a stuck process stands.
//   1. An unsupervised process throws from deep inside its code: its crash report (through Grove's
//      logger, here the default one: stderr) names the pid, its registered name, the reason, the
//      exception's type and, because this program links grove::throw_traces, the frames of the
//      throw site, innermost first.
//   2. A supervised worker crashes the same way: the supervisor's report carries the same site.
//   3. A process waits for an answer that never comes: process_info says where it waits (the
//      receive, and every caller up to its function), as Erlang's current_stacktrace does.
// The frames show function names; built with -g (CMAKE_BUILD_TYPE=RelWithDebInfo or Debug) they
// show files and lines too.
//
// Expected output (addresses differ; on stderr, the reports; on stdout, the rest):
//   grove: process <0.3.1> (order_parser) exited: exception: order line 3: quantity is empty (std::invalid_argument)
//       thrown at:
//         #0 0x... in (anonymous namespace)::parse_quantity(std::string_view, int)
//         #1 0x... in (anonymous namespace)::parse_order(std::vector<std::string> const&)
//         ...
//   supervisor orders <0.4.1>: child 'parser' <0.5.1> crashed: exception: order line 3: ...
//       thrown at:
//         #0 0x... in (anonymous namespace)::parse_quantity(std::string_view, int)
//         ...
//   3. <0.7.1> waits in:
//     #... in grove::detail::receive_node(...)
//     #... in (anonymous namespace)::wait_for_stock(grove::pid)
//     ...
#include <chrono>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include <grove/grove.hpp>
#include <grove/supervisor.hpp>

namespace {

struct go {};
struct stock_reply {};

[[gnu::noinline]] int parse_quantity(std::string_view field, int line) {
  if (field.empty()) throw std::invalid_argument(fmt::format("order line {}: quantity is empty", line));
  return std::stoi(std::string(field));
}

[[gnu::noinline]] int parse_order(const std::vector<std::string>& lines) {
  int total = 0;
  for (std::size_t i = 0; i < lines.size(); ++i) total += parse_quantity(lines[i], static_cast<int>(i + 1));
  return total;
}

const std::vector<std::string> bad_order = {"2", "5", ""};

[[gnu::noinline]] void wait_for_stock(grove::pid parent) {
  grove::send(parent, go{});
  grove::receive([](stock_reply) {});  // nobody answers
  asm volatile("");  // keeps this frame: not a tail call
}

}  // namespace

int main() {
  grove::runtime rt;
  grove::scoped_process me;
  const grove::pid self = me.pid();
  namespace sup = grove::supervisor;

  // 1. Unsupervised: the runtime's crash report. Waits until its control block is back, which comes
  // after its report.
  const std::size_t before = grove::resources_in_use().processes;
  grove::spawn([] {
    grove::register_name("order_parser", grove::self());
    parse_order(bad_order);
  });
  while (grove::resources_in_use().processes > before) std::this_thread::sleep_for(std::chrono::milliseconds(1));

  // 2. Supervised: the supervisor's report.
  grove::pid s = sup::start_link({.intensity = 0, .name = "orders"}, {sup::worker("parser", [] {
                                   grove::receive([](go) {});
                                   parse_order(bad_order);
                                 })});
  grove::trap_exit(true);
  auto children = sup::which_children(s);
  if (children && !children->empty()) grove::send((*children)[0].pid, go{});
  grove::receive([](grove::exit_signal) {});  // intensity 0: the supervisor gives up and exits

  // 3. A stuck process: where it waits.
  grove::pid waiter = grove::spawn([self] { wait_for_stock(self); });
  grove::receive([](go) {});
  while (true) {  // until it is parked in its receive
    auto summary = grove::process_summary_of(waiter);
    if (summary && summary->waiting_on == grove::wait_reason::receive) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (auto info = grove::process_info(waiter)) fmt::print("3. {} waits in:\n{}", waiter, info->stacktrace.to_string("  "));
  grove::exit(waiter, grove::exit_reason::kill());
  return 0;
}
