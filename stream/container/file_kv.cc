#include "stream/container/file_kv.h"

#include "parser/wire.h"
#include "stream/container/utf8.h"

namespace hurray::stream::container {
namespace {

// Bytes the smallest payload of a type takes (REJECT-RULES.md §5: counts are
// checked against the bytes that must hold them).
uint64_t MinPayload(uint8_t tag) {
  switch (static_cast<KvType>(tag)) {
    case KvType::kBool:
      return 1;
    case KvType::kString:
    case KvType::kBytes:
      return 4;
    default:
      return 8;
  }
}

// A cursor over the section that reports the first field that does not fit.
class Reader {
 public:
  Reader(absl::Span<const uint8_t> bytes, uint64_t base)
      : bytes_(bytes), base_(base) {}

  uint64_t at() const { return base_ + pos_; }
  uint64_t pos() const { return pos_; }
  absl::Span<const uint8_t> Since(uint64_t from) const {
    return bytes_.subspan(from, pos_ - from);
  }
  uint64_t left() const { return bytes_.size() - pos_; }
  bool Take(uint64_t n, absl::Span<const uint8_t>* out) {
    if (left() < n) return false;
    *out = bytes_.subspan(pos_, n);
    pos_ += n;
    return true;
  }

 private:
  absl::Span<const uint8_t> bytes_;
  uint64_t base_;
  uint64_t pos_ = 0;
};

constexpr Rejection Truncated(uint64_t at) {
  return {Rule::kFileKv01, at, "the KV section ends inside an entry"};
}

// One payload of scalar type `tag` (0x01..0x06).
Rejection ParseScalar(uint8_t tag, Reader* r, KvValue* v) {
  absl::Span<const uint8_t> f;
  v->type = static_cast<KvType>(tag);
  switch (v->type) {
    case KvType::kString:
    case KvType::kBytes: {
      if (!r->Take(4, &f)) return Truncated(r->at());
      const uint32_t length = wire::LoadU32(f.data());
      const uint64_t at = r->at();
      if (!r->Take(length, &v->bytes)) return Truncated(at);
      if (v->type == KvType::kString && !IsValidUtf8(v->bytes)) {
        return {Rule::kFileKv10, at, "a KV string is not UTF-8"};
      }
      return kAccepted;
    }
    case KvType::kInt64:
    case KvType::kUInt64:
    case KvType::kFloat64:
      if (!r->Take(8, &f)) return Truncated(r->at());
      v->u64 = wire::LoadU64(f.data());
      v->i64 = wire::LoadI64(f.data());
      v->f64 = wire::LoadF64(f.data());
      return kAccepted;
    case KvType::kBool: {
      const uint64_t at = r->at();
      if (!r->Take(1, &f)) return Truncated(at);
      if (f[0] > 1) return {Rule::kFileKv08, at, "a KV bool is not 0 or 1"};
      v->boolean = f[0] == 1;
      return kAccepted;
    }
    case KvType::kArray:
      break;
  }
  return {Rule::kFileKv09, r->at(), "not a scalar KV type"};
}

Rejection ParseValue(uint8_t tag, Reader* r, KvValue* v) {
  if (tag != static_cast<uint8_t>(KvType::kArray)) {
    return ParseScalar(tag, r, v);
  }
  v->type = KvType::kArray;
  absl::Span<const uint8_t> f;
  const uint64_t tag_at = r->at();
  if (!r->Take(1, &f)) return Truncated(tag_at);
  const uint8_t element = f[0];
  // Elements are scalars: nested arrays are forbidden.
  if (element < 0x01 || element > 0x06) {
    return {Rule::kFileKv09, tag_at, "a KV array element tag is not 01..06"};
  }
  v->element_type = static_cast<KvType>(element);
  const uint64_t count_at = r->at();
  if (!r->Take(4, &f)) return Truncated(count_at);
  v->count = wire::LoadU32(f.data());
  if (v->count > r->left() / MinPayload(element)) return Truncated(count_at);
  const uint64_t start = r->pos();
  for (uint32_t i = 0; i < v->count; ++i) {
    KvValue element_value;
    const Rejection bad = ParseScalar(element, r, &element_value);
    if (!bad.ok()) return bad;
  }
  v->bytes = r->Since(start);  // re-read by Elements()
  return kAccepted;
}

}  // namespace

Rejection KvSection::Parse(absl::Span<const uint8_t> bytes, uint64_t base,
                           Mode mode) {
  entries_.clear();
  by_key_.clear();
  Reader r(bytes, base);
  absl::Span<const uint8_t> f;
  if (!r.Take(4, &f)) return Truncated(base);
  const uint32_t count = wire::LoadU32(f.data());
  // The smallest entry: 2-byte length, 1-byte key, tag, bool payload.
  if (count > r.left() / 5) {
    return {Rule::kFileKv01, base, "kv_count does not fit in kv_length"};
  }
  entries_.reserve(count);
  by_key_.reserve(count);
  for (uint32_t i = 0; i < count; ++i) {
    KvEntry e;
    e.at = r.at();
    if (!r.Take(2, &f)) return Truncated(e.at);
    const uint16_t key_length = wire::LoadU16(f.data());
    if (key_length == 0) return {Rule::kFileKv02, e.at, "a KV key is empty"};
    const uint64_t key_at = r.at();
    if (!r.Take(key_length, &f)) return Truncated(key_at);
    if (!IsValidUtf8(f))
      return {Rule::kFileKv03, key_at, "a KV key is not UTF-8"};
    e.key =
        absl::string_view(reinterpret_cast<const char*>(f.data()), f.size());
    if (!by_key_.emplace(e.key, i).second) {
      return {Rule::kFileKv04, key_at, "two KV entries share a key"};
    }
    const uint64_t tag_at = r.at();
    if (!r.Take(1, &f)) return Truncated(tag_at);
    const uint8_t tag = f[0];
    if (tag == 0x00 || tag == 0xFF) {
      return {Rule::kFileKv06, tag_at, "KV value tag 0x00 or 0xFF"};
    }
    if (tag >= 0xF0) {
      // Private tags: their payload size is only known by agreement, which
      // this reader does not take, so they cannot be stepped over.
      return {Rule::kFileKv07, tag_at,
              "private KV value tag without agreement"};
    }
    if (tag > 0x07) return {Rule::kFileKv05, tag_at, "reserved KV value tag"};
    const Rejection bad = ParseValue(tag, &r, &e.value);
    if (!bad.ok()) return bad;
    entries_.push_back(e);
  }
  if (r.left() > 0 && Applies(Rule::kFileKv11, mode)) {
    return {Rule::kFileKv11, r.at(), "bytes after the last KV entry"};
  }
  return kAccepted;
}

std::vector<KvValue> KvValue::Elements() const {
  std::vector<KvValue> out;
  if (type != KvType::kArray) return out;
  out.reserve(count);
  Reader r(bytes, 0);
  for (uint32_t i = 0; i < count; ++i) {
    KvValue v;
    if (!ParseScalar(static_cast<uint8_t>(element_type), &r, &v).ok()) break;
    out.push_back(v);
  }
  return out;
}

const KvEntry* KvSection::Find(absl::string_view key) const {
  auto it = by_key_.find(key);
  return it == by_key_.end() ? nullptr : &entries_[it->second];
}

}  // namespace hurray::stream::container
