// CUDA's device printf: the argument layout a format reads and the text it prints.
#include "support/device_printf.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

namespace rocuda::device_printf {
namespace {

// An argument buffer as a kernel builds it: each value at its natural alignment.
class Arguments {
 public:
  template <typename T>
  Arguments& add(T value) {
    size_t at = (bytes_.size() + sizeof(T) - 1) / sizeof(T) * sizeof(T);
    bytes_.resize(at + sizeof(T));
    std::memcpy(bytes_.data() + at, &value, sizeof(T));
    return *this;
  }
  const uint8_t* data() const { return bytes_.data(); }
  size_t size() const { return bytes_.size(); }

 private:
  std::vector<uint8_t> bytes_;
};

std::string noStrings(uint64_t) { return "?"; }

TEST(DevicePrintf, LayoutFollowsCudasPromotions) {
  EXPECT_EQ(layoutOf("plain text").arguments, 0u);
  EXPECT_EQ(layoutOf("plain text").bytes, 0u);
  EXPECT_EQ(layoutOf("100%% sure").arguments, 0u);
  // int (4), then double aligned to 8, then a 64-bit integer and a string pointer.
  Layout mixed = layoutOf("%d %f %lld %s\n");
  EXPECT_EQ(mixed.arguments, 4u);
  EXPECT_EQ(mixed.bytes, 32u);
  EXPECT_EQ(layoutOf("%c%hd%x").bytes, 12u);
  EXPECT_EQ(layoutOf("%zu %p").bytes, 16u);
  EXPECT_EQ(layoutOf("%-08.3f|%+5d").bytes, 12u);
  // An unknown conversion reads nothing; a lone '%' at the end is text.
  EXPECT_EQ(layoutOf("%y %d %").arguments, 1u);
}

TEST(DevicePrintf, FormatsLikeTheHostPrintf) {
  Arguments args;
  args.add<int32_t>(-42).add<double>(3.5).add<int64_t>(1LL << 40).add<uint64_t>(0x1000);
  std::string text = format("%d %.2f %lld %s|%5s|%%\n", args.data(), args.size(),
                            [](uint64_t address) { return address == 0x1000 ? "hi" : "?"; });
  // The fifth conversion has no argument left in the buffer: printed as written.
  EXPECT_EQ(text, "-42 3.50 1099511627776 hi|%5s|%\n");
  Arguments small;
  small.add<int32_t>('A').add<int32_t>(0xbeef).add<int32_t>(-1);
  EXPECT_EQ(format("%c %#x %u", small.data(), small.size(), noStrings), "A 0xbeef 4294967295");
  Arguments wide;
  wide.add<int64_t>(-5).add<uint64_t>(18446744073709551615ull);
  EXPECT_EQ(format("%ld %lu", wide.data(), wide.size(), noStrings), "-5 18446744073709551615");
  Arguments null;
  null.add<uint64_t>(0);
  EXPECT_EQ(format("[%s]", null.data(), null.size(), noStrings), "[(null)]");
  EXPECT_EQ(format("%y and %", nullptr, 0, noStrings), "%y and %");
}

}  // namespace
}  // namespace rocuda::device_printf
