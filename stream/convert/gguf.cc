#include "stream/convert/gguf.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "parser/rules.h"
#include "stream/container/utf8.h"
#include "stream/convert/output_limits.h"

namespace hurray::stream::convert {
namespace {

constexpr uint32_t kMaxDims = 4;            // GGML_MAX_DIMS
constexpr uint64_t kMaxNameBytes = 0xFFFF;  // Hurray's index name limit
constexpr uint64_t kMaxInt64 =
    static_cast<uint64_t>(std::numeric_limits<int64_t>::max());

// ggml.h enum ggml_type: the ids in use (retired ids 4, 5, 31-33, 36-38 are
// unknown here).
constexpr GgmlTypeInfo kGgmlTypes[] = {
    {0, "F32", 1, 4},         {1, "F16", 1, 2},
    {2, "Q4_0", 32, 18},      {3, "Q4_1", 32, 20},
    {6, "Q5_0", 32, 22},      {7, "Q5_1", 32, 24},
    {8, "Q8_0", 32, 34},      {9, "Q8_1", 32, 36},
    {10, "Q2_K", 256, 84},    {11, "Q3_K", 256, 110},
    {12, "Q4_K", 256, 144},   {13, "Q5_K", 256, 176},
    {14, "Q6_K", 256, 210},   {15, "Q8_K", 256, 292},
    {16, "IQ2_XXS", 256, 66}, {17, "IQ2_XS", 256, 74},
    {18, "IQ3_XXS", 256, 98}, {19, "IQ1_S", 256, 50},
    {20, "IQ4_NL", 32, 18},   {21, "IQ3_S", 256, 110},
    {22, "IQ2_S", 256, 82},   {23, "IQ4_XS", 256, 136},
    {24, "I8", 1, 1},         {25, "I16", 1, 2},
    {26, "I32", 1, 4},        {27, "I64", 1, 8},
    {28, "F64", 1, 8},        {29, "IQ1_M", 256, 56},
    {30, "BF16", 1, 2},       {34, "TQ1_0", 256, 54},
    {35, "TQ2_0", 256, 66},   {39, "MXFP4", 32, 17},
};

// GgufLimits::max_metadata_bytes, spent by keys, tensor names and values
// as they are read: refused (LIMIT-BUFFER-BYTES, the rule the .hrry reader
// gives the same budget) before anything is allocated past it.
class Budget {
 public:
  explicit Budget(uint64_t limit) : limit_(limit), left_(limit) {}
  uint64_t left() const { return left_; }
  absl::Status Refuse(absl::string_view what, uint64_t at) const {
    const std::string m = absl::StrCat(
        "GGUF: ", what, " at byte ", at,
        ": the metadata (keys, tensor names and values) passes the limit of ",
        limit_, " bytes");
    return ToStatus(Rejection{Rule::kLimitBufferBytes, at, m.c_str()});
  }
  absl::Status Spend(uint64_t n, absl::string_view what, uint64_t at) {
    if (n > left_) return Refuse(what, at);
    left_ -= n;
    return absl::OkStatus();
  }

 private:
  uint64_t limit_;
  uint64_t left_;
};

// Sequential reads through a 64 KiB window over the source.
class Cursor {
 public:
  explicit Cursor(const ByteSource& source) : source_(source) {}
  uint64_t offset() const { return pos_; }
  uint64_t remaining() const { return source_.size() - pos_; }

