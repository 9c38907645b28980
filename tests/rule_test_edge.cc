// Edge cases around the reject rules (tests/rule_test.cc has one case per
// rule): limits at their boundaries, layout tags, tiled nesting, framing,
// size arithmetic that overflows or meets dynamic dimensions, the
// quantization rulings of RESOLUTIONS.md, the validating factories,
// DecodeQuantization and ValidateBufferPlacement.
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "gtest/gtest.h"
#include "parser/decoder.h"
#include "parser/descriptor.h"
#include "parser/element_type.h"
#include "parser/encoder.h"
#include "parser/fast_path.h"
#include "parser/options.h"
#include "parser/quantization.h"
#include "parser/rules.h"
#include "parser/validator.h"
#include "parser/wire.h"
#include "tests/vectors.h"

namespace hurray {
namespace {

using namespace type_tag;  // NOLINT
namespace lt = layout_tag;

using Bytes = std::vector<uint8_t>;
using Desc = std::unique_ptr<TensorDescriptor>;

constexpr uint64_t kMaxU64 = std::numeric_limits<uint64_t>::max();
constexpr Mode kModes[] = {Mode::kStrict, Mode::kPermissive};

ParseOptions InMode(ParseOptions o, Mode mode) {
  o.mode = mode;
  return o;
}
ParseOptions Permissive() { return InMode(ParseOptions(), Mode::kPermissive); }

// "OK" or "<RULE-ID>@<offset>"; anything else is spelled out.
std::string Outcome(const absl::Status& s) {
  if (s.ok()) return "OK";
  const std::optional<absl::string_view> id = RuleIdOf(s);
  const std::optional<uint64_t> offset = OffsetOf(s);
  if (s.code() != absl::StatusCode::kInvalidArgument || !id || !offset) {
    return absl::StrCat("unexpected status: ", s.ToString());
  }
  return absl::StrCat(*id, "@", *offset);
}
std::string Rejects(absl::string_view id, uint64_t offset) {
  return absl::StrCat(id, "@", offset);
}
std::string Decoded(const Bytes& b, const ParseOptions& o = ParseOptions()) {
  return Outcome(Decode(b, o).status());
}
std::string Decoded(const TensorDescriptor& d,
                    const ParseOptions& o = ParseOptions()) {
  return Decoded(vectors::Bytes(d), o);
}
// The rule id alone (for statuses whose offset is not descriptor-relative).
std::string RuleOf(const absl::Status& s) {
  if (s.ok()) return "OK";
  return std::string(RuleIdOf(s).value_or("<no rule>"));
}

PartOffsets Off(const TensorDescriptor& d) {
  const absl::StatusOr<PartOffsets> o = ComputeOffsets(d);
  if (!o.ok()) {
    ADD_FAILURE() << o.status();
    return PartOffsets();
  }
  return *o;
}
uint64_t Scheme(const TensorDescriptor& d) { return Off(d).quantization + 4; }
uint64_t Handle(const TensorDescriptor& d, uint32_t i) {
  return Off(d).handle(i);
}

BufferHandle Buf(uint64_t size) {
  BufferHandle h;
  h.byte_size = size;
  return h;
}

Desc Base() { return vectors::Dense(kFloat32, {3, 4}); }

template <typename T>
T Must(absl::StatusOr<T> v) {
  EXPECT_TRUE(v.ok()) << v.status();
  return *v;
}

// f32 [4, 4] tiled `depth` levels deep (2×2 tiles, then 1×1 sub-tiles).
Desc Tiled(uint32_t depth) {
  auto d = vectors::Dense(kFloat32, {4, 4}, lt::kTiled);
  d->layout.tiled_depth = depth;
  for (uint32_t i = 0; i < depth; ++i) {
    TiledLevel& level = d->layout.tiled[i];
    level.tile_shape[0] = level.tile_shape[1] = i == 0 ? 2 : 1;
    level.outer_layout = lt::kRowMajor;
    level.inner_layout = i + 1 < depth ? lt::kTiled : lt::kRowMajor;
  }
  return d;
}
// outer_layout byte of level `i` when no level before it has strides.
uint64_t TileEnums(const TensorDescriptor& d, uint32_t i) {
  return Off(d).layout + i * (8ull * d.rank + 4) + 8ull * d.rank;
}

// --- Limits at their boundaries (REJECT-RULES.md §5) ------------------------

TEST(Limits, DescriptorBytes) {
  const Bytes b = vectors::Bytes(*vectors::Everything());
  ParseOptions o;
  o.limits.max_descriptor_bytes = static_cast<uint32_t>(b.size());
  EXPECT_EQ(Decoded(b, o), "OK");
  o.limits.max_descriptor_bytes -= 1;
  for (const Mode m : kModes) {
    EXPECT_EQ(Decoded(b, InMode(o, m)), Rejects("LIMIT-DESC-BYTES", 6));
  }
  // The default (16 MiB) against a declared 4 GiB - 1: rejected before
  // anything is read or allocated.
  Bytes huge = b;
  wire::StoreU32(huge.data() + 6, 0xFFFFFFFF);
  EXPECT_EQ(Decoded(huge), Rejects("LIMIT-DESC-BYTES", 6));
}

TEST(Limits, Rank) {
  const Desc d = Base();  // rank 2
  ParseOptions o;
  o.limits.max_rank = 2;
  EXPECT_EQ(Decoded(*d, o), "OK");
  o.limits.max_rank = 1;
  EXPECT_EQ(Decoded(*d, o), Rejects("LIMIT-RANK", 16));
  o.limits.max_rank = 0;
  EXPECT_EQ(Decoded(*vectors::Dense(kFloat64, {}), o), "OK");
  EXPECT_EQ(Decoded(*vectors::Dense(kFloat64, {2}), o),
            Rejects("LIMIT-RANK", 16));
  // A limit above 64 is clamped: rank 65 is still DESC-SHP-01.
  Bytes b = vectors::Bytes(*d);
  wire::StoreU32(b.data() + 16, 65);
  o.limits.max_rank = 1000;
  EXPECT_EQ(Decoded(b, o), Rejects("DESC-SHP-01", 16));
}

TEST(Limits, QuantizationBytes) {
  const Desc d = vectors::PerTensorInt8();  // quantization_length 16
  const uint64_t at = Off(*d).quantization;
  ParseOptions o;
  o.limits.max_quantization_bytes = 16;
  EXPECT_EQ(Decoded(*d, o), "OK");
  // Writer padding counts towards the limit.
  Desc padded = vectors::PerTensorInt8();
  padded->quantization.extra_length = 1;
  EXPECT_EQ(Decoded(*padded, o), Rejects("LIMIT-QNT-BYTES", at));
  for (const Mode m : kModes) {
    o.limits.max_quantization_bytes = 15;
    EXPECT_EQ(Decoded(*d, InMode(o, m)), Rejects("LIMIT-QNT-BYTES", at));
  }
}

TEST(Limits, ExtensionDataBytes) {
  const ParseOptions agreed = vectors::AgreedOptions();
  Desc d = vectors::ExtensionLayout();
  d->layout.extension_data_length = 16384;  // the default limit
  EXPECT_EQ(Decoded(*d, agreed), "OK");
  d->layout.extension_data_length = 16385;
  EXPECT_EQ(Decoded(*d, agreed), Rejects("LIMIT-EXT-DATA", Off(*d).layout + 8));
  ParseOptions o = agreed;
  o.limits.max_extension_data_bytes = 0;
  d->layout.extension_data_length = 0;
  EXPECT_EQ(Decoded(*d, o), "OK");
  d->layout.extension_data_length = 1;
  for (const Mode m : kModes) {
    EXPECT_EQ(Decoded(*d, InMode(o, m)),
              Rejects("LIMIT-EXT-DATA", Off(*d).layout + 8));
  }
}

// --- Layout tags (REJECT-RULES.md §3.6) -------------------------------------

TEST(LayoutTag, InvalidTagsAreAlwaysRejected) {
  for (const uint8_t tag : {0x00, 0xFF}) {
    Bytes b = vectors::Bytes(*Base());
    b[15] = tag;
    for (const Mode m : kModes) {
      EXPECT_EQ(Decoded(b, InMode(ParseOptions(), m)),
                Rejects("LAY-TAG-01", 15))
          << int{tag};
    }
  }
}

TEST(LayoutTag, UnassignedTagKeepsOnlyTheHeaderWhenPermissive) {
  Desc d = Base();
  d->byte_offset = 8;
  d->buffers[0].byte_size = 56;
  const Bytes valid = vectors::Bytes(*d);
  ASSERT_EQ(Decoded(valid), "OK");
  for (const uint8_t tag : {0x0C, 0x3F, 0x41, 0x7F, 0x80, 0xEF}) {
    SCOPED_TRACE(int{tag});
    Bytes b = valid;
    b[15] = tag;
    EXPECT_EQ(Decoded(b), Rejects("LAY-TAG-02", 15));
    const absl::StatusOr<TensorDescriptor> got = Decode(b, Permissive());
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_FALSE(got->layout_parsed);
    EXPECT_EQ(got->layout_tag, tag);
    EXPECT_EQ(got->type_tag, kFloat32);
    ASSERT_EQ(got->rank, 2u);
    EXPECT_EQ(got->shape[0], 3u);
    EXPECT_EQ(got->shape[1], 4u);
    EXPECT_EQ(got->byte_offset, 8u);
    EXPECT_EQ(got->descriptor_length, b.size());
    // Truncated anywhere, it is still DESC-HDR-01 at the bytes given.
    for (size_t n = 0; n < b.size(); ++n) {
      EXPECT_EQ(Decoded(Bytes(b.begin(), b.begin() + n), Permissive()),
                Rejects("DESC-HDR-01", n));
    }
  }
  // A scalar with an unassigned layout still breaks DESC-SHP-02 (always).
  Bytes scalar = vectors::Bytes(*vectors::Dense(kFloat64, {}));
  scalar[15] = 0x0C;
  EXPECT_EQ(Decoded(scalar, Permissive()), Rejects("DESC-SHP-02", 16));
}

TEST(LayoutTag, ExtensionLayoutIdMustBeAgreed) {
  for (const uint8_t tag : {0xF0, 0xF5, 0xF7, 0xFE}) {
    SCOPED_TRACE(int{tag});
    Desc e = vectors::ExtensionLayout();  // id 0x5EED, 5 bytes of data
    e->layout_tag = tag;
    const uint64_t at = Off(*e).layout;
    ParseOptions none;
    EXPECT_EQ(Decoded(*e, none), Rejects("LAY-TAG-04", at));
    EXPECT_EQ(Decoded(*e, InMode(none, Mode::kPermissive)), "OK");
    ParseOptions o;
    o.agreed.layout_ids = {1, 2, 3, 4, 5, 6, 7, vectors::kAgreedLayoutId};
    o.agreed.layout_id_count = 8;
    EXPECT_EQ(Decoded(*e, o), "OK");
    o.agreed.layout_id_count = 7;  // only the first 7 ids count
    EXPECT_EQ(Decoded(*e, o), Rejects("LAY-TAG-04", at));
  }
  const Desc d = vectors::ExtensionLayout();
  const uint64_t at = Off(*d).layout;
  // The extension data is skipped, never interpreted, and located.
  const Bytes data = {0xDE, 0xAD, 0xBE, 0xEF, 0x01};
  const Bytes b = *Encode(*d, data);
  const absl::StatusOr<TensorDescriptor> got =
      Decode(b, vectors::AgreedOptions());
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->layout.extension_data_offset, at + 12);
  EXPECT_EQ(got->layout.extension_data_length, 5u);
  EXPECT_EQ(Bytes(b.begin() + at + 12, b.begin() + at + 17), data);
}

// --- Tiled structure (LAY-TIL-02/03/05: the decoder's framing rules) --------

TEST(Tiled, InvalidEnumsAtEveryLevel) {
  const Desc base = vectors::TiledNested();  // 2 levels, no strides
  for (const uint32_t level : {0u, 1u}) {
    const uint64_t at = TileEnums(*base, level);
    for (const uint8_t v : {0x00, 0x04, 0xFF}) {
      Bytes b = vectors::Bytes(*base);
      b[at] = v;
      for (const Mode m : kModes) {
        EXPECT_EQ(Decoded(b, InMode(ParseOptions(), m)),
                  Rejects("LAY-TIL-02", at))
            << level << " " << int{v};
      }
    }
    for (const uint8_t v : {0x00, 0x05, 0xFF}) {
      Bytes b = vectors::Bytes(*base);
      b[at + 1] = v;
      for (const Mode m : kModes) {
        EXPECT_EQ(Decoded(b, InMode(ParseOptions(), m)),
                  Rejects("LAY-TIL-03", at + 1))
            << level << " " << int{v};
      }
    }
  }
}

TEST(Tiled, NestedLevelAfterOuterStrides) {
  // Level 0: strided outer grid (its outer_strides come before the nested
  // block), nested level 1 with 1×1 tiles.
  Desc d = vectors::TiledStrided();  // f16 [4, 4], 2×2 tiles
  LayoutFields& l = d->layout;
  l.tiled_depth = 2;
  l.tiled[0].inner_layout = lt::kTiled;
  l.tiled[1].tile_shape[0] = l.tiled[1].tile_shape[1] = 1;
  l.tiled[1].outer_layout = lt::kRowMajor;
  l.tiled[1].inner_layout = lt::kRowMajor;
  ASSERT_EQ(Decoded(*d), "OK");
  const uint64_t level1 = Off(*d).layout + (16 + 4) + 16 + 16;
  d->layout.tiled[1].inner_layout = 0x05;
  EXPECT_EQ(Decoded(*d), Rejects("LAY-TIL-03", level1 + 1));
  d->layout.tiled[1].inner_layout = lt::kRowMajor;
  d->layout.tiled[1].reserved[0] = 7;
  EXPECT_EQ(Decoded(*d), Rejects("LAY-TIL-04", level1 + 2));
  d->layout.tiled[1].reserved[0] = 0;
  d->layout.tiled[1].tile_shape[0] = 0;
  EXPECT_EQ(Decoded(*d), Rejects("LAY-TIL-01", level1 - 16));
}

TEST(Tiled, DepthLimit) {
  ParseOptions o;
  o.limits.max_tiled_depth = 2;
  EXPECT_EQ(Decoded(*Tiled(2), o), "OK");
  // Level 2's inner_layout (0x04) asks for a third level.
  const Desc three = Tiled(3);
  for (const Mode m : kModes) {
    EXPECT_EQ(Decoded(*three, InMode(o, m)),
              Rejects("LAY-TIL-05", TileEnums(*three, 1) + 1));
  }
  // A limit above 8 is clamped to 8.
  o.limits.max_tiled_depth = 100;
  EXPECT_EQ(Decoded(*Tiled(8), o), "OK");
  o.limits.max_tiled_depth = 1;
  EXPECT_EQ(Decoded(*Tiled(1), o), "OK");
  EXPECT_EQ(Decoded(*Tiled(2), o),
            Rejects("LAY-TIL-05", TileEnums(*Tiled(2), 0) + 1));
}

// max_tiled_depth = 0 allows no tiled level at all. The level that is not
// allowed is asked for by the layout_tag byte (15); there is no earlier
// inner_layout byte to blame.
TEST(Tiled, DepthLimitZeroRejectsAtTheLayoutTag) {
  ParseOptions o;
  o.limits.max_tiled_depth = 0;
  for (const Mode m : kModes) {
    EXPECT_EQ(Decoded(*Tiled(1), InMode(o, m)), Rejects("LAY-TIL-05", 15));
  }
}

// --- Framing and header (REJECT-RULES.md §3.1) ------------------------------

TEST(Header, TruncationReportsTheBytesGiven) {
  std::vector<Desc> vs;
  vs.push_back(vectors::Everything());  // padded quantization, sections
  vs.push_back(vectors::TiledStrided());
  vs.push_back(vectors::BlockPaged());
  vs.push_back(vectors::Csf());
  vs.push_back(vectors::ExtensionLayout());  // skipped extension data
  vs.push_back(vectors::WithExtensionType());
  Desc newer = vectors::PerTensorInt8();  // skipped trailing bytes
  newer->version_minor = 1;
  newer->trailing_length = 5;
  vs.push_back(std::move(newer));
  for (const Desc& d : vs) {
    const Bytes b = vectors::Bytes(*d);
    for (const Mode m : kModes) {
      const ParseOptions o = vectors::AgreedOptions(m);
      ASSERT_EQ(Decoded(b, o), "OK");
      for (size_t n = 0; n < b.size(); ++n) {
        EXPECT_EQ(Decoded(Bytes(b.begin(), b.begin() + n), o),
                  Rejects("DESC-HDR-01", n))
            << LayoutName(d->layout_tag) << " " << n;
      }
    }
  }
}

TEST(Header, MajorVersions) {
  for (const Mode m : kModes) {
    const ParseOptions o = InMode(ParseOptions(), m);
    for (const uint8_t major : {2, 0xFF}) {
      Desc d = Base();
      d->version_major = major;
      EXPECT_EQ(Decoded(*d, o), Rejects("DESC-HDR-03", 4));
    }
    Desc d = Base();
    d->version_major = 0;
    EXPECT_EQ(Decoded(*d, o), Rejects("DESC-HDR-04", 4));
  }
  // A newer minor version alone is accepted.
  Desc d = Base();
  d->version_minor = 0xFF;
  EXPECT_EQ(Decoded(*d), "OK");
}

TEST(Header, DescriptorLengthField) {
  const Desc d = Base();  // rank 2, 61 bytes
  const Bytes valid = vectors::Bytes(*d);
  auto with_length = [&](uint32_t length) {
    Bytes b = valid;
    wire::StoreU32(b.data() + 6, length);
    return b;
  };
  for (const Mode m : kModes) {
    const ParseOptions o = InMode(ParseOptions(), m);
    EXPECT_EQ(Decoded(with_length(0), o), Rejects("DESC-HDR-05", 6));
    EXPECT_EQ(Decoded(with_length(19), o), Rejects("DESC-HDR-05", 6));
    // 20: the header fits, shape[0] would cross the end.
    EXPECT_EQ(Decoded(with_length(20), o), Rejects("DESC-HDR-06", 20));
    EXPECT_EQ(Decoded(with_length(36), o), Rejects("DESC-HDR-06", 36));
    // Declares one byte more than the input holds: truncation.
    const uint32_t n = static_cast<uint32_t>(valid.size());
    EXPECT_EQ(Decoded(with_length(n + 1), o), Rejects("DESC-HDR-01", n));
  }
  // Declares one more byte and has it: an undeclared trailing byte.
  Bytes longer = with_length(static_cast<uint32_t>(valid.size() + 1));
  longer.push_back(0);
  EXPECT_EQ(Decoded(longer), Rejects("DESC-HDR-08", valid.size()));
  EXPECT_EQ(Decoded(longer, Permissive()), "OK");
  // Bytes after descriptor_length belong to the caller.
  Bytes followed = valid;
  followed.insert(followed.end(), {1, 2, 3, 4});
  EXPECT_EQ(Decoded(followed), "OK");
}

TEST(Header, SectionsCrossingTheEnd) {
  // quantization_length beyond descriptor_length.
  const Desc q = vectors::PerTensorInt8();
  Bytes b = vectors::Bytes(*q);
  wire::StoreU32(b.data() + Off(*q).quantization, 17);
  EXPECT_EQ(Decoded(b), Rejects("DESC-HDR-06", Off(*q).quantization));
  // extension_data_length beyond descriptor_length: reported where the data
  // would start.
  const Desc e = vectors::ExtensionLayout();
  b = vectors::Bytes(*e);
  wire::StoreU32(b.data() + Off(*e).layout + 8, 100);
  for (const Mode m : kModes) {
    EXPECT_EQ(Decoded(b, vectors::AgreedOptions(m)),
              Rejects("DESC-HDR-06", Off(*e).layout + 12));
  }
}

TEST(Header, Rank) {
  std::vector<uint64_t> ones(64, 1);
  EXPECT_EQ(Decoded(*vectors::Dense(kFloat32, ones)), "OK");
  const Bytes valid = vectors::Bytes(*Base());
  for (const uint32_t rank : {65u, 1000u, 0xFFFFFFFFu}) {
    Bytes b = valid;
    wire::StoreU32(b.data() + 16, rank);
    for (const Mode m : kModes) {
      EXPECT_EQ(Decoded(b, InMode(ParseOptions(), m)),
                Rejects("DESC-SHP-01", 16))
          << rank;
    }
  }
}

TEST(Header, TrailingBytesNeedANewerMinorVersion) {
  std::vector<Desc> vs;
  vs.push_back(Base());
  vs.push_back(vectors::Everything());
  for (Desc& d : vs) {
    const uint32_t end = Off(*d).end;
    d->trailing_length = 8;
    d->version_minor = 1;
    const Bytes b = vectors::Bytes(*d);
    const absl::StatusOr<TensorDescriptor> got = Decode(b);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(got->trailing_length, 8u);
    EXPECT_EQ(got->offsets.end, end);
    EXPECT_EQ(got->descriptor_length, end + 8);
    d->version_minor = 0;
    EXPECT_EQ(Decoded(*d), Rejects("DESC-HDR-08", end));
    EXPECT_EQ(Decoded(*d, Permissive()), "OK");
  }
}

TEST(Header, EveryReservedFlagBit) {
  for (uint32_t bit = 5; bit < 32; ++bit) {
    Desc d = Base();
    d->flags |= 1u << bit;
    for (const Mode m : kModes) {
      EXPECT_EQ(Decoded(*d, InMode(ParseOptions(), m)),
                Rejects("DESC-HDR-07", 10))
          << bit;
    }
  }
}

// --- Size arithmetic: overflow is a rejection, never a wrap ----------------

TEST(Sizes, OverflowingElementCountIsBufSz01) {
  const uint64_t big = uint64_t{1} << 40;  // 2^80 elements
  for (const uint8_t layout : {lt::kRowMajor, lt::kColumnMajor}) {
    for (const uint64_t size : {uint64_t{0}, uint64_t{1} << 63, kMaxU64}) {
      Desc d = vectors::Dense(kFloat32, {big, big}, layout);
      d->buffers[0].byte_size = size;
      for (const Mode m : kModes) {
        EXPECT_EQ(Decoded(*d, InMode(ParseOptions(), m)),
                  Rejects("BUF-SZ-01", Handle(*d, 0)))
            << size;
      }
    }
  }
  // Bytes for 2^62 float32 overflow too.
  Desc d = vectors::Dense(kFloat32, {uint64_t{1} << 62});
  d->buffers[0].byte_size = kMaxU64;
  EXPECT_EQ(Decoded(*d), Rejects("BUF-SZ-01", Handle(*d, 0)));
  // byte_offset + size overflows.
  d = Base();
  d->byte_offset = kMaxU64;
  d->buffers[0].byte_size = kMaxU64;
  EXPECT_EQ(Decoded(*d), Rejects("BUF-SZ-01", Handle(*d, 0)));
}

TEST(Sizes, OverflowInOtherLayoutsAndParameters) {
  const uint64_t big = uint64_t{1} << 40;
  // Morton: 2^(40+40) elements.
  Desc d = vectors::Dense(kFloat32, {big, big}, lt::kMorton);
  d->layout.morton_bits[0] = d->layout.morton_bits[1] = 40;
  d->buffers[0].byte_size = kMaxU64;
  EXPECT_EQ(Decoded(*d), Rejects("BUF-SZ-04", Handle(*d, 0)));
  // Hilbert: 2^(2·40) elements.
  d = vectors::Dense(kFloat32, {big, big}, lt::kHilbert);
  d->layout.hilbert_order = 40;
  d->layout.hilbert_rank = 2;
  d->buffers[0].byte_size = kMaxU64;
  EXPECT_EQ(Decoded(*d), Rejects("BUF-SZ-05", Handle(*d, 0)));
  // Strided: stride · (n - 1) beyond 64 bits.
  d = vectors::Dense(kFloat32, {big, big}, lt::kStrided);
  d->layout.strides[0] = int64_t{1} << 62;
  d->layout.strides[1] = std::numeric_limits<int64_t>::min();
  d->buffers[0].byte_size = kMaxU64;
  EXPECT_EQ(Decoded(*d), Rejects("BUF-SZ-02", Handle(*d, 0)));
  // COO: bytes for nnz = 2^62 float32 values.
  d = vectors::Coo();
  d->layout.nnz = uint64_t{1} << 62;
  d->buffers[0].byte_size = kMaxU64;
  EXPECT_EQ(Decoded(*d), Rejects("BUF-SZ-06", Handle(*d, 0)));
  // CSR: (shape[0] + 1) · 8 overflows.
  d = vectors::Csr();
  d->shape[0] = kMaxU64 - 1;
  EXPECT_EQ(Decoded(*d), Rejects("BUF-SZ-07", Handle(*d, 2)));
  // Block-paged: num_pages · page_size · heads · dims.
  d = vectors::BlockPaged();
  d->layout.block_table_index_type = 0x01;  // u64 page ids
  d->buffers[1].byte_size = 3 * 8;
  d->buffers[2].byte_size = 3 * 8;
  d->layout.num_pages = uint64_t{1} << 62;
  EXPECT_EQ(Decoded(*d), Rejects("LAY-BPG-14", Handle(*d, 3)));
  d->flags &= ~flag::kHasQuantization;
  d->buffer_count = 3;
  EXPECT_EQ(Decoded(*d), Rejects("BUF-SZ-10", Handle(*d, 0)));
  // NF4: the number of blocks times 4 overflows.
  d = vectors::Nf4UInt4();
  d->shape[0] = d->shape[1] = big;
  d->buffers[0].byte_size = kMaxU64;
  EXPECT_EQ(Decoded(*d), Rejects("QNT-NF4-06", Handle(*d, 1)));
  // Shard: shard_offset + shape beyond 64 bits.
  d = vectors::WithShard();
  d->shard.shard_offset[0] = kMaxU64 - 1;
  EXPECT_EQ(Decoded(*d), Rejects("DESC-SHD-01", Off(*d).shard + 16));
}

// --- Dynamic dimensions: size checks are skipped, not failed ---------------

TEST(DynamicDims, SkipSizeChecks) {
  for (const uint64_t size : {uint64_t{0}, uint64_t{1}, uint64_t{12345}}) {
    for (const uint8_t layout : {lt::kRowMajor, lt::kColumnMajor}) {
      Desc d = vectors::Dense(kFloat16, {kDynamicDim, 8}, layout);
      d->buffers[0].byte_size = size;
      for (const Mode m : kModes) {
        EXPECT_EQ(Decoded(*d, InMode(ParseOptions(), m)), "OK") << size;
      }
    }
    Desc d = vectors::StridedNegative();
    d->shape[0] = kDynamicDim;
    d->byte_offset = 0;
    d->buffers[0].byte_size = size;
    EXPECT_EQ(Decoded(*d), "OK");
    d = vectors::TiledNested();
    d->shape[1] = kDynamicDim;
    d->buffers[0].byte_size = size;
    EXPECT_EQ(Decoded(*d), "OK");
    d = vectors::Morton();
    d->shape[0] = kDynamicDim;
    d->buffers[0].byte_size = size;
    EXPECT_EQ(Decoded(*d), "OK");
  }
  // Per-block: a dynamic non-axis dimension leaves the block count unknown.
  Desc d = vectors::PerBlockAsymUInt4();
  d->shape[0] = kDynamicDim;
  d->buffers[1].byte_size = 1;
  d->buffers[2].byte_size = 3;
  EXPECT_EQ(Decoded(*d), "OK");
  // MXFP likewise.
  d = vectors::MxfpE4m3();
  d->shape[0] = kDynamicDim;
  d->buffers[1].byte_size = 1;
  EXPECT_EQ(Decoded(*d), "OK");
  // CSR: a dynamic row count skips the row_ptr size.
  d = vectors::Csr();
  d->shape[0] = kDynamicDim;
  d->buffers[2].byte_size = 8;
  EXPECT_EQ(Decoded(*d), "OK");
}

TEST(DynamicDims, SizesThatDoNotInvolveThemAreStillChecked) {
  // Per-channel: only shape[axis] sizes the parameters.
  Desc d = vectors::PerChannelAsymInt8();  // axis 0
  d->shape[1] = kDynamicDim;
  EXPECT_EQ(Decoded(*d), "OK");
  d->buffers[1].byte_size = 12;
  EXPECT_EQ(Decoded(*d), Rejects("QNT-PCA-08", Handle(*d, 1)));
  // A shard of a tensor with a dynamic dimension cannot fit its parent.
  d = vectors::WithShard();
  d->shape[1] = kDynamicDim;
  EXPECT_EQ(Decoded(*d), Rejects("DESC-SHD-01", Off(*d).shard + 16 + 8));
  // Hilbert needs every dimension to equal 2^order.
  d = vectors::Hilbert();
  d->shape[0] = kDynamicDim;
  EXPECT_EQ(Decoded(*d), Rejects("LAY-HIL-04", Off(*d).shape(0)));
}

// --- Permissive mode never sizes what it cannot size ------------------------
//
// TYPE-EXT-14 (a whole-byte extension width that is not a multiple of 8) is
// strict-only. In permissive mode the descriptor must then be accepted like
// any other type the reader cannot size (unassigned type tags skip every
// size check), not rejected with a size rule whose message ("buffer … is
// smaller than …") is false: here every buffer is large enough even at 12
// bits per element.
TEST(Permissive, UnsizeableExtensionWidthSkipsSizeChecks) {
  const ParseOptions permissive = vectors::AgreedOptions(Mode::kPermissive);
  auto twelve_bits = [](Desc d) {
    d->type_tag = 0xF3;
    d->flags |= flag::kHasExtensionType;
    d->extension_type = ExtensionType();
    d->extension_type.bit_width = 12;
    d->extension_type.packing_factor = 1;
    d->extension_type.is_signed = 1;
    return d;
  };
  Desc dense = twelve_bits(vectors::Dense(kFloat16, {10}));  // 20 bytes
  Desc strided = twelve_bits(vectors::Dense(kFloat16, {10}, lt::kStrided));
  strided->layout.strides[0] = 1;
  Desc coo = twelve_bits(vectors::Coo());  // values: 3 × 4 bytes
  for (const Desc* d : {&dense, &strided, &coo}) {
    SCOPED_TRACE(LayoutName((*d)->layout_tag));
    EXPECT_EQ(Decoded(**d, vectors::AgreedOptions()),
              Rejects("TYPE-EXT-14", Off(**d).extension_type));
    EXPECT_EQ(Decoded(**d, permissive), "OK");
  }
  // For comparison: an unassigned type tag is not sized in permissive mode.
  Desc unassigned = vectors::Dense(kFloat16, {10});
  unassigned->type_tag = 0x05;
  unassigned->buffers[0].byte_size = 1;
  EXPECT_EQ(Decoded(*unassigned, Permissive()), "OK");
}

// --- Quantization rulings (RESOLUTIONS.md 6, 7, 9, 10; seed 002) -----------

TEST(Quantization, WriterPaddingIsSkipped) {
  std::vector<Desc> vs;
  vs.push_back(vectors::PerTensorInt8());
  vs.push_back(vectors::PerChannelAsymInt8());
  vs.push_back(vectors::PerBlockAsymUInt4());
  vs.push_back(vectors::Nf4UInt4());
  vs.push_back(vectors::MxfpE4m3());
  for (Desc& d : vs) {
    d->quantization.extra_length = 9;
    const absl::StatusOr<TensorDescriptor> got = Decode(vectors::Bytes(*d));
    ASSERT_TRUE(got.ok()) << SchemeName(d->quantization.scheme_tag) << ": "
                          << got.status();
    EXPECT_EQ(got->quantization.extra_length, 9u);
    EXPECT_TRUE(got->quantization == d->quantization);
  }
}

TEST(Quantization, SharedScaleZeroPointBuffer) {
  Desc d = vectors::PerChannelShared();  // [3 scales | 3 zero points]
  EXPECT_EQ(Decoded(*d), "OK");
  for (const uint64_t size : {23, 25, 12, 0}) {
    d->buffers[1].byte_size = size;
    for (const Mode m : kModes) {
      EXPECT_EQ(Decoded(*d, InMode(ParseOptions(), m)),
                Rejects("QNT-PLC-04", Handle(*d, 1)))
          << size;
    }
  }
  // Per-block with one shared buffer: 32 f16 scales + 32 i32 zero points.
  d = vectors::PerBlockAsymUInt4();
  d->quantization.zero_point_buffer_index = 1;
  d->buffer_count = 2;
  d->buffers[1].byte_size = 32 * 2 + 32 * 4;
  EXPECT_EQ(Decoded(*d), "OK");
  d->buffers[1].byte_size -= 1;
  EXPECT_EQ(Decoded(*d), Rejects("QNT-PLC-04", Handle(*d, 1)));
  // The zero-point buffer may come before the scale buffer.
  d = vectors::PerChannelAsymInt8();
  d->quantization.scale_buffer_index = 2;
  d->quantization.zero_point_buffer_index = 1;
  EXPECT_EQ(Decoded(*d), "OK");
}

TEST(Quantization, MxfpEmptyNonAxisDimensionHasZeroBlocks) {
  // RESOLUTIONS.md 6: [0, 32] on axis 1 is valid, with no scales.
  Desc d = vectors::Dense(kFloat8E4M3, {0, 32});
  d->flags |= flag::kHasQuantization;
  d->quantization = Must(Mxfp::Create(1, 32, 1));
  d->buffer_count = 2;
  d->buffers[1] = Buf(0);
  EXPECT_EQ(Decoded(*d), "OK");
  d->buffers[1].byte_size = 1;
  EXPECT_EQ(Decoded(*d), Rejects("QNT-MX-06", Handle(*d, 1)));
  // An empty quantization axis is not a positive multiple of block_size.
  Desc e = vectors::Dense(kFloat8E4M3, {4, 0});
  e->flags |= flag::kHasQuantization;
  e->quantization = Must(Mxfp::Create(1, 32, 1));
  e->buffer_count = 2;
  e->buffers[1] = Buf(0);
  for (const Mode m : kModes) {
    EXPECT_EQ(Decoded(*e, InMode(ParseOptions(), m)),
              Rejects("QNT-MX-04", Scheme(*e) + 8));
  }
}

TEST(Quantization, PerChannelEmptyOtherDimensionStillNeedsScales) {
  // RESOLUTIONS.md 7: [0, 3] on axis 1 still has 3 scales and 3 zero points.
  Desc d = vectors::Dense(kInt8, {0, 3});
  d->flags |= flag::kHasQuantization;
  d->quantization = Must(PerChannelAffine::Asymmetric(1, 1, 2));
  d->buffer_count = 3;
  d->buffers[1] = Buf(12);
  d->buffers[2] = Buf(12);
  EXPECT_EQ(Decoded(*d), "OK");
  d->buffers[1].byte_size = 0;
  EXPECT_EQ(Decoded(*d), Rejects("QNT-PCA-08", Handle(*d, 1)));
  d->buffers[1].byte_size = 12;
  d->buffers[2].byte_size = 0;
  EXPECT_EQ(Decoded(*d), Rejects("QNT-PCA-09", Handle(*d, 2)));
}

TEST(Quantization, PerBlockAndNf4WithAnEmptyAxisHaveZeroBlocks) {
  Desc d = vectors::Dense(kInt8, {4, 0});
  d->flags |= flag::kHasQuantization;
  d->quantization = Must(PerBlockAffine::Symmetric(1, 32, 1, kFloat16));
  d->buffer_count = 2;
  d->buffers[1] = Buf(0);
  EXPECT_EQ(Decoded(*d), "OK");  // block_size > shape[axis] only when S > 0
  d->buffers[1].byte_size = 2;
  EXPECT_EQ(Decoded(*d), Rejects("QNT-PBA-10", Handle(*d, 1)));
  d = vectors::Dense(kUInt4, {0, 64});
  d->flags |= flag::kHasQuantization;
  d->quantization = Must(Nf4::Create(0, 64, 1));
  d->buffer_count = 2;
  d->buffers[1] = Buf(0);
  EXPECT_EQ(Decoded(*d), "OK");
}

TEST(Quantization, Nf4StorageMustBeUInt4) {
  // Seed 002's cookbook sample stores NF4 in int4; nf4.md allows uint4 only.
  for (const uint8_t t : {kInt4, kUInt8, kInt8, kUInt2}) {
    Desc d = vectors::Nf4UInt4();
    d->type_tag = t;
    d->buffers[0].byte_size = 128 * 64;  // large enough for any of them
    for (const Mode m : kModes) {
      EXPECT_EQ(Decoded(*d, InMode(ParseOptions(), m)),
                Rejects("QNT-NF4-05", 14))
          << ElementTypeName(t);
    }
  }
}

TEST(Quantization, PerTensorScaleMustBeFiniteAndNonZero) {
  const float kInf = std::numeric_limits<float>::infinity();
  for (const float scale :
       {0.0f, -0.0f, std::numeric_limits<float>::quiet_NaN(), kInf, -kInf}) {
    Desc d = vectors::PerTensorInt8();
    d->quantization.scale = scale;
    for (const Mode m : kModes) {
      EXPECT_EQ(Decoded(*d, InMode(ParseOptions(), m)),
                Rejects("QNT-PTA-01", Scheme(*d) + 4))
          << scale;
    }
  }
  // Negative and subnormal scales are finite and non-zero.
  for (const float scale : {-0.05f, std::numeric_limits<float>::denorm_min(),
                            std::numeric_limits<float>::max()}) {
    Desc d = vectors::PerTensorInt8();
    d->quantization.scale = scale;
    EXPECT_EQ(Decoded(*d), "OK") << scale;
  }
}

TEST(Quantization, PerTensorZeroPointRange) {
  struct Case {
    uint8_t type;
    int32_t zero_point;
    bool ok;
  };
  const Case kCases[] = {
      {kInt8, -128, true},     {kInt8, 127, true},
      {kInt8, 128, false},     {kUInt8, -1, false},
      {kUInt8, 255, true},     {kInt4, 7, true},
      {kInt4, 8, false},       {kUInt4, 15, true},
      {kUInt4, 16, false},     {kInt2, -2, true},
      {kInt2, -3, false},      {kUInt2, 3, true},
      {kUInt2, 4, false},      {kUInt32, INT32_MAX, true},
      {kUInt32, -1, false},    {kInt32, INT32_MIN, true},
      {kUInt16, 65536, false}, {kInt16, -32769, false},
  };
  for (const Case& c : kCases) {
    Desc d = vectors::PerTensorInt8();
    d->type_tag = c.type;
    d->buffers[0].byte_size = 4 * 8 * 4;  // enough for any of them
    d->quantization.zero_point = c.zero_point;
    EXPECT_EQ(Decoded(*d), c.ok ? "OK" : Rejects("QNT-PTA-02", Scheme(*d) + 8))
        << ElementTypeName(c.type) << " " << c.zero_point;
    EXPECT_EQ(RuleOf(PerTensorAffine{0.5f, c.zero_point}.ValidateZeroPointFor(
                  c.type)),
              c.ok ? "OK" : "QNT-PTA-02");
  }
  EXPECT_EQ(RuleOf(PerTensorAffine{0.5f, 0}.ValidateZeroPointFor(kFloat32)),
            "QNT-PTA-04");
}

TEST(Quantization, AgreedPrivateSchemeIsSkipped) {
  Desc d = vectors::PerTensorInt8();
  Bytes b = vectors::Bytes(*d);
  b[Scheme(*d)] = 0xF2;
  ParseOptions o;
  EXPECT_EQ(Decoded(b, o), Rejects("QNT-HDR-06", Scheme(*d)));
  o.agreed.scheme_tags = 1u << 2;
  const absl::StatusOr<TensorDescriptor> got = Decode(b, o);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_FALSE(got->quantization.interpreted());
  EXPECT_EQ(got->quantization.extra_length, 12u);
}

// --- Validating factories ---------------------------------------------------
//
// Offsets are relative to the quantization descriptor's first byte.

std::string FactoryOutcome(const absl::Status& s) { return Outcome(s); }

TEST(Factories, PerTensorAffine) {
  const float kInf = std::numeric_limits<float>::infinity();
  for (const float scale :
       {0.0f, -0.0f, std::numeric_limits<float>::quiet_NaN(), kInf, -kInf}) {
    EXPECT_EQ(FactoryOutcome(PerTensorAffine::Create(scale, 0).status()),
              Rejects("QNT-PTA-01", 4))
        << scale;
  }
  const absl::StatusOr<PerTensorAffine> q = PerTensorAffine::Create(-0.25f, 5);
  ASSERT_TRUE(q.ok()) << q.status();
  EXPECT_EQ(q->scale, -0.25f);
  EXPECT_EQ(q->zero_point, 5);
}

TEST(Factories, PerChannelAffine) {
  EXPECT_EQ(FactoryOutcome(PerChannelAffine::Symmetric(0, 0).status()),
            Rejects("QNT-PLC-02", 8));
  EXPECT_EQ(
      FactoryOutcome(PerChannelAffine::Symmetric(0, kNoBufferIndex).status()),
      Rejects("QNT-PLC-01", 8));
  EXPECT_EQ(FactoryOutcome(
                PerChannelAffine::Asymmetric(0, 1, kNoBufferIndex).status()),
            Rejects("QNT-PCA-06", 12));
  EXPECT_EQ(FactoryOutcome(PerChannelAffine::Asymmetric(0, 1, 0).status()),
            Rejects("QNT-PLC-02", 12));
  EXPECT_EQ(FactoryOutcome(PerChannelAffine::Asymmetric(0, 0, 2).status()),
            Rejects("QNT-PLC-02", 8));
  const absl::StatusOr<PerChannelAffine> shared =
      PerChannelAffine::Asymmetric(1, 3, 3);
  ASSERT_TRUE(shared.ok()) << shared.status();
  EXPECT_FALSE(shared->symmetric());
  const absl::StatusOr<PerChannelAffine> sym =
      PerChannelAffine::Symmetric(2, 1);
  ASSERT_TRUE(sym.ok()) << sym.status();
  EXPECT_TRUE(sym->symmetric());
  EXPECT_TRUE(QuantizationDescriptor(*sym).symmetric());
}

TEST(Factories, PerBlockAffine) {
  for (const uint32_t k : {0u, 1u, 3u, 48u, 0x80000001u}) {
    EXPECT_EQ(
        FactoryOutcome(PerBlockAffine::Symmetric(0, k, 1, kFloat16).status()),
        Rejects("QNT-PBA-02", 8))
        << k;
  }
  for (const uint8_t t : {kFloat64, kInt8, uint8_t{0x00}}) {
    EXPECT_EQ(FactoryOutcome(PerBlockAffine::Symmetric(0, 32, 1, t).status()),
              Rejects("QNT-PBA-05", 20))
        << int{t};
  }
  EXPECT_EQ(
      FactoryOutcome(PerBlockAffine::Symmetric(0, 32, 0, kFloat16).status()),
      Rejects("QNT-PLC-02", 12));
  EXPECT_EQ(FactoryOutcome(
                PerBlockAffine::Asymmetric(0, 32, 1, kNoBufferIndex, kFloat16)
                    .status()),
            Rejects("QNT-PBA-08", 16));
  EXPECT_EQ(FactoryOutcome(
                PerBlockAffine::Asymmetric(0, 32, 1, 0, kFloat16).status()),
            Rejects("QNT-PLC-02", 16));
  for (const uint8_t t : {kFloat16, kBFloat16, kFloat32}) {
    EXPECT_TRUE(PerBlockAffine::Asymmetric(1, 2, 1, 2, t).ok()) << int{t};
  }
}

TEST(Factories, Nf4) {
  for (const uint32_t k : {0u, 2u, 4u, 24u}) {
    EXPECT_EQ(FactoryOutcome(Nf4::Create(0, k, 1).status()),
              Rejects("QNT-NF4-02", 8))
        << k;
  }
  EXPECT_TRUE(Nf4::Create(0, 8, 1).ok());
  EXPECT_EQ(FactoryOutcome(Nf4::Create(0, 64, 0).status()),
            Rejects("QNT-PLC-02", 12));
  EXPECT_EQ(FactoryOutcome(Nf4::Create(0, 64, kNoBufferIndex).status()),
            Rejects("QNT-PLC-01", 12));
}

TEST(Factories, Mxfp) {
  for (const uint32_t k : {0u, 8u, 48u, 4096u}) {
    EXPECT_EQ(FactoryOutcome(Mxfp::Create(0, k, 1).status()),
              Rejects("QNT-MX-02", 8))
        << k;
  }
  EXPECT_TRUE(Mxfp::Create(0, 16, 1).ok());
  EXPECT_TRUE(Mxfp::Create(0, 2048, 1).ok());
  EXPECT_EQ(FactoryOutcome(Mxfp::Create(0, 32, 0).status()),
            Rejects("QNT-PLC-02", 12));
  EXPECT_EQ(FactoryOutcome(Mxfp::Create(0, 32, kNoBufferIndex).status()),
            Rejects("QNT-PLC-01", 12));
}

// --- DecodeQuantization on raw bytes ----------------------------------------

TEST(DecodeQuantization, TrailingBytesAreIgnored) {
  const std::vector<QuantizationDescriptor> qs = {
      Must(PerTensorAffine::Create(0.5f, -7)),
      Must(PerChannelAffine::Asymmetric(1, 1, 2)),
      Must(PerBlockAffine::Asymmetric(0, 64, 2, 1, kBFloat16)),
      Must(Nf4::Create(1, 64, 1)),
      Must(Mxfp::Create(0, 32, 1)),
  };
  for (const QuantizationDescriptor& q : qs) {
    SCOPED_TRACE(SchemeName(q.scheme_tag));
    Bytes b = q.EncodeToVector();
    ASSERT_EQ(b.size(), SchemeFixedSize(q.scheme_tag));
    b.insert(b.end(), {0xAB, 0xCD, 0xEF, 0x01, 0x02, 0x03, 0x04});
    const absl::StatusOr<DecodedQuantization> got = DecodeQuantization(b);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(got->consumed, SchemeFixedSize(q.scheme_tag));
    EXPECT_TRUE(got->descriptor == q);
  }
}

TEST(DecodeQuantization, Rejections) {
  const Bytes pta =
      QuantizationDescriptor(Must(PerTensorAffine::Create(0.5f, 1)))
          .EncodeToVector();
  EXPECT_EQ(Outcome(DecodeQuantization(Bytes{0x01, 0x01, 0x00}).status()),
            Rejects("QNT-HDR-01", 0));
  EXPECT_EQ(
      Outcome(DecodeQuantization(absl::MakeConstSpan(pta).first(15)).status()),
      Rejects("QNT-HDR-02", 0));
  EXPECT_EQ(
      Outcome(DecodeQuantization(absl::MakeConstSpan(pta).first(4)).status()),
      Rejects("QNT-HDR-02", 0));
  Bytes b = pta;
  wire::StoreF32(b.data() + 4, 0.0f);
  EXPECT_EQ(Outcome(DecodeQuantization(b).status()), Rejects("QNT-PTA-01", 4));
  b = pta;
  b[13] = 1;
  EXPECT_EQ(Outcome(DecodeQuantization(b).status()), Rejects("QNT-PTA-03", 13));
  Bytes pca = QuantizationDescriptor(Must(PerChannelAffine::Symmetric(0, 1)))
                  .EncodeToVector();
  pca[16] = kFloat16;
  EXPECT_EQ(Outcome(DecodeQuantization(pca).status()),
            Rejects("QNT-PCA-03", 16));
  // Version 2 is never read; version 0 and unassigned tags only when strict.
  b = pta;
  b[1] = 2;
  EXPECT_EQ(Outcome(DecodeQuantization(b, Permissive()).status()),
            Rejects("QNT-HDR-07", 1));
  b[1] = 0;
  EXPECT_EQ(Outcome(DecodeQuantization(b).status()), Rejects("QNT-HDR-08", 1));
  const absl::StatusOr<DecodedQuantization> skipped =
      DecodeQuantization(b, Permissive());
  ASSERT_TRUE(skipped.ok()) << skipped.status();
  EXPECT_EQ(skipped->consumed, kQuantizationHeaderSize);
  EXPECT_FALSE(skipped->descriptor.interpreted());
  const Bytes unassigned = {0x06, 0x01, 0x00, 0x00};
  EXPECT_EQ(Outcome(DecodeQuantization(unassigned).status()),
            Rejects("QNT-HDR-05", 0));
  EXPECT_EQ(Outcome(DecodeQuantization(unassigned, Permissive()).status()),
            "OK");
}

// --- ValidateBufferPlacement ------------------------------------------------
//
// Offsets are relative to the quantization descriptor: per-channel
// scale_buffer_index @8, zero_point_buffer_index @12; per-block @12 / @16;
// NF4 and MXFP scale_buffer_index @12.

std::vector<BufferHandle> ThreeBuffers() { return {Buf(32), Buf(16), Buf(16)}; }

TEST(BufferPlacement, ValidPlacements) {
  EXPECT_TRUE(ValidateBufferPlacement(
                  Must(PerChannelAffine::Asymmetric(0, 1, 2)), ThreeBuffers())
                  .ok());
  EXPECT_TRUE(ValidateBufferPlacement(
                  Must(PerChannelAffine::Asymmetric(0, 2, 1)), ThreeBuffers())
                  .ok());
  EXPECT_TRUE(
      ValidateBufferPlacement(Must(PerTensorAffine::Create(1.0f, 0)), {}).ok());
  // Symmetric: the zero-point index is not a buffer reference.
  QuantizationDescriptor sym = Must(PerChannelAffine::Symmetric(0, 1));
  EXPECT_TRUE(ValidateBufferPlacement(sym, {Buf(32), Buf(16)}).ok());
}

TEST(BufferPlacement, IndexOutOfRange) {
  QuantizationDescriptor q = Must(PerChannelAffine::Asymmetric(0, 1, 2));
  q.scale_buffer_index = 3;
  EXPECT_EQ(Outcome(ValidateBufferPlacement(q, ThreeBuffers())),
            Rejects("QNT-PLC-01", 8));
  q = Must(PerChannelAffine::Asymmetric(0, 1, 2));
  for (const uint32_t zp : {3u, kNoBufferIndex}) {
    q.zero_point_buffer_index = zp;
    EXPECT_EQ(Outcome(ValidateBufferPlacement(q, ThreeBuffers())),
              Rejects("QNT-PCA-06", 12));
  }
  QuantizationDescriptor pba =
      Must(PerBlockAffine::Asymmetric(0, 32, 1, 2, kFloat16));
  pba.zero_point_buffer_index = 9;
  EXPECT_EQ(Outcome(ValidateBufferPlacement(pba, ThreeBuffers())),
            Rejects("QNT-PBA-08", 16));
  pba.scale_buffer_index = 9;
  EXPECT_EQ(Outcome(ValidateBufferPlacement(pba, ThreeBuffers())),
            Rejects("QNT-PLC-01", 12));
  EXPECT_EQ(
      Outcome(ValidateBufferPlacement(Must(Nf4::Create(0, 64, 1)), {Buf(32)})),
      Rejects("QNT-PLC-01", 12));
}

TEST(BufferPlacement, AliasingTheDataBuffer) {
  QuantizationDescriptor q = Must(PerChannelAffine::Asymmetric(0, 1, 2));
  q.scale_buffer_index = 0;
  EXPECT_EQ(Outcome(ValidateBufferPlacement(q, ThreeBuffers())),
            Rejects("QNT-PLC-02", 8));
  q = Must(PerChannelAffine::Asymmetric(0, 1, 2));
  q.zero_point_buffer_index = 0;
  EXPECT_EQ(Outcome(ValidateBufferPlacement(q, ThreeBuffers())),
            Rejects("QNT-PLC-02", 12));
  QuantizationDescriptor mx = Must(Mxfp::Create(0, 32, 1));
  mx.scale_buffer_index = 0;
  EXPECT_EQ(Outcome(ValidateBufferPlacement(mx, ThreeBuffers())),
            Rejects("QNT-PLC-02", 12));
}

TEST(BufferPlacement, LayoutOwnBuffersAreStrictOnly) {
  // Two layout buffers (COO): index 1 is the indices buffer.
  QuantizationDescriptor q = Must(PerChannelAffine::Asymmetric(0, 2, 1));
  EXPECT_EQ(Outcome(ValidateBufferPlacement(q, ThreeBuffers(), 2)),
            Rejects("QNT-PLC-03", 12));
  EXPECT_TRUE(
      ValidateBufferPlacement(q, ThreeBuffers(), 2, Mode::kPermissive).ok());
  q = Must(PerChannelAffine::Asymmetric(0, 1, 2));
  EXPECT_EQ(Outcome(ValidateBufferPlacement(q, ThreeBuffers(), 2)),
            Rejects("QNT-PLC-03", 8));
}

TEST(BufferPlacement, DeviceAndMemoryClass) {
  const QuantizationDescriptor q = Must(PerChannelAffine::Asymmetric(0, 1, 2));
  std::vector<BufferHandle> b = ThreeBuffers();
  b[1].device_tag = device_tag::kCuda;
  EXPECT_EQ(Outcome(ValidateBufferPlacement(q, b)), Rejects("QNT-PLC-05", 8));
  b = ThreeBuffers();
  b[2].device_tag = device_tag::kRocm;
  EXPECT_EQ(Outcome(ValidateBufferPlacement(q, b)), Rejects("QNT-PLC-05", 12));
  b = ThreeBuffers();
  b[2].memory_class = memory_class::kHostPinned;
  EXPECT_EQ(RuleOf(ValidateBufferPlacement(q, b)), "BUF-17");
  // All on one GPU, same class: fine.
  b = ThreeBuffers();
  for (BufferHandle& h : b) h.device_tag = device_tag::kCuda;
  EXPECT_TRUE(ValidateBufferPlacement(q, b).ok());
}

// --- Buffer handles: the (device, memory class) matrix (§2.4, BUF-14) -------

TEST(BufferHandle, DeviceMemoryClassMatrix) {
  // Rows: device; columns: STANDARD, HOST_PINNED, UNIFIED, PEER.
  struct Row {
    uint8_t device;
    bool allowed[4];
  };
  const Row kMatrix[] = {
      {device_tag::kCpu, {true, true, true, false}},
      {device_tag::kCuda, {true, true, true, true}},
      {device_tag::kRocm, {true, true, true, true}},
      {device_tag::kMetal, {true, true, true, false}},
      {device_tag::kVulkan, {true, true, true, true}},
      {device_tag::kWebGpu, {true, false, false, false}},
      {device_tag::kHexagon, {true, true, true, false}},
      {device_tag::kLevelZero, {true, true, true, true}},
      {device_tag::kOpenCl, {true, true, true, false}},
      {0xF0, {true, false, false, false}},
  };
  ParseOptions o;
  o.agreed.device_tags = 1u << 0;  // 0xF0
  for (const Row& row : kMatrix) {
    for (uint8_t mc = 0; mc < 4; ++mc) {
      Desc d = Base();
      d->buffers[0].device_tag = row.device;
      d->buffers[0].memory_class = mc;
      for (const Mode m : kModes) {
        EXPECT_EQ(
            Decoded(*d, InMode(o, m)),
            row.allowed[mc] ? "OK" : Rejects("BUF-14", Handle(*d, 0) + 14))
            << "device " << int{row.device} << " class " << int{mc};
      }
    }
  }
  // Private classes on a private device need their own agreement (BUF-13).
  Desc d = Base();
  d->buffers[0].device_tag = 0xF0;
  d->buffers[0].memory_class = 0xF5;
  EXPECT_EQ(Decoded(*d, o), Rejects("BUF-13", Handle(*d, 0) + 14));
  o.agreed.memory_classes = 1u << 5;
  EXPECT_EQ(Decoded(*d, o), "OK");
}

}  // namespace
}  // namespace hurray

