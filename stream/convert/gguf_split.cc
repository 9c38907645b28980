#include "stream/convert/gguf_split.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace hurray::stream::convert {
namespace {

void Put(uint64_t v, int bytes, std::string* out) {
  for (int i = 0; i < bytes; ++i)
    out->push_back(static_cast<char>(static_cast<uint8_t>(v >> (8 * i))));
}
void PutString(absl::string_view s, std::string* out) {
  Put(s.size(), 8, out);
  out->append(s.data(), s.size());
}

// The pair's value as GGUF writes it (type, then the value or the array).
std::string Serialize(const GgufKv& kv) {
  std::string out;
  size_t n = kv.type == gguf_type::kString ? kv.string_count()
             : !kv.uints.empty()           ? kv.uints.size()
             : !kv.ints.empty()            ? kv.ints.size()
             : !kv.floats.empty()          ? kv.floats.size()
                                           : kv.bools.size();
  if (kv.is_array) {
    Put(gguf_type::kArray, 4, &out);
    Put(kv.type, 4, &out);
    Put(n, 8, &out);
  } else {
    Put(kv.type, 4, &out);
  }
  const int w = static_cast<int>(GgufScalarBytes(kv.type));
  for (size_t i = 0; i < n; ++i) {
    switch (kv.type) {
      case gguf_type::kString:
        PutString(kv.string(i), &out);
        break;
      case gguf_type::kFloat32: {
        const float f = static_cast<float>(kv.floats[i]);  // exact
        uint32_t b;
        std::memcpy(&b, &f, 4);
        Put(b, 4, &out);
        break;
      }
      case gguf_type::kFloat64: {
        uint64_t b;
        std::memcpy(&b, &kv.floats[i], 8);
        Put(b, 8, &out);
        break;
      }
      case gguf_type::kBool:
        Put(kv.bools[i], 1, &out);
        break;
      default:
        Put(!kv.uints.empty() ? kv.uints[i] : static_cast<uint64_t>(kv.ints[i]),
            w, &out);
    }
  }
  return out;
}

// An unsigned or signed integer scalar's value; false for another kind.
bool IntValue(const GgufKv& kv, uint64_t* v) {
  if (kv.is_array) return false;
  if (!kv.uints.empty()) return *v = kv.uints[0], true;
  if (!kv.ints.empty() && kv.ints[0] >= 0)
    return *v = static_cast<uint64_t>(kv.ints[0]), true;
  return false;
}

struct Tensor {
  std::string name;
  std::vector<uint64_t> ne;
  uint32_t type = 0;
  uint32_t part = 0;
  uint64_t part_offset = 0, bytes = 0;
};

struct Segment {
  uint64_t begin, length;
  uint32_t part;
  uint64_t part_offset;
};

// The combined header, then the parts' tensor data at their places (the
// gaps of alignment read as zeros).
class SplitSource : public ByteSource {
 public:
  SplitSource(std::string head, std::vector<Segment> segments,
              std::vector<std::string> parts, uint64_t size, PartOpener open)
      : head_(std::move(head)),
        segments_(std::move(segments)),
        parts_(std::move(parts)),
        size_(size),
        open_(std::move(open)) {}
  uint64_t size() const override { return size_; }

 private:
  absl::Status DoRead(uint64_t offset, absl::Span<uint8_t> out) const override {
    std::memset(out.data(), 0, out.size());
    const uint64_t end = offset + out.size();
    if (offset < head_.size()) {
      const size_t n = static_cast<size_t>(
          std::min<uint64_t>(head_.size() - offset, out.size()));
      std::memcpy(out.data(), head_.data() + offset, n);
    }
    auto it = std::upper_bound(
        segments_.begin(), segments_.end(), offset,
        [](uint64_t at, const Segment& s) { return at < s.begin + s.length; });
    for (; it != segments_.end() && it->begin < end; ++it) {
      const uint64_t lo = std::max(offset, it->begin);
      const uint64_t hi = std::min(end, it->begin + it->length);
      if (file_ == nullptr || open_part_ != it->part) {
        file_.reset();
        absl::StatusOr<std::unique_ptr<ByteSource>> f = open_(parts_[it->part]);
        if (!f.ok())
          return absl::Status(f.status().code(),
                              absl::StrCat("part '", parts_[it->part],
                                           "': ", f.status().message()));
        file_ = *std::move(f);
        open_part_ = it->part;
      }
      absl::Status s =
          file_->ReadAt(it->part_offset + (lo - it->begin),
                        out.subspan(static_cast<size_t>(lo - offset),
                                    static_cast<size_t>(hi - lo)),
                        parts_[it->part]);
      if (!s.ok()) return s;
    }
    return absl::OkStatus();
  }

