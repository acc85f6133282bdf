// cuGetErrorName / cuGetErrorString and the boundary's logging (the codes themselves are in
// result_codes.cpp).
#include <cstdio>
#include <string>

#include "api/cuda/boundary.h"
#include "core/platform.h"

namespace rocuda::api {
namespace {

using namespace cuda;

// Errors that are the program's or the device's problem rather than a probe of the API: users
// need their message even without ROCUDA_LOG.
bool worthReporting(CUresult code) {
  switch (code) {
    case CUDA_ERROR_INVALID_PTX:
    case CUDA_ERROR_INVALID_IMAGE:
    case CUDA_ERROR_NO_BINARY_FOR_GPU:
    case CUDA_ERROR_NOT_SUPPORTED:
    case CUDA_ERROR_LAUNCH_FAILED:
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_ASSERT:
    case CUDA_ERROR_UNKNOWN:
    case CUDA_ERROR_OPERATING_SYSTEM:
      return true;
    default:
      return false;
  }
}

}  // namespace

Outcome::Outcome(const Error& error) : code_(toCuResult(error.code)), message_(error.message) {}

Outcome::Outcome(const Status& status) {
  if (!status.ok()) *this = Outcome(status.error());
}

std::string joinArgs(const char* names, const std::string* values, size_t count) {
  std::string out;
  std::string_view rest(names);
  if (!rest.empty() && rest.front() == '(') rest.remove_prefix(1);
  if (!rest.empty() && rest.back() == ')') rest.remove_suffix(1);
  for (size_t i = 0; i < count; ++i) {
    size_t comma = rest.find(',');
    std::string_view name = rest.substr(0, comma);
    while (!name.empty() && name.front() == ' ') name.remove_prefix(1);
    while (!name.empty() && name.back() == ' ') name.remove_suffix(1);
    if (i != 0) out += ", ";
    out.append(name);
    out += '=';
    out += values[i];
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
  }
  return out;
}

bool platformInitialized() { return core::Platform::instance().initialized(); }

std::string notInitializedReason() {
  return core::Platform::instance().forkedAfterInitialize()
             ? "CUDA was initialized before this process was forked: a child of fork() cannot "
               "use its parent's devices"
             : "cuInit has not been called";
}

void finishCall(const char* function, CUresult result, const std::string& message,
                const std::string& arguments) {
  const char* name = result == kRuntimeInvalidConfiguration
                         ? "cudaErrorInvalidConfiguration (to the CUDA runtime)"
                         : resultName(result);
  std::string line = std::string(function) + "(" + arguments + ") -> " +
                     (name != nullptr ? name : std::to_string(static_cast<int>(result)));
  if (!message.empty()) line += ": " + message;
  if (log::enabled(log::Level::Trace)) {
    log::trace(line);
  } else if (worthReporting(result)) {
    log::error(line);
  }
}

}  // namespace rocuda::api

namespace rocuda::cuda {
extern "C" {

ROCUDA_EXPORT CUresult cuGetErrorName(CUresult error, const char** pStr) {
  return ROCUDA_API_NOINIT((error, pStr), [&]() -> api::Outcome {
    if (pStr == nullptr) return api::invalidValue("pStr is NULL");
    *pStr = api::resultName(error);
    if (*pStr == nullptr) return api::invalidValue("unknown CUresult");
    return {};
  });
}

ROCUDA_EXPORT CUresult cuGetErrorString(CUresult error, const char** pStr) {
  return ROCUDA_API_NOINIT((error, pStr), [&]() -> api::Outcome {
    if (pStr == nullptr) return api::invalidValue("pStr is NULL");
    *pStr = api::resultDescription(error);
    if (*pStr == nullptr) return api::invalidValue("unknown CUresult");
    return {};
  });
}

}  // extern "C"
}  // namespace rocuda::cuda
