// One test per descriptor-level reject rule of parser/rule_list.inc.
//
// Every case starts from a valid vector (tests/vectors.h, or built from
// fields), checks that it decodes, breaks exactly one field (through the
// TensorDescriptor and the encoder, or by patching the encoded bytes for the
// framing fields the encoder computes) and expects the rule id and the byte
// offset of the broken field (REJECT-RULES.md §2 wire layout; offsets come
// from hurray::ComputeOffsets). The other mode is checked too: an `always`
// rule rejects the same way in permissive mode, a `strict-only` rule is
// relaxed there (the broken vector decodes), unless the case says which
// other rule must fire instead.
//
// Rules out of scope here: the kData rows (QNT-PCA-10/11, QNT-PBA-12/13,
// QNT-NF4-07, QNT-MX-07: the dequantizer's), and TYPE-05 / DESC-HDR-09,
// which cannot fire because every Tier-2 type and every quantization scheme is
// implemented (pinned by the NotReachable tests at the end). The coverage
// test fails when a rule is added to rule_list.inc without a case here.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iterator>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "gtest/gtest.h"
#include "parser/decoder.h"
#include "parser/descriptor.h"
#include "parser/element_type.h"
#include "parser/encoder.h"
#include "parser/layout_rules.h"
#include "parser/options.h"
#include "parser/quantization.h"
#include "parser/rules.h"
#include "parser/wire.h"
#include "tests/vectors.h"

namespace hurray {
namespace {

using namespace type_tag;  // NOLINT: the cases read better with type names.
namespace lt = layout_tag;

using Bytes = std::vector<uint8_t>;
using Desc = std::unique_ptr<TensorDescriptor>;

// --- Outcomes ---------------------------------------------------------------

const char* ModeName(Mode m) {
  return m == Mode::kStrict ? "strict" : "permissive";
}

ParseOptions InMode(ParseOptions o, Mode mode) {
  o.mode = mode;
  return o;
}

// "OK", or "<RULE-ID>@<offset>" for an InvalidArgument rejection carrying
// the rule payloads; anything else is spelled out so that it never matches.
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

std::string DecodeOutcome(const Bytes& bytes, const ParseOptions& o,
                          std::string* message = nullptr) {
  const absl::StatusOr<TensorDescriptor> d = Decode(bytes, o);
  if (message != nullptr) *message = d.status().ToString();
  return Outcome(d.status());
}

// --- Wire helpers -----------------------------------------------------------

PartOffsets Off(const TensorDescriptor& d) {
  const absl::StatusOr<PartOffsets> o = ComputeOffsets(d);
  if (!o.ok()) {
    ADD_FAILURE() << "ComputeOffsets: " << o.status();
    return PartOffsets();
  }
  return *o;
}
// The scheme_tag byte (quantization prefix + 4): scheme offsets count from
// here, as in quantization/*.md § Binary Encoding.
uint64_t Scheme(const TensorDescriptor& d) { return Off(d).quantization + 4; }
uint64_t Handle(const TensorDescriptor& d, uint32_t i) {
  return Off(d).handle(i);
}
// Level `i` of a tiled layout whose levels before it have no strides: the
// outer_layout byte (inner_layout follows it).
uint64_t TileEnums(const TensorDescriptor& d, uint32_t i) {
  return Off(d).layout + i * (8ull * d.rank + 4) + 8ull * d.rank;
}

void PatchU32(Bytes& b, size_t at, uint32_t v) {
  ASSERT_LE(at + 4, b.size());
  wire::StoreU32(b.data() + at, v);
}

BufferHandle Buf(uint64_t size) {
  BufferHandle h;
  h.byte_size = size;
  return h;
}

// --- Base vectors beyond tests/vectors.h ------------------------------------

Desc Base() { return vectors::Dense(kFloat32, {3, 4}); }  // 48-byte buffer

// Private 16-bit float type 0xF3 (agreed by vectors::AgreedOptions), [10],
// with a 20-byte buffer.
Desc ExtFloat16() {
  auto d = vectors::WithExtensionType();
  ExtensionType& e = d->extension_type;
  e.bit_width = 16;
  e.packing_factor = 1;
  e.is_float = 1;
  e.sign_bits = 1;
  e.exponent_bits = 5;
  e.mantissa_bits = 10;
  e.exponent_bias = 15;
  d->buffers[0].byte_size = 20;
  return d;
}

// Private 4-bit signed integer type 0xF3, [10], 5-byte buffer.
Desc ExtInt4() {
  auto d = vectors::WithExtensionType();
  d->extension_type = ExtensionType();
  d->extension_type.bit_width = 4;
  d->extension_type.packing_factor = 2;
  d->extension_type.is_signed = 1;
  return d;
}

// f32 [4, 4] tiled `depth` levels deep: 2×2 tiles, then 1×1 sub-tiles.
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

// Tiled(8) with one more level: the last level's inner_layout byte becomes
// 0x04 and a ninth level block is inserted after it. The encoder refuses
// more than 8 levels, so this is built on the bytes. `*inner_at` is the
// offset of the inner_layout byte that asks for the ninth level.
Bytes NineLevelTiled(uint64_t* inner_at) {
  const Desc d = Tiled(8);
  Bytes b = vectors::Bytes(*d);
  const uint64_t enums = TileEnums(*d, 7);
  b[enums + 1] = lt::kTiled;
  Bytes level(8 * d->rank + 4, 0);
  for (uint32_t k = 0; k < d->rank; ++k) level[8 * k] = 1;  // tile 1×1
  level[8 * d->rank] = lt::kRowMajor;
  level[8 * d->rank + 1] = lt::kRowMajor;
  b.insert(b.begin() + enums + 4, level.begin(), level.end());
  wire::StoreU32(b.data() + 6, static_cast<uint32_t>(b.size()));
  *inner_at = enums + 1;
  return b;
}

// Block-paged int8 [48, 2, 8] (48 tokens: a multiple of the 16-token page,
// so an MXFP block fits): BlockPaged() with 8 more tokens.
Desc Paged48() {
  auto d = vectors::BlockPaged();
  d->shape[0] = 48;
  return d;
}

// Block-paged int8 [40, 2, 16]: the head dimension is as long as a block, so
// a per-block axis other than 0 passes QNT-PBA-03 and reaches LAY-BPG-09.
Desc PagedWide() {
  auto d = vectors::BlockPaged();
  d->shape[2] = 16;
  d->buffers[0].byte_size = 4 * 16 * 2 * 16;
  return d;
}

// Block-paged int8 [8, 2, 8] quantized per channel on axis 2 (8 scales):
// shape[0] = shape[2], so moving the axis to 0 keeps the scale size right.
Desc PagedPerChannel() {
  auto d = vectors::BlockPaged();
  d->shape[0] = 8;
  absl::StatusOr<PerChannelAffine> q = PerChannelAffine::Symmetric(2, 3);
  EXPECT_TRUE(q.ok()) << q.status();
  d->quantization = *q;
  d->buffers[3].byte_size = 8 * 4;
  return d;
}

// COO int8 [4, 4] with one non-zero, quantized per channel (axis 0,
// symmetric) with its 16-byte scale buffer at index 2. The indices buffer
// (index 1) is also 16 bytes, so pointing the scale index at it breaks only
// the placement rule QNT-PLC-03.
Desc QuantizedCoo() {
  auto d = vectors::Dense(kInt8, {4, 4}, lt::kCoo);
  d->layout.nnz = 1;
  d->layout.is_sorted = 1;
  d->flags |= flag::kHasQuantization;
  absl::StatusOr<PerChannelAffine> q = PerChannelAffine::Symmetric(0, 2);
  EXPECT_TRUE(q.ok()) << q.status();
  d->quantization = *q;
  d->buffer_count = 3;
  d->buffers[0] = Buf(1);          // values
  d->buffers[1] = Buf(1 * 2 * 8);  // indices
  d->buffers[2] = Buf(4 * 4);      // scales
  return d;
}

// Statistics with only NNZ_VALID set, matching the layout's nnz.
void AddNnzStatistics(TensorDescriptor* d) {
  d->flags |= flag::kHasStatistics;
  d->statistics = Statistics();
  d->statistics.computed_mask = stat_bit::kNnz;
  d->statistics.nnz = d->layout.nnz;
}

// Drops the last `n` dimensions (for the "wrong rank" layout rules).
void DropDims(TensorDescriptor* d, uint32_t n) { d->rank -= n; }

// Adds a shard section that covers the whole tensor.
void AddWholeShard(TensorDescriptor* d) {
  d->flags |= flag::kHasShard;
  for (uint32_t k = 0; k < d->rank; ++k) {
    d->shard.parent_shape[k] = d->shape[k];
    d->shard.shard_offset[k] = 0;
  }
}

// A valid vector for every assigned layout tag.
Desc LayoutVector(uint8_t tag) {
  switch (tag) {
    case lt::kRowMajor:
    case lt::kColumnMajor:
      return vectors::Dense(kFloat32, {3, 4}, tag);
    case lt::kStrided:
      return vectors::StridedNegative();
    case lt::kTiled:
      return vectors::TiledNested();
    case lt::kMorton:
      return vectors::Morton();
    case lt::kCoo:
      return vectors::Coo();
    case lt::kCsr:
      return vectors::Csr();
    case lt::kCsc:
      return vectors::Csc();
    case lt::kCsf:
      return vectors::Csf();
    case lt::kBlockPaged:
      return vectors::BlockPaged();
    case lt::kComposite:
      return vectors::CompositePartition();
    case lt::kHilbert:
      return vectors::Hilbert();
    default:
      return nullptr;
  }
}

// --- The expectation of one case --------------------------------------------

struct Expect {
  Bytes valid;           // decodes with `options`
  Bytes broken;          // `valid` with exactly one field broken
  ParseOptions options;  // agreements, mode and limits of the case
  // When set, `broken` is `valid` and the break is a limit in here.
  std::optional<ParseOptions> broken_options;
  uint64_t offset = 0;
  // What the other mode must report, when not what the rule's mode implies.
  std::optional<std::string> other;

