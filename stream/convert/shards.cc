#include "stream/convert/shards.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace hurray::stream::convert {
namespace {

using Json = nlohmann::json;

struct Index {
  std::vector<std::pair<std::string, std::string>> metadata;
  // tensor name → shard id; shard names by id.
  absl::flat_hash_map<std::string, uint32_t> weight_map;
  std::vector<std::string> shards;
  absl::flat_hash_map<std::string, uint32_t> shard_ids;
  bool has_total_size = false;
  std::string total_size;
};

bool PlainFileName(const std::string& s) {
  return !s.empty() && s != "." && s != ".." &&
         s.find('/') == std::string::npos &&
         s.find('\0') == std::string::npos && s.size() <= 255;
}

// The index read as it goes by (no DOM): root object, "metadata" and
// "weight_map" objects of scalars; deeper nesting refused as it opens.
class IndexSax {
 public:
  IndexSax(Index* out, uint64_t max_shards)
      : out_(out), max_shards_(max_shards) {}

  bool null() { return Scalar(Json(nullptr)); }
  bool boolean(bool v) { return Scalar(Json(v)); }
  bool number_integer(Json::number_integer_t v) { return Scalar(Json(v)); }
  bool number_unsigned(Json::number_unsigned_t v) { return Scalar(Json(v)); }
  bool number_float(Json::number_float_t v, const std::string&) {
    return Scalar(Json(v));
  }
  bool string(std::string& v) {
    if (depth_ == 2 && section_ == Section::kWeightMap) return Weight(v);
    if (depth_ == 2 && section_ == Section::kMetadata) {
      if (key_ == "total_size") {
        out_->has_total_size = true;
        out_->total_size = v;
      }
      out_->metadata.emplace_back(std::move(key_), std::move(v));
      return true;
    }
    return Scalar(Json());
  }
  bool binary(Json::binary_t&) { return false; }
  bool start_object(std::size_t) {
    if (depth_ == 0) return ++depth_, true;
    if (depth_ == 1 && section_ != Section::kOther) {
      if (seen_[static_cast<int>(section_)])
        return Fail(absl::StrCat("duplicate key '", SectionName(), "'"));
      seen_[static_cast<int>(section_)] = true;
      return ++depth_, true;
    }
    return Fail("nested deeper than an index has (object)");
  }
  bool start_array(std::size_t) {
    return Fail("nested deeper than an index has (array)");
  }
  bool end_object() {
    --depth_;
    return true;
  }
  bool end_array() { return false; }
  bool key(std::string& k) {
    if (depth_ == 1) {
      section_ = k == "metadata"     ? Section::kMetadata
                 : k == "weight_map" ? Section::kWeightMap
                                     : Section::kOther;
    } else {
      key_ = std::move(k);
    }
    return true;
  }
  template <class Exception>
  bool parse_error(std::size_t position, const std::string&,
                   const Exception& ex) {
    return Fail(absl::StrCat("byte ", position, ": ", ex.what()));
  }

  const std::string& error() const { return error_; }
  bool weight_map_seen() const {
    return seen_[static_cast<int>(Section::kWeightMap)];
  }

 private:
  enum class Section { kMetadata = 0, kWeightMap = 1, kOther = 2 };

  const char* SectionName() const {
    return section_ == Section::kMetadata ? "metadata" : "weight_map";
  }
  bool Fail(std::string why) {
    if (error_.empty()) error_ = std::move(why);
    return false;
  }
  bool Scalar(const Json& v) {
    if (depth_ == 0) return Fail("the index is not a JSON object");
    if (depth_ == 1) {
      if (section_ != Section::kOther)
        return Fail(absl::StrCat("'", SectionName(), "' is not an object"));
      return true;  // another top-level key: ignored
    }
    if (section_ == Section::kWeightMap)
      return Fail(absl::StrCat("weight_map entry '", key_,
                               "' is not a shard file name (a string)"));
    if (key_ == "total_size") {
      out_->has_total_size = true;
      out_->total_size = v.dump();
    }
    out_->metadata.emplace_back(std::move(key_), v.dump());
    return true;
  }
  bool Weight(const std::string& shard) {
    if (!PlainFileName(shard))
      return Fail(absl::StrCat("weight_map entry '", key_, "': shard '", shard,
                               "' is not a plain file name beside the index"));
    auto [it, added] = out_->shard_ids.try_emplace(
        shard, static_cast<uint32_t>(out_->shards.size()));
    if (added) {
      if (out_->shards.size() >= max_shards_)
        return Fail(absl::StrCat("more than ", max_shards_, " shards"));
      out_->shards.push_back(shard);
    }
    if (!out_->weight_map.try_emplace(key_, it->second).second)
      return Fail(absl::StrCat("duplicate weight_map entry '", key_, "'"));
    return true;
  }

