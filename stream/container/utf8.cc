#include "stream/container/utf8.h"

#include <cstddef>

namespace hurray::stream::container {

bool IsValidUtf8(absl::Span<const uint8_t> bytes) {
  const size_t n = bytes.size();
  size_t i = 0;
  while (i < n) {
    const uint8_t b = bytes[i];
    if (b < 0x80) {
      ++i;
      continue;
    }
    // Lead byte: sequence length and the allowed range of the second byte
    // (which excludes overlong forms, surrogates and values past U+10FFFF).
    size_t len;
    uint8_t lo = 0x80, hi = 0xBF;
    if (b >= 0xC2 && b <= 0xDF) {
      len = 2;
    } else if (b >= 0xE0 && b <= 0xEF) {
      len = 3;
      if (b == 0xE0) lo = 0xA0;
      if (b == 0xED) hi = 0x9F;
    } else if (b >= 0xF0 && b <= 0xF4) {
      len = 4;
      if (b == 0xF0) lo = 0x90;
      if (b == 0xF4) hi = 0x8F;
    } else {
      return false;  // continuation byte, C0/C1, or F5..FF
    }
    if (n - i < len) return false;
    if (bytes[i + 1] < lo || bytes[i + 1] > hi) return false;
    for (size_t k = 2; k < len; ++k) {
      if ((bytes[i + k] & 0xC0) != 0x80) return false;
    }
    i += len;
  }
  return true;
}

}  // namespace hurray::stream::container