  Expect& Break(const TensorDescriptor& d, uint64_t at) {
    broken = vectors::Bytes(d);
    offset = at;
    return *this;
  }
  Expect& At(uint64_t at) {
    offset = at;
    return *this;
  }
  Expect& Other(std::string outcome) {
    other = std::move(outcome);
    return *this;
  }
  Expect& Limits(const ParseOptions& o) {
    broken_options = o;
    return *this;
  }
};

Expect Valid(const TensorDescriptor& d,
             const ParseOptions& o = ParseOptions()) {
  Expect e;
  e.valid = vectors::Bytes(d);
  e.broken = e.valid;
  e.options = o;
  return e;
}

void Check(absl::string_view id, const Expect& e) {
  const std::optional<Rule> rule = RuleFromId(id);
  ASSERT_TRUE(rule.has_value()) << id << " is not a rule of rule_list.inc";
  const RuleInfo& info = GetRuleInfo(*rule);
  std::string message;
  ASSERT_EQ(DecodeOutcome(e.valid, e.options, &message), "OK")
      << "the base vector must decode (" << ModeName(e.options.mode)
      << "): " << message;
  if (!e.broken_options) {
    ASSERT_NE(e.valid, e.broken) << "the case broke nothing";
  }
  const ParseOptions& options = e.broken_options.value_or(e.options);
  const std::string want = Rejects(id, e.offset);
  EXPECT_EQ(DecodeOutcome(e.broken, options, &message), want)
      << ModeName(options.mode) << ": " << message;

  const Mode other_mode =
      options.mode == Mode::kStrict ? Mode::kPermissive : Mode::kStrict;
  std::string want_other;
  if (e.other) {
    want_other = *e.other;
  } else if (info.mode == RuleMode::kAlways) {
    want_other = want;  // always-rules are not relaxed
  } else if (options.mode == Mode::kStrict) {
    want_other = "OK";  // strict-only: relaxed in permissive mode
  } else {
    FAIL() << "a strict-only rule cannot be expected in permissive mode";
  }
  EXPECT_EQ(DecodeOutcome(e.broken, InMode(options, other_mode), &message),
            want_other)
      << ModeName(other_mode) << " (rule is "
      << (info.mode == RuleMode::kAlways ? "always" : "strict-only")
      << "): " << message;
}

struct RuleCase {
  std::string id;
  std::function<void(const std::string& id)> run;
};

void PrintTo(const RuleCase& c, std::ostream* os) { *os << c.id; }

RuleCase C(std::string id, std::function<Expect()> make) {
  return {std::move(id), [make](const std::string& id) { Check(id, make()); }};
}

// For the few cases that decide at run time what they can reach.
RuleCase Custom(std::string id, std::function<void()> body) {
  return {std::move(id), [body](const std::string&) { body(); }};
}

// --- Cases that need more than one break ------------------------------------

// LAY-TAG-03: a layout this reader does not implement (memory-layout.md
// § Named Layout Tags; REJECT-RULES.md: e.g. Tier-2 Hilbert 0x40, or 0x0B in
// a reader without composite support). Every assigned layout and the
// extension range are implemented, so the case pins that each decodes in
// strict mode, then switches layouts off (ParseOptions::disabled_layouts) as
// a reader without them would be: the same valid bytes are rejected at the
// layout_tag byte in strict mode and accepted when permissive.
void LayTag03() {
  for (int tag = 0; tag < 256; ++tag) {
    if (!lt::IsAssigned(tag)) continue;
    SCOPED_TRACE(LayoutName(tag));
    EXPECT_TRUE(LayoutRulesImplemented(tag));
    const Desc d = LayoutVector(tag);
    ASSERT_NE(d, nullptr);
    const Bytes bytes = vectors::Bytes(*d);
    EXPECT_EQ(DecodeOutcome(bytes, ParseOptions()), "OK");
    EXPECT_EQ(DecodeOutcome(bytes, InMode(ParseOptions(), Mode::kPermissive)),
              "OK");
  }
  for (int tag = 0xF0; tag <= 0xFE; ++tag) {
    EXPECT_TRUE(LayoutRulesImplemented(tag)) << tag;
  }
  for (const uint8_t off : {lt::kHilbert, lt::kComposite, lt::kCsr}) {
    SCOPED_TRACE(LayoutName(off));
    ParseOptions without;
    without.disabled_layouts.set(off);
    Check("LAY-TAG-03", Valid(*LayoutVector(off)).Limits(without).At(15));
    // Other layouts are not affected.
    EXPECT_EQ(
        DecodeOutcome(vectors::Bytes(*LayoutVector(lt::kRowMajor)), without),
        "OK");
  }
}

// --- The table --------------------------------------------------------------

std::vector<RuleCase> AllCases() {
  const ParseOptions strict;
  const ParseOptions agreed = vectors::AgreedOptions();
  return {
      // --- Descriptor framing and header (REJECT-RULES.md §3.1). ----------
      C("DESC-HDR-01",
        [] {
          // Truncation: the offset is the number of bytes given.
          Expect e = Valid(*vectors::Everything());
          e.broken.pop_back();
          return e.At(e.broken.size());
        }),
      C("DESC-HDR-02",
        [] {
          Expect e = Valid(*Base());
          e.broken[3] = 'Z';  // "HRRZ"
          return e.At(0);
        }),
      C("DESC-HDR-03",
        [] {
          auto d = Base();
          Expect e = Valid(*d);
          d->version_major = 2;
          return e.Break(*d, 4);
        }),
      C("DESC-HDR-04",
        [] {
          auto d = Base();
          Expect e = Valid(*d);
          d->version_major = 0;
          return e.Break(*d, 4);
        }),
      C("DESC-HDR-05",
        [] {
          Expect e = Valid(*Base());
          PatchU32(e.broken, 6, 19);
          return e.At(6);
        }),
      C("DESC-HDR-06",
        [] {
          // descriptor_length one byte short: the last buffer handle would
          // end beyond it; reported at the field that crosses the end.
          auto d = Base();
          Expect e = Valid(*d);
          PatchU32(e.broken, 6, static_cast<uint32_t>(e.valid.size() - 1));
          return e.At(Handle(*d, 0));
        }),
      C("DESC-HDR-07",
        [] {
          auto d = Base();
          Expect e = Valid(*d);
          d->flags |= 1u << 5;
          return e.Break(*d, 10);
        }),
      C("DESC-HDR-08",
        [] {
          // Undeclared trailing bytes at minor version 0, at the parsed end.
          auto d = Base();
          Expect e = Valid(*d);
          d->trailing_length = 4;
          return e.Break(*d, Off(*d).end);
        }),

      // --- Rank, shape, byte_offset (§3.2). -------------------------------
      C("DESC-SHP-01",
        [] {
          Expect e = Valid(*Base());
          PatchU32(e.broken, 16, 65);
          return e.At(16);
        }),
      C("DESC-SHP-02",
        [] {
          // A column-major scalar (no layout fields: only the tag changes).
          auto d = vectors::Dense(kFloat64, {});
          Expect e = Valid(*d);
          d->layout_tag = lt::kColumnMajor;
          return e.Break(*d, 16);
        }),
      C("DESC-SHP-03",
        [] {
          auto d = Base();
          Expect e = Valid(*d);
          d->byte_offset = 49;  // buffer 0 holds 48 bytes
          return e.Break(*d, Off(*d).byte_offset());
        }),
      C("DESC-SHP-04",
        [] {
          auto d = vectors::Coo();
          Expect e = Valid(*d);
          d->byte_offset = 8;
          return e.Break(*d, Off(*d).byte_offset());
        }),
      C("DESC-SHP-05",
        [] {
          auto d = vectors::Dense(kFloat32, {0, 4});
          Expect e = Valid(*d);
          d->buffers[0].byte_size = 16;
          return e.Break(*d, Handle(*d, 0));
        }),

      // --- Element types (§3.3). ------------------------------------------
      C("TYPE-01",
        [] {
          auto d = Base();
          Expect e = Valid(*d);
          d->type_tag = 0x00;
          return e.Break(*d, 14);
        }),
      C("TYPE-02",
        [] {
          auto d = Base();
          Expect e = Valid(*d);
          d->type_tag = 0x80;
          return e.Break(*d, 14);
        }),
      C("TYPE-03",
        [] {
          auto d = Base();
          Expect e = Valid(*d);
          d->type_tag = 0x47;
          return e.Break(*d, 14);
        }),
      C("TYPE-04",
        [] {
          auto d = Base();
          Expect e = Valid(*d);
          d->type_tag = 0x05;
          return e.Break(*d, 14);
        }),
      C("TYPE-06",
        [agreed] {
          // 0xF4 is not agreed (AgreedOptions agrees on 0xF3 only).
          auto d = vectors::WithExtensionType();
          Expect e = Valid(*d, agreed);
          d->type_tag = 0xF4;
          return e.Break(*d, 14);
        }),
      C("TYPE-EXT-01",
        [agreed] {
          // HAS_EXTENSION_TYPE set on a public type; reported at the flags.
          auto d = vectors::WithExtensionType();
          Expect e = Valid(*d, agreed);
          d->type_tag = kUInt8;
          return e.Break(*d, 10);
        }),
      C("TYPE-EXT-02",
        [agreed] {
          auto d = vectors::WithExtensionType();
          Expect e = Valid(*d, agreed);
          d->extension_type.bit_width = 0;
          return e.Break(*d, Off(*d).extension_type);
        }),
      C("TYPE-EXT-03",
        [agreed] {
          auto d = ExtFloat16();
          Expect e = Valid(*d, agreed);
          d->extension_type.packing_factor = 2;
          return e.Break(*d, Off(*d).extension_type + 4);
        }),
      C("TYPE-EXT-04",
        [agreed] {
          auto d = vectors::WithExtensionType();
          Expect e = Valid(*d, agreed);
          d->extension_type.bit_width = 3;
          return e.Break(*d, Off(*d).extension_type);
        }),
      C("TYPE-EXT-05",
        [agreed] {
          auto d = vectors::WithExtensionType();  // 4 bits: packing 2
          Expect e = Valid(*d, agreed);
          d->extension_type.packing_factor = 1;
          return e.Break(*d, Off(*d).extension_type + 4);
        }),
      C("TYPE-EXT-06",
        [agreed] {
          auto d = vectors::WithExtensionType();
          Expect e = Valid(*d, agreed);
          d->extension_type.reserved[1] = 1;
          return e.Break(*d, Off(*d).extension_type + 11);
        }),
      C("TYPE-EXT-07",
        [agreed] {
          auto d = vectors::WithExtensionType();
          Expect e = Valid(*d, agreed);
          d->extension_type.reserved2[0] = 1;
          return e.Break(*d, Off(*d).extension_type + 18);
        }),
      C("TYPE-EXT-08",
        [agreed] {
          auto d = vectors::WithExtensionType();
          Expect e = Valid(*d, agreed);
          d->extension_type.is_signed = 1;
          return e.Break(*d, Off(*d).extension_type + 6);
        }),
      C("TYPE-EXT-09",
        [agreed] {
          auto d = vectors::WithExtensionType();
          Expect e = Valid(*d, agreed);
          d->extension_type.sign_bits = 2;
          return e.Break(*d, Off(*d).extension_type + 7);
        }),
      C("TYPE-EXT-10",
        [agreed] {
          auto d = ExtInt4();
          Expect e = Valid(*d, agreed);
          d->extension_type.exponent_bits = 1;
          return e.Break(*d, Off(*d).extension_type + 8);
        }),
      C("TYPE-EXT-11",
        [agreed] {
          auto d = ExtInt4();
          Expect e = Valid(*d, agreed);
          d->extension_type.exponent_bias = 1;
          return e.Break(*d, Off(*d).extension_type + 12);
        }),
      C("TYPE-EXT-12",
        [agreed] {
          auto d = vectors::WithExtensionType();
          Expect e = Valid(*d, agreed);
          d->extension_type.has_nan = 2;
          return e.Break(*d, Off(*d).extension_type + 16);
        }),
      C("TYPE-EXT-13",
        [agreed] {
          auto d = ExtInt4();
          Expect e = Valid(*d, agreed);
          d->extension_type.has_inf = 1;
          return e.Break(*d, Off(*d).extension_type + 17);
        }),
      C("TYPE-EXT-14",
        [agreed] {
          // 12-bit elements: 10 of them need 15 bytes, and buffer 0 holds
          // 20, so no size rule has a reason to fire once TYPE-EXT-14 is
          // relaxed in permissive mode.
          auto d = ExtFloat16();
          Expect e = Valid(*d, agreed);
          d->extension_type.bit_width = 12;
          return e.Break(*d, Off(*d).extension_type);
        }),

      // --- Buffer table and handles (§3.4). -------------------------------
      C("BUF-01",
        [] {
          auto d = Base();
          Expect e = Valid(*d);
          d->buffer_count = 0;
          return e.Break(*d, Off(*d).buffer_table);
        }),
      C("BUF-02",
        [] {
          auto d = Base();
          Expect e = Valid(*d);
          d->buffer_count = 2;
          d->buffers[1] = Buf(0);
          return e.Break(*d, Off(*d).buffer_table);
        }),
      C("BUF-03",
        [] {
          auto d = vectors::PerTensorInt8();  // no parameter buffers
          Expect e = Valid(*d);
          d->buffer_count = 2;
          d->buffers[1] = Buf(0);
          return e.Break(*d, Off(*d).buffer_table);
        }),
      C("BUF-04",
        [] {
          auto d = Base();
          Expect e = Valid(*d);
          d->buffers[0].alignment = 96;
          return e.Break(*d, Handle(*d, 0) + 8);
        }),
      C("BUF-05",
        [] {
          auto d = Base();
          Expect e = Valid(*d);
          d->buffers[0].alignment = 32;
          return e.Break(*d, Handle(*d, 0) + 8);
        }),
      C("BUF-06",
        [] {
          auto d = Base();
          Expect e = Valid(*d);
          d->buffers[0].device_tag = 0xFF;
          return e.Break(*d, Handle(*d, 0) + 12);
        }),
      C("BUF-07",
        [] {
          auto d = Base();
          Expect e = Valid(*d);
          d->buffers[0].device_tag = 0x09;
          return e.Break(*d, Handle(*d, 0) + 12);
        }),
      C("BUF-08",
        [] {
          auto d = Base();
          Expect e = Valid(*d);
          d->buffers[0].device_tag = 0xF0;
          return e.Break(*d, Handle(*d, 0) + 12);
        }),
      C("BUF-09",
        [] {
          auto d = Base();
          Expect e = Valid(*d);
          d->buffers[0].sync_mode = 0x03;
          return e.Break(*d, Handle(*d, 0) + 13);
        }),
      C("BUF-10",
        [] {
          auto d = Base();  // CPU
          Expect e = Valid(*d);
          d->buffers[0].sync_mode = 0x01;
          return e.Break(*d, Handle(*d, 0) + 13);
        }),
      C("BUF-11",
        [] {
          auto d = Base();
          Expect e = Valid(*d);
          d->buffers[0].memory_class = 0x04;
          return e.Break(*d, Handle(*d, 0) + 14);
        }),
      C("BUF-12",
        [] {
          auto d = Base();  // CPU, a public device
          Expect e = Valid(*d);
          d->buffers[0].memory_class = 0xF0;
          return e.Break(*d, Handle(*d, 0) + 14);
        }),
      C("BUF-13",
        [] {
          // Private device 0xF0 (agreed), private memory class 0xF1 (not).
          ParseOptions o;
          o.agreed.device_tags = 1u << 0;
          auto d = Base();
          d->buffers[0].device_tag = 0xF0;
          Expect e = Valid(*d, o);
          d->buffers[0].memory_class = 0xF1;
          return e.Break(*d, Handle(*d, 0) + 14);
        }),
      C("BUF-14",
        [] {
          auto d = Base();  // CPU + PEER is not in the matrix
          Expect e = Valid(*d);
          d->buffers[0].memory_class = memory_class::kPeer;
          return e.Break(*d, Handle(*d, 0) + 14);
        }),
      C("BUF-15",
        [] {
          auto d = Base();
          Expect e = Valid(*d);
          d->buffers[0].reserved = 1;
          return e.Break(*d, Handle(*d, 0) + 15);
        }),
      C("BUF-16",
        [] {
          // COO indices on another device than its values.
          auto d = vectors::Coo();
          Expect e = Valid(*d);
          d->buffers[1].device_tag = device_tag::kCuda;
          return e.Break(*d, Handle(*d, 1) + 12);
        }),
      C("BUF-17",
        [] {
          // A parameter buffer in another memory class than the data
          // (QNT-PLC-05 covers the device, BUF-17 the memory class).
          auto d = vectors::PerChannelSymInt4();
          Expect e = Valid(*d);
          d->buffers[1].memory_class = memory_class::kHostPinned;
          return e.Break(*d, Handle(*d, 1) + 14);
        }),

      // --- Buffer sizes (§3.5). -------------------------------------------
      C("BUF-SZ-01",
        [] {
          auto d = Base();
          Expect e = Valid(*d);
          d->buffers[0].byte_size = 47;
          return e.Break(*d, Handle(*d, 0));
        }),
      C("BUF-SZ-02",
        [] {
          auto d = vectors::StridedNegative();  // needs exactly 48 bytes
          Expect e = Valid(*d);
          d->buffers[0].byte_size = 47;
          return e.Break(*d, Handle(*d, 0));
        }),
      C("BUF-SZ-03",
        [] {
          auto d = vectors::TiledNested();  // 6 tiles of 8 int8
          Expect e = Valid(*d);
          d->buffers[0].byte_size = 47;
          return e.Break(*d, Handle(*d, 0));
        }),
      C("BUF-SZ-04",
        [] {
          auto d = vectors::Morton();  // 2^4 float32
          Expect e = Valid(*d);
          d->buffers[0].byte_size = 63;
          return e.Break(*d, Handle(*d, 0));
        }),
      C("BUF-SZ-05",
        [] {
          auto d = vectors::Hilbert();  // 2^4 uint4
          Expect e = Valid(*d);
          d->buffers[0].byte_size = 7;
          return e.Break(*d, Handle(*d, 0));
        }),
      C("BUF-SZ-06",
        [] {
          auto d = vectors::Coo();  // indices: nnz · rank · 8 = 72
          Expect e = Valid(*d);
          d->buffers[1].byte_size = 71;
          return e.Break(*d, Handle(*d, 1));
        }),
      C("BUF-SZ-07",
        [] {
          auto d = vectors::Csr();  // row_ptr: (shape[0] + 1) · 8 = 32
          Expect e = Valid(*d);
          d->buffers[2].byte_size = 31;
          return e.Break(*d, Handle(*d, 2));
        }),
      C("BUF-SZ-08",
        [] {
          auto d = vectors::Csc();  // col_ptr: (shape[1] + 1) · 8 = 40
          Expect e = Valid(*d);
          d->buffers[2].byte_size = 39;
          return e.Break(*d, Handle(*d, 2));
        }),
      C("BUF-SZ-09",
        [] {
          auto d = vectors::Csf();  // pos_0 holds exactly 2 u64
          Expect e = Valid(*d);
          d->buffers[1].byte_size = 8;
          return e.Break(*d, Handle(*d, 1));
        }),
      C("BUF-SZ-10",
        [] {
          auto d = vectors::BlockPaged();  // page pool 4·16·2·8 int8
          Expect e = Valid(*d);
          d->buffers[0].byte_size = 1023;
          return e.Break(*d, Handle(*d, 0));
        }),
      C("BUF-SZ-11",
        [] {
          // Per-block padding: [8, 100] stored as [8, 128] uint4 = 512.
          auto d = vectors::PerBlockAsymUInt4();
          Expect e = Valid(*d);
          d->buffers[0].byte_size = 511;
          return e.Break(*d, Handle(*d, 0));
        }),
      C("BUF-SZ-12",
        [] {
          auto d = vectors::Coo();  // values: 3 float32 = 12
          Expect e = Valid(*d);
          d->buffers[0].byte_size = 13;
          return e.Break(*d, Handle(*d, 0));
        }),

      // --- Layout tags (§3.6). --------------------------------------------
      C("LAY-TAG-01",
        [] {
          Expect e = Valid(*Base());
          e.broken[15] = 0x00;
          return e.At(15);
        }),
      C("LAY-TAG-02",
        [] {
          Expect e = Valid(*Base());
          e.broken[15] = 0x0C;
          return e.At(15);
        }),
      Custom("LAY-TAG-03", LayTag03),
      C("LAY-TAG-04",
        [agreed] {
          auto d = vectors::ExtensionLayout();
          Expect e = Valid(*d, agreed);
          d->layout.extension_layout_id = vectors::kAgreedLayoutId + 1;
          return e.Break(*d, Off(*d).layout);
        }),

      // --- Dense layouts (§3.7). ------------------------------------------
      C("LAY-STR-01",
        [] {
          // A strided scalar: rank 0 has no strides, only the tag changes.
          auto d = vectors::Dense(kFloat64, {});
          Expect e = Valid(*d);
          d->layout_tag = lt::kStrided;
          return e.Break(*d, 16);
        }),
      C("LAY-TIL-01",
        [] {
          auto d = vectors::TiledNested();
          Expect e = Valid(*d);
          d->layout.tiled[1].tile_shape[1] = 0;  // nested level
          return e.Break(*d, TileEnums(*d, 1) - 8);
        }),
      C("LAY-TIL-02",
        [] {
          auto d = vectors::TiledNested();
          Expect e = Valid(*d);
          d->layout.tiled[1].outer_layout = 0x04;
          return e.Break(*d, TileEnums(*d, 1));
        }),
      C("LAY-TIL-03",
        [] {
          auto d = vectors::TiledNested();
          Expect e = Valid(*d);
          d->layout.tiled[1].inner_layout = 0x05;
          return e.Break(*d, TileEnums(*d, 1) + 1);
        }),
      C("LAY-TIL-04",
        [] {
          auto d = vectors::TiledNested();
          Expect e = Valid(*d);
          d->layout.tiled[1].reserved[1] = 1;
          return e.Break(*d, TileEnums(*d, 1) + 3);
        }),
      C("LAY-TIL-05",
        [] {
          // Default depth limit 8: a ninth level is asked for by the
          // eighth level's inner_layout byte.
          Expect e = Valid(*Tiled(8));
          uint64_t inner_at = 0;
          e.broken = NineLevelTiled(&inner_at);
          return e.At(inner_at);
        }),
      C("LAY-TIL-06",
        [] {
          // A tiled scalar: the tag and one level of enums (no tile_shape).
          auto d = vectors::Dense(kFloat64, {});
          Expect e = Valid(*d);
          d->layout_tag = lt::kTiled;
          d->layout.tiled_depth = 1;
          d->layout.tiled[0].outer_layout = lt::kRowMajor;
          d->layout.tiled[0].inner_layout = lt::kRowMajor;
          return e.Break(*d, 16);
        }),
      C("LAY-MOR-01",
        [] {
          auto d = vectors::Morton();
          Expect e = Valid(*d);
          d->layout.morton_bits[1] = 0;
          return e.Break(*d, Off(*d).layout + 4);
        }),
      C("LAY-MOR-02",
        [] {
          auto d = vectors::Morton();  // shape[0] = 3 > 2^1
          Expect e = Valid(*d);
          d->layout.morton_bits[0] = 1;
          return e.Break(*d, Off(*d).layout);
        }),
      C("LAY-MOR-03",
        [] {
          // A Morton scalar: rank 0 has no morton_bits, only the tag changes.
          auto d = vectors::Dense(kFloat64, {});
          Expect e = Valid(*d);
          d->layout_tag = lt::kMorton;
          return e.Break(*d, 16);
        }),
      C("LAY-HIL-01",
        [] {
          auto d = vectors::Hilbert();
          Expect e = Valid(*d);
          d->layout.hilbert_order = 0;
          return e.Break(*d, Off(*d).layout);
        }),
      C("LAY-HIL-02",
        [] {
          auto d = vectors::Hilbert();
          Expect e = Valid(*d);
          d->layout.hilbert_rank = 1;
          return e.Break(*d, Off(*d).layout + 4);
        }),
      C("LAY-HIL-03",
        [] {
          auto d = vectors::Hilbert();
          Expect e = Valid(*d);
          d->layout.hilbert_rank = 3;
          return e.Break(*d, Off(*d).layout + 4);
        }),
      C("LAY-HIL-04",
        [] {
          auto d = vectors::Hilbert();  // [4, 4], order 2
          Expect e = Valid(*d);
          d->shape[1] = 3;
          return e.Break(*d, Off(*d).shape(1));
        }),

      // --- Sparse layouts (§3.8). -----------------------------------------
      C("LAY-COO-01",
        [] {
          auto d = vectors::Coo();
          Expect e = Valid(*d);
          DropDims(d.get(), 3);  // rank 0
          return e.Break(*d, 16);
        }),
      C("LAY-COO-02",
        [] {
          auto d = vectors::Coo();
          Expect e = Valid(*d);
          d->layout.is_sorted = 2;
          return e.Break(*d, Off(*d).layout + 8);
        }),
      C("LAY-COO-03",
        [] {
          auto d = vectors::Coo();
          Expect e = Valid(*d);
          d->layout.sparse_reserved[6] = 1;
          return e.Break(*d, Off(*d).layout + 9 + 6);
        }),
      C("LAY-COO-04",
        [] {
          auto d = vectors::Coo();
          Expect e = Valid(*d);
          d->buffer_count = 3;
          d->buffers[2] = Buf(0);
          return e.Break(*d, Off(*d).buffer_table);
        }),
      C("LAY-CSR-01",
        [] {
          auto d = vectors::Csr();
          Expect e = Valid(*d);
          DropDims(d.get(), 1);  // rank 1
          return e.Break(*d, 16);
        }),
      C("LAY-CSR-02",
        [] {
          auto d = vectors::Csr();
          Expect e = Valid(*d);
          d->layout.sparse_reserved[0] = 1;
          return e.Break(*d, Off(*d).layout + 8);
        }),
      C("LAY-CSR-03",
        [] {
          auto d = vectors::Csr();
          Expect e = Valid(*d);
          d->buffer_count = 2;
          return e.Break(*d, Off(*d).buffer_table);
        }),
      C("LAY-CSC-01",
        [] {
          auto d = vectors::Csc();
          Expect e = Valid(*d);
          DropDims(d.get(), 1);
          return e.Break(*d, 16);
        }),
      C("LAY-CSC-02",
        [] {
          auto d = vectors::Csc();
          Expect e = Valid(*d);
          d->layout.sparse_reserved[7] = 1;
          return e.Break(*d, Off(*d).layout + 8 + 7);
        }),
      C("LAY-CSC-03",
        [] {
          auto d = vectors::Csc();
          Expect e = Valid(*d);
          d->buffer_count = 4;
          d->buffers[3] = Buf(0);
          return e.Break(*d, Off(*d).buffer_table);
        }),
      C("LAY-CSF-01",
        [] {
          auto d = vectors::Csf();
          Expect e = Valid(*d);
          DropDims(d.get(), 1);  // rank 2
          return e.Break(*d, 16);
        }),
      C("LAY-CSF-02",
        [] {
          auto d = vectors::Csf();  // mode_order [2, 0, 1]
          Expect e = Valid(*d);
          d->layout.mode_order[2] = 0;  // repeated
          return e.Break(*d, Off(*d).layout + 8 + 4 * 2);
        }),
      C("LAY-CSF-03",
        [] {
          auto d = vectors::Csf();
          Expect e = Valid(*d);
          d->layout.sparse_reserved[7] = 1;
          return e.Break(*d, Off(*d).layout + 8 + 4 * d->rank + 7);
        }),
      C("LAY-CSF-04",
        [] {
          auto d = vectors::Csf();
          Expect e = Valid(*d);
          d->buffer_count = 8;
          d->buffers[7] = Buf(0);
          return e.Break(*d, Off(*d).buffer_table);
        }),
      C("LAY-CSF-05",
        [] {
          auto d = vectors::Csf();
          Expect e = Valid(*d);
          AddWholeShard(d.get());
          return e.Break(*d, 10);  // the flags
        }),

      // --- Block-paged (§3.9). --------------------------------------------
      C("LAY-BPG-01",
        [] {
          auto d = vectors::BlockPaged();
          Expect e = Valid(*d);
          DropDims(d.get(), 1);  // rank 2
          return e.Break(*d, 16);
        }),
      C("LAY-BPG-02",
        [] {
          auto d = vectors::BlockPaged();
          Expect e = Valid(*d);
          d->layout.paged_axis = 1;
          return e.Break(*d, Off(*d).layout + 12);
        }),
      C("LAY-BPG-03",
        [] {
          auto d = vectors::BlockPaged();
          Expect e = Valid(*d);
          d->layout.page_size = 0;
          return e.Break(*d, Off(*d).layout);
        }),
      C("LAY-BPG-04",
        [] {
          auto d = vectors::BlockPaged();
          Expect e = Valid(*d);
          d->layout.kv_role = 0x03;
          return e.Break(*d, Off(*d).layout + 20);
        }),
      C("LAY-BPG-05",
        [] {
          auto d = vectors::BlockPaged();
          Expect e = Valid(*d);
          d->layout.block_table_index_type = 0x02;
          return e.Break(*d, Off(*d).layout + 25);
        }),
      C("LAY-BPG-06",
        [] {
          auto d = vectors::BlockPaged();
          Expect e = Valid(*d);
          d->layout.paged_reserved[5] = 1;
          return e.Break(*d, Off(*d).layout + 26 + 5);
        }),
      C("LAY-BPG-07",
        [] {
          auto d = vectors::BlockPaged();
          Expect e = Valid(*d);
          d->buffer_count = 5;
          d->buffers[4] = Buf(0);
          return e.Break(*d, Off(*d).buffer_table);
        }),
      C("LAY-BPG-08",
        [] {
          auto d = vectors::BlockPaged();
          Expect e = Valid(*d);
          AddWholeShard(d.get());
          return e.Break(*d, 10);
        }),
      C("LAY-BPG-09",
        [] {
          auto d = PagedWide();
          Expect e = Valid(*d);
          d->quantization.axis = 2;
          return e.Break(*d, Scheme(*d) + 4);
        }),
      C("LAY-BPG-10",
        [] {
          auto d = vectors::BlockPaged();  // page_size 16
          Expect e = Valid(*d);
          d->quantization.block_size = 8;
          return e.Break(*d, Scheme(*d) + 8);
        }),
      C("LAY-BPG-11",
        [] {
          auto d = PagedPerChannel();
          Expect e = Valid(*d);
          d->quantization.axis = 0;
          return e.Break(*d, Scheme(*d) + 4);
        }),
      C("LAY-BPG-12",
        [] {
          // The scheme switched to MXFP (int8 storage, 16-element blocks on
          // the 48-token axis are otherwise acceptable).
          auto d = Paged48();
          Expect e = Valid(*d);
          absl::StatusOr<Mxfp> q = Mxfp::Create(0, 16, 3);
          EXPECT_TRUE(q.ok()) << q.status();
          d->quantization = *q;
          return e.Break(*d, Scheme(*d));
        }),
      C("LAY-BPG-13",
        [] {
          auto d = vectors::BlockPaged();  // u32 block table
          Expect e = Valid(*d);
          d->layout.num_pages = uint64_t{1} << 32;
          return e.Break(*d, Off(*d).layout + 4);
        }),
      C("LAY-BPG-14",
        [] {
          auto d = vectors::BlockPaged();  // f16 scale per page slot: 128
          Expect e = Valid(*d);
          d->buffers[3].byte_size = 127;
          return e.Break(*d, Handle(*d, 3));
        }),

      // --- Composite head (§3.10). ----------------------------------------
      C("LAY-CMP-01",
        [] {
          auto d = vectors::CompositePartition();
          Expect e = Valid(*d);
          d->layout.composition_rule = 0x04;
          return e.Break(*d, Off(*d).layout);
        }),
      C("LAY-CMP-02",
        [] {
          auto d = vectors::CompositePartition();
          Expect e = Valid(*d);
          d->layout.composition_rule = 0xF0;
          return e.Break(*d, Off(*d).layout);
        }),
      C("LAY-CMP-03",
        [] {
          auto d = vectors::CompositePartition();
          Expect e = Valid(*d);
          d->layout.combine_op = 0x01;
          return e.Break(*d, Off(*d).layout + 1);
        }),
      C("LAY-CMP-04",
        [] {
          auto d = vectors::CompositeOverlay();
          Expect e = Valid(*d);
          d->layout.combine_op = 0x03;
          return e.Break(*d, Off(*d).layout + 1);
        }),
      C("LAY-CMP-05",
        [] {
          auto d = vectors::CompositePartition();
          Expect e = Valid(*d);
          d->layout.composite_reserved[1] = 1;
          return e.Break(*d, Off(*d).layout + 3);
        }),
      C("LAY-CMP-06",
        [] {
          auto d = vectors::CompositePartition();
          Expect e = Valid(*d);
          d->layout.member_count = 0xFFFFFFFF;
          return e.Break(*d, Off(*d).layout + 4);
        }),
      C("LAY-CMP-07",
        [] {
          auto d = vectors::CompositePartition();
          Expect e = Valid(*d);
          d->buffer_count = 1;
          d->buffers[0] = Buf(0);
          return e.Break(*d, Off(*d).buffer_table);
        }),
      C("LAY-CMP-08",
        [] {
          auto d = vectors::CompositePartition();
          Expect e = Valid(*d);
          d->byte_offset = 8;
          return e.Break(*d, Off(*d).byte_offset());
        }),
      C("LAY-CMP-09",
        [] {
          auto d = vectors::CompositePartition();
          Expect e = Valid(*d);
          d->flags |= flag::kHasQuantization;
          d->quantization = *PerTensorAffine::Create(0.5f, 0);
          return e.Break(*d, 10);
        }),
      C("LAY-CMP-10",
        [] {
          auto d = vectors::CompositePartition();
          Expect e = Valid(*d);
          d->flags |= flag::kHasCompositeMember;
          d->composite_member.member_role = 0x01;
          return e.Break(*d, 10);
        }),
      C("LAY-CMP-11",
        [] {
          auto d = vectors::CompositeOverlay();
          Expect e = Valid(*d);
          d->layout.member_count = 0;
          return e.Break(*d, Off(*d).layout + 4);
        }),
      C("LAY-CMP-12",
        [] {
          auto d = vectors::CompositePartition();
          Expect e = Valid(*d);
          d->shape[1] = kDynamicDim;
          return e.Break(*d, Off(*d).shape(1));
        }),

      // --- Composite member, shard, statistics sections (§3.10, §3.11). ---
      C("DESC-CMS-01",
        [] {
          auto d = vectors::WithCompositeMember();
          Expect e = Valid(*d);
          d->composite_member.member_role = 0x02;
          return e.Break(*d, Off(*d).composite_member);
        }),
      C("DESC-CMS-02",
        [] {
          auto d = vectors::WithCompositeMember();
          Expect e = Valid(*d);
          d->composite_member.reserved[14] = 1;
          return e.Break(*d, Off(*d).composite_member + 15);
        }),
      C("DESC-SHD-01",
        [] {
          auto d = vectors::WithShard();  // [8, 4] at [0, 4] of [8, 8]
          Expect e = Valid(*d);
          d->shard.shard_offset[1] = 5;
          return e.Break(*d, Off(*d).shard + 8 * d->rank + 8);
        }),
      C("DESC-SHD-02",
        [] {
          auto d = vectors::WithShard();
          Expect e = Valid(*d);
          d->shard.parent_shape[0] = kDynamicDim;
          return e.Break(*d, Off(*d).shard);
        }),
      C("DESC-STAT-01",
        [] {
          auto d = vectors::WithStatistics();
          Expect e = Valid(*d);
          d->statistics.computed_mask |= 1u << 6;
          return e.Break(*d, Off(*d).statistics);
        }),
      C("DESC-STAT-02",
        [] {
          auto d = vectors::WithStatistics();
          Expect e = Valid(*d);
          d->statistics.reserved = 1;
          return e.Break(*d, Off(*d).statistics + 4);
        }),
      C("DESC-STAT-03",
        [] {
          auto d = vectors::WithStatistics();
          Expect e = Valid(*d);
          d->statistics.reserved2[2] = 1;
          return e.Break(*d, Off(*d).statistics + 70);
        }),
      C("DESC-STAT-04",
        [] {
          auto d = vectors::WithStatistics();
          Expect e = Valid(*d);
          d->statistics.value_stddev = -1.0;
          return e.Break(*d, Off(*d).statistics + 56);
        }),
      C("DESC-STAT-05",
        [] {
          auto d = vectors::WithStatistics();  // 2:4
          Expect e = Valid(*d);
          d->statistics.nm_n = 5;
          return e.Break(*d, Off(*d).statistics + 64);
        }),
      C("DESC-STAT-06",
        [] {
          auto d = vectors::WithStatistics();
          Expect e = Valid(*d);
          d->statistics.sparsity_ratio = 1.5;
          return e.Break(*d, Off(*d).statistics + 16);
        }),
      C("DESC-STAT-07",
        [] {
          auto d = vectors::WithStatistics();
          Expect e = Valid(*d);
          d->statistics.has_nan = 2;
          return e.Break(*d, Off(*d).statistics + 66);
        }),
      C("DESC-STAT-08",
        [] {
          auto d = vectors::Coo();
          AddNnzStatistics(d.get());
          Expect e = Valid(*d);
          d->statistics.nnz += 1;
          return e.Break(*d, Off(*d).statistics + 8);
        }),

      // --- Quantization header and placement (§3.12). ---------------------
      C("QNT-HDR-01",
        [] {
          auto d = vectors::PerTensorInt8();
          Expect e = Valid(*d);
          PatchU32(e.broken, Off(*d).quantization, 3);
          return e.At(Off(*d).quantization);
        }),
      C("QNT-HDR-02",
        [] {
          auto d = vectors::PerTensorInt8();  // fixed size 16
          Expect e = Valid(*d);
          PatchU32(e.broken, Off(*d).quantization, 15);
          return e.At(Off(*d).quantization);
        }),
      C("QNT-HDR-03",
        [] {
          auto d = vectors::PerTensorInt8();
          Expect e = Valid(*d);
          e.broken[Scheme(*d)] = 0x00;
          return e.At(Scheme(*d));
        }),
      C("QNT-HDR-04",
        [] {
          auto d = vectors::PerTensorInt8();
          Expect e = Valid(*d);
          e.broken[Scheme(*d)] = 0x60;
          return e.At(Scheme(*d));
        }),
      C("QNT-HDR-05",
        [] {
          auto d = vectors::PerTensorInt8();
          Expect e = Valid(*d);
          e.broken[Scheme(*d)] = 0x06;
          return e.At(Scheme(*d));
        }),
      C("QNT-HDR-06",
        [] {
          auto d = vectors::PerTensorInt8();
          Expect e = Valid(*d);
          e.broken[Scheme(*d)] = 0xF0;
          return e.At(Scheme(*d));
        }),
      C("QNT-HDR-07",
        [] {
          auto d = vectors::PerTensorInt8();
          Expect e = Valid(*d);
          e.broken[Scheme(*d) + 1] = 0x02;
          return e.At(Scheme(*d) + 1);
        }),
      C("QNT-HDR-08",
        [] {
          auto d = vectors::PerTensorInt8();
          Expect e = Valid(*d);
          e.broken[Scheme(*d) + 1] = 0x00;
          return e.At(Scheme(*d) + 1);
        }),
      C("QNT-HDR-09",
        [] {
          auto d = vectors::PerTensorInt8();  // PTA: every flag reserved
          Expect e = Valid(*d);
          d->quantization.flags = 0x0001;
          return e.Break(*d, Scheme(*d) + 2);
        }),
      C("QNT-PLC-01",
        [] {
          auto d = vectors::PerChannelAsymInt8();  // 3 buffers
          Expect e = Valid(*d);
          d->quantization.scale_buffer_index = 3;
          return e.Break(*d, Scheme(*d) + 8);
        }),
      C("QNT-PLC-02",
        [] {
          auto d = vectors::PerChannelAsymInt8();
          Expect e = Valid(*d);
          d->quantization.scale_buffer_index = 0;
          return e.Break(*d, Scheme(*d) + 8);
        }),
      C("QNT-PLC-03",
        [] {
          auto d = QuantizedCoo();
          Expect e = Valid(*d);
          d->quantization.scale_buffer_index = 1;  // the COO indices
          return e.Break(*d, Scheme(*d) + 8);
        }),
      C("QNT-PLC-04",
        [] {
          auto d = vectors::PerChannelShared();  // [3 scales | 3 zps] = 24
          Expect e = Valid(*d);
          d->buffers[1].byte_size = 25;
          return e.Break(*d, Handle(*d, 1));
        }),
      C("QNT-PLC-05",
        [] {
          auto d = vectors::PerChannelSymInt4();
          Expect e = Valid(*d);
          d->buffers[1].device_tag = device_tag::kCuda;
          return e.Break(*d, Scheme(*d) + 8);
        }),

      // --- Per-tensor affine. ---------------------------------------------
      C("QNT-PTA-01",
        [] {
          auto d = vectors::PerTensorInt8();
          Expect e = Valid(*d);
          d->quantization.scale = 0.0f;
          return e.Break(*d, Scheme(*d) + 4);
        }),
      C("QNT-PTA-02",
        [] {
          auto d = vectors::PerTensorInt8();
          Expect e = Valid(*d);
          d->quantization.zero_point = 128;
          return e.Break(*d, Scheme(*d) + 8);
        }),
      C("QNT-PTA-03",
        [] {
          auto d = vectors::PerTensorInt8();
          Expect e = Valid(*d);
          d->quantization.reserved[3] = 1;
          return e.Break(*d, Scheme(*d) + 15);
        }),
      C("QNT-PTA-04",
        [] {
          auto d = vectors::PerTensorInt8();  // same size as int8
          Expect e = Valid(*d);
          d->type_tag = kFloat8E4M3;
          return e.Break(*d, 14);
        }),

      // --- Per-channel affine. --------------------------------------------
      C("QNT-PCA-01",
        [] {
          auto d = vectors::PerChannelAsymInt8();
          Expect e = Valid(*d);
          d->quantization.axis = 2;
          return e.Break(*d, Scheme(*d) + 4);
        }),
      C("QNT-PCA-02",
        [] {
          auto d = vectors::PerChannelAsymInt8();  // axis 0
          Expect e = Valid(*d);
          d->shape[0] = kDynamicDim;
          return e.Break(*d, Off(*d).shape(0));
        }),
      C("QNT-PCA-03",
        [] {
          auto d = vectors::PerChannelAsymInt8();
          Expect e = Valid(*d);
          d->quantization.scale_type_tag = kFloat16;
          return e.Break(*d, Scheme(*d) + 16);
        }),
      C("QNT-PCA-04",
        [] {
          auto d = vectors::PerChannelAsymInt8();
          Expect e = Valid(*d);
          d->quantization.reserved[1] = 1;
          return e.Break(*d, Scheme(*d) + 18);
        }),
      C("QNT-PCA-05",
        [] {
          auto d = vectors::PerChannelSymInt4();
          Expect e = Valid(*d);
          d->quantization.zero_point_buffer_index = 2;
          return e.Break(*d, Scheme(*d) + 12);
        }),
      C("QNT-PCA-06",
        [] {
          auto d = vectors::PerChannelAsymInt8();  // 3 buffers
          Expect e = Valid(*d);
          d->quantization.zero_point_buffer_index = 3;
          return e.Break(*d, Scheme(*d) + 12);
        }),
      C("QNT-PCA-07",
        [] {
          auto d = vectors::PerChannelAsymInt8();
          Expect e = Valid(*d);
          d->type_tag = kFloat8E4M3;
          return e.Break(*d, 14);
        }),
      C("QNT-PCA-08",
        [] {
          auto d = vectors::PerChannelAsymInt8();  // 4 scales
          Expect e = Valid(*d);
          d->buffers[1].byte_size = 15;
          return e.Break(*d, Handle(*d, 1));
        }),
      C("QNT-PCA-09",
        [] {
          auto d = vectors::PerChannelAsymInt8();  // 4 zero points
          Expect e = Valid(*d);
          d->buffers[2].byte_size = 17;
          return e.Break(*d, Handle(*d, 2));
        }),

      // --- Per-block affine. ----------------------------------------------
      C("QNT-PBA-01",
        [] {
          auto d = vectors::PerBlockAsymUInt4();
          Expect e = Valid(*d);
          d->quantization.axis = 2;
          return e.Break(*d, Scheme(*d) + 4);
        }),
      C("QNT-PBA-02",
        [] {
          auto d = vectors::PerBlockAsymUInt4();
          Expect e = Valid(*d);
          d->quantization.block_size = 48;
          return e.Break(*d, Scheme(*d) + 8);
        }),
      C("QNT-PBA-03",
        [] {
          auto d = vectors::PerBlockAsymUInt4();  // axis 1: 100
          Expect e = Valid(*d);
          d->quantization.block_size = 128;
          return e.Break(*d, Scheme(*d) + 8);
        }),
      C("QNT-PBA-04",
        [] {
          auto d = vectors::PerBlockAsymUInt4();
          Expect e = Valid(*d);
          d->shape[1] = kDynamicDim;
          return e.Break(*d, Off(*d).shape(1));
        }),
      C("QNT-PBA-05",
        [] {
          auto d = vectors::PerBlockAsymUInt4();
          Expect e = Valid(*d);
          d->quantization.scale_type_tag = kFloat64;
          return e.Break(*d, Scheme(*d) + 20);
        }),
      C("QNT-PBA-06",
        [] {
          auto d = vectors::PerBlockAsymUInt4();
          Expect e = Valid(*d);
          d->quantization.reserved[2] = 1;
          return e.Break(*d, Scheme(*d) + 23);
        }),
      C("QNT-PBA-07",
        [] {
          auto d = vectors::PerBlockSymInt8Bf16();
          Expect e = Valid(*d);
          d->quantization.zero_point_buffer_index = 5;
          return e.Break(*d, Scheme(*d) + 16);
        }),
      C("QNT-PBA-08",
        [] {
          auto d = vectors::PerBlockAsymUInt4();  // 3 buffers
          Expect e = Valid(*d);
          d->quantization.zero_point_buffer_index = 3;
          return e.Break(*d, Scheme(*d) + 16);
        }),
      C("QNT-PBA-09",
        [] {
          auto d = vectors::PerBlockAsymUInt4();
          Expect e = Valid(*d);
          d->type_tag = kInt16;
          return e.Break(*d, 14);
        }),
      C("QNT-PBA-10",
        [] {
          auto d = vectors::PerBlockAsymUInt4();  // 32 f16 scales
          Expect e = Valid(*d);
          d->buffers[1].byte_size = 63;
          return e.Break(*d, Handle(*d, 1));
        }),
      C("QNT-PBA-11",
        [] {
          auto d = vectors::PerBlockAsymUInt4();  // 32 i32 zero points
          Expect e = Valid(*d);
          d->buffers[2].byte_size = 127;
          return e.Break(*d, Handle(*d, 2));
        }),

      // --- NF4. -----------------------------------------------------------
      C("QNT-NF4-01",
        [] {
          auto d = vectors::Nf4UInt4();
          Expect e = Valid(*d);
          d->quantization.axis = 2;
          return e.Break(*d, Scheme(*d) + 4);
        }),
      C("QNT-NF4-02",
        [] {
          auto d = vectors::Nf4UInt4();
          Expect e = Valid(*d);
          d->quantization.block_size = 4;
          return e.Break(*d, Scheme(*d) + 8);
        }),
      C("QNT-NF4-03",
        [] {
          auto d = vectors::Nf4UInt4();  // axis 1: 64
          Expect e = Valid(*d);
          d->quantization.block_size = 128;
          return e.Break(*d, Scheme(*d) + 8);
        }),
      C("QNT-NF4-04",
        [] {
          auto d = vectors::Nf4UInt4();
          Expect e = Valid(*d);
          d->shape[1] = kDynamicDim;
          return e.Break(*d, Off(*d).shape(1));
        }),
      C("QNT-NF4-05",
        [] {
          // int4 storage, as in the seed 002 cookbook sample.
          auto d = vectors::Nf4UInt4();
          Expect e = Valid(*d);
          d->type_tag = kInt4;
          return e.Break(*d, 14);
        }),
      C("QNT-NF4-06",
        [] {
          auto d = vectors::Nf4UInt4();  // 128 absmax f32
          Expect e = Valid(*d);
          d->buffers[1].byte_size = 511;
          return e.Break(*d, Handle(*d, 1));
        }),

      // --- MXFP. ----------------------------------------------------------
      C("QNT-MX-01",
        [] {
          auto d = vectors::MxfpE4m3();
          Expect e = Valid(*d);
          d->quantization.axis = 2;
          return e.Break(*d, Scheme(*d) + 4);
        }),
      C("QNT-MX-02",
        [] {
          auto d = vectors::MxfpE4m3();
          Expect e = Valid(*d);
          d->quantization.block_size = 8;
          return e.Break(*d, Scheme(*d) + 8);
        }),
      C("QNT-MX-03",
        [] {
          auto d = vectors::MxfpE4m3();
          Expect e = Valid(*d);
          d->shape[1] = kDynamicDim;
          return e.Break(*d, Off(*d).shape(1));
        }),
      C("QNT-MX-04",
        [] {
          auto d = vectors::MxfpE4m3();  // axis 1: 64
          Expect e = Valid(*d);
          d->quantization.block_size = 128;
          return e.Break(*d, Scheme(*d) + 8);
        }),
      C("QNT-MX-05",
        [] {
          auto d = vectors::MxfpE4m3();
          Expect e = Valid(*d);
          d->type_tag = kUInt8;
          return e.Break(*d, 14);
        }),
      C("QNT-MX-06",
        [] {
          auto d = vectors::MxfpE4m3();  // 4 rows × 2 blocks
          Expect e = Valid(*d);
          d->buffers[1].byte_size = 9;
          return e.Break(*d, Handle(*d, 1));
        }),

      // --- This library's limits (REJECT-RULES.md §5). --------------------
      C("LIMIT-DESC-BYTES",
        [strict] {
          Expect e = Valid(*Base(), strict);
          ParseOptions o = strict;
          o.limits.max_descriptor_bytes =
              static_cast<uint32_t>(e.valid.size() - 1);
          return e.Limits(o).At(6);
        }),
      C("LIMIT-RANK",
        [strict] {
          Expect e = Valid(*Base(), strict);  // rank 2
          ParseOptions o = strict;
          o.limits.max_rank = 1;
          return e.Limits(o).At(16);
        }),
      C("LIMIT-QNT-BYTES",
        [strict] {
          auto d = vectors::PerTensorInt8();  // quantization_length 16
          Expect e = Valid(*d, strict);
          ParseOptions o = strict;
          o.limits.max_quantization_bytes = 15;
          return e.Limits(o).At(Off(*d).quantization);
        }),
      C("LIMIT-EXT-DATA",
        [agreed] {
          auto d = vectors::ExtensionLayout();  // 5 bytes of data
          Expect e = Valid(*d, agreed);
          ParseOptions o = agreed;
          o.limits.max_extension_data_bytes = 4;
          // Reported at extension_data_length (layout + 8).
          return e.Limits(o).At(Off(*d).layout + 8);
        }),
  };
}

class RuleTest : public ::testing::TestWithParam<RuleCase> {};

TEST_P(RuleTest, Rejects) { GetParam().run(GetParam().id); }

INSTANTIATE_TEST_SUITE_P(
    Rules, RuleTest, ::testing::ValuesIn(AllCases()),
    [](const ::testing::TestParamInfo<RuleCase>& info) {
      return absl::StrReplaceAll(info.param.id, {{"-", "_"}});
    });

// --- Coverage ---------------------------------------------------------------

// The rules of the catalog with no test that expects their id, from the one
// list every coverage check reads (tests/rule_test_exceptions.txt, also read
// by tests/rule_catalog_test.sh): rule id -> reason.
std::map<std::string, std::string> Exceptions() {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  const std::string path = std::string(srcdir != nullptr ? srcdir : ".") +
                           "/hurray_cpp/tests/rule_test_exceptions.txt";
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << "cannot read " << path;
  std::map<std::string, std::string> out;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const size_t space = line.find(' ');
    if (space == std::string::npos) {
      ADD_FAILURE() << "no reason: " << line;
      continue;
    }
    out[line.substr(0, space)] = line.substr(space + 1);
  }
  return out;
}

// The rules the table must cover: every descriptor-level row, except the
// listed exceptions. kData and kContainer rows are tested where their data
// is seen (dequant/, parser data checks, stream/); tests/rule_catalog_test.sh
// demands a test for those.
bool InScope(const RuleInfo& info,
             const std::map<std::string, std::string>& exceptions) {
  return info.level == RuleLevel::kDescriptor &&
         exceptions.count(std::string(info.id)) == 0;
}

TEST(RuleCoverage, EveryDescriptorRuleHasExactlyOneCase) {
  const std::map<std::string, std::string> exceptions = Exceptions();
  ASSERT_FALSE(exceptions.empty());
  std::map<std::string, int> cases;
  for (const RuleCase& c : AllCases()) ++cases[c.id];
  for (const RuleInfo& info : AllRules()) {
    const std::string id(info.id);
    const auto it = cases.find(id);
    const int n = it == cases.end() ? 0 : it->second;
    if (InScope(info, exceptions)) {
      EXPECT_EQ(n, 1) << id << ": add one case to AllCases() in "
                      << "tests/rule_test.cc";
    } else {
      EXPECT_EQ(n, 0) << id << " is out of scope for this table";
    }
  }
  for (const auto& [id, n] : cases) {
    EXPECT_TRUE(RuleFromId(id).has_value()) << id << " is not a rule";
  }
}

// A descriptor-level rule is excepted only when this reader cannot reach it,
// and a NotReachable test below pins that (its reason names the test).
TEST(RuleCoverage, DescriptorExceptionsArePinnedUnreachable) {
  int descriptor_exceptions = 0;
  for (const auto& [id, reason] : Exceptions()) {
    const std::optional<Rule> rule = RuleFromId(id);
    ASSERT_TRUE(rule.has_value()) << id << " is not a rule";
    if (GetRuleInfo(*rule).level != RuleLevel::kDescriptor) continue;
    ++descriptor_exceptions;
    EXPECT_NE(reason.find("NotReachable."), std::string::npos)
        << id << ": a descriptor rule is excepted only when unreachable";
  }
  EXPECT_GE(descriptor_exceptions, 1);
}

// --- TYPE-05 and DESC-HDR-09 cannot fire ------------------------------------
//
// TYPE-05 rejects a Tier-2 type the reader does not implement, DESC-HDR-09 a
// quantized descriptor when the reader has no quantization support. This
// reader implements every Tier-2 type and every quantization scheme, so both
// rules are unreachable; these tests fail if that stops being true.

TEST(NotReachable, Type05EveryTier2TypeDecodesAsADenseVector) {
  const uint8_t kTier2[] = {kFloat8E4M3, kFloat8E5M2, kFloat8E8M0, kFloat4E2M1,
                            kFloat6E2M3, kFloat6E3M2, kFloat128,   kInt4,
                            kUInt4,      kInt2,       kUInt2,      kComplex64,
                            kComplex128};
  EXPECT_EQ(std::size(kTier2), 13u);  // 0x40–0x46, 0x48–0x4B, 0x50, 0x51
  for (const uint8_t tag : kTier2) {
    SCOPED_TRACE(ElementTypeName(tag));
    const ElementTypeInfo* info = FindElementType(tag);
    ASSERT_NE(info, nullptr);
    EXPECT_EQ(info->tier, 2);
    for (const uint8_t layout : {lt::kRowMajor, lt::kColumnMajor}) {
      const Desc d = vectors::Dense(tag, {5, 7}, layout);
      const absl::StatusOr<TensorDescriptor> got =
          Decode(vectors::Bytes(*d), ParseOptions());
      ASSERT_TRUE(got.ok()) << got.status();
      EXPECT_EQ(got->type_tag, tag);
      EXPECT_TRUE(*got == *d);
    }
  }
  // No type tag at all makes the reader answer TYPE-05.
  for (int tag = 0; tag < 256; ++tag) {
    auto d = Base();
    d->type_tag = static_cast<uint8_t>(tag);
    Bytes b = vectors::Bytes(*d);
    for (const Mode m : {Mode::kStrict, Mode::kPermissive}) {
      const std::string got = DecodeOutcome(b, InMode(ParseOptions(), m));
      EXPECT_EQ(got.rfind("TYPE-05@", 0), std::string::npos) << tag;
    }
  }
}

TEST(NotReachable, DescHdr09QuantizedDescriptorsAreAccepted) {
  std::vector<Desc> quantized;
  quantized.push_back(vectors::PerTensorInt8());
  quantized.push_back(vectors::PerChannelAsymInt8());
  quantized.push_back(vectors::PerChannelSymInt4());
  quantized.push_back(vectors::PerChannelShared());
  quantized.push_back(vectors::PerBlockAsymUInt4());
  quantized.push_back(vectors::PerBlockSymInt8Bf16());
  quantized.push_back(vectors::Nf4UInt4());
  quantized.push_back(vectors::MxfpE4m3());
  quantized.push_back(vectors::MxfpFp4());
  quantized.push_back(vectors::BlockPaged());
  quantized.push_back(vectors::Everything());
  for (const Desc& d : quantized) {
    SCOPED_TRACE(SchemeName(d->quantization.scheme_tag));
    const absl::StatusOr<TensorDescriptor> got =
        Decode(vectors::Bytes(*d), ParseOptions());
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_TRUE(got->has(flag::kHasQuantization));
    EXPECT_TRUE(got->quantization == d->quantization);
  }
  // No scheme tag or version makes the reader answer DESC-HDR-09.
  const Desc d = vectors::PerTensorInt8();
  const uint64_t at = Scheme(*d);
  for (int v = 0; v < 256; ++v) {
    for (const uint64_t field : {at, at + 1}) {
      Bytes b = vectors::Bytes(*d);
      b[field] = static_cast<uint8_t>(v);
      for (const Mode m : {Mode::kStrict, Mode::kPermissive}) {
        const std::string got = DecodeOutcome(b, InMode(ParseOptions(), m));
        EXPECT_EQ(got.rfind("DESC-HDR-09@", 0), std::string::npos) << v;
      }
    }
  }
}

// The wire layout the cases compute offsets from (REJECT-RULES.md §2.1–2.4)
// agrees with the encoder: header 20, shape at 20 + 8k, byte_offset at
// 20 + 8r, layout fields at 28 + 8r, handles at buffer_table + 1 + 16i.
TEST(WireLayout, OffsetsFollowTheCheatSheet) {
  const Desc d = vectors::PerChannelAsymInt8();  // int8 [4, 8], 3 buffers
  const Bytes b = vectors::Bytes(*d);
  const PartOffsets o = Off(*d);
  EXPECT_EQ(o.shape(1), 28u);
  EXPECT_EQ(o.byte_offset(), 36u);
  EXPECT_EQ(o.layout, 44u);
  EXPECT_EQ(o.buffer_table, 44u);
  EXPECT_EQ(b[o.buffer_table], 3);
  EXPECT_EQ(o.handle(2), 44u + 1 + 32);
  EXPECT_EQ(o.quantization, 44u + 1 + 48);
  EXPECT_EQ(wire::LoadU32(b.data() + o.quantization), 20u);
  EXPECT_EQ(b[Scheme(*d)], scheme_tag::kPerChannelAffine);
  EXPECT_EQ(wire::LoadU32(b.data() + Scheme(*d) + 12), 2u);  // zp index
  EXPECT_EQ(o.end, b.size());
  const Desc t = vectors::TiledNested();
  const Bytes tb = vectors::Bytes(*t);
  EXPECT_EQ(tb[TileEnums(*t, 0) + 1], lt::kTiled);
  EXPECT_EQ(tb[TileEnums(*t, 1)], lt::kColumnMajor);
  EXPECT_EQ(TileEnums(*t, 1) + 4, Off(*t).buffer_table);
}

}  // namespace
}  // namespace hurray
