#include "support/disk_cache.h"

#include <cstring>

#include "support/env.h"
#include "support/log.h"
#include "support/platform.h"
#include "support/sha256.h"

namespace rocuda {
namespace {

constexpr char kMagic[8] = {'R', 'O', 'C', 'U', 'D', 'A', 'C', '1'};
constexpr size_t kHeaderSize = sizeof(kMagic) + 8 + 32;  // magic, payload size, payload SHA-256

std::string configuredDirectory() {
  if (!env::getFlag("ROCUDA_CACHE", true)) return {};
  if (auto dir = env::get("ROCUDA_CACHE_DIR")) return *dir;
  std::string base = platform::userCacheDirectory();
  return base.empty() ? std::string() : base + "/rocuda";
}

}  // namespace

DiskCache& DiskCache::instance() {
  static DiskCache cache(configuredDirectory());
  return cache;
}

DiskCache::DiskCache(std::string directory) : directory_(std::move(directory)) {}

std::string DiskCache::keyOf(std::initializer_list<std::string_view> parts) {
  Sha256 hash;
  bool first = true;
  for (std::string_view part : parts) {
    if (!first) hash.update(std::string_view("\0", 1));
    hash.update(part);
    first = false;
  }
  return Sha256::hex(hash.finish());
}

std::string DiskCache::pathFor(std::string_view key) const {
  // Two-level layout keeps directories small.
  std::string k(key);
  return directory_ + "/" + k.substr(0, 2) + "/" + k + ".bin";
}

std::optional<std::vector<uint8_t>> DiskCache::load(std::string_view key) const {
  if (!enabled() || key.size() < 3) return std::nullopt;
  std::string path = pathFor(key);
  auto bytes = platform::readFile(path);
  if (!bytes.ok()) return std::nullopt;  // a miss
  const std::vector<uint8_t>& file = *bytes;
  uint64_t size = 0;
  bool valid = file.size() >= kHeaderSize && std::memcmp(file.data(), kMagic, sizeof(kMagic)) == 0;
  if (valid) {
    std::memcpy(&size, file.data() + sizeof(kMagic), 8);
    valid = size == file.size() - kHeaderSize;
  }
  if (valid) {
    auto digest = Sha256::digest(file.data() + kHeaderSize, file.size() - kHeaderSize);
    valid = std::memcmp(digest.data(), file.data() + sizeof(kMagic) + 8, 32) == 0;
  }
  if (!valid) {
    log::warning("code cache entry '" + path + "' is corrupt; discarding it and recompiling");
    platform::removeFile(path);
    return std::nullopt;
  }
  log::info("code cache hit: " + path);
  return std::vector<uint8_t>(file.begin() + kHeaderSize, file.end());
}

void DiskCache::store(std::string_view key, const std::vector<uint8_t>& payload) const {
  if (!enabled() || key.size() < 3) return;
  std::string path = pathFor(key);
  if (auto status = platform::createDirectories(platform::directoryOf(path)); !status.ok()) {
    log::warning("code cache disabled for this entry: " + status.error().message);
    return;
  }
  std::vector<uint8_t> file(kHeaderSize + payload.size());
  std::memcpy(file.data(), kMagic, sizeof(kMagic));
  uint64_t size = payload.size();
  std::memcpy(file.data() + sizeof(kMagic), &size, 8);
  auto digest = Sha256::digest(payload.data(), payload.size());
  std::memcpy(file.data() + sizeof(kMagic) + 8, digest.data(), 32);
  if (!payload.empty()) std::memcpy(file.data() + kHeaderSize, payload.data(), payload.size());
  if (auto status = platform::writeFileAtomically(path, file.data(), file.size()); !status.ok())
    log::warning("cannot write code cache entry: " + status.error().message);
}

}  // namespace rocuda
