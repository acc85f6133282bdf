// libFuzzer entry: any byte string must give a result or an InvalidImage error, never a crash or
// a read outside the buffer.
#include <cstdint>
#include <cstdlib>

#include "fatbin/fatbin.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  for (uint32_t arch : {75u, 86u}) {
    auto result = rocuda::fatbin::readImageBytes(data, size, arch);
    if (!result.ok() && result.error().code != rocuda::ErrorCode::InvalidImage) std::abort();
    if (!result.ok() && result.error().message.empty()) std::abort();
  }
  return 0;
}