  absl::Status Read(void* out, uint64_t n, absl::string_view what) {
    if (n > remaining()) {
      return absl::OutOfRangeError(absl::StrCat(
          "GGUF: ", what, " at byte ", pos_, " runs past the end of the file (",
          source_.size(), " bytes)"));
    }
    uint8_t* dst = static_cast<uint8_t*>(out);
    while (n > 0) {
      if (pos_ < win_start_ || pos_ >= win_start_ + win_.size()) {
        const uint64_t len = std::min<uint64_t>(kWindow, remaining());
        win_.resize(len);
        absl::Status s = source_.ReadAt(pos_, absl::MakeSpan(win_), "GGUF");
        if (!s.ok()) return s;
        win_start_ = pos_;
      }
      const uint64_t at = pos_ - win_start_;
      const uint64_t take = std::min<uint64_t>(n, win_.size() - at);
      std::memcpy(dst, win_.data() + at, take);
      dst += take;
      pos_ += take;
      n -= take;
    }
    return absl::OkStatus();
  }
  template <class T>
  absl::Status ReadLe(T* v, absl::string_view what) {
    uint8_t b[sizeof(T)];
    absl::Status s = Read(b, sizeof(T), what);
    if (!s.ok()) return s;
    std::make_unsigned_t<T> u = 0;
    for (size_t i = sizeof(T); i-- > 0;) u = (u << 8) | b[i];
    std::memcpy(v, &u, sizeof(T));
    return s;
  }
  // A gguf_string: uint64 length, then the bytes (not NUL-terminated),
  // appended to *out. A length above `max` is refused, by `budget` when
  // given (max is then what is left of it).
  absl::Status ReadString(std::string* out, uint64_t max,
                          absl::string_view what,
                          const Budget* budget = nullptr) {
    const uint64_t at = pos_;
    uint64_t len = 0;
    absl::Status s = ReadLe(&len, what);
    if (!s.ok()) return s;
    if (len > max && len <= remaining() && budget != nullptr) {
      return budget->Refuse(what, at);
    }
    if (len > max || len > remaining()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "GGUF: ", what, " at byte ", at, " declares ", len, " bytes (",
          len > max ? "above the limit" : "past the end of the file", ")"));
    }
    const size_t at_end = out->size();
    out->resize(at_end + len);
    return Read(out->data() + at_end, len, what);
  }

 private:
  static constexpr uint64_t kWindow = 64 << 10;
  const ByteSource& source_;
  uint64_t pos_ = 0;
  uint64_t win_start_ = 0;
  std::vector<uint8_t> win_;
};

absl::Status Fail(absl::string_view what, uint64_t at, absl::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrCat("GGUF: ", what, " at byte ", at, ": ", why));
}

}  // namespace

uint64_t GgufScalarBytes(uint32_t type) {
  switch (type) {
    case gguf_type::kUInt8:
    case gguf_type::kInt8:
    case gguf_type::kBool:
      return 1;
    case gguf_type::kUInt16:
    case gguf_type::kInt16:
      return 2;
    case gguf_type::kUInt32:
    case gguf_type::kInt32:
    case gguf_type::kFloat32:
      return 4;
    case gguf_type::kUInt64:
    case gguf_type::kInt64:
    case gguf_type::kFloat64:
    case gguf_type::kString:  // at least its length
      return 8;
    default:
      return 0;
  }
}

