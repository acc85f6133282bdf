// A first-in first-out queue over one vector that keeps its storage: std::deque allocates and
// frees a block every few elements, and when one thread pushes and another pops (a stream's
// queue) every such free is another thread's allocation, which contends for the C library's arena
// lock with that thread's next allocation.
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

namespace rocuda::support {

template <class T>
class Fifo {
 public:
  bool empty() const { return head_ == items_.size(); }
  std::size_t size() const { return items_.size() - head_; }
  T& front() { return items_[head_]; }

  void push_back(T item) {
    // Popped elements are reused once they are the larger part: pushing stays amortised O(1).
    if (head_ > 0 && head_ >= items_.size() / 2) {
      items_.erase(items_.begin(), items_.begin() + static_cast<std::ptrdiff_t>(head_));
      head_ = 0;
    }
    items_.push_back(std::move(item));
  }

  void pop_front() {
    items_[head_] = T{};  // release what the element holds now, not at the next compaction
    if (++head_ == items_.size()) {
      items_.clear();  // keeps the capacity
      head_ = 0;
    }
  }

 private:
  std::vector<T> items_;
  std::size_t head_ = 0;
};

}  // namespace rocuda::support
