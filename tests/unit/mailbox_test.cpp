// Unit tests for runtime/src/mailbox.hpp: the intrusive MPSC inbox (order, the stub node's
// re-insertion when the inbox empties, several producer threads against one consumer) and the owner's
// saved list (remove_after at the head, in the middle and at the tail, and appends after each).
// Nodes are real message nodes (grove::detail::make_node), freed with destroy_node.
#include "mailbox.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <thread>
#include <vector>

#include <grove/detail/message_node.hpp>

namespace {

using grove::detail::destroy_node;
using grove::detail::make_node;
using grove::detail::message_node;
using grove::detail::typed_node;
using grove::internal::inbox;
using grove::internal::saved_list;

#define GROVE_EXPECT(cond)                 \
  do {                                     \
    if (!(cond)) FAIL("expected: " #cond); \
  } while (false)

unsigned stress_scale() {
  const char* s = std::getenv("GROVE_STRESS_SCALE");
  const int v = s != nullptr ? std::atoi(s) : 1;
  return v > 0 ? static_cast<unsigned>(v) : 1u;
}

struct stamped {
  std::uint32_t producer;
  std::uint32_t seq;
};

message_node* node_of(int v) { return make_node<int>(v); }
int value_of(const message_node* n) { return static_cast<const typed_node<int>*>(n)->value; }

// Pops one node and returns its value, freeing it; -1 if the inbox gave nothing.
int pop_value(inbox& box) {
  message_node* n = box.pop();
  if (!n) return -1;
  int v = value_of(n);
  destroy_node(n);
  return v;
}

// The saved list's values, head to tail.
std::vector<int> values_of(const saved_list& l) {
  std::vector<int> out;
  for (message_node* n = l.head(); n; n = saved_list::next_of(n)) out.push_back(value_of(n));
  return out;
}

}  // namespace

TEST_CASE("an empty inbox pops nothing and says it may be empty") {
  inbox box;
  CHECK(box.pop() == nullptr);
  CHECK_FALSE(box.maybe_nonempty());
}

TEST_CASE("an inbox pops what one producer pushed in the order it was pushed") {
  inbox box;
  for (int i = 1; i <= 10; ++i) box.push(node_of(i));
  CHECK(box.maybe_nonempty());
  for (int i = 1; i <= 10; ++i) CHECK(pop_value(box) == i);
  CHECK(box.pop() == nullptr);
  CHECK_FALSE(box.maybe_nonempty());
}

TEST_CASE("an inbox that empties and fills again keeps working, whatever the last node was") {
  // Popping the last node re-inserts the stub (Vyukov's design); pushes after that must follow it.
  inbox box;
  box.push(node_of(1));
  CHECK(pop_value(box) == 1);
  CHECK(box.pop() == nullptr);
  box.push(node_of(2));
  box.push(node_of(3));
  CHECK(pop_value(box) == 2);
  box.push(node_of(4));
  CHECK(pop_value(box) == 3);
  CHECK(pop_value(box) == 4);
  CHECK(box.pop() == nullptr);
  for (int round = 0; round < 1000; ++round) {  // alternating single pushes and pops
    box.push(node_of(round));
    GROVE_EXPECT(pop_value(box) == round);
    GROVE_EXPECT(box.pop() == nullptr);
  }
  CHECK_FALSE(box.maybe_nonempty());
}

TEST_CASE("a lazy push asks for a wake-up only when the inbox was not empty: a pending node may have been hidden") {
  // Deterministic half of mailbox.hpp's push_lazily rule (the race itself is
  // tests/stress/mailbox_race_test.cpp): onto an empty inbox (it ends at the stub) no wake-up; behind
  // a node still waiting (maybe a message the owner was woken for, hidden until this link) one.
  inbox box;
  CHECK_FALSE(box.push_lazily(node_of(1)));  // a fresh inbox
  CHECK(box.push_lazily(node_of(2)));        // behind 1
  box.push(node_of(3));
  CHECK(box.push_lazily(node_of(4)));        // behind a message
  for (int i = 1; i <= 4; ++i) CHECK(pop_value(box) == i);
  CHECK(box.pop() == nullptr);
  CHECK_FALSE(box.push_lazily(node_of(5)));  // drained: the inbox ends at the stub again
  CHECK(pop_value(box) == 5);
  CHECK_FALSE(box.maybe_nonempty());
}

TEST_CASE("with several producer threads and one consumer, each producer's messages arrive in order, none lost or duplicated") {
  constexpr std::uint32_t producers = 4;
  const std::uint32_t per_producer = 50'000 * stress_scale();
  inbox box;
  std::atomic<std::uint32_t> ready{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> threads;
  for (std::uint32_t id = 0; id < producers; ++id) {
    threads.emplace_back([&, id] {
      ready.fetch_add(1);
      while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
      for (std::uint32_t seq = 1; seq <= per_producer; ++seq) box.push(make_node<stamped>(stamped{id, seq}));
    });
  }
  while (ready.load() < producers) std::this_thread::yield();
  go.store(true, std::memory_order_release);

  // The consumer: per producer, the next sequence number must be exactly one more than the last
  // (in order, nothing skipped, nothing seen twice). pop may report empty while a push is half done;
  // it then simply tries again.
  std::vector<std::uint32_t> last(producers, 0);
  std::uint64_t received = 0, out_of_order = 0, wrong_type = 0;
  const std::uint64_t expected = std::uint64_t{producers} * per_producer;
  while (received < expected) {
    message_node* n = box.pop();
    if (!n) {
      std::this_thread::yield();
      continue;
    }
    if (n->type != grove::detail::type_id<stamped>()) {
      ++wrong_type;
    } else {
      const stamped& m = static_cast<typed_node<stamped>*>(n)->value;
      if (m.producer >= producers || m.seq != last[m.producer] + 1) {
        ++out_of_order;
      } else {
        last[m.producer] = m.seq;
      }
    }
    destroy_node(n);
    ++received;
  }
  for (auto& t : threads) t.join();

  CHECK(wrong_type == 0);
  CHECK(out_of_order == 0);
  for (std::uint32_t id = 0; id < producers; ++id) CHECK(last[id] == per_producer);
  CHECK(box.pop() == nullptr);  // nothing extra once every producer has finished
  CHECK_FALSE(box.maybe_nonempty());
}

TEST_CASE("saved_list keeps arrival order and removes at the head, in the middle and at the tail") {
  saved_list l;
  CHECK(l.empty());
  CHECK(l.size() == 0);
  CHECK(l.head() == nullptr);
  CHECK(l.tail() == nullptr);
  std::vector<message_node*> nodes;
  for (int i = 1; i <= 5; ++i) {
    nodes.push_back(node_of(i));
    l.append(nodes.back());
  }
  CHECK(l.size() == 5);
  CHECK(values_of(l) == std::vector<int>{1, 2, 3, 4, 5});

  SUBCASE("removing the head makes the second node the head") {
    message_node* n = l.remove_after(nullptr);
    CHECK(n == nodes[0]);
    destroy_node(n);
    CHECK(l.head() == nodes[1]);
    CHECK(l.tail() == nodes[4]);
    CHECK(l.size() == 4);
    CHECK(values_of(l) == std::vector<int>{2, 3, 4, 5});
    l.append(node_of(6));
    CHECK(values_of(l) == std::vector<int>{2, 3, 4, 5, 6});
  }
  SUBCASE("removing from the middle links its neighbours") {
    message_node* n = l.remove_after(nodes[1]);
    CHECK(n == nodes[2]);
    destroy_node(n);
    CHECK(l.head() == nodes[0]);
    CHECK(l.tail() == nodes[4]);
    CHECK(l.size() == 4);
    CHECK(values_of(l) == std::vector<int>{1, 2, 4, 5});
    l.append(node_of(6));
    CHECK(values_of(l) == std::vector<int>{1, 2, 4, 5, 6});
  }
  SUBCASE("removing the tail makes its predecessor the tail, and the next append follows it") {
    message_node* n = l.remove_after(nodes[3]);
    CHECK(n == nodes[4]);
    destroy_node(n);
    CHECK(l.tail() == nodes[3]);
    CHECK(saved_list::next_of(nodes[3]) == nullptr);
    CHECK(l.size() == 4);
    l.append(node_of(6));
    CHECK(l.tail() != nodes[3]);
    CHECK(values_of(l) == std::vector<int>{1, 2, 3, 4, 6});
  }
  SUBCASE("removing every node from the head empties the list, and it can be filled again") {
    for (int i = 1; i <= 5; ++i) {
      message_node* n = l.remove_after(nullptr);
      CHECK(value_of(n) == i);
      destroy_node(n);
    }
    CHECK(l.empty());
    CHECK(l.size() == 0);
    CHECK(l.head() == nullptr);
    CHECK(l.tail() == nullptr);
    l.append(node_of(7));
    CHECK(l.head() == l.tail());
    CHECK(values_of(l) == std::vector<int>{7});
  }
  while (!l.empty()) destroy_node(l.remove_after(nullptr));
}

TEST_CASE("saved_list removes the only node, leaving an empty list that appends normally") {
  saved_list l;
  message_node* only = node_of(1);
  l.append(only);
  CHECK(l.remove_after(nullptr) == only);
  destroy_node(only);
  CHECK(l.empty());
  CHECK(l.tail() == nullptr);
  l.append(node_of(2));
  l.append(node_of(3));
  CHECK(values_of(l) == std::vector<int>{2, 3});
  while (!l.empty()) destroy_node(l.remove_after(nullptr));
}