  std::string head_;
  std::vector<Segment> segments_;  // by begin, not overlapping
  std::vector<std::string> parts_;
  uint64_t size_;
  PartOpener open_;
  mutable std::unique_ptr<ByteSource> file_;  // one part open at a time
  mutable uint32_t open_part_ = 0;
};

std::string PartName(absl::string_view prefix, uint64_t i, uint64_t n) {
  return absl::StrFormat("%s-%05d-of-%05d.gguf", prefix, i, n);
}

}  // namespace

uint64_t SplitGgufParts(const std::string& first_name) {
  // <prefix>-00001-of-NNNNN.gguf
  constexpr size_t kTail = 21;  // "-00001-of-NNNNN.gguf" and one more
  if (first_name.size() < kTail || !absl::EndsWith(first_name, ".gguf"))
    return 0;
  const std::string tail = first_name.substr(first_name.size() - 20);
  if (tail.compare(0, 10, "-00001-of-") != 0) return 0;
  uint64_t n = 0;
  for (size_t i = 10; i < 15; ++i) {
    if (tail[i] < '0' || tail[i] > '9') return 0;
    n = n * 10 + static_cast<uint64_t>(tail[i] - '0');
  }
  return n >= 2 ? n : 0;
}

absl::StatusOr<SplitGguf> OpenSplitGguf(const std::string& first_name,
                                        PartOpener open,
                                        const SplitLimits& limits) {
  const uint64_t n = SplitGgufParts(first_name);
  if (n == 0)
    return absl::InvalidArgumentError(absl::StrCat(
        "'", first_name, "' is not the first of a split GGUF's parts"));
  if (n > limits.max_parts)
    return absl::ResourceExhaustedError(
        absl::StrCat("'", first_name, "': ", n, " parts, above the limit of ",
                     limits.max_parts));
  const std::string prefix = first_name.substr(0, first_name.size() - 20);
  const uint64_t budget = limits.gguf.max_metadata_bytes;
  uint64_t spent = 0;
  // key → (part name, value bytes): the first value, and every value once
  // one differs.
  std::map<std::string, std::vector<std::pair<uint32_t, std::string>>> kv;
  std::vector<std::string> parts;
  std::vector<Tensor> tensors;
  absl::flat_hash_set<std::string> names;
  // The general.alignment values of the parts that have the key: one value
  // is written once and is the combined file's alignment; differing ones
  // are written per part and the combined file keeps GGUF's default, 32.
  absl::flat_hash_set<uint32_t> alignments;
  uint64_t tensors_count = 0;
  bool has_tensors_count = false;
  for (uint64_t i = 0; i < n; ++i) {
    const std::string name = PartName(prefix, i + 1, n);
    const uint32_t part = static_cast<uint32_t>(i);
    parts.push_back(name);
    auto fail = [&name](absl::StatusCode code, absl::string_view why) {
      return absl::Status(code, absl::StrCat("part '", name, "': ", why));
    };
    absl::StatusOr<std::unique_ptr<ByteSource>> f = open(name);
    if (!f.ok()) return fail(f.status().code(), f.status().message());
    uint64_t no = ~uint64_t{0}, count = 0;
    bool has_alignment = false;
    absl::StatusOr<GgufFile> g =
        ReadGgufHeader(**f, limits.gguf, [&](GgufKv& e) -> absl::Status {
          uint64_t v = 0;
          if (e.key == "split.no" && IntValue(e, &v)) no = v;
          if (e.key == "general.alignment") has_alignment = true;
          if (e.key == "split.count" && IntValue(e, &v)) count = v;
          if (e.key == "split.tensors.count" && IntValue(e, &v)) {
            if (has_tensors_count && v != tensors_count)
              return absl::InvalidArgumentError(
                  "split.tensors.count differs from the first part's");
            tensors_count = v, has_tensors_count = true;
          }
          std::string value = Serialize(e);
          auto& values = kv[e.key];
          if (values.empty()) spent += e.key.size() + 8;
          bool same = true;
          for (const auto& [p, x] : values) same = same && x == value;
          if (same && !values.empty()) return absl::OkStatus();
          spent += value.size() + 8 + name.size() + 1;
          if (spent > budget)
            return absl::ResourceExhaustedError(absl::StrCat(
                "the parts' metadata passes the limit of ", budget, " bytes"));
          values.emplace_back(part, std::move(value));
          return absl::OkStatus();
        });
    if (!g.ok()) return fail(g.status().code(), g.status().message());
    if (no != i || count != n)
      return fail(absl::StatusCode::kInvalidArgument,
                  absl::StrCat("split.no / split.count are not ", i, " / ", n,
                               " (its name's)"));
    if (has_alignment) alignments.insert(g->alignment);
    for (GgufTensor& t : g->tensors) {
      if (!names.insert(t.name).second)
        return fail(
            absl::StatusCode::kInvalidArgument,
            absl::StrCat("tensor '", t.name, "' is in two parts (again here)"));
      spent += t.name.size() + 34 + 8 * t.ne.size();
      if (spent > budget || tensors.size() >= limits.gguf.max_tensors)
        return fail(absl::StatusCode::kResourceExhausted,
                    "the parts' tensors pass the metadata limit");
      tensors.push_back(Tensor{std::move(t.name), std::move(t.ne), t.type, part,
                               t.begin, t.byte_size});
    }
  }
  if (has_tensors_count && tensors_count != tensors.size())
    return absl::InvalidArgumentError(
        absl::StrCat("split.tensors.count is ", tensors_count,
                     ", the parts hold ", tensors.size(), " tensors"));
  const uint32_t alignment = alignments.size() == 1 ? *alignments.begin() : 32;
  // The combined header: version 3, the pairs, the tensor infos.
  uint64_t kv_count = 0;
  std::string body;
  for (const auto& [key, values] : kv) {
    const bool same = values.size() == 1;
    for (const auto& [p, v] : values) {
      PutString(same ? key : absl::StrCat(parts[p], ":", key), &body);
      body += v;
      ++kv_count;
    }
  }
  uint64_t data = 0;
  std::vector<Segment> segments;
  segments.reserve(tensors.size());
  for (const Tensor& t : tensors) {
    PutString(t.name, &body);
    Put(t.ne.size(), 4, &body);
    for (uint64_t d : t.ne) Put(d, 8, &body);
    Put(t.type, 4, &body);
    Put(data, 8, &body);
    if (t.bytes > 0) segments.push_back({data, t.bytes, t.part, t.part_offset});
    data += t.bytes;
    data += (alignment - data % alignment) % alignment;
  }
  std::string head = "GGUF";
  Put(3, 4, &head);
  Put(tensors.size(), 8, &head);
  Put(kv_count, 8, &head);
  head += body;
  head.append((alignment - head.size() % alignment) % alignment, '\0');
  for (Segment& s : segments) s.begin += head.size();
  SplitGguf out;
  out.part_count = n;
  const uint64_t size = head.size() + data;
  out.source =
      std::make_unique<SplitSource>(std::move(head), std::move(segments),
                                    std::move(parts), size, std::move(open));
  return out;
}

absl::StatusOr<SplitGguf> OpenSplitGgufFiles(const std::string& path,
                                             const SplitLimits& limits) {
  const size_t slash = path.rfind('/');
  const std::string dir =
      slash == std::string::npos ? "." : path.substr(0, slash);
  const std::string name =
      slash == std::string::npos ? path : path.substr(slash + 1);
  PartOpener open = [dir](const std::string& part)
      -> absl::StatusOr<std::unique_ptr<ByteSource>> {
    absl::StatusOr<std::unique_ptr<FileSource>> f =
        FileSource::Open(absl::StrCat(dir, "/", part));
    if (!f.ok()) return f.status();
    return std::unique_ptr<ByteSource>(*std::move(f));
  };
  return OpenSplitGguf(name, std::move(open), limits);
}

}  // namespace hurray::stream::convert
