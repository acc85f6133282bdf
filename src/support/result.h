// Errors as values. Every layer below the API returns Result<T>; api/cuda turns the ErrorCode
// into a CUresult at the edge, and the message goes to the log (and to JIT error-log buffers).
#pragma once

#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace rocuda {

// Backend- and API-neutral error kinds. Each maps to exactly one CUresult (api/cuda/errors.cpp).
enum class ErrorCode {
  InvalidValue,
  OutOfMemory,
  NotInitialized,
  NoDevice,
  InvalidDevice,
  InvalidContext,
  ContextIsDestroyed,  // the thread's current context was destroyed by another thread
  InvalidHandle,
  InvalidImage,           // a binary (fatbin, ELF, cache entry) that cannot be read
  NoBinaryForGpu,         // a binary without PTX for a kernel
  InvalidPtx,             // PTX that does not parse or check
  UnsupportedPtx,         // valid PTX using something the compiler does not implement yet
  UnsupportedPtxVersion,  // a .version newer than the PTX ISA of the CUDA version reported
  NotFound,               // a named symbol, kernel or global that does not exist
  NotSupported,           // an operation this device or build cannot do
  NotPermitted,           // an operation the current settings forbid
  NotReady,
  IllegalAddress,
  MisalignedAddress,  // a load or store at an address not a multiple of its size (memcheck)
  LaunchFailed,
  LaunchOutOfResources,
  InvalidConfiguration,  // bad launch dimensions or shared memory size
  Assert,
  FileNotFound,
  OperatingSystem,
  MapFailed,                 // memory of another process or file descriptor that cannot be mapped
  StreamCaptureUnsupported,  // an operation not permitted while a stream is capturing
  StreamCaptureImplicit,     // the legacy stream would depend on a capturing blocking stream
  StreamCaptureInvalidated,  // work for a capture that an earlier error invalidated
  CapturedEvent,             // waiting for an event last recorded in a capture
  // A cooperative grid larger than the device can hold at once.
  CooperativeLaunchTooLarge,
  // A cluster launch misconfigured (an .explicitcluster kernel launched without a cluster size).
  InvalidClusterSize,
  // Graphics interop: no current OpenGL context; a resource's map state forbids the call.
  InvalidGraphicsContext,
  AlreadyMapped,
  NotMapped,
  // cuMemHostRegister over memory already registered or allocated.
  HostMemoryAlreadyRegistered,
  Internal,
};

struct Error {
  ErrorCode code = ErrorCode::Internal;
  std::string message;
};

inline Error makeError(ErrorCode code, std::string message) { return Error{code, std::move(message)}; }

template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : state_(std::move(value)) {}
  Result(Error error) : state_(std::move(error)) {}

  bool ok() const { return std::holds_alternative<T>(state_); }
  explicit operator bool() const { return ok(); }

  T& value() & { assert(ok()); return std::get<T>(state_); }
  const T& value() const& { assert(ok()); return std::get<T>(state_); }
  T&& value() && { assert(ok()); return std::get<T>(std::move(state_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  const Error& error() const { assert(!ok()); return std::get<Error>(state_); }
  Error takeError() { assert(!ok()); return std::get<Error>(std::move(state_)); }

 private:
  std::variant<T, Error> state_;
};

// Result<void>: success or an Error.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Error error) : error_(std::move(error)), failed_(true) {}
  static Status success() { return Status(); }

  bool ok() const { return !failed_; }
  explicit operator bool() const { return ok(); }
  const Error& error() const { assert(failed_); return error_; }

 private:
  Error error_;
  bool failed_ = false;
};

}  // namespace rocuda

// Propagate an error from a Status or Result expression.
#define ROCUDA_TRY(expr)                              \
  do {                                                \
    auto rocudaTryResult_ = (expr);                   \
    if (!rocudaTryResult_.ok()) return rocudaTryResult_.error(); \
  } while (0)
