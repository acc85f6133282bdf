// HostObject's cache-entry form and the host target's name (which keys the cache).
#include <llvm/ADT/StringMap.h>
#include <llvm/TargetParser/Host.h>

#include <algorithm>
#include <cstring>

#include "compiler/compiler.h"

namespace rocuda::compiler {
namespace {

void appendU64(std::vector<uint8_t>& out, uint64_t value) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<uint8_t>(value >> (8 * i)));
}

bool readU64(const uint8_t*& cursor, const uint8_t* end, uint64_t& value) {
  if (end - cursor < 8) return false;
  value = 0;
  for (int i = 0; i < 8; ++i) value |= uint64_t(cursor[i]) << (8 * i);
  cursor += 8;
  return true;
}

}  // namespace

std::vector<uint8_t> HostObject::serialize() const {
  std::vector<uint8_t> infoBytes = info.serialize();
  std::vector<uint8_t> out;
  out.reserve(16 + infoBytes.size() + object.size());
  appendU64(out, infoBytes.size());
  out.insert(out.end(), infoBytes.begin(), infoBytes.end());
  appendU64(out, object.size());
  out.insert(out.end(), object.begin(), object.end());
  return out;
}

Result<HostObject> HostObject::deserialize(const uint8_t* data, size_t size) {
  const uint8_t* cursor = data;
  const uint8_t* end = data + size;
  uint64_t infoSize = 0, objectSize = 0;
  if (!readU64(cursor, end, infoSize) || infoSize > uint64_t(end - cursor))
    return makeError(ErrorCode::InvalidImage, "truncated host object (module info)");
  auto info = ModuleInfo::deserialize(cursor, infoSize);
  if (!info.ok()) return info.takeError();
  cursor += infoSize;
  if (!readU64(cursor, end, objectSize) || objectSize != uint64_t(end - cursor))
    return makeError(ErrorCode::InvalidImage, "truncated host object (object file)");
  HostObject result;
  result.info = std::move(*info);
  result.object.assign(cursor, end);
  return result;
}

std::string hostTargetName() {
  std::string name = llvm::sys::getProcessTriple() + ", " + llvm::sys::getHostCPUName().str();
  std::vector<std::string> enabled;
  for (const auto& feature : llvm::sys::getHostCPUFeatures())
    if (feature.getValue()) enabled.push_back(feature.getKey().str());
  std::sort(enabled.begin(), enabled.end());
  for (const auto& f : enabled) name += " +" + f;
  return name;
}

}  // namespace rocuda::compiler
