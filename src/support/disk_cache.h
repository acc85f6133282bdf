// The persistent cache of compiled code, shared by every backend. Entries are files named by a
// key (a hex digest the caller computes from everything that determines the output: input hash,
// target, compiler version, options). Each file carries a header with the payload's SHA-256, so a
// corrupt or truncated entry is detected, removed and rebuilt. Writes are atomic renames: any
// number of processes may fill the cache at once.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "support/log.h"
#include "support/result.h"

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

  // A key: the hex SHA-256 of `parts` separated by NULs (compiler version, target, options, input).
  static std::string keyOf(std::initializer_list<std::string_view> parts);

  // Compiled code through the cache: the entry for `key` decoded by T::deserialize, else (no
  // entry, `refresh`, or an entry that does not decode: reported, naming `what`) the result of
  // `compile()`, stored when it succeeded. `*fromCache`, when given, says which it was.
  template <typename T, typename Compile>
  Result<T> loadOrCompile(std::string_view key, std::string_view what, Compile compile,
                          bool refresh = false, bool* fromCache = nullptr) const {
    if (fromCache) *fromCache = false;
    if (auto entry = refresh ? std::nullopt : load(key)) {
      auto decoded = T::deserialize(entry->data(), entry->size());
      if (decoded.ok()) {
        if (fromCache) *fromCache = true;
        return decoded;
      }
      log::warning("code cache entry for '" + std::string(what) + "' is unreadable (" +
                   decoded.error().message + "); recompiling");
    }
    Result<T> compiled = compile();
    if (compiled.ok()) store(key, compiled->serialize());
    return compiled;
  }

 private:
  std::string directory_;
};

}  // namespace rocuda
