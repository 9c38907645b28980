#include "stream/convert/safetensors.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "parser/descriptor.h"
#include "parser/element_type.h"
#include "stream/container/utf8.h"

namespace hurray::convert {
namespace {

using Json = nlohmann::json;

// The deepest nesting a valid header has: root object → tensor object →
// shape array.
constexpr size_t kMaxDepth = 3;

// A DOM-building SAX handler that also refuses duplicate keys (the DOM
// parser would keep the last one silently) and deep nesting, and keeps the
// position and text of a syntax error. No exceptions are thrown.
class CheckingSax : public nlohmann::detail::json_sax_dom_parser<Json> {
 public:
  using Base = nlohmann::detail::json_sax_dom_parser<Json>;
  explicit CheckingSax(Json* root) : Base(*root, /*allow_exceptions=*/false) {}

  bool start_object(std::size_t n) {
    if (!Push()) return false;
    return Base::start_object(n);
  }
  bool end_object() {
    keys_.pop_back();
    return Base::end_object();
  }
  bool start_array(std::size_t n) {
    if (!Push()) return false;
    return Base::start_array(n);
  }
  bool end_array() {
    keys_.pop_back();
    return Base::end_array();
  }
  bool key(std::string& k) {
    if (!keys_.back().insert(k).second) {
      error_ = absl::StrCat("duplicate key '", k, "'");
      return false;
    }
    return Base::key(k);
  }
  template <class Exception>
  bool parse_error(std::size_t position, const std::string& token,
                   const Exception& ex) {
    position_ = position;
    syntax_ = true;
    error_ = ex.what();
    return Base::parse_error(position, token, ex);
  }

  const std::string& error() const { return error_; }
  size_t position() const { return position_; }
  bool syntax() const { return syntax_; }

