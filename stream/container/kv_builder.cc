#include "stream/container/kv_builder.h"

#include <limits>

#include "parser/wire.h"
#include "stream/container/utf8.h"

namespace hurray::stream::container {
namespace {

absl::Span<const uint8_t> Bytes(absl::string_view s) {
  return absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(s.data()),
                             s.size());
}

bool FitsU32(size_t n) { return n <= std::numeric_limits<uint32_t>::max(); }

absl::Status CheckString(absl::string_view s) {
  if (!FitsU32(s.size())) return absl::InvalidArgumentError("string too long");
  if (!IsValidUtf8(s)) {
    return absl::InvalidArgumentError("KV strings must be UTF-8 (FILE-KV-10)");
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status KvBuilder::Begin(absl::string_view key, KvType type) {
  if (key.empty() || key.size() > 0xFFFF) {
    return absl::InvalidArgumentError("KV keys hold 1 to 65535 bytes");
  }
  if (!IsValidUtf8(key)) {
    return absl::InvalidArgumentError("KV keys must be UTF-8 (FILE-KV-03)");
  }
  if (count_ == std::numeric_limits<uint32_t>::max()) {
    return absl::OutOfRangeError("too many KV entries");
  }
  if (!keys_.emplace(key).second) {
    return absl::AlreadyExistsError("duplicate KV key (FILE-KV-04)");
  }
  uint8_t length[2];
  wire::StoreU16(length, static_cast<uint16_t>(key.size()));
  Put(length);
  Put(Bytes(key));
  const uint8_t tag = static_cast<uint8_t>(type);
  Put(absl::MakeConstSpan(&tag, 1));
  ++count_;
  return absl::OkStatus();
}

void KvBuilder::Put(absl::Span<const uint8_t> bytes) {
  entries_.insert(entries_.end(), bytes.begin(), bytes.end());
}

void KvBuilder::PutU32(uint32_t v) {
  uint8_t b[4];
  wire::StoreU32(b, v);
  Put(b);
}

void KvBuilder::PutU64(uint64_t v) {
  uint8_t b[8];
  wire::StoreU64(b, v);
  Put(b);
}

void KvBuilder::PutBlob(absl::Span<const uint8_t> bytes) {
  PutU32(static_cast<uint32_t>(bytes.size()));
  Put(bytes);
}

void KvBuilder::PutArrayHeader(KvType element, size_t count) {
  const uint8_t tag = static_cast<uint8_t>(element);
  Put(absl::MakeConstSpan(&tag, 1));
  PutU32(static_cast<uint32_t>(count));
}

absl::Status KvBuilder::AddString(absl::string_view key,
                                  absl::string_view value) {
  absl::Status s = CheckString(value);
  if (s.ok()) s = Begin(key, KvType::kString);
  if (s.ok()) PutBlob(Bytes(value));
  return s;
}

absl::Status KvBuilder::AddInt64(absl::string_view key, int64_t value) {
  absl::Status s = Begin(key, KvType::kInt64);
  if (s.ok()) PutU64(static_cast<uint64_t>(value));
  return s;
}

absl::Status KvBuilder::AddUInt64(absl::string_view key, uint64_t value) {
  absl::Status s = Begin(key, KvType::kUInt64);
  if (s.ok()) PutU64(value);
  return s;
}

absl::Status KvBuilder::AddFloat64(absl::string_view key, double value) {
  absl::Status s = Begin(key, KvType::kFloat64);
  uint8_t b[8];
  wire::StoreF64(b, value);
  if (s.ok()) Put(b);
  return s;
}

absl::Status KvBuilder::AddBool(absl::string_view key, bool value) {
  absl::Status s = Begin(key, KvType::kBool);
  const uint8_t b = value ? 1 : 0;
  if (s.ok()) Put(absl::MakeConstSpan(&b, 1));
  return s;
}

absl::Status KvBuilder::AddBytes(absl::string_view key,
                                 absl::Span<const uint8_t> value) {
  if (!FitsU32(value.size())) return absl::InvalidArgumentError("too long");
  absl::Status s = Begin(key, KvType::kBytes);
  if (s.ok()) PutBlob(value);
  return s;
}

absl::Status KvBuilder::AddStringArray(
    absl::string_view key, absl::Span<const absl::string_view> values) {
  if (!FitsU32(values.size())) return absl::InvalidArgumentError("too long");
  for (absl::string_view v : values) {
    absl::Status s = CheckString(v);
    if (!s.ok()) return s;
  }
  absl::Status s = Begin(key, KvType::kArray);
  if (!s.ok()) return s;
  PutArrayHeader(KvType::kString, values.size());
  for (absl::string_view v : values) PutBlob(Bytes(v));
  return s;
}

absl::Status KvBuilder::AddInt64Array(absl::string_view key,
                                      absl::Span<const int64_t> values) {
  if (!FitsU32(values.size())) return absl::InvalidArgumentError("too long");
  absl::Status s = Begin(key, KvType::kArray);
  if (!s.ok()) return s;
  PutArrayHeader(KvType::kInt64, values.size());
  for (int64_t v : values) PutU64(static_cast<uint64_t>(v));
  return s;
}

absl::Status KvBuilder::AddUInt64Array(absl::string_view key,
                                       absl::Span<const uint64_t> values) {
  if (!FitsU32(values.size())) return absl::InvalidArgumentError("too long");
  absl::Status s = Begin(key, KvType::kArray);
  if (!s.ok()) return s;
  PutArrayHeader(KvType::kUInt64, values.size());
  for (uint64_t v : values) PutU64(v);
  return s;
}

absl::Status KvBuilder::AddFloat64Array(absl::string_view key,
                                        absl::Span<const double> values) {
  if (!FitsU32(values.size())) return absl::InvalidArgumentError("too long");
  absl::Status s = Begin(key, KvType::kArray);
  if (!s.ok()) return s;
  PutArrayHeader(KvType::kFloat64, values.size());
  for (double v : values) {
    uint8_t b[8];
    wire::StoreF64(b, v);
    Put(b);
  }
  return s;
}

absl::Status KvBuilder::AddBoolArray(absl::string_view key,
                                     absl::Span<const bool> values) {
  if (!FitsU32(values.size())) return absl::InvalidArgumentError("too long");
  absl::Status s = Begin(key, KvType::kArray);
  if (!s.ok()) return s;
  PutArrayHeader(KvType::kBool, values.size());
  for (bool v : values) entries_.push_back(v ? 1 : 0);
  return s;
}

absl::Status KvBuilder::AddBytesArray(
    absl::string_view key, absl::Span<const absl::Span<const uint8_t>> values) {
  if (!FitsU32(values.size())) return absl::InvalidArgumentError("too long");
  for (absl::Span<const uint8_t> v : values) {
    if (!FitsU32(v.size())) return absl::InvalidArgumentError("too long");
  }
  absl::Status s = Begin(key, KvType::kArray);
  if (!s.ok()) return s;
  PutArrayHeader(KvType::kBytes, values.size());
  for (absl::Span<const uint8_t> v : values) PutBlob(v);
  return s;
}

std::vector<uint8_t> KvBuilder::Build() const {
  std::vector<uint8_t> out(4);
  wire::StoreU32(out.data(), count_);
  out.insert(out.end(), entries_.begin(), entries_.end());
  return out;
}

}  // namespace hurray::stream::container
