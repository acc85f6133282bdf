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

TEST(DevicePrintf, StarWidthAndPrecisionReadAnInt) {
  EXPECT_EQ(layoutOf("%*d").arguments, 2u);
  EXPECT_EQ(layoutOf("%*d").bytes, 8u);
  EXPECT_EQ(layoutOf("%*.*f").bytes, 16u);  // two ints, then the double at 8
  Arguments args;
  args.add<int32_t>(8).add<int32_t>(42).add<int32_t>(6).add<uint64_t>(0x1000);
  EXPECT_EQ(
      format("[%*d][%*s]", args.data(), args.size(), [](uint64_t) { return std::string("ab"); }),
      "[      42][    ab]");
  Arguments precision;
  precision.add<int32_t>(2).add<double>(3.14159).add<int32_t>(5);
  EXPECT_EQ(format("[%.*f] [%d]", precision.data(), precision.size(), noStrings), "[3.14] [5]");
  // As in C: a negative width is left alignment, a negative precision none.
  Arguments negative;
  negative.add<int32_t>(-4).add<int32_t>(7).add<int32_t>(-1).add<double>(0.5);
  EXPECT_EQ(format("[%*d][%.*f]", negative.data(), negative.size(), noStrings), "[7   ][0.500000]");
  // The star's int is missing from the buffer: printed as written, nothing read.
  Arguments onlyWidth;
  onlyWidth.add<int32_t>(3);
  EXPECT_EQ(format("%*d", onlyWidth.data(), onlyWidth.size(), noStrings), "%*d");
}

TEST(DevicePrintf, LongConversionsAreWhole) {
  std::string text(2000, 'x');
  Arguments args;
  args.add<uint64_t>(0x1000).add<int32_t>(7);
  std::string out = format("%s|%600d|", args.data(), args.size(), [&](uint64_t) { return text; });
  EXPECT_EQ(out, text + "|" + std::string(599, ' ') + "7|");
}

TEST(DevicePrintf, AtMostThirtyTwoArguments) {
  std::string format33;
  Arguments args;
  for (int i = 1; i <= 33; ++i) {
    format33 += "%d ";
    args.add<int32_t>(i);
  }
  Layout layout = layoutOf(format33);
  EXPECT_EQ(layout.arguments, 32u);
  EXPECT_EQ(layout.bytes, 128u);
  std::string out = format(format33, args.data(), args.size(), noStrings);
  EXPECT_EQ(out.substr(out.size() - 12), "30 31 32 %d ");
}

TEST(DevicePrintf, LengthModifiersNeverReachTheHostPrintfUnmatched) {
  Arguments args;
  args.add<double>(2.5).add<int32_t>(300).add<int64_t>(65).add<int32_t>(9);
  // %Lf is a double on the device; %hhd narrows as on the host; %lc is a character.
  EXPECT_EQ(format("%Lf %hhd %lc %1.2.3d", args.data(), args.size(), noStrings),
            "2.500000 44 A %1.2.3d");
  EXPECT_EQ(layoutOf("%1.2.3d %**d").arguments, 0u);
}

}  // namespace
}  // namespace rocuda::device_printf