namespace {

// Reads one value of `type` (not an array) into kv.
absl::Status ReadValue(Cursor* c, uint32_t type, const std::string& key,
                       Budget* budget, GgufKv* kv) {
  const std::string what = absl::StrCat("value of '", ShortName(key), "'");
  absl::Status s;
  switch (type) {
    case gguf_type::kUInt8: {
      uint8_t v;
      s = c->ReadLe(&v, what);
      kv->uints.push_back(v);
      break;
    }
    case gguf_type::kUInt16: {
      uint16_t v;
      s = c->ReadLe(&v, what);
      kv->uints.push_back(v);
      break;
    }
    case gguf_type::kUInt32: {
      uint32_t v;
      s = c->ReadLe(&v, what);
      kv->uints.push_back(v);
      break;
    }
    case gguf_type::kUInt64: {
      uint64_t v;
      s = c->ReadLe(&v, what);
      kv->uints.push_back(v);
      break;
    }
    case gguf_type::kInt8: {
      int8_t v;
      s = c->ReadLe(&v, what);
      kv->ints.push_back(v);
      break;
    }
    case gguf_type::kInt16: {
      int16_t v;
      s = c->ReadLe(&v, what);
      kv->ints.push_back(v);
      break;
    }
    case gguf_type::kInt32: {
      int32_t v;
      s = c->ReadLe(&v, what);
      kv->ints.push_back(v);
      break;
    }
    case gguf_type::kInt64: {
      int64_t v;
      s = c->ReadLe(&v, what);
      kv->ints.push_back(v);
      break;
    }
    case gguf_type::kFloat32: {
      uint32_t bits;
      s = c->ReadLe(&bits, what);
      float f;
      std::memcpy(&f, &bits, 4);
      kv->floats.push_back(f);
      break;
    }
    case gguf_type::kFloat64: {
      uint64_t bits;
      s = c->ReadLe(&bits, what);
      double f;
      std::memcpy(&f, &bits, 8);
      kv->floats.push_back(f);
      break;
    }
    case gguf_type::kBool: {
      const uint64_t at = c->offset();
      uint8_t v;
      s = c->ReadLe(&v, what);
      if (s.ok() && v > 1) return Fail(what, at, "a bool is neither 0 nor 1");
      kv->bools.push_back(v);
      break;
    }
    case gguf_type::kString: {
      const uint64_t at = c->offset();
      const size_t before = kv->string_bytes.size();
      s = c->ReadString(&kv->string_bytes, budget->left(), what, budget);
      if (s.ok()) s = budget->Spend(kv->string_bytes.size() - before, what, at);
      if (s.ok()) kv->string_ends.push_back(kv->string_bytes.size());
      break;
    }
    default:
      return Fail(what, c->offset(), absl::StrCat("unknown type ", type));
  }
  if (!s.ok()) return s;
  return budget->Spend(8, what, c->offset());
}

absl::Status ReadKv(Cursor* c, Budget* budget, GgufKv* kv) {
  const uint64_t at = c->offset();
  kv->offset = at;
  absl::Status s = c->ReadString(&kv->key, kMaxNameBytes, "a metadata key");
  if (!s.ok()) return s;
  if (kv->key.empty() || !stream::container::IsValidUtf8(kv->key))
    return Fail("a metadata key", at, "empty or not UTF-8");
  // The key and its entry's length and type fields, as a value's 8 bytes.
  s = budget->Spend(kv->key.size() + 8,
                    absl::StrCat("key '", ShortName(kv->key), "'"), at);
  if (!s.ok()) return s;
  const std::string what = absl::StrCat("value of '", ShortName(kv->key), "'");
  s = c->ReadLe(&kv->type, what);
  if (!s.ok()) return s;
  if (kv->type != gguf_type::kArray) {
    if (GgufScalarBytes(kv->type) == 0)
      return Fail(what, c->offset() - 4,
                  absl::StrCat("unknown value type ", kv->type));
    return ReadValue(c, kv->type, kv->key, budget, kv);
  }
  kv->is_array = true;
  s = c->ReadLe(&kv->type, what);
  if (!s.ok()) return s;
  if (kv->type == gguf_type::kArray)
    return Fail(what, c->offset() - 4, "nested arrays are not supported");
  const uint64_t min = GgufScalarBytes(kv->type);
  if (min == 0)
    return Fail(what, c->offset() - 4,
                absl::StrCat("unknown array element type ", kv->type));
  const uint64_t count_at = c->offset();
  uint64_t count = 0;
  s = c->ReadLe(&count, what);
  if (!s.ok()) return s;
  if (count > c->remaining() / min)
    return Fail(what, count_at,
                absl::StrCat("array of ", count,
                             " values runs past the end of the file"));
  if (count > budget->left() / 8) return budget->Refuse(what, count_at);
  // Bounded by the budget (8 bytes per value): no growth by doubling.
  const size_t n = static_cast<size_t>(count);
  switch (kv->type) {
    case gguf_type::kString:
      kv->string_ends.reserve(n);
      break;
    case gguf_type::kBool:
      kv->bools.reserve(n);
      break;
    case gguf_type::kFloat32:
    case gguf_type::kFloat64:
      kv->floats.reserve(n);
      break;
    case gguf_type::kInt8:
    case gguf_type::kInt16:
    case gguf_type::kInt32:
    case gguf_type::kInt64:
      kv->ints.reserve(n);
      break;
    default:
      kv->uints.reserve(n);
  }
  for (uint64_t i = 0; i < count; ++i) {
    s = ReadValue(c, kv->type, kv->key, budget, kv);
    if (!s.ok()) return s;
  }
  return s;
}

absl::Status ReadTensorInfo(Cursor* c, Budget* budget, GgufTensor* t,
                            uint64_t* rel_offset) {
  const uint64_t at = c->offset();
  absl::Status s = c->ReadString(&t->name, kMaxNameBytes, "a tensor name");
  if (!s.ok()) return s;
  if (t->name.empty() || !stream::container::IsValidUtf8(t->name))
    return Fail("a tensor name", at, "empty or not UTF-8");
  const std::string what = absl::StrCat("tensor '", ShortName(t->name), "'");
  // The name and its index entry in the output.
  s = budget->Spend(IndexEntryBytes(t->name.size()), what, at);
  if (!s.ok()) return s;
  uint32_t n_dims = 0;
  s = c->ReadLe(&n_dims, what);
  if (!s.ok()) return s;
  if (n_dims < 1 || n_dims > kMaxDims)
    return Fail(what, c->offset() - 4,
                absl::StrCat("n_dims ", n_dims, " is outside 1..4"));
  t->elements = 1;
  for (uint32_t i = 0; i < n_dims; ++i) {
    uint64_t n = 0;
    s = c->ReadLe(&n, what);
    if (!s.ok()) return s;
    if (n > kMaxInt64)
      return Fail(what, c->offset() - 8,
                  absl::StrCat("ne[", i, "] = ", n, " is above 2^63-1"));
    if (n != 0 && t->elements > std::numeric_limits<uint64_t>::max() / n)
      return Fail(what, c->offset() - 8, "the element count overflows");
    t->elements *= n;
    t->ne.push_back(n);
  }
  s = c->ReadLe(&t->type, what);
  if (!s.ok()) return s;
  const GgmlTypeInfo* info = FindGgmlType(t->type);
  if (info == nullptr)
    return Fail(what, c->offset() - 4,
                absl::StrCat("unknown ggml type ", t->type));
  if (t->ne[0] % info->block != 0)
    return Fail(what, c->offset() - 4,
                absl::StrCat("ne[0] = ", t->ne[0], " is not a multiple of the ",
                             info->name, " block (", info->block, ")"));
  const uint64_t blocks = t->elements / info->block;
  if (blocks > std::numeric_limits<uint64_t>::max() / info->type_size)
    return Fail(what, c->offset() - 4, "the byte size overflows");
  t->byte_size = blocks * info->type_size;
  return c->ReadLe(rel_offset, what);
}

}  // namespace

