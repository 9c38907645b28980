// Strict UTF-8 validation (RFC 3629): no overlong forms, no surrogates, no
// code point above U+10FFFF. Names, keys and string values of .hrry files
// must be valid UTF-8 (file-format.md § Index Encoding, § KV Section
// Encoding; FILE-IDX-03, FILE-KV-03, FILE-KV-10).
#ifndef HURRAY_STREAM_CONTAINER_UTF8_H_
#define HURRAY_STREAM_CONTAINER_UTF8_H_

#include <cstdint>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace hurray::stream::container {

bool IsValidUtf8(absl::Span<const uint8_t> bytes);

inline bool IsValidUtf8(absl::string_view s) {
  return IsValidUtf8(absl::MakeConstSpan(
      reinterpret_cast<const uint8_t*>(s.data()), s.size()));
}

}  // namespace hurray::stream::container

#endif  // HURRAY_STREAM_CONTAINER_UTF8_H_
