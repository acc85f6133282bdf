// SHA-256 (FIPS 180-4): cache keys and cache-entry integrity.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace rocuda {

class Sha256 {
 public:
  Sha256();
  void update(const void* data, size_t size);
  void update(std::string_view text) { update(text.data(), text.size()); }
  std::array<uint8_t, 32> finish();

  static std::array<uint8_t, 32> digest(const void* data, size_t size);
  static std::string hex(const std::array<uint8_t, 32>& digest);

 private:
  void compress(const uint8_t* block);
  uint32_t state_[8];
  uint8_t buffer_[64];
  size_t buffered_ = 0;
  uint64_t totalBytes_ = 0;
};

}  // namespace rocuda
