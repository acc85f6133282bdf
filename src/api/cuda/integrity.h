// The answer to cudart's integrity check (export table 7, slot 1): HMAC-MD2 over a record that
// describes this driver, the calling process and thread, and every device. MD2 (RFC 1319) and
// HMAC (RFC 2104) are implemented here because nothing else in the project needs them.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace rocuda::api {

using Md2Digest = std::array<uint8_t, 16>;

Md2Digest md2(std::span<const uint8_t> message);
// HMAC with MD2 as the hash (16-byte block): keys longer than a block are hashed first.
Md2Digest hmacMd2(std::span<const uint8_t> key, std::span<const uint8_t> message);

struct IntegrityDevice {
  std::array<uint8_t, 16> uuid{};
  int32_t pciDomain = 0, pciBus = 0, pciDevice = 0;
};

struct IntegrityInputs {
  uint32_t driverVersion = 0;  // what cuDriverGetVersion reports
  uint32_t version = 0;        // the argument cudart passed
  uint32_t processId = 0;
  uint32_t threadId = 0;  // pthread_self() truncated to 32 bits
  const void* table2 = nullptr;
  const void* table7 = nullptr;
  const void* slot1 = nullptr;
  uint64_t unixSeconds = 0;
  std::vector<IntegrityDevice> devices;
};

inline constexpr size_t kIntegrityRecordBytes = 48;
inline constexpr size_t kIntegrityDeviceBytes = 28;

// The little-endian message: the 48-byte record, then 28 bytes per device.
std::vector<uint8_t> integrityMessage(const IntegrityInputs& inputs);
// The two 64-bit words cudart expects for `inputs.version`.
std::array<uint64_t, 2> integrityAnswer(const IntegrityInputs& inputs);

}  // namespace rocuda::api