const GgmlTypeInfo* FindGgmlType(uint32_t id) {
  for (const GgmlTypeInfo& t : kGgmlTypes) {
    if (t.id == id) return &t;
  }
  return nullptr;
}

bool LooksLikeGguf(absl::Span<const uint8_t> prefix) {
  return prefix.size() >= 4 && std::memcmp(prefix.data(), kGgufMagic, 4) == 0;
}

absl::StatusOr<GgufFile> ReadGgufHeader(const ByteSource& source,
                                        const GgufLimits& limits,
                                        const GgufKvCallback& on_kv) {
  Cursor c(source);
  uint8_t magic[4];
  absl::Status s = c.Read(magic, 4, "the magic");
  if (!s.ok()) return s;
  if (!LooksLikeGguf(magic)) return Fail("the magic", 0, "not \"GGUF\"");
  GgufFile file;
  s = c.ReadLe(&file.version, "the version");
  if (!s.ok()) return s;
  if (file.version != 2 && file.version != 3)
    return Fail(
        "the version", 4,
        absl::StrCat("version ", file.version, " is not supported (2 or 3)"));
  uint64_t tensor_count = 0, kv_count = 0;
  s = c.ReadLe(&tensor_count, "the tensor count");
  if (s.ok()) s = c.ReadLe(&kv_count, "the KV count");
  if (!s.ok()) return s;
  if (tensor_count > limits.max_tensors)
    return Fail("the tensor count", 8,
                absl::StrCat(tensor_count, " is above the limit of ",
                             limits.max_tensors));
  if (kv_count > limits.max_kv)
    return Fail(
        "the KV count", 16,
        absl::StrCat(kv_count, " is above the limit of ", limits.max_kv));
  Budget budget(limits.max_metadata_bytes);
  absl::flat_hash_set<std::string> keys;
  for (uint64_t i = 0; i < kv_count; ++i) {
    const uint64_t at = c.offset();
    GgufKv kv;
    s = ReadKv(&c, &budget, &kv);
    if (!s.ok()) return s;
    if (!on_kv && !keys.insert(kv.key).second)
      return Fail(absl::StrCat("key '", ShortName(kv.key), "'"), at,
                  "duplicate key");
    if (kv.key == "general.alignment") {
      if (kv.is_array || kv.type != gguf_type::kUInt32)
        return Fail("general.alignment", at, "not a uint32");
      const uint64_t a = kv.uints[0];
      if (a == 0 || (a & (a - 1)) != 0 || a > limits.max_alignment)
        return Fail("general.alignment", at,
                    absl::StrCat(a, " is not a power of two up to ",
                                 limits.max_alignment));
      file.alignment = static_cast<uint32_t>(a);
    }
    if (on_kv) {
      s = on_kv(kv);
      if (!s.ok()) return s;
    } else {
      file.kv.push_back(std::move(kv));
    }
  }
  // Each tensor info takes at least 8 + 4 + 8 + 4 + 8 bytes.
  if (tensor_count > c.remaining() / 32)
    return Fail(
        "the tensor count", 8,
        absl::StrCat(tensor_count, " tensor infos cannot fit in the file"));
  std::vector<uint64_t> rel(tensor_count);
  absl::flat_hash_set<std::string> names;
  file.tensors.resize(tensor_count);
  for (uint64_t i = 0; i < tensor_count; ++i) {
    const uint64_t at = c.offset();
    GgufTensor& t = file.tensors[i];
    s = ReadTensorInfo(&c, &budget, &t, &rel[i]);
    if (!s.ok()) return s;
    if (!names.insert(t.name).second)
      return Fail(absl::StrCat("tensor '", t.name, "'"), at,
                  "duplicate tensor name");
  }
  const uint64_t a = file.alignment;
  file.data_start = (c.offset() + a - 1) / a * a;
  if (file.data_start > source.size() && tensor_count > 0)
    return Fail("the data section", c.offset(),
                "starts past the end of the file");
  const uint64_t data_length =
      file.data_start > source.size() ? 0 : source.size() - file.data_start;
  for (uint64_t i = 0; i < tensor_count; ++i) {
    GgufTensor& t = file.tensors[i];
    const std::string what = absl::StrCat("tensor '", t.name, "'");
    if (rel[i] % a != 0)
      return Fail(what, file.data_start,
                  absl::StrCat("offset ", rel[i], " is not a multiple of ",
                               "the alignment ", a));
    if (rel[i] > data_length || t.byte_size > data_length - rel[i])
      return Fail(what, file.data_start,
                  absl::StrCat(t.byte_size, " bytes at data offset ", rel[i],
                               " run past the end of the file (", data_length,
                               " data bytes)"));
    t.begin = file.data_start + rel[i];
  }
  std::sort(file.tensors.begin(), file.tensors.end(),
            [](const GgufTensor& x, const GgufTensor& y) {
              return x.begin != y.begin ? x.begin < y.begin
                                        : x.byte_size < y.byte_size;
            });
  const GgufTensor* last = nullptr;
  for (const GgufTensor& t : file.tensors) {
    if (t.byte_size == 0) continue;
    if (last != nullptr && t.begin < last->begin + last->byte_size)
      return Fail(absl::StrCat("tensor '", t.name, "'"), t.begin,
                  absl::StrCat("its data overlaps tensor '", last->name, "'"));
    last = &t;
  }
  return file;
}

}  // namespace hurray::stream::convert
