#include "stream/container/file_index.h"

#include <algorithm>

#include "parser/wire.h"
#include "stream/container/utf8.h"

namespace hurray::stream::container {
namespace {

absl::string_view View(absl::Span<const uint8_t> bytes) {
  return absl::string_view(reinterpret_cast<const char*>(bytes.data()),
                           bytes.size());
}

}  // namespace

Rejection FileIndex::Parse(absl::Span<const uint8_t> bytes, uint64_t base,
                           bool sorted, Mode mode) {
  entries_.clear();
  by_name_.clear();
  sorted_ = sorted;
  const uint64_t size = bytes.size();
  if (size < 8) {
    return {Rule::kFileIdx01, base, "the index is shorter than its count"};
  }
  const uint64_t count = wire::LoadU64(bytes.data());
  // Never trust a count before checking it against the bytes that must hold
  // it (REJECT-RULES.md §5).
  if (count > (size - 8) / kMinIndexEntrySize) {
    return {Rule::kFileIdx01, base,
            "index_entry_count does not fit in index_length"};
  }
  entries_.reserve(count);
  if (!sorted) by_name_.reserve(count);
  uint64_t pos = 8;
  for (uint64_t i = 0; i < count; ++i) {
    IndexEntry e;
    e.at = base + pos;
    if (size - pos < 2) {
      return {Rule::kFileIdx01, base + pos, "the index ends inside an entry"};
    }
    const uint16_t name_length = wire::LoadU16(&bytes[pos]);
    if (name_length == 0) {
      return {Rule::kFileIdx02, base + pos, "an index name is empty"};
    }
    pos += 2;
    if (size - pos < name_length) {
      return {Rule::kFileIdx01, base + pos, "the index ends inside a name"};
    }
    const absl::Span<const uint8_t> name = bytes.subspan(pos, name_length);
    if (!IsValidUtf8(name)) {
      return {Rule::kFileIdx03, base + pos, "an index name is not UTF-8"};
    }
    e.name = View(name);
    if (sorted) {
      // file-format.md § Index Encoding: strictly increasing byte order.
      if (!entries_.empty()) {
        const absl::string_view prev = entries_.back().name;
        if (e.name == prev) {
          return {Rule::kFileIdx04, base + pos, "two entries share a name"};
        }
        if (e.name < prev) {
          return {Rule::kFileIdx06, base + pos,
                  "SORTED_INDEX is set but names are not in byte order"};
        }
      }
    } else if (!by_name_.emplace(e.name, static_cast<uint32_t>(i)).second) {
      return {Rule::kFileIdx04, base + pos, "two entries share a name"};
    }
    pos += name_length;
    if (size - pos < 32) {
      return {Rule::kFileIdx01, base + pos, "the index ends inside an entry"};
    }
    const uint8_t* p = &bytes[pos];
    e.descriptor_offset = wire::LoadU64(p);
    e.descriptor_length = wire::LoadU32(p + 8);
    e.data_offset = wire::LoadU64(p + 12);
    e.data_length = wire::LoadU64(p + 20);
    e.flags = wire::LoadU32(p + 28);
    if (e.flags != 0) {
      return {Rule::kFileIdx05, base + pos + 28, "index entry flags not 0"};
    }
    pos += 32;
    entries_.push_back(e);
  }
  if (pos != size && Applies(Rule::kFileIdx07, mode)) {
    return {Rule::kFileIdx07, base + pos, "bytes after the last index entry"};
  }
  return kAccepted;
}

const IndexEntry* FileIndex::Find(absl::string_view name) const {
  if (sorted_) {
    auto it = std::lower_bound(
        entries_.begin(), entries_.end(), name,
        [](const IndexEntry& e, absl::string_view n) { return e.name < n; });
    return it != entries_.end() && it->name == name ? &*it : nullptr;
  }
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : &entries_[it->second];
}

std::vector<uint8_t> EncodeIndex(absl::Span<const IndexEntry> entries) {
  std::vector<uint8_t> out(8);
  wire::StoreU64(out.data(), entries.size());
  for (const IndexEntry& e : entries) {
    const size_t at = out.size();
    out.resize(at + 2 + e.name.size() + 32);
    uint8_t* p = &out[at];
    wire::StoreU16(p, static_cast<uint16_t>(e.name.size()));
    std::copy(e.name.begin(), e.name.end(), p + 2);
    p += 2 + e.name.size();
    wire::StoreU64(p, e.descriptor_offset);
    wire::StoreU32(p + 8, e.descriptor_length);
    wire::StoreU64(p + 12, e.data_offset);
    wire::StoreU64(p + 20, e.data_length);
    wire::StoreU32(p + 28, e.flags);
  }
  return out;
}

}  // namespace hurray::stream::container
