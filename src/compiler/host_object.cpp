// HostObject's cache-entry form and the host target's name (which keys the cache).
#include <llvm/ADT/StringMap.h>
#include <llvm/TargetParser/Host.h>

#include <algorithm>
#include <cstring>

#include "compiler/compiler.h"
#include "compiler/host_codegen.h"

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

namespace detail {

std::vector<uint8_t> serializeCompiledModule(const ModuleInfo& info,
                                             const std::vector<uint8_t>& code) {
  std::vector<uint8_t> infoBytes = info.serialize();
  std::vector<uint8_t> out;
  out.reserve(16 + infoBytes.size() + code.size());
  appendU64(out, infoBytes.size());
  out.insert(out.end(), infoBytes.begin(), infoBytes.end());
  appendU64(out, code.size());
  out.insert(out.end(), code.begin(), code.end());
  return out;
}

Status deserializeCompiledModule(const uint8_t* data, size_t size, std::string_view what,
                                 ModuleInfo& info, std::vector<uint8_t>& code) {
  const uint8_t* cursor = data;
  const uint8_t* end = data + size;
  uint64_t infoSize = 0, codeSize = 0;
  if (!readU64(cursor, end, infoSize) || infoSize > uint64_t(end - cursor))
    return makeError(ErrorCode::InvalidImage, "truncated " + std::string(what) + " (module info)");
  auto parsed = ModuleInfo::deserialize(cursor, infoSize);
  if (!parsed.ok()) return parsed.takeError();
  cursor += infoSize;
  if (!readU64(cursor, end, codeSize) || codeSize != uint64_t(end - cursor))
    return makeError(ErrorCode::InvalidImage, "truncated " + std::string(what) + " (code)");
  info = std::move(*parsed);
  code.assign(cursor, end);
  return Status::success();
}

}  // namespace detail

std::vector<uint8_t> HostObject::serialize() const {
  return detail::serializeCompiledModule(info, object);
}

Result<HostObject> HostObject::deserialize(const uint8_t* data, size_t size) {
  HostObject result;
  ROCUDA_TRY(detail::deserializeCompiledModule(data, size, "host object", result.info,
                                               result.object));
  return result;
}

std::string hostTargetName() {
  std::string name = llvm::sys::getProcessTriple() + ", " + llvm::sys::getHostCPUName().str();
  std::vector<std::string> enabled;
  for (const auto& feature : detail::hostCpuFeatures())
    if (feature.getValue()) enabled.push_back(feature.getKey().str());
  std::sort(enabled.begin(), enabled.end());
  for (const auto& f : enabled) name += " +" + f;
  return name;
}

}  // namespace rocuda::compiler
