#include "support/device_printf.h"

#include <cstdio>
#include <cstring>

namespace rocuda::device_printf {
namespace {

enum class Kind { Int32, Int64, Double, Pointer, String };

struct Conversion {
  std::string_view spec;  // "%-08.3lld"
  std::string_view plain; // the spec without length modifiers, e.g. "%-08.3" + conversion
  char conversion = 0;
  Kind kind = Kind::Int32;
};

size_t sizeOf(Kind kind) { return kind == Kind::Int32 ? 4 : 8; }

// Calls `literal(text)` for plain text and `conversion(c)` for each conversion, in order.
template <typename Literal, typename Convert>
void walk(std::string_view format, Literal literal, Convert conversion) {
  size_t i = 0;
  while (i < format.size()) {
    size_t percent = format.find('%', i);
    if (percent == std::string_view::npos) {
      literal(format.substr(i));
      return;
    }
    literal(format.substr(i, percent - i));
    size_t p = percent + 1;
    if (p < format.size() && format[p] == '%') {
      literal("%");
      i = p + 1;
      continue;
    }
    while (p < format.size() && std::strchr("-+ #0123456789.*", format[p]) && format[p] != '\0') ++p;
    size_t modifiers = p;
    int longs = 0;
    while (p < format.size() && std::strchr("lhzjtL", format[p]) && format[p] != '\0') {
      if (format[p] != 'h') ++longs;
      ++p;
    }
    if (p >= format.size()) {  // a lone '%' at the end prints as written
      literal(format.substr(percent));
      return;
    }
    Conversion c;
    c.spec = format.substr(percent, p + 1 - percent);
    c.plain = format.substr(percent, modifiers - percent);
    c.conversion = format[p];
    i = p + 1;
    if (std::strchr("diouxXc", c.conversion)) {
      c.kind = longs > 0 ? Kind::Int64 : Kind::Int32;
    } else if (std::strchr("fFeEgGaA", c.conversion)) {
      c.kind = Kind::Double;
    } else if (c.conversion == 's') {
      c.kind = Kind::String;
    } else if (c.conversion == 'p') {
      c.kind = Kind::Pointer;
    } else {
      literal(c.spec);  // unknown conversion: printed as written, reads nothing
      continue;
    }
    conversion(c);
  }
}

size_t align(size_t offset, size_t size) { return (offset + size - 1) / size * size; }

}  // namespace

Layout layoutOf(std::string_view format) {
  Layout layout;
  walk(
      format, [](std::string_view) {},
      [&](const Conversion& c) {
        layout.bytes = align(layout.bytes, sizeOf(c.kind)) + sizeOf(c.kind);
        ++layout.arguments;
      });
  return layout;
}

std::string format(std::string_view format, const uint8_t* args, size_t argsBytes,
                   const StringReader& readString) {
  std::string out;
  size_t offset = 0;
  walk(
      format, [&](std::string_view text) { out += text; },
      [&](const Conversion& c) {
        size_t size = sizeOf(c.kind);
        size_t at = align(offset, size);
        if (args == nullptr || at + size > argsBytes) {
          out += c.spec;  // no argument for it
          return;
        }
        offset = at + size;
        uint64_t bits = 0;
        std::memcpy(&bits, args + at, size);
        char buffer[512];
        std::string spec(c.spec);
        switch (c.kind) {
          case Kind::Int32:
            std::snprintf(buffer, sizeof buffer, spec.c_str(), static_cast<int32_t>(bits));
            break;
          case Kind::Int64: {
            std::string wide = std::string(c.plain) + "ll" + c.conversion;
            std::snprintf(buffer, sizeof buffer, wide.c_str(), static_cast<long long>(bits));
            break;
          }
          case Kind::Double: {
            double v;
            std::memcpy(&v, &bits, 8);
            std::snprintf(buffer, sizeof buffer, spec.c_str(), v);
            break;
          }
          case Kind::Pointer:
            std::snprintf(buffer, sizeof buffer, spec.c_str(), reinterpret_cast<void*>(bits));
            break;
          case Kind::String: {
            std::string text = bits == 0 ? std::string("(null)") : readString(bits);
            std::snprintf(buffer, sizeof buffer, spec.c_str(), text.c_str());
            break;
          }
        }
        out += buffer;
      });
  return out;
}

}  // namespace rocuda::device_printf
