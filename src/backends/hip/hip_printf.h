// Device printf on AMD GPUs, host side: the buffer kernels append their records to
// (compiler/amdgpu/amdgpu_codegen.h), set up for each module that prints and drained after every
// launch of one of its kernels.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "backends/hip/hip_api.h"
#include "support/device_printf.h"
#include "support/result.h"

namespace rocuda::backends::hip {

// The text of the records in `records` (`bytes` long, as the kernels wrote them), with the
// module's NUL-separated `formats`. A record naming an unknown format or running past the end is
// reported in the text and ends the walk.
std::string formatPrintfRecords(const uint8_t* records, size_t bytes, std::string_view formats,
                                const device_printf::StringReader& readString);

// The NUL-terminated string at a device address (at most 4 KiB; "(unreadable)" when the host
// cannot read it): printf's %s arguments and run-time formats, the names of kernels launched
// from the device.
std::string readDeviceString(const HipApi& api, uint64_t address);

// Whether a code object has the symbol `name` (kAmdgpuPrintfBufferSymbol: its kernels print;
// kAmdgpuAssertFlagSymbol: they assert).
bool codeObjectDefines(const std::vector<uint8_t>& codeObject, std::string_view name);

class PrintfBuffer {
 public:
  // Allocate the buffer on the current device, point the module's buffer symbol at it and read
  // its formats.
  static Result<std::unique_ptr<PrintfBuffer>> create(std::shared_ptr<HipLibrary> library,
                                                      hipModule_t module,
                                                      std::string_view moduleName);
  ~PrintfBuffer();

  // Held across a launch, its wait and drain(): the buffer is reset after each drain, so no
  // other kernel of the module may be writing it meanwhile.
  std::mutex& launchMutex() { return mutex_; }
  // Print what the kernel wrote (to stdout, as CUDA does) and empty the buffer.
  Status drain(std::string_view kernelName);
  // Before a launch, with launchMutex held: room for `bytes` of records (the context's
  // cudaLimitPrintfFifoSize), in a new empty buffer the module's symbol points at when the room
  // differs from the buffer's.
  Status fit(uint64_t bytes);

  static constexpr size_t kDefaultCapacityBytes = size_t(1) << 20;  // CUDA's default FIFO size

 private:
  PrintfBuffer(std::shared_ptr<HipLibrary> library, void* symbol, void* device, std::string formats)
      : library_(std::move(library)),
        symbol_(symbol),
        device_(device),
        formats_(std::move(formats)) {}
  // Write a header with no records and the whole capacity free.
  hipError_t empty();
  // empty(), then point the module's symbol at the buffer.
  hipError_t install();

  std::shared_ptr<HipLibrary> library_;
  void* symbol_;         // the module's kAmdgpuPrintfBufferSymbol
  void* device_;         // AmdgpuPrintfHeader, then the records
  uint64_t capacity_ = kDefaultCapacityBytes;
  std::string formats_;  // the module's formats, NUL-separated
  std::mutex mutex_;
};

}  // namespace rocuda::backends::hip
