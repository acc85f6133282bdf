#include "support/fiber.h"

#include <gtest/gtest.h>

#include <vector>

namespace rocuda {
namespace {

struct Scheduler {
  Fiber main;
  std::vector<Fiber> fibers = std::vector<Fiber>(4);
  std::vector<int> trace;
  int finished = 0;
};

struct FiberArgs {
  Scheduler* scheduler;
  int index;
};

void body(void* argument) {
  auto* args = static_cast<FiberArgs*>(argument);
  Scheduler& s = *args->scheduler;
  double value = args->index + 0.5;  // live across switches: callee-saved state must survive
  for (int step = 0; step < 3; ++step) {
    s.trace.push_back(args->index * 10 + step);
    Fiber::switchTo(s.fibers[args->index], s.main);
    value *= 2;
  }
  EXPECT_DOUBLE_EQ(value, (args->index + 0.5) * 8);
  ++s.finished;
  Fiber::switchTo(s.fibers[args->index], s.main);
}

TEST(Fiber, RoundRobinInterleavesAndPreservesState) {
  Scheduler s;
  std::vector<FiberArgs> args;
  for (int i = 0; i < 4; ++i) args.push_back({&s, i});
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(s.fibers[i].prepare(64 * 1024, body, &args[i]));
  for (int round = 0; round < 4; ++round)
    for (int i = 0; i < 4; ++i) Fiber::switchTo(s.main, s.fibers[i]);
  EXPECT_EQ(s.finished, 4);
  std::vector<int> expected;
  for (int step = 0; step < 3; ++step)
    for (int i = 0; i < 4; ++i) expected.push_back(i * 10 + step);
  EXPECT_EQ(s.trace, expected);
}

TEST(Fiber, StacksAreReusedAfterPrepareAgain) {
  Scheduler s;
  std::vector<FiberArgs> args;
  for (int i = 0; i < 4; ++i) args.push_back({&s, i});
  for (int run = 0; run < 3; ++run) {
    s.finished = 0;
    s.trace.clear();
    for (int i = 0; i < 4; ++i) ASSERT_TRUE(s.fibers[i].prepare(64 * 1024, body, &args[i]));
    for (int round = 0; round < 4; ++round)
      for (int i = 0; i < 4; ++i) Fiber::switchTo(s.main, s.fibers[i]);
    EXPECT_EQ(s.finished, 4);
  }
}

}  // namespace
}  // namespace rocuda
