// The persistent cache of compiled code, shared by every backend. Entries are files named by a
// key (a hex digest the caller computes from everything that determines the output: input hash,
// target, compiler version, options). Each file carries a header with the payload's SHA-256, so a
// corrupt or truncated entry is detected, removed and rebuilt. Writes are atomic renames: any
// number of processes may fill the cache at once.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rocuda {

class DiskCache {
 public:
  // The process-wide cache configured by ROCUDA_CACHE and ROCUDA_CACHE_DIR.
  static DiskCache& instance();
  // A cache in `directory` (tests); an empty directory means disabled.
  explicit DiskCache(std::string directory);

  bool enabled() const { return !directory_.empty(); }
  const std::string& directory() const { return directory_; }

  std::optional<std::vector<uint8_t>> load(std::string_view key) const;
  void store(std::string_view key, const std::vector<uint8_t>& payload) const;
  std::string pathFor(std::string_view key) const;

 private:
  std::string directory_;
};

}  // namespace rocuda
