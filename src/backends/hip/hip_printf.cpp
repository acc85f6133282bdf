#include "backends/hip/hip_printf.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <utility>

#include "compiler/amdgpu/amdgpu_codegen.h"
#include "support/log.h"

namespace rocuda::backends::hip {
namespace {

using compiler::AmdgpuPrintfHeader;

std::vector<std::string_view> splitFormats(std::string_view formats) {
  std::vector<std::string_view> out;
  size_t start = 0;
  for (size_t i = 0; i < formats.size(); ++i)
    if (formats[i] == '\0') {
      out.push_back(formats.substr(start, i - start));
      start = i + 1;
    }
  return out;
}

}  // namespace

std::string formatPrintfRecords(const uint8_t* records, size_t bytes, std::string_view formats,
                                const device_printf::StringReader& readString) {
  std::vector<std::string_view> table = splitFormats(formats);
  std::string out;
  size_t offset = 0;
  while (offset + compiler::kAmdgpuPrintfRecordHeaderBytes <= bytes) {
    uint32_t argumentBytes = 0, index = 0;
    std::memcpy(&argumentBytes, records + offset, 4);
    std::memcpy(&index, records + offset + 4, 4);
    size_t arguments = offset + compiler::kAmdgpuPrintfRecordHeaderBytes;
    bool byAddress = index == compiler::kAmdgpuPrintfFormatAddressIndex;
    if ((!byAddress && index >= table.size()) || argumentBytes > bytes - arguments ||
        (byAddress && argumentBytes < 8)) {
      out += "[rocuda: malformed printf record at offset " + std::to_string(offset) + "]\n";
      break;
    }
    if (byAddress) {  // a format chosen at run time: read where the kernel said it is
      uint64_t address = 0;
      std::memcpy(&address, records + arguments, 8);
      std::string format = address == 0 ? std::string() : readString(address);
      out += device_printf::format(format, records + arguments + 8, argumentBytes - 8, readString);
    } else {
      out += device_printf::format(table[index], records + arguments, argumentBytes, readString);
    }
    offset = (arguments + argumentBytes + 7) / 8 * 8;
  }
  return out;
}

bool codeObjectDefines(const std::vector<uint8_t>& codeObject, std::string_view name) {
  // The symbol's name, NUL-terminated, is in the code object's string table.
  std::string_view bytes(reinterpret_cast<const char*>(codeObject.data()), codeObject.size());
  for (size_t at = bytes.find(name); at != std::string_view::npos; at = bytes.find(name, at + 1))
    if (at + name.size() < bytes.size() && bytes[at + name.size()] == '\0' &&
        (at == 0 || bytes[at - 1] == '\0'))
      return true;
  return false;
}

Result<std::unique_ptr<PrintfBuffer>> PrintfBuffer::create(std::shared_ptr<HipLibrary> library,
                                                           hipModule_t module,
                                                           std::string_view moduleName) {
  const HipApi& api = library->api();
  auto failed = [&](hipError_t status, const std::string& what) {
    return library->error(status, what + " for printf of module '" + std::string(moduleName) + "'");
  };
  void* symbol = nullptr;
  size_t symbolBytes = 0;
  hipError_t status =
      api.hipModuleGetGlobal(&symbol, &symbolBytes, module, compiler::kAmdgpuPrintfBufferSymbol);
  if (status != hipSuccess) return failed(status, "hipModuleGetGlobal(buffer)");
  void* formatsAddress = nullptr;
  size_t formatsBytes = 0;
  status = api.hipModuleGetGlobal(&formatsAddress, &formatsBytes, module,
                                  compiler::kAmdgpuPrintfFormatsSymbol);
  if (status != hipSuccess) return failed(status, "hipModuleGetGlobal(formats)");
  std::string formats(formatsBytes, '\0');
  status = api.hipMemcpy(formats.data(), formatsAddress, formatsBytes, hipMemcpyDefault);
  if (status != hipSuccess) return failed(status, "hipMemcpy of the formats");

  void* device = nullptr;
  status = api.hipMalloc(&device, sizeof(AmdgpuPrintfHeader) + kDefaultCapacityBytes);
  if (status != hipSuccess) return failed(status, "hipMalloc of the buffer");
  std::unique_ptr<PrintfBuffer> buffer(
      new PrintfBuffer(library, symbol, device, std::move(formats)));
  status = buffer->install();
  if (status != hipSuccess) return failed(status, "hipMemcpy of the buffer's header");
  return buffer;
}

hipError_t PrintfBuffer::empty() {
  AmdgpuPrintfHeader header;
  header.capacity = capacity_;
  return library_->api().hipMemcpy(device_, &header, sizeof header, hipMemcpyDefault);
}

hipError_t PrintfBuffer::install() {
  hipError_t status = empty();
  if (status != hipSuccess) return status;
  return library_->api().hipMemcpy(symbol_, &device_, sizeof device_, hipMemcpyDefault);
}

Status PrintfBuffer::fit(uint64_t bytes) {
  if (bytes == capacity_) return Status::success();
  const HipApi& api = library_->api();
  void* device = nullptr;
  hipError_t status = api.hipMalloc(&device, sizeof(AmdgpuPrintfHeader) + bytes);
  if (status != hipSuccess)
    return library_->error(status,
                           "hipMalloc of a " + std::to_string(bytes) + "-byte printf buffer");
  std::swap(device, device_);  // `device` is the old buffer now
  uint64_t previous = std::exchange(capacity_, bytes);
  status = install();
  if (status != hipSuccess) {  // the old buffer stays
    api.hipFree(device_);
    device_ = device;
    capacity_ = previous;
    return library_->error(status, "pointing a module at its new printf buffer");
  }
  api.hipFree(device);
  return Status::success();
}

PrintfBuffer::~PrintfBuffer() {
  hipError_t status = library_->api().hipFree(device_);
  if (status != hipSuccess) log::warning(library_->error(status, "hipFree (printf)").message);
}

std::string readDeviceString(const HipApi& api, uint64_t address) {
  // Chunks until the NUL; a chunk that cannot be read (the end of an allocation, or private
  // memory, which the host cannot reach) is retried byte by byte.
  constexpr size_t kLimit = 4096, kChunk = 64;
  std::string text;
  auto* at = reinterpret_cast<const char*>(address);
  while (text.size() < kLimit) {
    char chunk[kChunk];
    size_t got = kChunk;
    if (api.hipMemcpy(chunk, at + text.size(), kChunk, hipMemcpyDefault) != hipSuccess) {
      got = 0;
      while (got < kChunk &&
             api.hipMemcpy(chunk + got, at + text.size() + got, 1, hipMemcpyDefault) == hipSuccess &&
             chunk[got] != '\0')
        ++got;
      if (got == 0 && text.empty()) return "(unreadable)";
      text.append(chunk, got);
      return text;
    }
    const char* end = static_cast<const char*>(std::memchr(chunk, '\0', kChunk));
    text.append(chunk, end ? static_cast<size_t>(end - chunk) : kChunk);
    if (end) return text;
  }
  return text;
}

Status PrintfBuffer::drain(std::string_view kernelName) {
  const HipApi& api = library_->api();
  AmdgpuPrintfHeader header;
  hipError_t status = api.hipMemcpy(&header, device_, sizeof header, hipMemcpyDefault);
  if (status != hipSuccess) return library_->error(status, "hipMemcpy of the printf buffer");
  if (header.used == 0 && header.dropped == 0) return Status::success();
  size_t bytes = static_cast<size_t>(std::min(header.used, header.capacity));
  std::vector<uint8_t> records(bytes);
  status = api.hipMemcpy(records.data(), static_cast<uint8_t*>(device_) + sizeof header, bytes,
                         hipMemcpyDefault);
  if (status != hipSuccess) return library_->error(status, "hipMemcpy of the printf records");
  std::string text = formatPrintfRecords(records.data(), bytes, formats_, [this](uint64_t a) {
    return readDeviceString(library_->api(), a);
  });
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
  if (header.dropped != 0)
    log::warning(std::to_string(header.dropped) + " printf calls of kernel '" +
                 std::string(kernelName) + "' did not fit in the " + std::to_string(capacity_) +
                 "-byte printf buffer and were lost (cudaLimitPrintfFifoSize)");
  status = empty();
  if (status != hipSuccess) return library_->error(status, "hipMemcpy resetting the printf buffer");
  return Status::success();
}

}  // namespace rocuda::backends::hip
