// libFuzzer entry for the PTX front end: any byte string, taken as PTX text, must give a
// ParseResult (errors or not), never a crash, hang, leak or out-of-bounds read. Every error must
// come with a message, and the formatter must cope with whatever location it carries.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "ptx/parser.h"

namespace {
// Real modules are at most a few MiB; larger inputs only slow the fuzzer down.
constexpr size_t kMaxInputBytes = 1 << 20;
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > kMaxInputBytes) return -1;  // -1: do not add to the corpus
  std::string_view text(reinterpret_cast<const char*>(data), size);
  rocuda::ptx::ParseResult result = rocuda::ptx::parseModule(text, "fuzz.ptx");
  for (const auto& diagnostic : result.diagnostics) {
    if (diagnostic.message.empty()) std::abort();
    if (diagnostic.format().empty()) std::abort();
  }
  return 0;
}
