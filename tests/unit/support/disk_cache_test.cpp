#include "support/disk_cache.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "support/platform.h"

namespace rocuda {
namespace {

class DiskCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/rocuda-cache-test-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    directory_ = pattern;
  }
  void TearDown() override { std::system(("rm -rf '" + directory_ + "'").c_str()); }
  std::string directory_;
};

const std::string kKey = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

TEST_F(DiskCacheTest, StoreThenLoadReturnsThePayload) {
  DiskCache cache(directory_);
  std::vector<uint8_t> payload = {1, 2, 3, 250, 0, 7};
  EXPECT_FALSE(cache.load(kKey).has_value());
  cache.store(kKey, payload);
  auto loaded = cache.load(kKey);
  ASSERT_TRUE(loaded.has_value());
  EXPECT_EQ(*loaded, payload);
}

TEST_F(DiskCacheTest, EmptyPayloadRoundTrips) {
  DiskCache cache(directory_);
  cache.store(kKey, {});
  auto loaded = cache.load(kKey);
  ASSERT_TRUE(loaded.has_value());
  EXPECT_TRUE(loaded->empty());
}

TEST_F(DiskCacheTest, CorruptEntryIsDiscarded) {
  DiskCache cache(directory_);
  std::vector<uint8_t> payload(1000, 42);
  cache.store(kKey, payload);
  std::string path = cache.pathFor(kKey);
  {
    std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(500);
    file.put(43);  // one flipped byte in the payload
  }
  EXPECT_FALSE(cache.load(kKey).has_value());
  EXPECT_FALSE(platform::fileExists(path)) << "a corrupt entry is removed so it gets rebuilt";
  cache.store(kKey, payload);
  EXPECT_EQ(cache.load(kKey), payload);
}

TEST_F(DiskCacheTest, EveryTruncationIsDetected) {
  DiskCache cache(directory_);
  std::vector<uint8_t> payload(300);
  for (size_t i = 0; i < payload.size(); ++i) payload[i] = static_cast<uint8_t>(i);
  cache.store(kKey, payload);
  std::string path = cache.pathFor(kKey);
  auto whole = platform::readFile(path);
  ASSERT_TRUE(whole.ok());
  for (size_t length = 0; length < whole->size(); length += 7) {
    ASSERT_TRUE(platform::writeFileAtomically(path, whole->data(), length).ok());
    EXPECT_FALSE(cache.load(kKey).has_value()) << "truncated to " << length;
  }
}

TEST_F(DiskCacheTest, ConcurrentWritersLeaveAValidEntry) {
  DiskCache cache(directory_);
  std::vector<std::thread> writers;
  for (int w = 0; w < 8; ++w)
    writers.emplace_back([&cache, w] {
      for (int i = 0; i < 20; ++i) cache.store(kKey, std::vector<uint8_t>(4096, uint8_t(w)));
    });
  for (auto& t : writers) t.join();
  auto loaded = cache.load(kKey);
  ASSERT_TRUE(loaded.has_value());
  ASSERT_EQ(loaded->size(), 4096u);
  for (uint8_t byte : *loaded) EXPECT_EQ(byte, (*loaded)[0]) << "entry mixes two writers";
}

TEST_F(DiskCacheTest, DisabledCacheStoresNothing) {
  DiskCache cache("");
  EXPECT_FALSE(cache.enabled());
  cache.store(kKey, {1});
  EXPECT_FALSE(cache.load(kKey).has_value());
}

}  // namespace
}  // namespace rocuda
