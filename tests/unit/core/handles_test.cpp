#include <gtest/gtest.h>

#include "core/green_context.h"
#include "core/object.h"
#include "core_test_support.h"

namespace rocuda::core {
namespace {

TEST(Handles, LiveObjectsAreFoundByKind) {
  Context& context = testing::primaryContext();
  EXPECT_EQ(lookupHandle<Context>(&context), &context);
  auto stream = context.createStream(0, 0);
  ASSERT_TRUE(stream.ok());
  EXPECT_EQ(lookupHandle<Stream>(*stream), *stream);
  EXPECT_EQ(lookupHandle<Event>(*stream), nullptr) << "wrong kind must not match";
  EXPECT_EQ(lookupHandle<Context>(*stream), nullptr);
  ASSERT_TRUE(context.destroyStream(*stream).ok());
  EXPECT_EQ(lookupHandle<Stream>(*stream), nullptr) << "destroyed handles are gone";
}

TEST(Handles, ForeignPointersAreNeverObjects) {
  int local = 0;
  EXPECT_EQ(lookupHandle<Context>(&local), nullptr);
  EXPECT_EQ(lookupHandle<Stream>(nullptr), nullptr);
  EXPECT_EQ(lookupHandle<Event>(reinterpret_cast<void*>(0xdeadbeef)), nullptr);
}

TEST(ContextStack, PushPopAndSetCurrent) {
  Context& context = testing::primaryContext();
  while (popContext().context != nullptr) {
  }
  EXPECT_EQ(currentContext(), nullptr);
  setCurrentContext(&context);
  EXPECT_EQ(currentContext(), &context);
  pushContext(&context);
  EXPECT_EQ(popContext().context, &context);
  EXPECT_EQ(currentContext(), &context);
  setCurrentContext(nullptr);
  EXPECT_EQ(currentContext(), nullptr);
}

// An entry made current through a green context holds its primary context and the green context;
// forgetting the green context (its destruction) removes its entries only.
TEST(ContextStack, GreenEntries) {
  Context& context = testing::primaryContext();
  GreenContext green(context, 1);
  EXPECT_EQ(GreenContext::fromContextHandle(green.contextHandle()), &green);
  EXPECT_EQ(GreenContext::fromContextHandle(&green), nullptr);
  EXPECT_EQ(GreenContext::fromContextHandle(&context), nullptr);
  setCurrentContext(&context);
  pushContext(&context, &green);
  EXPECT_EQ(currentContext(), &context);
  EXPECT_EQ(currentGreenContext(), &green);
  pushContext(&context, &green);
  forgetGreenContext(&green);
  EXPECT_EQ(currentContext(), &context);
  EXPECT_EQ(currentGreenContext(), nullptr);
  CurrentContext popped = popContext();
  EXPECT_EQ(popped.context, &context);
  EXPECT_EQ(popped.green, nullptr);
  EXPECT_EQ(currentContext(), nullptr);
  green.destroy();
  EXPECT_TRUE(green.destroyed());
  EXPECT_EQ(GreenContext::fromContextHandle(green.contextHandle()), nullptr);
}

}  // namespace
}  // namespace rocuda::core
