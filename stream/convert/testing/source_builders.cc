#include "stream/convert/testing/source_builders.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace hurray::stream::convert::testing {

void PutU16(std::vector<uint8_t>* out, uint16_t v) {
  for (int i = 0; i < 2; ++i)
    out->push_back(static_cast<uint8_t>(v >> (8 * i)));
}
void PutU32(std::vector<uint8_t>* out, uint32_t v) {
  for (int i = 0; i < 4; ++i)
    out->push_back(static_cast<uint8_t>(v >> (8 * i)));
}
void PutU64(std::vector<uint8_t>* out, uint64_t v) {
  for (int i = 0; i < 8; ++i)
    out->push_back(static_cast<uint8_t>(v >> (8 * i)));
}
void PutGgufString(std::vector<uint8_t>* out, const std::string& s) {
  PutU64(out, s.size());
  out->insert(out->end(), s.begin(), s.end());
}

std::vector<uint8_t> RawSafetensors(const std::string& header,
                                    const std::vector<uint8_t>& data,
                                    std::optional<uint64_t> declared_length) {
  std::vector<uint8_t> out;
  PutU64(&out, declared_length.value_or(header.size()));
  out.insert(out.end(), header.begin(), header.end());
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

std::string JsonQuote(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

std::vector<uint8_t> BuildSafetensors(
    const std::vector<StTensor>& tensors,
    const std::vector<std::pair<std::string, std::string>>& metadata) {
  std::string h = "{";
  std::vector<uint8_t> data;
  bool first = true;
  if (!metadata.empty()) {
    h += "\"__metadata__\":{";
    for (size_t i = 0; i < metadata.size(); ++i) {
      if (i > 0) h += ",";
      h += JsonQuote(metadata[i].first) + ":" + JsonQuote(metadata[i].second);
    }
    h += "}";
    first = false;
  }
  for (const StTensor& t : tensors) {
    if (!first) h += ",";
    first = false;
    h += JsonQuote(t.name) + ":{\"dtype\":\"" + t.dtype + "\",\"shape\":[";
    for (size_t i = 0; i < t.shape.size(); ++i) {
      if (i > 0) h += ",";
      h += std::to_string(t.shape[i]);
    }
    h += "],\"data_offsets\":[" + std::to_string(data.size()) + "," +
         std::to_string(data.size() + t.data.size()) + "]}";
    data.insert(data.end(), t.data.begin(), t.data.end());
  }
  h += "}";
  // safetensors pads the header with spaces to a multiple of 8.
  while (h.size() % 8 != 0) h += ' ';
  return RawSafetensors(h, data);
}

void GgufBuilder::KvRaw(const std::string& key,
                        const std::vector<uint8_t>& value) {
  PutGgufString(&kv_, key);
  kv_.insert(kv_.end(), value.begin(), value.end());
  ++kv_entries_;
}
void GgufBuilder::KvU32(const std::string& key, uint32_t v) {
  std::vector<uint8_t> b;
  PutU32(&b, 4);
  PutU32(&b, v);
  KvRaw(key, b);
}
void GgufBuilder::KvI32(const std::string& key, int32_t v) {
  std::vector<uint8_t> b;
  PutU32(&b, 5);
  PutU32(&b, static_cast<uint32_t>(v));
  KvRaw(key, b);
}
void GgufBuilder::KvF32(const std::string& key, float v) {
  std::vector<uint8_t> b;
  PutU32(&b, 6);
  uint32_t bits;
  std::memcpy(&bits, &v, 4);
  PutU32(&b, bits);
  KvRaw(key, b);
}
void GgufBuilder::KvBool(const std::string& key, bool v) {
  std::vector<uint8_t> b;
  PutU32(&b, 7);
  b.push_back(v ? 1 : 0);
  KvRaw(key, b);
}
void GgufBuilder::KvString(const std::string& key, const std::string& v) {
  std::vector<uint8_t> b;
  PutU32(&b, 8);
  PutGgufString(&b, v);
  KvRaw(key, b);
}
void GgufBuilder::KvStringArray(const std::string& key,
                                const std::vector<std::string>& v) {
  std::vector<uint8_t> b;
  PutU32(&b, 9);
  PutU32(&b, 8);
  PutU64(&b, v.size());
  for (const std::string& s : v) PutGgufString(&b, s);
  KvRaw(key, b);
}
void GgufBuilder::KvI32Array(const std::string& key,
                             const std::vector<int32_t>& v) {
  std::vector<uint8_t> b;
  PutU32(&b, 9);
  PutU32(&b, 5);
  PutU64(&b, v.size());
  for (int32_t x : v) PutU32(&b, static_cast<uint32_t>(x));
  KvRaw(key, b);
}

void GgufBuilder::Tensor(const std::string& name,
                         const std::vector<uint64_t>& ne, uint32_t type,
                         const std::vector<uint8_t>& data,
                         std::optional<uint64_t> offset) {
  tensors_.push_back({name, ne, type, data, offset});
}

std::vector<uint8_t> GgufBuilder::Build() const {
  std::vector<uint8_t> out = {'G', 'G', 'U', 'F'};
  PutU32(&out, version_);
  PutU64(&out, tensor_count_.value_or(tensors_.size()));
  PutU64(&out, kv_count_.value_or(kv_entries_));
  out.insert(out.end(), kv_.begin(), kv_.end());
  std::vector<uint64_t> offsets;
  uint64_t next = 0;
  for (const T& t : tensors_) {
    const uint64_t at = t.offset.value_or(next);
    offsets.push_back(at);
    // A lying offset far past the end is written, its data is not.
    if (at > (uint64_t{1} << 24)) continue;
    next = std::max(next, at + t.data.size());
    next = (next + alignment_ - 1) / alignment_ * alignment_;
  }
  for (size_t i = 0; i < tensors_.size(); ++i) {
    const T& t = tensors_[i];
    PutGgufString(&out, t.name);
    PutU32(&out, static_cast<uint32_t>(t.ne.size()));
    for (uint64_t n : t.ne) PutU64(&out, n);
    PutU32(&out, t.type);
    PutU64(&out, offsets[i]);
  }
  while (out.size() % alignment_ != 0) out.push_back(0);
  const size_t data_start = out.size();
  out.resize(data_start + next, 0);
  for (size_t i = 0; i < tensors_.size(); ++i) {
    const T& t = tensors_[i];
    if (offsets[i] > (uint64_t{1} << 24)) continue;
    if (data_start + offsets[i] + t.data.size() > out.size())
      out.resize(data_start + offsets[i] + t.data.size(), 0);
    std::copy(t.data.begin(), t.data.end(),
              out.begin() + static_cast<ptrdiff_t>(data_start + offsets[i]));
  }
  return out;
}

}  // namespace hurray::stream::convert::testing