 private:
  bool Push() {
    if (keys_.size() >= kMaxDepth) {
      error_ = "JSON nested deeper than a safetensors header";
      return false;
    }
    keys_.emplace_back();
    return true;
  }
  std::vector<absl::flat_hash_set<std::string>> keys_;
  std::string error_;
  size_t position_ = 0;
  bool syntax_ = false;
};

struct DtypeInfo {
  const char* name;
  uint8_t type_tag;
  uint32_t bytes;
};
// safetensors dtypes (Dtype in safetensors' tensor.rs) that Hurray holds.
// BOOL is one byte per element there and bit-packed in Hurray. F4 and the
// F6 types are left out: safetensors does not define their packing.
constexpr DtypeInfo kDtypes[] = {
    {"F64", type_tag::kFloat64, 8},
    {"F32", type_tag::kFloat32, 4},
    {"F16", type_tag::kFloat16, 2},
    {"BF16", type_tag::kBFloat16, 2},
    {"I64", type_tag::kInt64, 8},
    {"I32", type_tag::kInt32, 4},
    {"I16", type_tag::kInt16, 2},
    {"I8", type_tag::kInt8, 1},
    {"U64", type_tag::kUInt64, 8},
    {"U32", type_tag::kUInt32, 4},
    {"U16", type_tag::kUInt16, 2},
    {"U8", type_tag::kUInt8, 1},
    {"BOOL", type_tag::kBool, 1},
    {"F8_E4M3", type_tag::kFloat8E4M3, 1},
    {"F8_E5M2", type_tag::kFloat8E5M2, 1},
    {"F8_E8M0", type_tag::kFloat8E8M0, 1},
    {"C64", type_tag::kComplex64, 8},
};

absl::Status TensorError(absl::string_view name, absl::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrCat("safetensors header: tensor '", name, "': ", why));
}

// A JSON integer in 0..2^63-1.
bool AsSize(const Json& v, uint64_t* out) {
  if (!v.is_number_unsigned() && !v.is_number_integer()) return false;
  if (v.is_number_integer() && !v.is_number_unsigned()) {
    if (v.get<int64_t>() < 0) return false;
  }
  const uint64_t x = v.get<uint64_t>();
  if (x > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
    return false;
  *out = x;
  return true;
}

absl::StatusOr<SafetensorsTensor> ParseTensor(const std::string& name,
                                              const Json& v,
                                              uint64_t data_start,
                                              uint64_t data_length) {
  if (name.empty()) return TensorError(name, "empty tensor name");
  if (!v.is_object())
    return TensorError(name, "the entry is not a JSON object");
  for (const auto& [field, unused] : v.items()) {
    if (field != "dtype" && field != "shape" && field != "data_offsets")
      return TensorError(name, absl::StrCat("unknown field '", field, "'"));
  }
  SafetensorsTensor t;
  t.name = name;
  const auto dtype = v.find("dtype");
  if (dtype == v.end() || !dtype->is_string())
    return TensorError(name, "'dtype' missing or not a string");
  t.dtype = dtype->get<std::string>();
  uint32_t bytes = 0;
  if (!SafetensorsDtype(t.dtype, &t.type_tag, &bytes))
    return TensorError(name,
                       absl::StrCat("dtype '", t.dtype, "' is not supported"));
  const auto shape = v.find("shape");
  if (shape == v.end() || !shape->is_array())
    return TensorError(name, "'shape' missing or not an array");
  if (shape->size() > kMaxRank)
    return TensorError(name, absl::StrCat("rank ", shape->size(),
                                          " is above Hurray's ", kMaxRank));
  t.elements = 1;
  for (const Json& dim : *shape) {
    uint64_t n = 0;
    if (!AsSize(dim, &n))
      return TensorError(name, "a shape entry is not an integer in 0..2^63-1");
    t.shape.push_back(n);
    if (n != 0 && t.elements > std::numeric_limits<uint64_t>::max() / n)
      return TensorError(name, "the element count overflows 64 bits");
    t.elements *= n;
  }
  if (t.elements > std::numeric_limits<uint64_t>::max() / bytes)
    return TensorError(name, "the byte size overflows 64 bits");
  const uint64_t byte_size = t.elements * bytes;
  const auto offsets = v.find("data_offsets");
  if (offsets == v.end() || !offsets->is_array() || offsets->size() != 2)
    return TensorError(name, "'data_offsets' is not an array of two integers");
  uint64_t begin = 0, end = 0;
  if (!AsSize((*offsets)[0], &begin) || !AsSize((*offsets)[1], &end))
    return TensorError(name, "a data offset is not an integer in 0..2^63-1");
  if (end < begin)
    return TensorError(name, absl::StrCat("data_offsets [", begin, ", ", end,
                                          "] run backwards"));
  if (end > data_length)
    return TensorError(
        name, absl::StrCat("data_offsets end ", end, " is past the data (",
                           data_length, " bytes)"));
  if (end - begin != byte_size)
    return TensorError(
        name, absl::StrCat("data_offsets hold ", end - begin,
                           " bytes but the shape and dtype need ", byte_size));
  t.begin = data_start + begin;
  t.end = data_start + end;
  return t;
}

}  // namespace

bool SafetensorsDtype(const std::string& dtype, uint8_t* type_tag,
                      uint32_t* source_bytes) {
  for (const DtypeInfo& d : kDtypes) {
    if (dtype == d.name) {
      *type_tag = d.type_tag;
      *source_bytes = d.bytes;
      return true;
    }
  }
  return false;
}

bool LooksLikeSafetensors(absl::Span<const uint8_t> prefix) {
  return prefix.size() >= 9 && prefix[8] == '{';
}

absl::StatusOr<SafetensorsFile> ReadSafetensorsHeader(
    const ByteSource& source, const SafetensorsLimits& limits) {
  uint8_t len_bytes[8];
  absl::Status s = source.ReadAt(0, len_bytes, "safetensors header length");
  if (!s.ok()) return s;
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | len_bytes[i];
  if (n > limits.max_header_bytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "safetensors header: length ", n, " is above the limit of ",
        limits.max_header_bytes, " bytes"));
  }
  if (n > source.size() - 8) {
    return absl::InvalidArgumentError(absl::StrCat(
        "safetensors header: length ", n, " runs past the end of the file (",
        source.size(), " bytes)"));
  }
  std::string text(n, '\0');
  s = source.ReadAt(
      8, absl::MakeSpan(reinterpret_cast<uint8_t*>(text.data()), text.size()),
      "safetensors header");
  if (!s.ok()) return s;
  // nlohmann checks UTF-8 in strings; this also covers bytes between them.
  if (!stream::IsValidUtf8(text)) {
    return absl::InvalidArgumentError(
        "safetensors header: the JSON text is not valid UTF-8");
  }
  Json root;
  {
    CheckingSax sax(&root);
    const bool ok = Json::sax_parse(text.begin(), text.end(), &sax);
    if (!ok || !sax.error().empty()) {
      if (!sax.syntax()) {
        return absl::InvalidArgumentError(
            absl::StrCat("safetensors header: ", sax.error()));
      }
      return absl::InvalidArgumentError(
          absl::StrCat("safetensors header: invalid JSON near byte ",
                       8 + sax.position(), ": ", sax.error()));
    }
  }
  std::string().swap(text);
  if (!root.is_object()) {
    return absl::InvalidArgumentError(
        "safetensors header: the JSON is not an object");
  }
  SafetensorsFile file;
  file.data_start = 8 + n;
  const uint64_t data_length = source.size() - file.data_start;
  for (const auto& [name, value] : root.items()) {
    if (name == "__metadata__") {
      if (!value.is_object()) {
        return absl::InvalidArgumentError(
            "safetensors header: __metadata__ is not an object");
      }
      for (const auto& [key, v] : value.items()) {
        if (!v.is_string()) {
          return absl::InvalidArgumentError(absl::StrCat(
              "safetensors header: __metadata__ '", key, "' is not a string"));
        }
        file.metadata.emplace_back(key, v.get<std::string>());
      }
      continue;
    }
    absl::StatusOr<SafetensorsTensor> t =
        ParseTensor(name, value, file.data_start, data_length);
    if (!t.ok()) return t.status();
    file.tensors.push_back(*std::move(t));
  }
  std::sort(file.tensors.begin(), file.tensors.end(),
            [](const SafetensorsTensor& a, const SafetensorsTensor& b) {
              return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
            });
  // Sorted by start: each range must end before the next non-empty one
  // starts.
  const SafetensorsTensor* last = nullptr;
  for (const SafetensorsTensor& t : file.tensors) {
    if (t.begin == t.end) continue;
    if (last != nullptr && t.begin < last->end) {
      return TensorError(
          t.name, absl::StrCat("its data overlaps tensor '", last->name, "'"));
    }
    last = &t;
  }
  return file;
}

}  // namespace hurray::convert
