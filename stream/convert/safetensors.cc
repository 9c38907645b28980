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

namespace hurray::stream::convert {
namespace {

using Json = nlohmann::json;

// The deepest nesting a valid header has: root object → tensor object →
// shape array.
constexpr size_t kMaxDepth = 3;

// Forward declaration: the handler checks each tensor entry as it ends.
absl::StatusOr<SafetensorsTensor> ParseTensor(const std::string& name,
                                              const Json& v,
                                              uint64_t data_start,
                                              uint64_t data_length);

// A SAX handler that builds the result as the JSON goes by, with no DOM of
// the whole header: each tensor entry is built alone (a few values) and
// checked when it ends, each __metadata__ entry goes straight into the
// result, so memory is the result plus one entry (a header of 300,000
// metadata entries took 101 MB through a DOM). Nesting deeper than the
// format needs is refused as it opens; duplicate keys (which a DOM would
// keep the last of) and the first entry refused are reported once the
// JSON is known to parse, syntax errors first.
class HeaderSax {
 public:
  HeaderSax(uint64_t data_start, uint64_t data_length, SafetensorsFile* out)
      : data_start_(data_start), data_length_(data_length), out_(out) {}

  bool null() { return Value(Json(nullptr)); }
  bool boolean(bool v) { return Value(Json(v)); }
  bool number_integer(Json::number_integer_t v) { return Value(Json(v)); }
  bool number_unsigned(Json::number_unsigned_t v) { return Value(Json(v)); }
  bool number_float(Json::number_float_t v, const std::string&) {
    return Value(Json(v));
  }
  bool string(std::string& v) {
    if (mode_ == Mode::kMetadata && depth_ == 2) {
      out_->metadata.emplace_back(std::move(key_[2]), std::move(v));
      return true;
    }
    return Value(Json(std::move(v)));
  }
  bool binary(Json::binary_t&) { return false; }  // not in JSON text

  bool start_object(std::size_t) { return Open(Json::object()); }
  bool start_array(std::size_t) { return Open(Json::array()); }
  bool end_object() { return Close(); }
  bool end_array() { return Close(); }
  bool key(std::string& k) {
    if (depth_ == 1) {
      if (k == "__metadata__") {
        if (metadata_seen_)
          return Fail(absl::StrCat("duplicate key '", k, "'"));
        metadata_seen_ = true;
      }
      key_[1] = std::move(k);
      return true;
    }
    if (depth_ == 2 && mode_ == Mode::kTensor) {
      for (const std::string& f : fields_) {
        if (f == k) return Fail(absl::StrCat("duplicate key '", k, "'"));
      }
      fields_.push_back(k);
    }
    key_[depth_] = std::move(k);
    return true;
  }
  template <class Exception>
  bool parse_error(std::size_t position, const std::string&,
                   const Exception& ex) {
    position_ = position;
    syntax_ = true;
    error_ = ex.what();
    return false;
  }

  // After a parse that went through: duplicate keys among the tensors and
  // among the metadata entries, then the first entry refused.
  absl::Status Finish() {
    if (!DistinctNames()) {
      return absl::InvalidArgumentError(
          absl::StrCat("safetensors header: ", error_));
    }
    return first_refusal_;
  }

  const std::string& error() const { return error_; }
  size_t position() const { return position_; }
  bool syntax() const { return syntax_; }

 private:
  enum class Mode { kTensor, kMetadata, kSkip };

  bool Fail(std::string why) {
    error_ = std::move(why);
    return false;
  }
  void Refuse(absl::Status s) {
    if (first_refusal_.ok()) first_refusal_ = std::move(s);
  }

  // A value (or an opening container) at the current depth.
  bool Value(Json v) {
    if (depth_ == 0) return Fail("the JSON is not an object");
    if (depth_ == 1) {  // a root entry that is not a container
      if (key_[1] == "__metadata__") {
        Refuse(absl::InvalidArgumentError(
            "safetensors header: __metadata__ is not an object"));
      } else {
        Refuse(ParseTensor(key_[1], v, data_start_, data_length_).status());
      }
      return true;
    }
    if (mode_ == Mode::kMetadata && depth_ == 2) {
      Refuse(absl::InvalidArgumentError(absl::StrCat(
          "safetensors header: __metadata__ '", key_[2], "' is not a string")));
      return true;
    }
    if (mode_ != Mode::kTensor) return true;
    Json* parent = stack_.back();
    if (parent->is_object()) {
      (*parent)[key_[depth_]] = std::move(v);
    } else {
      parent->push_back(std::move(v));
    }
    return true;
  }

