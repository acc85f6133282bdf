// MD2 against RFC 1319's test suite, HMAC-MD2 against an independent implementation
// (pycryptodome's Crypto.Hash.HMAC over Crypto.Hash.MD2), and the integrity record and answers.
#include "api/cuda/integrity.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <string_view>

namespace rocuda::api {
namespace {

std::string hex(const Md2Digest& digest) {
  std::string out;
  char byte[3];
  for (uint8_t b : digest) {
    std::snprintf(byte, sizeof byte, "%02x", b);
    out += byte;
  }
  return out;
}

std::span<const uint8_t> bytes(std::string_view text) {
  return {reinterpret_cast<const uint8_t*>(text.data()), text.size()};
}

TEST(Md2, Rfc1319TestSuite) {
  EXPECT_EQ(hex(md2(bytes(""))), "8350e5a3e24c153df2275c9f80692773");
  EXPECT_EQ(hex(md2(bytes("a"))), "32ec01ec4a6dac72c0ab96fb34c0b5d1");
  EXPECT_EQ(hex(md2(bytes("abc"))), "da853b0d3f88d99b30283a69e6ded6bb");
  EXPECT_EQ(hex(md2(bytes("message digest"))), "ab4f496bfb2a530b219ff33031fe06b0");
  EXPECT_EQ(hex(md2(bytes("abcdefghijklmnopqrstuvwxyz"))), "4e8ddff3650292ab5a4108c3aa47940b");
  EXPECT_EQ(hex(md2(bytes("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"))),
            "da33def2a42df13975352846c30338cd");
  EXPECT_EQ(hex(md2(bytes("1234567890123456789012345678901234567890123456789012345678901234567890"
                          "1234567890"))),
            "d5976f79d83d3a0dc9806c3c66f3efd8");
}

TEST(Md2, BlockMultipleLengthsGetAFullPaddingBlock) {
  std::string sixteen(16, 'x');
  std::string fifteen(15, 'x');
  EXPECT_NE(hex(md2(bytes(sixteen))), hex(md2(bytes(fifteen))));
  EXPECT_EQ(hex(md2(bytes(sixteen))), hex(md2(bytes(std::string(16, 'x')))));
}

constexpr uint8_t kKey[16] = {0x14, 0x6A, 0xDD, 0xAE, 0x53, 0xA9, 0xA7, 0x52,
                              0xAA, 0x08, 0x41, 0x36, 0x0B, 0xF5, 0x5A, 0x9F};

TEST(HmacMd2, MatchesIndependentImplementation) {
  EXPECT_EQ(hex(hmacMd2(kKey, bytes("abc"))), "815f118c9ab33645d4222c484070ab79");
  std::string longKey(40, 'k');
  EXPECT_EQ(hex(hmacMd2(bytes(longKey), bytes("The quick brown fox"))),
            "cf4fa6747e93d3437bb1bc8dde31c874");
  std::vector<uint8_t> message(76);
  for (size_t i = 0; i < message.size(); ++i) message[i] = static_cast<uint8_t>(i);
  EXPECT_EQ(hex(hmacMd2(kKey, message)), "70179cf997c1374ec2d4e2c0c4fd2e23");
}

IntegrityInputs sampleInputs(uint32_t version) {
  IntegrityInputs in;
  in.driverVersion = 13000;
  in.version = version;
  in.processId = 0x11223344;
  in.threadId = 0x55667788;
  in.table2 = reinterpret_cast<const void*>(uintptr_t{0x1000200030004000});
  in.table7 = reinterpret_cast<const void*>(uintptr_t{0x5000600070008000});
  in.slot1 = reinterpret_cast<const void*>(uintptr_t{0x0102030405060708});
  in.unixSeconds = 0x0A0B0C0D0E0F1011;
  IntegrityDevice device;
  for (int i = 0; i < 16; ++i) device.uuid[i] = static_cast<uint8_t>(0xA0 + i);
  device.pciDomain = 1;
  device.pciBus = 0x23;
  device.pciDevice = -2;
  in.devices.push_back(device);
  return in;
}

uint64_t loadLe(const std::vector<uint8_t>& bytes, size_t offset, size_t size) {
  uint64_t value = 0;
  for (size_t i = 0; i < size; ++i) value |= static_cast<uint64_t>(bytes[offset + i]) << (8 * i);
  return value;
}

TEST(Integrity, RecordLayout) {
  std::vector<uint8_t> message = integrityMessage(sampleInputs(13002));
  ASSERT_EQ(message.size(), kIntegrityRecordBytes + kIntegrityDeviceBytes);
  EXPECT_EQ(loadLe(message, 0, 4), 13000u);
  EXPECT_EQ(loadLe(message, 4, 4), 13002u);
  EXPECT_EQ(loadLe(message, 8, 4), 0x11223344u);
  EXPECT_EQ(loadLe(message, 12, 4), 0x55667788u);
  EXPECT_EQ(loadLe(message, 16, 8), 0x1000200030004000u);
  EXPECT_EQ(loadLe(message, 24, 8), 0x5000600070008000u);
  EXPECT_EQ(loadLe(message, 32, 8), 0x0102030405060708u);
  EXPECT_EQ(loadLe(message, 40, 8), 0x0A0B0C0D0E0F1011u);
  for (int i = 0; i < 16; ++i) EXPECT_EQ(message[48 + i], 0xA0 + i);
  EXPECT_EQ(loadLe(message, 64, 4), 1u);
  EXPECT_EQ(loadLe(message, 68, 4), 0x23u);
  EXPECT_EQ(loadLe(message, 72, 4), 0xFFFFFFFEu);
}

TEST(Integrity, ConstantAnswersForVersionsEndingIn0And1) {
  auto zero = integrityAnswer(sampleInputs(13000));
  EXPECT_EQ(zero[0], 0x3341181C03CB675CULL);
  EXPECT_EQ(zero[1], 0x8ED383AA1F4CD1E8ULL);
  auto one = integrityAnswer(sampleInputs(13001));
  EXPECT_EQ(one[0], 0x1841181C03CB675CULL);
  EXPECT_EQ(one[1], 0x8ED383AA1F4CD1E8ULL);
}

TEST(Integrity, OtherVersionsAreHmacOfTheRecord) {
  IntegrityInputs in = sampleInputs(13002);
  std::vector<uint8_t> message = integrityMessage(in);
  Md2Digest digest = hmacMd2(kKey, message);
  auto answer = integrityAnswer(in);
  for (size_t i = 0; i < 16; ++i)
    EXPECT_EQ(static_cast<uint8_t>(answer[i / 8] >> (8 * (i % 8))), digest[i]) << i;
  // Every input takes part: change one and the answer changes.
  in.threadId ^= 1;
  EXPECT_NE(integrityAnswer(in), answer);
}

}  // namespace
}  // namespace rocuda::api
