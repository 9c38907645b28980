#include "stream/container/hrry_mmap.h"

#include <algorithm>
#include <cstdint>

#include "parser/decoder.h"
#include "parser/element_checks.h"
#include "parser/wire.h"
#include "stream/container/file_checks.h"

namespace hurray::stream::container {
namespace {

// The first non-zero byte of bytes[from, to), or `to`.
uint64_t FirstNonZero(absl::Span<const uint8_t> bytes, uint64_t from,
                      uint64_t to) {
  for (uint64_t i = from; i < to; ++i) {
    if (bytes[i] != 0) return i;
  }
  return to;
}

}  // namespace

absl::StatusOr<std::unique_ptr<HrryFile>> HrryFile::Open(
    const std::string& path, const FileOptions& options) {
  absl::StatusOr<std::unique_ptr<MappedFile>> map = MappedFile::Open(path);
  if (!map.ok()) return map.status();
  std::unique_ptr<HrryFile> file(new HrryFile());
  file->bytes_ = (*map)->bytes();
  file->map_ = *std::move(map);
  return Load(std::move(file), options);
}

absl::StatusOr<std::unique_ptr<HrryFile>> HrryFile::FromBytes(
    absl::Span<const uint8_t> bytes, const FileOptions& options) {
  std::unique_ptr<HrryFile> file(new HrryFile());
  file->bytes_ = bytes;
  return Load(std::move(file), options);
}

absl::StatusOr<std::unique_ptr<HrryFile>> HrryFile::CopyOf(
    absl::Span<const uint8_t> bytes, const FileOptions& options) {
  absl::StatusOr<std::unique_ptr<MappedFile>> map = MappedFile::Copy(bytes);
  if (!map.ok()) return map.status();
  std::unique_ptr<HrryFile> file(new HrryFile());
  file->bytes_ = (*map)->bytes();
  file->map_ = *std::move(map);
  return Load(std::move(file), options);
}

absl::StatusOr<std::unique_ptr<HrryFile>> HrryFile::Load(
    std::unique_ptr<HrryFile> file, const FileOptions& options) {
  file->parse_ = options.parse;
  const Rejection r = file->Check(options);
  if (!r.ok()) return ToStatus(r);
  return file;
}

Rejection HrryFile::Check(const FileOptions& options) {
  const uint64_t size = bytes_.size();
  const Mode mode = options.parse.mode;
  if (size > options.limits.max_total_bytes) {
    return {Rule::kLimitTotalBytes, options.limits.max_total_bytes,
            "the file is longer than the total byte limit"};
  }
  // file-format.md § Random-Access Reader: header, trailer, index, KV.
  FileHeader header;
  if (size >= kFileHeaderSize) {
    const Rejection r = ParseFileHeader(bytes_.first(kFileHeaderSize), &header);
    if (!r.ok()) return r;
  }
  if (size < kMinFileSize) {
    return {Rule::kFileHdr01, size, "the file is shorter than 104 bytes"};
  }
  FileGeometry& g = geometry_;
  Rejection r =
      ParseTrailer(bytes_.last(kTrailerSize), size, header, options, &g);
  if (!r.ok()) return r;
  const absl::Span<const uint8_t> index =
      bytes_.subspan(g.trailer.index_offset, g.trailer.index_length);
  r = CheckIndexCrc(index, g);
  if (r.ok()) {
    r = index_.Parse(index, g.trailer.index_offset,
                     header.has(file_flag::kSortedIndex), mode);
  }
  if (r.ok() && g.kv_present) {
    r = kv_.Parse(bytes_.subspan(g.trailer.kv_offset, g.trailer.kv_length),
                  g.trailer.kv_offset, mode);
  }
  if (r.ok())
    r = options.verify_region ? WalkRegion(options) : DecodeEntries(options);
  if (!r.ok()) return r;
  by_offset_.resize(index_.size());
  for (uint32_t i = 0; i < by_offset_.size(); ++i) by_offset_[i] = i;
  std::sort(by_offset_.begin(), by_offset_.end(),
            [this](uint32_t a, uint32_t b) {
              return index_.entries()[a].descriptor_offset <
                     index_.entries()[b].descriptor_offset;
            });
  return kAccepted;
}

// The same walk as the forward reader, over [first_descriptor_offset,
// region_limit), then the index against what it found.
Rejection HrryFile::WalkRegion(const FileOptions& options) {
  const FileGeometry& g = geometry_;
  const Mode mode = options.parse.mode;
  const uint64_t start = g.header.first_descriptor_offset;
  if (uint64_t nz = FirstNonZero(bytes_, kFileHeaderSize, start);
      nz != start && Applies(Rule::kFileHdr10, mode)) {
    return {Rule::kFileHdr10, nz,
            "a padding byte before the first descriptor is not zero"};
  }
  Framing framing;
  framing.data_alignment = g.header.data_buffer_alignment;
  framing.reject_padding_after_head = options.reject_padding_after_head;
  framing.record_extents = true;
  TensorWalker walker(options.parse, options.limits, framing, start, nullptr);
  WalkState state =
      walker.Feed(bytes_.subspan(start, g.region_limit - start)).state;
  if (state == WalkState::kNeedMore) state = walker.Finish();
  if (state == WalkState::kRejected) return walker.rejection();
  extents_.assign(walker.extents().begin(), walker.extents().end());
  const absl::Span<const TensorExtent> walked = extents_;
  const Rejection r = CheckIndexEntries(
      index_, g, mode,
      [walked](const IndexEntry& e, const TensorExtent** out) {
        *out = FindExtent(walked, e.descriptor_offset);
        return kAccepted;
      },
      &extent_of_entry_);
  if (!r.ok()) return r;
  return CheckWalk(walked, walker.region_end(), extent_of_entry_, g, mode);
}

// Without the walk: decode each indexed descriptor where the index says.
Rejection HrryFile::DecodeEntries(const FileOptions& options) {
  const FileGeometry& g = geometry_;
  auto decoder = std::make_unique<DescriptorDecoder>(options.parse);
  extents_.clear();
  extents_.reserve(index_.size());  // pointers into it must stay valid
  return CheckIndexEntries(
      index_, g, options.parse.mode,
      [&](const IndexEntry& e, const TensorExtent** out) -> Rejection {
        // Placement was checked: the descriptor lies in the region.
        const uint64_t at = e.descriptor_offset;
        const Rejection bad =
            DecodeWith(bytes_.subspan(at, g.region_limit - at), decoder.get());
        if (!bad.ok()) return {bad.rule, at + bad.offset, bad.message};
        const TensorDescriptor& d = decoder->descriptor();
        for (uint32_t i = 0; i < d.buffer_count; ++i) {
          if (d.buffers[i].byte_size > options.limits.max_buffer_bytes) {
            return {Rule::kLimitBufferBytes, at + d.offsets.handle(i),
                    "a buffer is larger than the buffer byte limit"};
          }
        }
        TensorExtent x;
        const int over = ComputeExtent(d, at, g.header.data_buffer_alignment,
                                       options.limits.max_total_bytes, &x);
        if (over >= 0) {
          return {Rule::kLimitTotalBytes,
                  at + d.offsets.handle(static_cast<uint32_t>(over)),
                  "the buffers would pass the total byte limit"};
        }
        extents_.push_back(x);
        *out = &extents_.back();
        return kAccepted;
      },
      &extent_of_entry_);
}

const TensorExtent* HrryFile::extent(const IndexEntry& e) const {
  return extent_of_entry_[EntryIndex(e)];
}

std::vector<const IndexEntry*> HrryFile::InFileOrder() const {
  std::vector<const IndexEntry*> out;
  out.reserve(by_offset_.size());
  for (uint32_t i : by_offset_) out.push_back(&index_.entries()[i]);
  return out;
}

absl::Status HrryFile::ReadDescriptor(const IndexEntry& e,
                                      TensorDescriptor* out) const {
  auto decoder = std::make_unique<DescriptorDecoder>(parse_);
  const uint64_t at = e.descriptor_offset;
  const Rejection r = DecodeWith(
      bytes_.subspan(at, geometry_.region_limit - at), decoder.get());
  if (!r.ok()) return ToStatus({r.rule, at + r.offset, r.message});
  *out = decoder->descriptor();
  return absl::OkStatus();
}

absl::StatusOr<absl::Span<const uint8_t>> HrryFile::Buffer(
    const IndexEntry& e, const TensorDescriptor& d, uint32_t i) const {
  if (i >= d.buffer_count) return absl::OutOfRangeError("no such buffer");
  // file-format.md § Data Buffer Placement: each buffer at the next
  // alignment boundary after the previous one.
  const uint64_t a = geometry_.header.data_buffer_alignment;
  // Where the buffers are, even when a permissive open let the index point
  // elsewhere (FILE-IDX-15 is strict-only).
  const TensorExtent* x = extent(e);
  uint64_t start = x != nullptr ? x->data_offset : e.data_offset;
  for (uint32_t j = 0; j < i; ++j) {
    uint64_t end;
    if (!wire::CheckedAdd(start, d.buffers[j].byte_size, &end) ||
        !wire::CheckedAdd(end, a - 1, &start)) {
      return absl::OutOfRangeError("buffer offsets overflow");
    }
    start &= ~(a - 1);
  }
  const uint64_t size = d.buffers[i].byte_size;
  if (start > bytes_.size() || size > bytes_.size() - start) {
    return absl::OutOfRangeError("the buffer lies outside the file");
  }
  // buffer-protocol.md § Alignment (Minimum), BUF-19: the base address of a
  // non-empty buffer handed out must be a multiple of its declared alignment
  // (a power of two ≥ 64 once validated, BUF-05; `%` copes with any value).
  const uint32_t align = d.buffers[i].alignment;
  const uintptr_t address = reinterpret_cast<uintptr_t>(bytes_.data()) + start;
  if (size != 0 && align != 0 && address % align != 0) {
    return ToStatus({Rule::kBuf19, start,
                     "the buffer's address is not a multiple of its declared "
                     "alignment"});
  }
  return bytes_.subspan(start, size);
}

absl::Status HrryFile::CheckElements(const IndexEntry& e,
                                     const TensorDescriptor& d) const {
  ElementDataChecker check(d, parse_.mode);
  if (!check.active()) return absl::OkStatus();
  absl::StatusOr<absl::Span<const uint8_t>> data = Buffer(e, d, 0);
  if (!data.ok()) return data.status();
  return ToStatus(check.Feed(0, 0, *data));
}

absl::StatusOr<std::vector<const IndexEntry*>> HrryFile::Members(
    const IndexEntry& head) const {
  const TensorExtent* x = extent(head);
  if (x == nullptr || !x->composite_head) {
    return absl::InvalidArgumentError("not a composite head");
  }
  const auto entries = index_.entries();
  auto it = std::find(by_offset_.begin(), by_offset_.end(),
                      static_cast<uint32_t>(EntryIndex(head)));
  size_t q = static_cast<size_t>(it - by_offset_.begin()) + 1;
  std::vector<const IndexEntry*> members;
  const auto torn = [&] {
    return ToStatus({Rule::kCmpCls03, geometry_.region_limit,
                     "the tensor region ends before the composite's members"});
  };
  for (uint64_t k = 0; k < x->member_count; ++k) {
    if (q >= by_offset_.size()) return torn();
    const IndexEntry& m = entries[by_offset_[q++]];
    members.push_back(&m);
    // Skip the members of a nested head (pre-order).
    const TensorExtent* mx = extent(m);
    uint64_t pending =
        mx != nullptr && mx->composite_head ? mx->member_count : 0;
    while (pending > 0) {
      if (q >= by_offset_.size()) return torn();
      const TensorExtent* nx = extent(entries[by_offset_[q++]]);
      --pending;
      if (nx != nullptr && nx->composite_head) pending += nx->member_count;
    }
  }
  return members;
}

}  // namespace hurray::stream::container