  bool Open(Json container) {
    if (depth_ >= kMaxDepth) {
      return Fail("JSON nested deeper than a safetensors header");
    }
    if (depth_ == 0) {
      if (!container.is_object()) return Fail("the JSON is not an object");
      depth_ = 1;
      return true;
    }
    if (depth_ == 1) {
      fields_.clear();
      if (key_[1] == "__metadata__") {
        mode_ = container.is_object() ? Mode::kMetadata : Mode::kSkip;
        if (mode_ == Mode::kSkip) {
          Refuse(absl::InvalidArgumentError(
              "safetensors header: __metadata__ is not an object"));
        }
      } else {
        mode_ = Mode::kTensor;
        entry_ = std::move(container);
        stack_.assign(1, &entry_);
      }
      ++depth_;
      return true;
    }
    if (mode_ == Mode::kMetadata && depth_ == 2) {
      Refuse(absl::InvalidArgumentError(absl::StrCat(
          "safetensors header: __metadata__ '", key_[2], "' is not a string")));
      mode_ = Mode::kSkip;
    }
    if (mode_ == Mode::kTensor) {
      Json* parent = stack_.back();
      if (parent->is_object()) {
        Json& child = (*parent)[key_[depth_]] = std::move(container);
        stack_.push_back(&child);
      } else {
        parent->push_back(std::move(container));
        stack_.push_back(&parent->back());
      }
    }
    ++depth_;
    return true;
  }

  bool Close() {
    --depth_;
    if (mode_ == Mode::kTensor) stack_.pop_back();
    if (depth_ != 1) return true;
    // A root entry ends.
    if (mode_ == Mode::kTensor) {
      absl::StatusOr<SafetensorsTensor> t =
          ParseTensor(key_[1], entry_, data_start_, data_length_);
      if (t.ok()) {
        out_->tensors.push_back(*std::move(t));
      } else {
        Refuse(t.status());
      }
      entry_ = Json();
    }
    mode_ = Mode::kSkip;
    return true;
  }

  // Sorted views of the names: equal neighbours are duplicates.
  bool DistinctNames() {
    std::vector<absl::string_view> names;
    names.reserve(out_->tensors.size());
    for (const SafetensorsTensor& t : out_->tensors) names.push_back(t.name);
    if (!Distinct(&names)) return false;
    names.clear();
    names.reserve(out_->metadata.size());
    for (const auto& [k, v] : out_->metadata) names.push_back(k);
    return Distinct(&names);
  }
  bool Distinct(std::vector<absl::string_view>* names) {
    std::sort(names->begin(), names->end());
    for (size_t i = 1; i < names->size(); ++i) {
      if ((*names)[i] == (*names)[i - 1]) {
        return Fail(absl::StrCat("duplicate key '", (*names)[i], "'"));
      }
    }
    return true;
  }

  const uint64_t data_start_;
  const uint64_t data_length_;
  SafetensorsFile* out_;
  size_t depth_ = 0;  // containers open
  Mode mode_ = Mode::kSkip;
  std::string key_[kMaxDepth + 1];  // the key at each depth
  bool metadata_seen_ = false;
  std::vector<std::string> fields_;  // of the tensor entry being read
  Json entry_;                       // the tensor entry being read
  std::vector<Json*> stack_;         // its open containers
  absl::Status first_refusal_;
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
  if (!stream::container::IsValidUtf8(text)) {
    return absl::InvalidArgumentError(
        "safetensors header: the JSON text is not valid UTF-8");
  }
  SafetensorsFile file;
  file.data_start = 8 + n;
  const uint64_t data_length = source.size() - file.data_start;
  {
    HeaderSax sax(file.data_start, data_length, &file);
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
    std::string().swap(text);
    s = sax.Finish();
    if (!s.ok()) return s;
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

}  // namespace hurray::stream::convert