  Index* out_;
  uint64_t max_shards_;
  int depth_ = 0;
  Section section_ = Section::kOther;
  bool seen_[2] = {false, false};
  std::string key_;
  std::string error_;
};

// Where each stretch of the combined data comes from.
struct Segment {
  uint64_t begin;  // in the combined file
  uint64_t length;
  uint32_t shard;
  uint64_t shard_offset;  // absolute, in the shard file
};

// The combined file: 8-byte length, the header, then the segments.
class CombinedSource : public ByteSource {
 public:
  CombinedSource(std::vector<uint8_t> head, std::vector<Segment> segments,
                 std::vector<std::string> shards, uint64_t size,
                 ShardOpener open)
      : head_(std::move(head)),
        segments_(std::move(segments)),
        shards_(std::move(shards)),
        size_(size),
        open_(std::move(open)) {}
  uint64_t size() const override { return size_; }

 private:
  absl::Status DoRead(uint64_t offset, absl::Span<uint8_t> out) const override {
    size_t done = 0;
    while (done < out.size()) {
      const uint64_t at = offset + done;
      if (at < head_.size()) {
        const size_t n = static_cast<size_t>(
            std::min<uint64_t>(head_.size() - at, out.size() - done));
        std::memcpy(out.data() + done, head_.data() + at, n);
        done += n;
        continue;
      }
      auto it = std::upper_bound(
          segments_.begin(), segments_.end(), at,
          [](uint64_t v, const Segment& s) { return v < s.begin; });
      if (it == segments_.begin())
        return absl::InternalError("combined shard read outside the data");
      const Segment& s = *(it - 1);
      if (at >= s.begin + s.length)
        return absl::InternalError("combined shard read outside the data");
      if (open_shard_ != s.shard || file_ == nullptr) {
        file_.reset();
        absl::StatusOr<std::unique_ptr<ByteSource>> f = open_(shards_[s.shard]);
        if (!f.ok()) return f.status();
        file_ = *std::move(f);
        open_shard_ = s.shard;
      }
      const size_t n = static_cast<size_t>(
          std::min<uint64_t>(s.begin + s.length - at, out.size() - done));
      absl::Status st = file_->ReadAt(s.shard_offset + (at - s.begin),
                                      out.subspan(done, n), shards_[s.shard]);
      if (!st.ok()) return st;
      done += n;
    }
    return absl::OkStatus();
  }

  // A segment lies in one shard file: the kernel may copy it from there.
  absl::Status DoFileRange(uint64_t offset, uint64_t length,
                           FileRange* r) const override {
    if (offset < head_.size()) return absl::OkStatus();  // built in memory
    auto it = std::upper_bound(
        segments_.begin(), segments_.end(), offset,
        [](uint64_t v, const Segment& s) { return v < s.begin; });
    if (it == segments_.begin() || offset >= (it - 1)->begin + (it - 1)->length)
      return absl::InternalError("combined shard read outside the data");
    const Segment& s = *(it - 1);
    if (open_shard_ != s.shard || file_ == nullptr) {
      file_.reset();
      absl::StatusOr<std::unique_ptr<ByteSource>> f = open_(shards_[s.shard]);
      if (!f.ok()) return f.status();
      file_ = *std::move(f);
      open_shard_ = s.shard;
    }
    const uint64_t n = std::min(s.begin + s.length - offset, length);
    return file_->FileRangeAt(s.shard_offset + (offset - s.begin), n, r,
                              shards_[s.shard]);
  }

  std::vector<uint8_t> head_;
  std::vector<Segment> segments_;
  std::vector<std::string> shards_;
  uint64_t size_;
  ShardOpener open_;
  // One shard open at a time.
  mutable std::unique_ptr<ByteSource> file_;
  mutable uint32_t open_shard_ = 0;
};

}  // namespace

