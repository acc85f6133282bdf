#include "support/device_printf.h"

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstring>

namespace rocuda::device_printf {
namespace {

enum class Kind { Int32, Int64, Double, Pointer, String };

// A width or precision: absent, written as digits, or `*` (read from the arguments).
struct Field {
  enum { None, Digits, Star } form = None;
  int value = 0;
};

struct Conversion {
  std::string_view spec;  // as written, e.g. "%-08.3lld": printed as is when it cannot be used
  std::string flags;      // of "-+ #0"
  Field width, precision;
  std::string_view halves;  // "h" or "hh": kept, they narrow an int as on the host
  char conversion = 0;
  Kind kind = Kind::Int32;
  size_t arguments() const {
    return 1 + (width.form == Field::Star ? 1 : 0) + (precision.form == Field::Star ? 1 : 0);
  }
};

// CUDA's printf takes at most 32 arguments: "additional arguments beyond this will be ignored,
// and the format specifier output as-is".
constexpr size_t kMaxArguments = 32;
// Widths and precisions beyond this (the default printf FIFO's size) are clamped to it.
constexpr int kMaxField = 1 << 20;

size_t sizeOf(Kind kind) { return kind == Kind::Int32 ? 4 : 8; }

// Digits at format[p...] into `value` (clamped); false when there are none.
bool digits(std::string_view format, size_t& p, int& value) {
  size_t begin = p;
  long long v = 0;
  while (p < format.size() && format[p] >= '0' && format[p] <= '9') {
    v = std::min<long long>(v * 10 + (format[p] - '0'), kMaxField);
    ++p;
  }
  value = static_cast<int>(v);
  return p > begin;
}

// Calls `literal(text)` for plain text and `conversion(c)` for each conversion that reads
// arguments, in order; a conversion past the 32-argument limit is literal text.
template <typename Literal, typename Convert>
void walk(std::string_view format, Literal literal, Convert conversion) {
  size_t i = 0, arguments = 0;
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
    Conversion c;
    while (p < format.size() && std::strchr("-+ #0", format[p]) && format[p] != '\0')
      c.flags += format[p++];
    if (p < format.size() && format[p] == '*') {
      c.width.form = Field::Star;
      ++p;
    } else if (digits(format, p, c.width.value)) {
      c.width.form = Field::Digits;
    }
    bool malformed = false;
    if (p < format.size() && format[p] == '.') {
      ++p;
      c.precision.form = Field::Digits;  // "%.f": precision 0
      if (p < format.size() && format[p] == '*') {
        c.precision.form = Field::Star;
        ++p;
      } else {
        digits(format, p, c.precision.value);
      }
    }
    // Anything else among the flag, width and precision characters ("%1.2.3d", "%**d").
    while (p < format.size() && std::strchr("-+ #0123456789.*", format[p]) && format[p] != '\0') {
      malformed = true;
      ++p;
    }
    int longs = 0;
    size_t halvesBegin = p;
    while (p < format.size() && std::strchr("lhzjtL", format[p]) && format[p] != '\0') {
      if (format[p] != 'h') ++longs;
      ++p;
    }
    if (p >= format.size()) {  // a lone '%' at the end prints as written
      literal(format.substr(percent));
      return;
    }
    c.spec = format.substr(percent, p + 1 - percent);
    c.conversion = format[p];
    i = p + 1;
    if (longs == 0) c.halves = format.substr(halvesBegin, std::min<size_t>(p - halvesBegin, 2));
    if (std::strchr("diouxXc", c.conversion)) {
      c.kind = longs > 0 ? Kind::Int64 : Kind::Int32;
    } else if (std::strchr("fFeEgGaA", c.conversion)) {
      c.kind = Kind::Double;  // %Lf too: a device long double is a double
    } else if (c.conversion == 's') {
      c.kind = Kind::String;
    } else if (c.conversion == 'p') {
      c.kind = Kind::Pointer;
    } else {
      malformed = true;  // unknown conversion: printed as written, reads nothing
    }
    if (malformed || arguments + c.arguments() > kMaxArguments) {
      literal(c.spec);
      continue;
    }
    arguments += c.arguments();
    conversion(c);
  }
}

size_t align(size_t offset, size_t size) { return (offset + size - 1) / size * size; }

// Reads the arguments of a conversion in order from the buffer.
class ArgumentReader {
 public:
  ArgumentReader(const uint8_t* args, size_t bytes) : args_(args), bytes_(bytes) {}
  // Bytes a conversion reads from `offset` on (its `*` fields' ints, then its value).
  static size_t advance(size_t offset, const Conversion& c) {
    for (size_t star = 1; star < c.arguments(); ++star) offset = align(offset, 4) + 4;
    return align(offset, sizeOf(c.kind)) + sizeOf(c.kind);
  }
  bool has(const Conversion& c) const { return args_ != nullptr && advance(offset_, c) <= bytes_; }
  uint64_t next(size_t size) {
    offset_ = align(offset_, size);
    uint64_t bits = 0;
    std::memcpy(&bits, args_ + offset_, size);
    offset_ += size;
    return bits;
  }

