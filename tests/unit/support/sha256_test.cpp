#include "support/sha256.h"

#include <gtest/gtest.h>

#include <string>

namespace rocuda {
namespace {

std::string hexOf(std::string_view text) {
  return Sha256::hex(Sha256::digest(text.data(), text.size()));
}

// FIPS 180-4 example vectors.
TEST(Sha256, KnownAnswers) {
  EXPECT_EQ(hexOf(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(hexOf("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(hexOf("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

TEST(Sha256, MillionAsInPieces) {
  Sha256 hash;
  std::string chunk(1000, 'a');
  for (int i = 0; i < 1000; ++i) hash.update(chunk);
  EXPECT_EQ(Sha256::hex(hash.finish()),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256, IncrementalEqualsOneShotAtEverySplit) {
  std::string text(200, '\0');
  for (size_t i = 0; i < text.size(); ++i) text[i] = static_cast<char>(i * 7 + 3);
  std::string expected = hexOf(text);
  for (size_t split = 0; split <= text.size(); ++split) {
    Sha256 hash;
    hash.update(text.substr(0, split));
    hash.update(text.substr(split));
    ASSERT_EQ(Sha256::hex(hash.finish()), expected) << "split at " << split;
  }
}

}  // namespace
}  // namespace rocuda
