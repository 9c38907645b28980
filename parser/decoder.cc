#include "parser/decoder.h"

#include <algorithm>
#include <cstring>
#include <memory>

#include "parser/fast_path.h"
#include "parser/section_fields.h"
#include "parser/validator.h"
#include "parser/whole_decode.h"
#include "parser/wire.h"

namespace hurray {

using wire::LoadI64;
using wire::LoadU32;
using wire::LoadU64;

enum class DescriptorDecoder::Stage : uint8_t {
  kMagic,
  kHeaderRest,
  kShape,
  kByteOffset,
  kStrides,
  kTileShape,
  kTileEnums,
  kTileOuterStrides,
  kTileInnerStrides,
  kMortonBits,
  kSparseFields,
  kCsfNnz,
  kCsfModeOrder,
  kCsfReserved,
  kPagedFields,
  kCompositeFields,
  kHilbertFields,
  kExtensionLayoutHeader,
  kBufferCount,
  kHandle,
  kQuantLength,
  kQuantHeader,
  kQuantPayload,
  kAfterQuantization,
  kShardParent,
  kShardOffset,
  kStatistics,
  kExtensionType,
  kCompositeMember,
  kSkip,
  kFinal,
  kDone,
};

DescriptorDecoder::DescriptorDecoder(const ParseOptions& options)
    : options_(options) {
  options_.limits.max_rank = std::min(options_.limits.max_rank, kMaxRank);
  options_.limits.max_tiled_depth =
      std::min(options_.limits.max_tiled_depth, kMaxTiledDepth);
  Reset();
}

void DescriptorDecoder::Reset() {
  state_ = DecodeState::kNeedMore;
  fast_path_taken_ = false;
  stage_ = Stage::kMagic;
  rejection_ = kAccepted;
  pos_ = staged_ = want_ = index_ = skip_left_ = 0;
  ResetDescriptor(&desc_);
}

DescriptorDecoder::Step DescriptorDecoder::Reject(Rule rule, uint64_t offset,
                                                  const char* message) {
  rejection_ = Rejection{rule, offset, message};
  state_ = DecodeState::kRejected;
  want_ = staged_;  // no room left: Feed() appends nothing once stopped
  return Step::kStop;
}

// The slow path of Take(): gathers a field group that straddles chunks.
const uint8_t* DescriptorDecoder::TakeSlow(uint32_t n) {
  const uint32_t want = n - staged_;
  const uint32_t got = static_cast<uint32_t>(std::min<size_t>(want, avail_));
  if (got == 1) {
    staging_[staged_] = *in_;  // the byte-by-byte feed: no memcpy call
  } else if (got > 0) {
    std::memcpy(staging_ + staged_, in_, got);  // in_ may be null
  }
  in_ += got;
  avail_ -= got;
  staged_ += got;
  if (staged_ < n) {
    want_ = n;  // Feed() may append to the group without resuming Run()
    return nullptr;
  }
  staged_ = 0;
  pos_ += n;
  return staging_;
}

uint32_t DescriptorDecoder::ArrayGroup(uint32_t left, uint32_t size) const {
  const uint32_t in_bounds = pos_ < desc_.descriptor_length
                                 ? (desc_.descriptor_length - pos_) / size
                                 : 0;
  return std::min({left, kStagingBytes / size, in_bounds});
}

DescriptorDecoder::Step DescriptorDecoder::FieldBeyondLength() {
  return Reject(Rule::kDescHdr06, pos_,
                "a field ends beyond descriptor_length");
}

DescriptorDecoder::Step DescriptorDecoder::BeginSkip(uint32_t n, Stage next) {
  if (static_cast<uint64_t>(pos_) + n > desc_.descriptor_length) {
    return Reject(Rule::kDescHdr06, pos_,
                  "a section ends beyond descriptor_length");
  }
  skip_left_ = n;
  after_skip_ = next;
  stage_ = Stage::kSkip;
  return Step::kContinue;
}

bool DescriptorDecoder::Skip() {
  const uint32_t got =
      static_cast<uint32_t>(std::min<size_t>(skip_left_, avail_));
  in_ += got;
  avail_ -= got;
  pos_ += got;
  skip_left_ -= got;
  return skip_left_ == 0;
}

bool DescriptorDecoder::TryFastPath(absl::Span<const uint8_t> chunk) {
  // The common shapes at fixed offsets (FastDecodeFields leaves desc_ as
  // Reset() left it when it declines), else any descriptor front to back;
  // then the validator the state machine would run (Complete()). Only an
  // accepted descriptor stays here: a rejection, like any doubt, starts the
  // state machine over from the first byte, which reports it.
  const bool fixed =
      FastDecodeFields(chunk.data(), chunk.size(), options_, &desc_);
  if ((!fixed && !DecodeWhole(chunk.data(), chunk.size(), options_, &desc_)) ||
      (options_.validate && !(fixed && FastAccepts(desc_, options_)) &&
       !ValidateDescriptor(desc_, options_).ok())) {
    ResetDescriptor(&desc_);
    return false;
  }
  pos_ = desc_.descriptor_length;
  stage_ = Stage::kDone;
  state_ = DecodeState::kDone;
  want_ = 0;  // (staged_ is 0) an empty chunk may have stalled on the magic
  fast_path_taken_ = true;
  return true;
}

FeedResult DescriptorDecoder::FeedSlow(absl::Span<const uint8_t> chunk) {
  if (state_ != DecodeState::kNeedMore) return {0, state_};
  const size_t size = chunk.size();
  // (A chunk that only continues a stalled field group is Feed()'s case.)
  // A sum, not `pos_ == 0 && staged_ == 0`: the compiler reads those two
  // adjacent fields with one 8-byte load, which the store buffer cannot
  // serve from Feed()'s 4-byte store of staged_ a moment before (a stall on
  // each call of a byte-by-byte feed).
  if (pos_ + staged_ == 0) {
    // A whole descriptor at the start of this chunk: try the fast path.
    // Split input (a descriptor already under way) takes the state machine.
    if (options_.fast_path && size >= kFixedHeaderSize && TryFastPath(chunk)) {
      return {desc_.descriptor_length, state_};
    }
  } else if (stage_ == Stage::kSkip && size < skip_left_) {
    pos_ += static_cast<uint32_t>(size);  // what Skip() would do
    skip_left_ -= static_cast<uint32_t>(size);
    return {size, state_};
  }
  return RunMachine(chunk);
}

FeedResult DescriptorDecoder::RunMachine(absl::Span<const uint8_t> chunk) {
  in_ = chunk.data();
  avail_ = chunk.size();
  want_ = 0;  // set again if Run() stalls on a field group (TakeSlow)
  while (Run() == Step::kContinue) {
  }
  const size_t consumed = chunk.size() - avail_;
  in_ = nullptr;
  avail_ = 0;
  return {consumed, state_};
}

DecodeState DescriptorDecoder::Finish() {
  if (state_ == DecodeState::kNeedMore) {
    Reject(Rule::kDescHdr01, consumed(),
           "input ended before the end of the descriptor");
  }
  return state_;
}

// Field groups are bounded by descriptor_length once it is known.
#define HURRAY_TAKE(n, p)                                              \
  do {                                                                 \
    if (static_cast<uint64_t>(pos_) + (n) > desc_.descriptor_length) { \
      return FieldBeyondLength();                                      \
    }                                                                  \
    if (((p) = Take(n)) == nullptr) return Step::kStall;               \
  } while (0)

// Inlined into RunMachine(), its only caller: a field group finished by a
// byte-sized Feed() resumes the next stage without a call per stage.
[[gnu::always_inline]] inline DescriptorDecoder::Step DescriptorDecoder::Run() {
  const uint8_t* p = nullptr;
  TensorDescriptor& d = desc_;
  LayoutFields& lay = d.layout;
  switch (stage_) {
    // --- Fixed header (metadata.md § Fixed Header). ----------------------
    // Two field groups: the magic alone, so that input that is not Hurray
    // at all is refused after 4 bytes, then the other 16 bytes, checked in
    // wire order.
    case Stage::kMagic:
      if ((p = Take(4)) == nullptr) return Step::kStall;
      if (std::memcmp(p, kDescriptorMagic.data(), 4) != 0) {
        return Reject(Rule::kDescHdr02, 0, "magic is not \"HRRY\"");
      }
      stage_ = Stage::kHeaderRest;
      return Step::kContinue;
    case Stage::kHeaderRest:
      if ((p = Take(kFixedHeaderSize - 4)) == nullptr) return Step::kStall;
      d.version_major = p[0];
      d.version_minor = p[1];
      if (d.version_major > kSupportedMajor) {
        return Reject(Rule::kDescHdr03, 4, "version_major is newer than 1");
      }
      if (d.version_major < kSupportedMajor) {
        return Reject(Rule::kDescHdr04, 4, "version_major 0 (pre-1.0 data)");
      }
      d.descriptor_length = LoadU32(p + 2);
      if (d.descriptor_length < kFixedHeaderSize) {
        return Reject(Rule::kDescHdr05, 6, "descriptor_length is below 20");
      }
      if (d.descriptor_length > options_.limits.max_descriptor_bytes) {
        return Reject(Rule::kLimitDescBytes, 6,
                      "descriptor_length exceeds the configured limit");
      }
      d.flags = LoadU32(p + 6);
      d.type_tag = p[10];
      d.layout_tag = p[11];
      d.rank = LoadU32(p + 12);
      if (d.flags & flag::kReservedMask) {
        return Reject(Rule::kDescHdr07, 10, "a reserved flag bit is set");
      }
      if (d.layout_tag == 0x00 || d.layout_tag == 0xFF) {
        return Reject(Rule::kLayTag01, 15, "layout_tag 0x00/0xFF is invalid");
      }
      if (d.rank > kMaxRank) {
        return Reject(Rule::kDescShp01, 16, "rank exceeds 64");
      }
      if (d.rank > options_.limits.max_rank) {
        return Reject(Rule::kLimitRank, 16,
                      "rank exceeds the configured limit");
      }
      index_ = 0;
      stage_ = d.rank > 0 ? Stage::kShape : Stage::kByteOffset;
      return Step::kContinue;
    case Stage::kShape: {
      const uint32_t k = ArrayGroup(d.rank - index_, 8);
      if (k == 0) {
        return FieldBeyondLength();
      }
      if ((p = Take(8 * k)) == nullptr) return Step::kStall;
      for (uint32_t i = 0; i < k; ++i) d.shape[index_ + i] = LoadU64(p + 8 * i);
      index_ += k;
      if (index_ == d.rank) stage_ = Stage::kByteOffset;
      return Step::kContinue;
    }
    case Stage::kByteOffset: {
      // Row- and column-major layouts have no fields of their own, so the
      // buffer count follows byte_offset: one group with it when it lies
      // inside descriptor_length (else its own stage rejects it).
      const bool plain = (d.layout_tag == layout_tag::kRowMajor ||
                          d.layout_tag == layout_tag::kColumnMajor) &&
                         static_cast<uint64_t>(pos_) + 9 <= d.descriptor_length;
      HURRAY_TAKE(plain ? 9 : 8, p);
      d.byte_offset = LoadU64(p);
      if (!plain) {
        d.offsets.layout = pos_;
        return StartLayout();
      }
      d.offsets.layout = pos_ - 1;
      return BeginBufferTable(p[8]);
    }

    // --- Layout-specific fields (metadata.md, layouts/*.md). --------------
    case Stage::kStrides:
      HURRAY_TAKE(8, p);
      lay.strides[index_] = LoadI64(p);
      if (++index_ == d.rank) stage_ = Stage::kBufferCount;
      return Step::kContinue;
    case Stage::kTileShape: {
      HURRAY_TAKE(8, p);
      TiledLevel& level = lay.tiled[lay.tiled_depth - 1];
      level.tile_shape[index_] = LoadU64(p);
      if (++index_ == d.rank) stage_ = Stage::kTileEnums;
      return Step::kContinue;
    }
    case Stage::kTileEnums: {
      HURRAY_TAKE(4, p);
      TiledLevel& level = lay.tiled[lay.tiled_depth - 1];
      level.outer_layout = p[0];
      level.inner_layout = p[1];
      level.reserved = {p[2], p[3]};
      tile_enums_at_ = pos_ - 4;
      if (level.outer_layout < 0x01 || level.outer_layout > 0x03) {
        return Reject(Rule::kLayTil02, pos_ - 4,
                      "tiled outer_layout is not 0x01, 0x02 or 0x03");
      }
      if (level.inner_layout < 0x01 || level.inner_layout > 0x04) {
        return Reject(Rule::kLayTil03, pos_ - 3,
                      "tiled inner_layout is not 0x01…0x04");
      }
      index_ = 0;
      if (level.outer_layout == layout_tag::kStrided && d.rank > 0) {
        stage_ = Stage::kTileOuterStrides;
        return Step::kContinue;
      }
      return AfterTiledLevel();
    }
    case Stage::kTileOuterStrides: {
      HURRAY_TAKE(8, p);
      lay.tiled[lay.tiled_depth - 1].outer_strides[index_] = LoadI64(p);
      if (++index_ == d.rank) {
        index_ = 0;
        return AfterTiledLevel();
      }
      return Step::kContinue;
    }
    case Stage::kTileInnerStrides: {
      HURRAY_TAKE(8, p);
      lay.tiled[lay.tiled_depth - 1].inner_strides[index_] = LoadI64(p);
      if (++index_ == d.rank) stage_ = Stage::kBufferCount;
      return Step::kContinue;
    }
    case Stage::kMortonBits:
      HURRAY_TAKE(4, p);
      lay.morton_bits[index_] = LoadU32(p);
      if (++index_ == d.rank) stage_ = Stage::kBufferCount;
      return Step::kContinue;
    case Stage::kSparseFields:  // COO, CSR, CSC: nnz u64 + 8 bytes.
      HURRAY_TAKE(16, p);
      lay.nnz = LoadU64(p);
      if (d.layout_tag == layout_tag::kCoo) {
        lay.is_sorted = p[8];
        std::memcpy(lay.sparse_reserved.data(), p + 9, 7);
        lay.sparse_reserved[7] = 0;  // COO has 7 reserved bytes
      } else {
        std::memcpy(lay.sparse_reserved.data(), p + 8, 8);
      }
      stage_ = Stage::kBufferCount;
      return Step::kContinue;
    case Stage::kCsfNnz:
      HURRAY_TAKE(8, p);
      lay.nnz = LoadU64(p);
      index_ = 0;
      stage_ = d.rank > 0 ? Stage::kCsfModeOrder : Stage::kCsfReserved;
      return Step::kContinue;
    case Stage::kCsfModeOrder:
      HURRAY_TAKE(4, p);
      lay.mode_order[index_] = LoadU32(p);
      if (++index_ == d.rank) stage_ = Stage::kCsfReserved;
      return Step::kContinue;
    case Stage::kCsfReserved:
      HURRAY_TAKE(8, p);
      std::memcpy(lay.sparse_reserved.data(), p, 8);
      stage_ = Stage::kBufferCount;
      return Step::kContinue;
    case Stage::kPagedFields:  // layouts/block-paged.md: 32 bytes, unaligned.
      HURRAY_TAKE(32, p);
      section_fields::LoadBlockPagedFields(p, &lay);
      stage_ = Stage::kBufferCount;
      return Step::kContinue;
    case Stage::kCompositeFields:
      HURRAY_TAKE(8, p);
      lay.composition_rule = p[0];
      lay.combine_op = p[1];
      lay.composite_reserved = {p[2], p[3]};
      lay.member_count = LoadU32(p + 4);
      stage_ = Stage::kBufferCount;
      return Step::kContinue;
    case Stage::kHilbertFields:
      HURRAY_TAKE(8, p);
      lay.hilbert_order = LoadU32(p);
      lay.hilbert_rank = LoadU32(p + 4);
      stage_ = Stage::kBufferCount;
      return Step::kContinue;
    case Stage::kExtensionLayoutHeader:
      HURRAY_TAKE(12, p);
      lay.extension_layout_id = LoadU64(p);
      lay.extension_data_length = LoadU32(p + 8);
      lay.extension_data_offset = pos_;
      if (lay.extension_data_length >
          options_.limits.max_extension_data_bytes) {
        return Reject(Rule::kLimitExtData, pos_ - 4,
                      "extension_data_length exceeds the configured limit");
      }
      return BeginSkip(lay.extension_data_length, Stage::kBufferCount);

    // --- Buffer table (metadata.md § Buffer Table). ----------------------
    case Stage::kBufferCount:
      HURRAY_TAKE(1, p);
      return BeginBufferTable(p[0]);
    case Stage::kHandle: {
      const uint32_t k = ArrayGroup(d.buffer_count - index_, kBufferHandleSize);
      if (k == 0) {
        return FieldBeyondLength();
      }
      if ((p = Take(kBufferHandleSize * k)) == nullptr) return Step::kStall;
      for (const uint8_t* end = p + kBufferHandleSize * k; p != end;
           p += kBufferHandleSize) {
        BufferHandle& h = d.buffers[index_++];
        h.byte_size = LoadU64(p);
        h.alignment = LoadU32(p + 8);
        h.device_tag = p[12];
        h.sync_mode = p[13];
        h.memory_class = p[14];
        h.reserved = p[15];
      }
      if (index_ == d.buffer_count) return AfterBufferTable();
      return Step::kContinue;
    }

    // --- Quantization section (metadata.md, quantization.md). ------------
    case Stage::kQuantLength: {
      // The length and the 4-byte header are one group when both lie inside
      // descriptor_length (otherwise the length alone is, and is refused).
      const uint32_t n =
          static_cast<uint64_t>(pos_) + 8 <= d.descriptor_length ? 8 : 4;
      HURRAY_TAKE(n, p);
      const uint32_t at = pos_ - n;
      d.offsets.quantization = at;
      const uint32_t length = LoadU32(p);
      if (length < kQuantizationHeaderSize) {
        return Reject(Rule::kQntHdr01, at, "quantization_length is below 4");
      }
      if (length > options_.limits.max_quantization_bytes) {
        return Reject(Rule::kLimitQntBytes, at,
                      "quantization_length exceeds the configured limit");
      }
      if (static_cast<uint64_t>(at) + 4 + length > d.descriptor_length) {
        return Reject(Rule::kDescHdr06, at,
                      "the quantization section ends beyond descriptor_length");
      }
      quant_length_ = length;
      if (n == 8) return QuantizationHeader(p + 4);
      // (Not reached: with fewer than 8 bytes left the checks above refuse.
      // Kept so that the header is never read beyond the group taken.)
      stage_ = Stage::kQuantHeader;
      return Step::kContinue;
    }
    case Stage::kQuantHeader:
      HURRAY_TAKE(kQuantizationHeaderSize, p);
      return QuantizationHeader(p);
    case Stage::kQuantPayload: {
      QuantizationDescriptor& q = d.quantization;
      const uint32_t fixed = SchemeFixedSize(q.scheme_tag);
      HURRAY_TAKE(fixed - kQuantizationHeaderSize, p);
      std::memcpy(quant_fixed_ + kQuantizationHeaderSize, p,
                  fixed - kQuantizationHeaderSize);
      ParseQuantizationFields(quant_fixed_, quant_length_, &q);
      if (q.extra_length == 0) return AfterSection(flag::kHasQuantization);
      return BeginSkip(q.extra_length, Stage::kAfterQuantization);
    }

    // --- Optional sections, in wire order: shard, statistics, extension
    // type, composite member (metadata.md § Overall Descriptor Structure).
    // AfterSection() enters only the stages whose flag is set.
    case Stage::kShardParent:
      if (d.rank == 0) {
        d.offsets.shard = pos_;
        return AfterSection(flag::kHasShard);
      }
      HURRAY_TAKE(8, p);
      if (index_ == 0) d.offsets.shard = pos_ - 8;
      d.shard.parent_shape[index_] = LoadU64(p);
      if (++index_ == d.rank) {
        index_ = 0;
        stage_ = Stage::kShardOffset;
      }
      return Step::kContinue;
    case Stage::kShardOffset:
      HURRAY_TAKE(8, p);
      d.shard.shard_offset[index_] = LoadU64(p);
      if (++index_ == d.rank) return AfterSection(flag::kHasShard);
      return Step::kContinue;
    case Stage::kStatistics: {
      HURRAY_TAKE(kStatisticsSize, p);
      d.offsets.statistics = pos_ - kStatisticsSize;
      section_fields::LoadStatistics(p, &d.statistics);
      return AfterSection(flag::kHasStatistics);
    }
    case Stage::kExtensionType: {
      HURRAY_TAKE(kExtensionTypeSize, p);
      d.offsets.extension_type = pos_ - kExtensionTypeSize;
      section_fields::LoadExtensionType(p, &d.extension_type);
      return AfterSection(flag::kHasExtensionType);
    }
    case Stage::kCompositeMember:
      HURRAY_TAKE(kCompositeMemberSize, p);
      d.offsets.composite_member = pos_ - kCompositeMemberSize;
      section_fields::LoadCompositeMember(p, &d.composite_member);
      return AfterSection(flag::kHasCompositeMember);

    case Stage::kAfterQuantization:
      return AfterSection(flag::kHasQuantization);
    case Stage::kSkip:
      if (!Skip()) return Step::kStall;
      stage_ = after_skip_;
      return Step::kContinue;
    case Stage::kFinal:
      return Complete();
    case Stage::kDone:
      return Step::kStop;
  }
  return Step::kStop;
}

#undef HURRAY_TAKE

DescriptorDecoder::Step DescriptorDecoder::StartLayout() {
  TensorDescriptor& d = desc_;
  index_ = 0;
  const bool has_dims = d.rank > 0;
  switch (d.layout_tag) {
    case layout_tag::kRowMajor:
    case layout_tag::kColumnMajor:
      stage_ = Stage::kBufferCount;
      return Step::kContinue;
    case layout_tag::kStrided:
      stage_ = has_dims ? Stage::kStrides : Stage::kBufferCount;
      return Step::kContinue;
    case layout_tag::kTiled:
      d.layout.tiled_depth = 0;
      return StartTiledLevel();
    case layout_tag::kMorton:
      stage_ = has_dims ? Stage::kMortonBits : Stage::kBufferCount;
      return Step::kContinue;
    case layout_tag::kCoo:
    case layout_tag::kCsr:
    case layout_tag::kCsc:
      stage_ = Stage::kSparseFields;
      return Step::kContinue;
    case layout_tag::kCsf:
      stage_ = Stage::kCsfNnz;
      return Step::kContinue;
    case layout_tag::kBlockPaged:
      stage_ = Stage::kPagedFields;
      return Step::kContinue;
    case layout_tag::kComposite:
      stage_ = Stage::kCompositeFields;
      return Step::kContinue;
    case layout_tag::kHilbert:
      stage_ = Stage::kHilbertFields;
      return Step::kContinue;
    default:
      break;
  }
  if (layout_tag::IsExtension(d.layout_tag)) {
    stage_ = Stage::kExtensionLayoutHeader;
    return Step::kContinue;
  }
  // An unassigned public tag: the size of its fields is unknown, so the
  // buffer table cannot be located (REJECT-RULES.md §4 item 6). Permissive
  // mode keeps header, shape and byte_offset and skips the rest.
  if (Applies(Rule::kLayTag02, options_.mode)) {
    return Reject(Rule::kLayTag02, 15, "layout_tag is not assigned");
  }
  d.layout_parsed = false;
  d.offsets.buffer_table = d.offsets.end = pos_;
  return BeginSkip(d.descriptor_length - pos_, Stage::kFinal);
}

DescriptorDecoder::Step DescriptorDecoder::StartTiledLevel() {
  LayoutFields& lay = desc_.layout;
  if (lay.tiled_depth >= options_.limits.max_tiled_depth) {
    // The layout tag (first level) or the inner_layout byte of the previous
    // level asked for one more level.
    return Reject(Rule::kLayTil05,
                  lay.tiled_depth == 0 ? 15 : tile_enums_at_ + 1,
                  "tiled nesting exceeds the configured depth");
  }
  ++lay.tiled_depth;
  index_ = 0;
  stage_ = desc_.rank > 0 ? Stage::kTileShape : Stage::kTileEnums;
  return Step::kContinue;
}

DescriptorDecoder::Step DescriptorDecoder::AfterTiledLevel() {
  const TiledLevel& level = desc_.layout.tiled[desc_.layout.tiled_depth - 1];
  index_ = 0;
  if (level.inner_layout == layout_tag::kStrided && desc_.rank > 0) {
    stage_ = Stage::kTileInnerStrides;
    return Step::kContinue;
  }
  if (level.inner_layout == layout_tag::kTiled) return StartTiledLevel();
  stage_ = Stage::kBufferCount;
  return Step::kContinue;
}

DescriptorDecoder::Step DescriptorDecoder::BeginBufferTable(uint8_t count) {
  desc_.offsets.buffer_table = pos_ - 1;
  desc_.buffer_count = count;
  index_ = 0;
  if (count == 0) return AfterBufferTable();
  stage_ = Stage::kHandle;
  return Step::kContinue;
}

DescriptorDecoder::Step DescriptorDecoder::QuantizationHeader(
    const uint8_t* p) {
  QuantizationDescriptor& q = desc_.quantization;
  q.scheme_tag = p[0];
  q.scheme_version = p[1];
  q.flags = wire::LoadU16(p + 2);
  if (!q.interpreted()) {
    // Unassigned, private or future-version scheme: not read, skipped by
    // its length (quantization.md § Descriptor Header).
    q.extra_length = quant_length_ - kQuantizationHeaderSize;
    return BeginSkip(q.extra_length, Stage::kAfterQuantization);
  }
  if (quant_length_ < SchemeFixedSize(q.scheme_tag)) {
    return Reject(Rule::kQntHdr02, desc_.offsets.quantization,
                  "quantization_length is below the scheme's size");
  }
  std::memcpy(quant_fixed_, p, kQuantizationHeaderSize);
  stage_ = Stage::kQuantPayload;
  return Step::kContinue;
}

DescriptorDecoder::Step DescriptorDecoder::AfterBufferTable() {
  index_ = 0;
  if (desc_.has(flag::kHasQuantization)) {
    stage_ = Stage::kQuantLength;
    return Step::kContinue;
  }
  return AfterSection(flag::kHasQuantization);
}

// Sections follow in wire order; each stage skips itself when its flag is
// clear, so this just moves to the next one.
DescriptorDecoder::Step DescriptorDecoder::AfterSection(uint32_t done_flag) {
  // The optional sections in wire order (statistics before extension type
  // although their flag bits are 3 and 2).
  static constexpr struct {
    uint32_t flag;
    Stage stage;
  } kOrder[] = {{flag::kHasQuantization, Stage::kQuantLength},
                {flag::kHasShard, Stage::kShardParent},
                {flag::kHasStatistics, Stage::kStatistics},
                {flag::kHasExtensionType, Stage::kExtensionType},
                {flag::kHasCompositeMember, Stage::kCompositeMember}};
  index_ = 0;
  size_t i = 0;
  while (kOrder[i].flag != done_flag) ++i;
  for (++i; i < std::size(kOrder); ++i) {
    if (desc_.has(kOrder[i].flag)) {
      stage_ = kOrder[i].stage;
      return Step::kContinue;
    }
  }
  desc_.offsets.end = pos_;
  desc_.trailing_length = desc_.descriptor_length - pos_;
  // Bytes a newer minor version may have added are skipped here; whether
  // they are allowed is the validator's call (DESC-HDR-08).
  if (desc_.trailing_length == 0) return Complete();
  return BeginSkip(desc_.trailing_length, Stage::kFinal);
}

DescriptorDecoder::Step DescriptorDecoder::Complete() {
  // The fast validator answers "accepted" or "not sure" for the common
  // shapes (parser/fast_path.h); the general validator decides the rest.
  // (want_ and staged_ are 0 here: RunMachine() cleared want_, nothing
  // stalled since, and the last group was taken whole.)
  if (options_.validate &&
      !(options_.fast_path && FastAccepts(desc_, options_))) {
    const Rejection r = ValidateDescriptor(desc_, options_);
    if (!r.ok()) {
      rejection_ = r;
      state_ = DecodeState::kRejected;
      return Step::kStop;
    }
  }
  stage_ = Stage::kDone;
  state_ = DecodeState::kDone;
  return Step::kStop;
}

Rejection DecodeWith(absl::Span<const uint8_t> bytes,
                     DescriptorDecoder* decoder) {
  decoder->Reset();
  DecodeState state = decoder->Feed(bytes).state;
  if (state == DecodeState::kNeedMore) state = decoder->Finish();
  return state == DecodeState::kRejected ? decoder->rejection() : kAccepted;
}

absl::StatusOr<TensorDescriptor> Decode(absl::Span<const uint8_t> bytes,
                                        const ParseOptions& options) {
  // The decoder is large; keep it off the stack of small callers.
  auto decoder = std::make_unique<DescriptorDecoder>(options);
  const Rejection r = DecodeWith(bytes, decoder.get());
  if (!r.ok()) return ToStatus(r);
  return decoder->descriptor();
}

}  // namespace hurray