absl::StatusOr<ShardedModel> OpenShards(const ByteSource& index,
                                        const std::string& index_name,
                                        ShardOpener open,
                                        const ShardLimits& limits) {
  const std::string what = absl::StrCat("shard index '", index_name, "'");
  if (index.size() > limits.max_index_bytes)
    return absl::ResourceExhaustedError(
        absl::StrCat(what, ": ", index.size(), " bytes, above the limit of ",
                     limits.max_index_bytes));
  Index idx;
  {
    std::string text(static_cast<size_t>(index.size()), '\0');
    absl::Status s = index.ReadAt(
        0, absl::MakeSpan(reinterpret_cast<uint8_t*>(text.data()), text.size()),
        "the shard index");
    if (!s.ok()) return s;
    IndexSax sax(&idx, limits.max_shards);
    const bool ok = Json::sax_parse(text.begin(), text.end(), &sax);
    if (!ok || !sax.error().empty())
      return absl::InvalidArgumentError(absl::StrCat(
          what, ": ", sax.error().empty() ? "bad JSON" : sax.error()));
    if (!sax.weight_map_seen() || idx.weight_map.empty())
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": no weight_map, or an empty one"));
  }
  // Shards in file-name order.
  std::vector<uint32_t> order(idx.shards.size());
  for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&idx](uint32_t a, uint32_t b) {
    return idx.shards[a] < idx.shards[b];
  });
  // Each shard's header; the combined header built as they go.
  Json header = Json::object();
  std::vector<Segment> segments;
  uint64_t data = 0, found = 0;
  // key → (value, sources); sources "" for agreeing values.
  std::map<std::string, std::vector<std::pair<std::string, std::string>>> kv;
  for (const auto& [k, v] : idx.metadata) kv[k].emplace_back(index_name, v);
  for (uint32_t id : order) {
    const std::string& name = idx.shards[id];
    absl::StatusOr<std::unique_ptr<ByteSource>> f = open(name);
    if (!f.ok())
      return absl::Status(
          f.status().code(),
          absl::StrCat("shard '", name, "': ", f.status().message()));
    absl::StatusOr<SafetensorsFile> sf =
        ReadSafetensorsHeader(**f, limits.safetensors);
    if (!sf.ok())
      return absl::Status(
          sf.status().code(),
          absl::StrCat("shard '", name, "': ", sf.status().message()));
    for (const auto& [k, v] : sf->metadata) kv[k].emplace_back(name, v);
    for (const SafetensorsTensor& t : sf->tensors) {
      auto it = idx.weight_map.find(t.name);
      if (it == idx.weight_map.end())
        return absl::InvalidArgumentError(
            absl::StrCat("shard '", name, "': tensor '", t.name,
                         "' is not in the index's weight_map"));
      if (it->second != id)
        return absl::InvalidArgumentError(absl::StrCat(
            "shard '", name, "': tensor '", t.name, "' is in shard '", name,
            "' but the index names shard '", idx.shards[it->second], "'"));
      if (header.contains(t.name))
        return absl::InvalidArgumentError(absl::StrCat(
            "tensor '", t.name, "' is in two shards (again in '", name, "')"));
      const uint64_t len = t.end - t.begin;
      Json e = Json::object();
      e["dtype"] = t.dtype;
      e["shape"] = t.shape;
      e["data_offsets"] = Json::array({data, data + len});
      header[t.name] = std::move(e);
      if (len > 0) segments.push_back(Segment{data, len, id, t.begin});
      data += len;
      ++found;
    }
  }
  if (found != idx.weight_map.size()) {
    for (const auto& [t, id] : idx.weight_map) {
      if (!header.contains(t))
        return absl::InvalidArgumentError(absl::StrCat(
            "tensor '", t, "' of the index is missing from shard '",
            idx.shards[id], "'"));
    }
  }
  ShardedModel model;
  model.shard_count = idx.shards.size();
  if (idx.has_total_size && idx.total_size != std::to_string(data))
    model.warnings.push_back(
        absl::StrCat("the index's total_size is ", idx.total_size,
                     ", the shards' tensors hold ", data, " bytes"));
  // Metadata: agreeing values once, differing ones per source.
  Json meta = Json::object();
  for (auto& [k, values] : kv) {
    bool same = true;
    for (const auto& [src, v] : values) same = same && v == values[0].second;
    if (same) {
      meta[k] = values[0].second;
    } else {
      for (const auto& [src, v] : values) meta[absl::StrCat(src, ":", k)] = v;
    }
  }
  if (!meta.empty()) header["__metadata__"] = std::move(meta);
  const std::string text = header.dump();
  if (text.size() > limits.safetensors.max_header_bytes)
    return absl::ResourceExhaustedError(
        absl::StrCat("the shards' combined header is ", text.size(),
                     " bytes, above the safetensors header limit of ",
                     limits.safetensors.max_header_bytes));
  std::vector<uint8_t> head(8 + text.size());
  for (int i = 0; i < 8; ++i)
    head[i] =
        static_cast<uint8_t>(static_cast<uint64_t>(text.size()) >> (8 * i));
  std::memcpy(head.data() + 8, text.data(), text.size());
  for (Segment& s : segments) s.begin += head.size();
  const uint64_t size = head.size() + data;
  model.source = std::make_unique<CombinedSource>(
      std::move(head), std::move(segments), std::move(idx.shards), size,
      std::move(open));
  return model;
}

bool IsShardIndexPath(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) return true;
  return absl::EndsWith(path, ".index.json");
}

absl::StatusOr<ShardedModel> OpenShardedSafetensors(const std::string& path,
                                                    const ShardLimits& limits) {
  struct stat st;
  std::string dir, index_path;
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    dir = path;
    index_path = absl::StrCat(path, "/", kShardIndexName);
  } else {
    const size_t slash = path.rfind('/');
    dir = slash == std::string::npos ? "." : path.substr(0, slash);
    index_path = path;
  }
  absl::StatusOr<std::unique_ptr<FileSource>> index =
      FileSource::Open(index_path);
  if (!index.ok()) return index.status();
  const size_t slash = index_path.rfind('/');
  const std::string index_name =
      slash == std::string::npos ? index_path : index_path.substr(slash + 1);
  ShardOpener open = [dir](const std::string& name)
      -> absl::StatusOr<std::unique_ptr<ByteSource>> {
    if (!PlainFileName(name))
      return absl::InvalidArgumentError("not a plain file name");
    absl::StatusOr<std::unique_ptr<FileSource>> f =
        FileSource::Open(absl::StrCat(dir, "/", name));
    if (!f.ok()) return f.status();
    return std::unique_ptr<ByteSource>(*std::move(f));
  };
  return OpenShards(**index, index_name, std::move(open), limits);
}

}  // namespace hurray::stream::convert
