// Fibers: cooperative execution contexts on their own stacks. The CPU device runs each CUDA
// thread of a block that uses barriers as a fiber, switching at every barrier, so that all threads
// of the block reach the barrier before any continues.
#pragma once

#include <cstddef>

namespace rocuda {

class Fiber {
 public:
  using Entry = void (*)(void* argument);

  Fiber() = default;
  ~Fiber();
  Fiber(const Fiber&) = delete;
  Fiber& operator=(const Fiber&) = delete;

  // Prepare to run entry(argument) on this fiber's stack (allocated once, reused). The entry must
  // never return: it ends by switching away for the last time.
  bool prepare(size_t stackBytes, Entry entry, void* argument);

  // Save the running context in `from` and continue `to` where it left off.
  static void switchTo(Fiber& from, Fiber& to);

  // The fiber's stack (null before the first prepare): memcheck accepts addresses on it.
  const void* stack() const { return stack_; }
  size_t stackBytes() const { return stackBytes_; }

 private:
  bool reserveStack(size_t stackBytes);

  void* stack_ = nullptr;
  size_t stackBytes_ = 0;
  void* context_ = nullptr;  // saved stack pointer (x86-64) or ucontext_t*
};

}  // namespace rocuda
