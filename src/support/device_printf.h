// CUDA's device printf, shared by every device: which arguments a format string reads from the
// argument buffer a kernel hands `vprintf(format, args)`, and the text it prints.
//
// The buffer holds each argument at its natural alignment, in order: 8 bytes for double (float
// is promoted), pointers, %s strings and 64-bit integers (%ld, %lld, %zu...), 4 bytes for every
// smaller integer (%d, %hd, %c are promoted to int).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace rocuda::device_printf {

struct Layout {
  size_t arguments = 0;  // conversions that read an argument (what CUDA's printf returns)
  size_t bytes = 0;      // bytes of the argument buffer they read
};

// The arguments `format` reads.
Layout layoutOf(std::string_view format);

// What a failed device-side assert prints, as NVIDIA's driver does: file, line, function, block
// and thread indices, the condition. Its arguments: %s file, %u line, %s function, %u x3 block,
// %u x3 thread, %s condition (56 bytes in a printf argument buffer).
inline constexpr const char* kAssertFormat =
    "%s:%u: %s: block: [%u,%u,%u], thread: [%u,%u,%u] Assertion `%s` failed.\n";

// The text of a %s argument at `address` ("(null)" is handled before the call); a device whose
// memory the host cannot read directly copies it out.
using StringReader = std::function<std::string(uint64_t address)>;

// printf's output for `format` with the arguments in `args` (`argsBytes` long: a conversion
// beyond them prints as written, never reads past the buffer). `*` widths and precisions read
// an int argument; conversions past CUDA's 32 arguments print as written.
std::string format(std::string_view format, const uint8_t* args, size_t argsBytes,
                   const StringReader& readString);

}  // namespace rocuda::device_printf
