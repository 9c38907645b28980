// TensorDescriptor: one decoded tensor descriptor (metadata.md), held in
// fixed-capacity storage so that decoding never allocates.
//
// The record is wire-faithful: it keeps reserved bytes and out-of-range enum
// values exactly as read, so that encoding it reproduces the input and tests
// can break any single field. Whether the values are acceptable is the
// validator's job (parser/validator.h).
//
// Sizes (x86-64): sizeof(TensorDescriptor) is 19 312 bytes, dominated by the
// 8-level tiled storage (3 × 64 × 8 bytes per level) and the 255 buffer
// handles; tests/decoder_test.cc bounds it (20 KiB) and prints it. Arrays are
// used only up to `rank` / `buffer_count`; the rest is never read, compared
// or cleared, so resetting a descriptor costs a few stores.
#ifndef HURRAY_PARSER_DESCRIPTOR_H_
#define HURRAY_PARSER_DESCRIPTOR_H_

#include <array>
#include <cstdint>

#include "absl/types/span.h"
#include "parser/element_type.h"
#include "parser/quantization.h"
#include "parser/wire.h"

namespace hurray {

inline constexpr uint32_t kMaxRank = 64;
inline constexpr uint32_t kMaxBuffers = 255;
inline constexpr uint32_t kMaxTiledDepth = 8;
inline constexpr uint64_t kDynamicDim = 0xFFFFFFFFFFFFFFFFull;
inline constexpr uint32_t kMinBufferAlignment = 64;
inline constexpr uint32_t kFixedHeaderSize = 20;
inline constexpr uint8_t kSupportedMajor = 1;
inline constexpr uint8_t kSupportedMinor = 0;
inline constexpr std::array<uint8_t, 4> kDescriptorMagic = {0x48, 0x52, 0x52,
                                                            0x59};  // "HRRY"

namespace flag {
inline constexpr uint32_t kHasQuantization = 1u << 0;
inline constexpr uint32_t kHasShard = 1u << 1;
inline constexpr uint32_t kHasExtensionType = 1u << 2;
inline constexpr uint32_t kHasStatistics = 1u << 3;
inline constexpr uint32_t kHasCompositeMember = 1u << 4;
inline constexpr uint32_t kReservedMask = ~0x1Fu;
}  // namespace flag

namespace layout_tag {
inline constexpr uint8_t kRowMajor = 0x01;
inline constexpr uint8_t kColumnMajor = 0x02;
inline constexpr uint8_t kStrided = 0x03;
inline constexpr uint8_t kTiled = 0x04;
inline constexpr uint8_t kMorton = 0x05;
inline constexpr uint8_t kCoo = 0x06;
inline constexpr uint8_t kCsr = 0x07;
inline constexpr uint8_t kCsc = 0x08;
inline constexpr uint8_t kCsf = 0x09;
inline constexpr uint8_t kBlockPaged = 0x0A;
inline constexpr uint8_t kComposite = 0x0B;
inline constexpr uint8_t kHilbert = 0x40;
inline constexpr bool IsExtension(uint8_t tag) {
  return tag >= 0xF0 && tag <= 0xFE;
}
inline constexpr bool IsAssigned(uint8_t tag) {
  return (tag >= kRowMajor && tag <= kComposite) || tag == kHilbert;
}
// Dense layouts: one data buffer addressed element by element.
inline constexpr bool IsDense(uint8_t tag) {
  return (tag >= kRowMajor && tag <= kMorton) || tag == kHilbert;
}
}  // namespace layout_tag

const char* LayoutName(uint8_t layout_tag);  // "row_major", ..., "extension"

namespace device_tag {
inline constexpr uint8_t kCpu = 0x00, kCuda = 0x01, kRocm = 0x02, kMetal = 0x03,
                         kVulkan = 0x04, kWebGpu = 0x05, kHexagon = 0x06,
                         kLevelZero = 0x07, kOpenCl = 0x08;
}
namespace memory_class {
inline constexpr uint8_t kStandard = 0x00, kHostPinned = 0x01, kUnified = 0x02,
                         kPeer = 0x03;
}

// One 16-byte buffer handle (buffer-protocol.md § Buffer Handle).
struct BufferHandle {
  uint64_t byte_size = 0;
  uint32_t alignment = kMinBufferAlignment;
  uint8_t device_tag = device_tag::kCpu;
  uint8_t sync_mode = 0;
  uint8_t memory_class = memory_class::kStandard;
  uint8_t reserved = 0;
  friend bool operator==(const BufferHandle&, const BufferHandle&) = default;
};
inline constexpr uint32_t kBufferHandleSize = 16;

// One level of a tiled layout (layouts/tiled.md); nested levels follow
// through inner_layout = 0x04.
struct TiledLevel {
  uint8_t outer_layout = 0;
  uint8_t inner_layout = 0;
  std::array<uint8_t, 2> reserved{};
  uint64_t tile_shape[kMaxRank]{};
  int64_t outer_strides[kMaxRank]{};  // when outer_layout = 0x03 (in tiles)
  int64_t inner_strides[kMaxRank]{};  // when inner_layout = 0x03 (in elements)
};

// Layout-specific fields of every layout tag (metadata.md § Layout-Specific
// Fields, layouts/*.md). Only the members of the descriptor's layout_tag are
// meaningful.
struct LayoutFields {
  int64_t strides[kMaxRank]{};  // strided
  uint32_t tiled_depth = 0;     // tiled: number of levels used
  TiledLevel tiled[kMaxTiledDepth]{};
  uint32_t morton_bits[kMaxRank]{};  // Morton
  // COO, CSR, CSC, CSF.
  uint64_t nnz = 0;
  uint8_t is_sorted = 0;                     // COO
  std::array<uint8_t, 8> sparse_reserved{};  // COO 7 bytes, CSR/CSC/CSF 8
  uint32_t mode_order[kMaxRank]{};           // CSF
  // Block-paged.
  uint32_t page_size = 0;
  uint64_t num_pages = 0;
  uint32_t paged_axis = 0;
  uint32_t num_seqs = 0;
  uint8_t kv_role = 0;
  uint32_t layer_index = 0;
  uint8_t block_table_index_type = 0;
  std::array<uint8_t, 6> paged_reserved{};
  // Composite head.
  uint8_t composition_rule = 0;
  uint8_t combine_op = 0;
  std::array<uint8_t, 2> composite_reserved{};
  uint32_t member_count = 0;
  // Hilbert.
  uint32_t hilbert_order = 0;
  uint32_t hilbert_rank = 0;
  // Extension layouts: the id, and where the opaque data sits in the
  // descriptor bytes (offset from the descriptor's first byte).
  uint64_t extension_layout_id = 0;
  uint32_t extension_data_length = 0;
  uint32_t extension_data_offset = 0;
};

struct ShardSection {
  uint64_t parent_shape[kMaxRank]{};
  uint64_t shard_offset[kMaxRank]{};
};
inline constexpr uint32_t kStatisticsSize = 72;
struct Statistics {
  uint32_t computed_mask = 0;
  uint32_t reserved = 0;
  uint64_t nnz = 0;
  double sparsity_ratio = 0, value_min = 0, value_max = 0, value_abs_max = 0,
         value_mean = 0, value_stddev = 0;
  uint8_t nm_n = 0, nm_m = 0, has_nan = 0, has_inf = 0;
  std::array<uint8_t, 4> reserved2{};
  friend bool operator==(const Statistics& a, const Statistics& b);
};
namespace stat_bit {
inline constexpr uint32_t kNnz = 1u << 0, kSparsity = 1u << 1,
                          kValueRange = 1u << 2, kValueStats = 1u << 3,
                          kNmSparsity = 1u << 4, kNanInf = 1u << 5,
                          kReservedMask = ~0x3Fu;
}
inline constexpr uint32_t kExtensionTypeSize = 20;
struct ExtensionType {
  uint32_t bit_width = 0;
  uint8_t packing_factor = 0, is_float = 0, is_signed = 0, sign_bits = 0,
          exponent_bits = 0, mantissa_bits = 0;
  std::array<uint8_t, 2> reserved{};
  uint32_t exponent_bias = 0;
  uint8_t has_nan = 0, has_inf = 0;
  std::array<uint8_t, 2> reserved2{};
  friend bool operator==(const ExtensionType&, const ExtensionType&) = default;
};
inline constexpr uint32_t kCompositeMemberSize = 16;
struct CompositeMember {
  uint8_t member_role = 0;  // 0x00 correction, 0x01 base
  std::array<uint8_t, 15> reserved{};
  friend bool operator==(const CompositeMember&,
                         const CompositeMember&) = default;
};

// Byte offsets (from the descriptor's first byte) of each part, as decoded or
// as the encoder will lay them out. Rejections report offsets from here.
struct PartOffsets {
  uint32_t layout = 0;        // first layout-specific byte (= 28 + 8·rank)
  uint32_t buffer_table = 0;  // the buffer_count byte
  uint32_t quantization = 0;  // the quantization_length prefix
  uint32_t shard = 0;
  uint32_t statistics = 0;
  uint32_t extension_type = 0;
  uint32_t composite_member = 0;
  uint32_t end = 0;  // end of the last known part
  uint32_t handle(uint32_t i) const { return buffer_table + 1 + 16 * i; }
  uint32_t shape(uint32_t k) const { return kFixedHeaderSize + 8 * k; }
  uint32_t byte_offset() const { return layout - 8; }
};

struct TensorDescriptor {
  // Fixed header.
  uint8_t version_major = kSupportedMajor;
  uint8_t version_minor = kSupportedMinor;
  uint32_t descriptor_length = 0;  // as declared (decode) or computed (encode)
  uint32_t flags = 0;
  uint8_t type_tag = 0;
  uint8_t layout_tag = 0;
  uint32_t rank = 0;
  uint64_t shape[kMaxRank]{};
  uint64_t byte_offset = 0;
  LayoutFields layout;
  // False when the layout tag could not be parsed (unassigned public tag in
  // permissive mode): then only the header, shape and byte_offset are known.
  bool layout_parsed = true;
  uint32_t buffer_count = 0;
  BufferHandle buffers[kMaxBuffers]{};
  QuantizationDescriptor quantization;  // when flags has kHasQuantization
  ShardSection shard;                   // when kHasShard
  Statistics statistics;                // when kHasStatistics
  ExtensionType extension_type;         // when kHasExtensionType
  CompositeMember composite_member;     // when kHasCompositeMember
  // Bytes between the end of the last known part and descriptor_length
  // (allowed only for a newer minor version, DESC-HDR-08).
  uint32_t trailing_length = 0;
  PartOffsets offsets;