// --- Rulings on layout sizes (docs/design.md) ------------------------------

namespace hurray {
namespace {

// layouts/morton.md puts bit b of dimension k at b·rank + k: with unequal
// morton_bits the codes pass 2^Σbits, so the buffer must hold the largest
// code the shape reaches as well (BUF-SZ-04).
TEST(LayoutRulings, MortonBufferHoldsTheLargestCode) {
  auto d = vectors::Dense(type_tag::kFloat32, {2, 4}, layout_tag::kMorton);
  d->layout.morton_bits[0] = 1;
  d->layout.morton_bits[1] = 2;
  // Element [1, 3]: bits at 0 (dim 0) and 1, 3 (dim 1): code 11.
  d->buffers[0].byte_size = 8 * 4;  // 2^Σbits elements
  const absl::StatusOr<PartOffsets> o = ComputeOffsets(*d);
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(Outcome(Validate(*d)), absl::StrCat("BUF-SZ-04@", o->handle(0)));
  d->buffers[0].byte_size = 12 * 4;  // codes 0 … 11
  EXPECT_EQ(Outcome(Validate(*d)), "OK");
}

// layouts/tiled.md starts tile t at t · Π tile_shape; a nested level that
// needs more slots than that (sub-tiles not dividing the tile) would make
// tiles share storage: BUF-SZ-03 whatever the buffer size.
TEST(LayoutRulings, NestedTilesMustFitTheirTile) {
  auto d = vectors::TiledNested();  // [6, 8], tiles [2, 4] of [1, 2]
  ASSERT_EQ(Outcome(Validate(*d)), "OK");
  d->layout.tiled[1].tile_shape[1] = 3;  // 2 × 3 slots > 8 per tile
  d->buffers[0].byte_size = 1 << 20;
  const absl::StatusOr<PartOffsets> o = ComputeOffsets(*d);
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(Outcome(Validate(*d)), absl::StrCat("BUF-SZ-03@", o->handle(0)));
  // Inner strides spanning more than the tile alias the same way.
  auto s = vectors::TiledStrided();  // tiles 2×2, inner strides [1, 2]
  ASSERT_EQ(Outcome(Validate(*s)), "OK");
  s->layout.tiled[0].inner_strides[1] = 4;
  s->buffers[0].byte_size = 1 << 20;
  EXPECT_EQ(Outcome(Validate(*s)),
            absl::StrCat("BUF-SZ-03@", ComputeOffsets(*s)->handle(0)));
}

}  // namespace
}  // namespace hurray

