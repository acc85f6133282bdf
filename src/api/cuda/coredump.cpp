// GPU core dump settings (core/coredump.h): booleans, the file and pipe names (up to 1023
// characters) and the generation flags, for the process or the current context. A NULL value
// asks for the size of the setting's value.
#include "core/coredump.h"

#include <cstring>

#include "api/cuda/boundary.h"
#include "core/context.h"

namespace rocuda::api {
namespace {

using namespace cuda;

constexpr size_t kMaxText = 1024;  // 1023 characters and the terminating NUL

size_t sizeOf(core::CoredumpSetting setting) {
  switch (setting) {
    case core::CoredumpSetting::File:
    case core::CoredumpSetting::Pipe:
      return kMaxText;
    case core::CoredumpSetting::GenerationFlags:
      return sizeof(int);
    default:
      return sizeof(bool);
  }
}

Result<core::CoredumpSetting> settingOf(CUcoredumpSettings attrib) {
  if (attrib < CU_COREDUMP_ENABLE_ON_EXCEPTION || attrib >= CU_COREDUMP_MAX)
    return makeError(ErrorCode::InvalidValue, "unknown CUcoredumpSettings");
  return static_cast<core::CoredumpSetting>(attrib);
}

// The current context for the per-context calls, nullptr for the process-wide ones.
Result<const core::Context*> scope(bool perContext) {
  if (!perContext) return static_cast<const core::Context*>(nullptr);
  Result<core::Context*> context = currentContext();
  if (!context) return context.error();
  return static_cast<const core::Context*>(*context);
}

Outcome getSetting(CUcoredumpSettings attrib, void* value, size_t* size, bool perContext) {
  Result<core::CoredumpSetting> setting = settingOf(attrib);
  if (!setting) return setting.error();
  if (size == nullptr) return invalidValue("size is NULL");
  Result<const core::Context*> context = scope(perContext);
  if (!context) return context.error();
  core::CoredumpValue current = core::Coredumps::instance().get(*setting, *context);
  size_t needed = sizeOf(*setting);
  if (value == nullptr) {
    *size = needed;
    return {};
  }
  switch (*setting) {
    case core::CoredumpSetting::File:
    case core::CoredumpSetting::Pipe:
      if (*size < current.text.size() + 1)
        return invalidValue("size is too small for the setting's text");
      std::memcpy(value, current.text.c_str(), current.text.size() + 1);
      return {};
    case core::CoredumpSetting::GenerationFlags: {
      if (*size < sizeof(int)) return invalidValue("size is too small for an int");
      int flags = static_cast<int>(current.number);
      std::memcpy(value, &flags, sizeof flags);
      return {};
    }
    default:
      if (*size < sizeof(bool)) return invalidValue("size is too small for a bool");
      *static_cast<bool*>(value) = current.flag;
      return {};
  }
}

Outcome setSetting(CUcoredumpSettings attrib, void* value, size_t* size, bool perContext) {
  Result<core::CoredumpSetting> setting = settingOf(attrib);
  if (!setting) return setting.error();
  if (size == nullptr) return invalidValue("size is NULL");
  if (value == nullptr) {
    *size = sizeOf(*setting);
    return {};
  }
  // "CU_COREDUMP_ENABLE_USER_TRIGGER and CU_COREDUMP_PIPE cannot be set on a per-context basis."
  if (perContext && (*setting == core::CoredumpSetting::EnableUserTrigger ||
                     *setting == core::CoredumpSetting::Pipe))
    return invalidValue("the user trigger and its pipe are process-wide settings");
  Result<const core::Context*> context = scope(perContext);
  if (!context) return context.error();
  core::CoredumpValue next;
  switch (*setting) {
    case core::CoredumpSetting::File:
    case core::CoredumpSetting::Pipe: {
      const char* text = static_cast<const char*>(value);
      size_t length = strnlen(text, std::min(*size, kMaxText));
      if (length >= kMaxText) return invalidValue("the text is longer than 1023 characters");
      next.text.assign(text, length);
      break;
    }
    case core::CoredumpSetting::GenerationFlags: {
      if (*size < sizeof(int)) return invalidValue("size is too small for an int");
      int flags = 0;
      std::memcpy(&flags, value, sizeof flags);
      next.number = static_cast<uint32_t>(flags);
      break;
    }
    default:
      if (*size < sizeof(bool)) return invalidValue("size is too small for a bool");
      next.flag = *static_cast<const unsigned char*>(value) != 0;
  }
  // The pipe "may not be changed after CU_COREDUMP_ENABLE_USER_TRIGGER is set to true".
  if (*setting == core::CoredumpSetting::Pipe &&
      core::Coredumps::instance().get(core::CoredumpSetting::EnableUserTrigger, nullptr).flag)
    return {CUDA_ERROR_NOT_PERMITTED, "user triggers are on: the pipe cannot change"};
  return core::Coredumps::instance().set(*setting, std::move(next), *context);
}

}  // namespace
}  // namespace rocuda::api

namespace rocuda::cuda {
extern "C" {

ROCUDA_EXPORT CUresult cuCoredumpGetAttribute(CUcoredumpSettings attrib, void* value,
                                              size_t* size) {
  return ROCUDA_API((attrib, value, size),
                    [&] { return api::getSetting(attrib, value, size, true); });
}

ROCUDA_EXPORT CUresult cuCoredumpGetAttributeGlobal(CUcoredumpSettings attrib, void* value,
                                                    size_t* size) {
  return ROCUDA_API((attrib, value, size),
                    [&] { return api::getSetting(attrib, value, size, false); });
}

ROCUDA_EXPORT CUresult cuCoredumpSetAttribute(CUcoredumpSettings attrib, void* value,
                                              size_t* size) {
  return ROCUDA_API((attrib, value, size),
                    [&] { return api::setSetting(attrib, value, size, true); });
}

ROCUDA_EXPORT CUresult cuCoredumpSetAttributeGlobal(CUcoredumpSettings attrib, void* value,
                                                    size_t* size) {
  return ROCUDA_API((attrib, value, size),
                    [&] { return api::setSetting(attrib, value, size, false); });
}

}  // extern "C"
}  // namespace rocuda::cuda