  bool has(uint32_t f) const { return (flags & f) != 0; }
  absl::Span<const uint64_t> dims() const { return {shape, rank}; }
  absl::Span<const BufferHandle> buffer_table() const {
    return {buffers, buffer_count};
  }
  // Product of the dimensions; false if a dimension is dynamic or the product
  // overflows.
  bool ElementCount(uint64_t* count) const {
    wire::CheckedProduct n;
    for (uint32_t k = 0; k < rank; ++k) {
      if (shape[k] == kDynamicDim) return false;
      n.Mul(shape[k]);
    }
    return n.Get(count);
  }
  bool HasDynamicDim() const {
    for (uint32_t k = 0; k < rank; ++k) {
      if (shape[k] == kDynamicDim) return true;
    }
    return false;
  }
  // Bits per element for sizes and addressing (6 for the float6 types), from
  // the type table or the extension type section; 0 when the type cannot be
  // sized (unassigned tag, or an extension width that fits no size formula —
  // accepted only in permissive mode, and then never sized).
  uint32_t ElementBits() const {
    return has(flag::kHasExtensionType) ? ExtensionElementBits()
                                        : AssignedTypeBits(type_tag);
  }
  // Bytes for `count` elements (element-types.md § Buffer Size Calculation);
  // false when ElementBits() is 0 or on overflow.
  bool StorageBytesFor(uint64_t count, uint64_t* bytes) const {
    if (has(flag::kHasExtensionType))
      return ExtensionStorageBytesFor(count, bytes);
    const uint32_t bits = AssignedTypeBits(type_tag);
    return bits != 0 && StorageBytesOfBits(bits, count, bytes);
  }

  // Field-by-field equality over the parts in use (rank, buffer_count,
  // present sections). Offsets and descriptor_length are derived and
  // excluded from the comparison.
  friend bool operator==(const TensorDescriptor& a, const TensorDescriptor& b);

 private:
  // ElementBits() and StorageBytesFor() of a private type (the extension
  // type section).
  uint32_t ExtensionElementBits() const;
  bool ExtensionStorageBytesFor(uint64_t count, uint64_t* bytes) const;
};

// Sets the header and clears counts so `d` describes an empty row-major
// scalar; arrays beyond the counts are left as they are (the arrays are zeroed
// once, at construction).
void ResetDescriptor(TensorDescriptor* d);

}  // namespace hurray

#endif  // HURRAY_PARSER_DESCRIPTOR_H_