namespace hurray {
namespace {

// An empty dimension empties the tensor even when the other dimensions'
// product overflows: no size rule may fire (data-model.md § Empty Tensors).
TEST(LayoutRulings, EmptyTensorWithHugeOtherDimensions) {
  auto d = vectors::Dense(type_tag::kFloat32, {1ull << 40, 1ull << 40, 0, 3});
  d->buffers[0].byte_size = 0;
  EXPECT_EQ(Outcome(Validate(*d)), "OK");
  d->layout_tag = layout_tag::kColumnMajor;
  EXPECT_EQ(Outcome(Validate(*d)), "OK");
  // The element count is exactly 0, not an overflow: an empty tensor with a
  // non-empty data buffer is DESC-SHP-05 (found by gguf_fuzz; the count
  // used to overflow before it met the zero, and the rule never fired).
  uint64_t count = 7;
  ASSERT_TRUE(d->ElementCount(&count));
  EXPECT_EQ(count, 0u);
  d->layout_tag = layout_tag::kRowMajor;
  d->buffers[0].byte_size = 16;
  EXPECT_EQ(Decoded(*d), Rejects("DESC-SHP-05", Handle(*d, 0)));
  EXPECT_FALSE(FastAccepts(*d, ParseOptions()));
}

// The parameter count is exact too: an empty quantization axis has no
// blocks whatever the other dimensions multiply to, and an empty other
// dimension none either. The fast path agrees with the validator.
TEST(LayoutRulings, QuantizedEmptyTensorWithHugeOtherDimensions) {
  for (const uint32_t axis : {1u, 2u}) {
    Desc d = vectors::Dense(kInt8, {1ull << 40, axis == 1 ? 0ull : 64ull,
                                    axis == 1 ? 1ull << 40 : 0ull});
    d->flags |= flag::kHasQuantization;
    d->quantization = Must(PerBlockAffine::Symmetric(axis, 32, 1, kFloat16));
    d->buffer_count = 2;
    d->buffers[0] = Buf(0);
    d->buffers[1] = Buf(0);
    SCOPED_TRACE(axis);
    EXPECT_EQ(Decoded(*d), "OK");
    EXPECT_TRUE(FastAccepts(*d, ParseOptions()));
    d->buffers[1].byte_size = 2;
    EXPECT_EQ(Decoded(*d), Rejects("QNT-PBA-10", Handle(*d, 1)));
    EXPECT_FALSE(FastAccepts(*d, ParseOptions()));
  }
}

}  // namespace
}  // namespace hurray
