// grove/detail/message_node.hpp: how a message sits in a mailbox. Internal to Grove; included by the
// templates of message.hpp. Not part of the API.
//
// A message is one heap node: an intrusive link, a pointer to its type's descriptor, then the value.
// The descriptor's address is the type's identity (no RTTI needed); signals (links, exits, monitors)
// use the same node with descriptors marked as signals, so messages and signals from one sender stay
// in one ordered queue.
#pragma once

#include <atomic>
#include <cstddef>
#include <new>
#include <type_traits>
#include <typeinfo>
#include <utility>

#include <grove/detail/visibility.hpp>
GROVE_PUBLIC_BEGIN

namespace grove::detail {

struct message_node;

struct message_type {
  const char* (*name)() noexcept;            // the C++ type's name (typeid), for diagnostics
  void (*destroy)(message_node*) noexcept;   // runs the value's destructor and frees the node
  bool is_signal;                            // signals are handled by the runtime, never matched by receive
};

struct message_node {
  std::atomic<message_node*> next{nullptr};  // shared: set by the next sender (mailbox.hpp argues the orders)
  const message_type* type = nullptr;        // immutable after construction
};

// Allocation of nodes goes through these two, so the allocator is chosen in one place.
void* allocate_node(std::size_t bytes, std::size_t align);
void free_node(void* p, std::size_t bytes, std::size_t align) noexcept;

template <class T>
struct typed_node final : message_node {
  T value;
  template <class... A>
  explicit typed_node(A&&... a) : value(std::forward<A>(a)...) {}
};

template <class T>
void destroy_typed(message_node* n) noexcept {
  auto* t = static_cast<typed_node<T>*>(n);
  t->~typed_node<T>();
  free_node(t, sizeof(typed_node<T>), alignof(typed_node<T>));
}

template <class T>
const char* type_name_of() noexcept {
  return typeid(T).name();
}

// constexpr, so the descriptor exists before any dynamic initialisation runs.
template <class T>
inline constexpr message_type message_type_of{&type_name_of<T>, &destroy_typed<T>, false};

template <class T>
const message_type* type_id() noexcept {
  return &message_type_of<T>;
}

template <class T, class... A>
message_node* make_node(A&&... a) {
  void* mem = allocate_node(sizeof(typed_node<T>), alignof(typed_node<T>));
  try {
    auto* n = ::new (mem) typed_node<T>(std::forward<A>(a)...);
    n->type = type_id<T>();
    return n;
  } catch (...) {
    free_node(mem, sizeof(typed_node<T>), alignof(typed_node<T>));
    throw;
  }
}

inline void destroy_node(message_node* n) noexcept { n->type->destroy(n); }

// Owns a node taken out of a mailbox until the handler is done with it.
struct node_owner {
  message_node* node;
  explicit node_owner(message_node* n) noexcept : node(n) {}
  node_owner(const node_owner&) = delete;
  node_owner& operator=(const node_owner&) = delete;
  ~node_owner() { if (node) destroy_node(node); }
  message_node* release() noexcept { return std::exchange(node, nullptr); }  // hands the node on
};

}  // namespace grove::detail

GROVE_PUBLIC_END