 private:
  const uint8_t* args_;
  size_t bytes_;
  size_t offset_ = 0;
};

// snprintf into a string of the size the result needs.
template <typename T>
void append(std::string& out, const std::string& spec, T value) {
  int n = std::snprintf(nullptr, 0, spec.c_str(), value);
  if (n <= 0) return;
  size_t at = out.size();
  out.resize(at + static_cast<size_t>(n) + 1);
  std::snprintf(out.data() + at, static_cast<size_t>(n) + 1, spec.c_str(), value);
  out.resize(at + static_cast<size_t>(n));
}

}  // namespace

Layout layoutOf(std::string_view format) {
  Layout layout;
  walk(
      format, [](std::string_view) {},
      [&](const Conversion& c) {
        layout.bytes = ArgumentReader::advance(layout.bytes, c);
        layout.arguments += c.arguments();
      });
  return layout;
}

std::string format(std::string_view format, const uint8_t* args, size_t argsBytes,
                   const StringReader& readString) {
  std::string out;
  ArgumentReader reader(args, argsBytes);
  walk(
      format, [&](std::string_view text) { out += text; },
      [&](const Conversion& c) {
        if (!reader.has(c)) {
          out += c.spec;  // no argument for it
          return;
        }
        // The host's printf sees only a spec rebuilt from what was parsed: numbers for `*`,
        // no length modifier but the one matching the value passed.
        std::string flags = c.flags;
        int width = c.width.value, precision = c.precision.value;
        bool hasPrecision = c.precision.form != Field::None;
        if (c.width.form == Field::Star) {
          width = static_cast<int32_t>(reader.next(4));
          if (width < 0) {  // as in C: a negative width is the '-' flag
            flags += '-';
            width = width == INT32_MIN ? kMaxField : -width;
          }
        }
        if (c.precision.form == Field::Star) {
          precision = static_cast<int32_t>(reader.next(4));
          hasPrecision = precision >= 0;  // as in C: negative means none
        }
        std::string spec = "%" + flags;
        if (c.width.form != Field::None) spec += std::to_string(std::min(width, kMaxField));
        if (hasPrecision) spec += "." + std::to_string(std::min(precision, kMaxField));
        uint64_t bits = reader.next(sizeOf(c.kind));
        switch (c.kind) {
          case Kind::Int32:
            append(out, spec + std::string(c.halves) + c.conversion, static_cast<int32_t>(bits));
            break;
          case Kind::Int64:
            if (c.conversion == 'c')
              append(out, spec + 'c', static_cast<int>(bits));
            else
              append(out, spec + "ll" + c.conversion, static_cast<long long>(bits));
            break;
          case Kind::Double: {
            double v;
            std::memcpy(&v, &bits, 8);
            append(out, spec + c.conversion, v);
            break;
          }
          case Kind::Pointer:
            append(out, spec + 'p', reinterpret_cast<void*>(bits));
            break;
          case Kind::String: {
            std::string text = bits == 0 ? std::string("(null)") : readString(bits);
            append(out, spec + 's', text.c_str());
            break;
          }
        }
      });
  return out;
}

}  // namespace rocuda::device_printf
