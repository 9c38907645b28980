// Fuzz target: structure-aware descriptors. A FuzzedDataProvider picks a
// valid descriptor of some layout and scheme (every vectors::AllValid()
// entry — every layout tag, every scheme, every optional section — a dense
// descriptor of a chosen type and shape, or one quantized through a scheme
// factory), then changes one field to a chosen value (or none), and the
// result goes through the validator, the encoder and the decoder, in strict
// and permissive mode.
//
// Properties (any violation aborts):
//   * operator== is reflexive and symmetric (the changed descriptor against
//     the base); LayoutName, ElementTypeName and SchemeName name anything.
//   * Validate() never crashes; strict acceptance implies permissive
//     acceptance. The unchanged base descriptors are valid in strict mode.
//   * Encode() succeeds exactly when ComputeOffsets() does, with the length
//     it predicts.
//   * Decoding the encoded bytes: the framing pass (validate off) and the
//     validating pass consume the same bytes, and a framing rejection stands
//     as it is; a done descriptor re-encodes to the very same bytes.
//   * Identity: whenever the framing pass reads back the descriptor that was
//     encoded (operator==), the validating decoder judges it as Validate()
//     does in memory (same rule id and offset); and every descriptor the
//     strict validator accepts is read back equal to what was encoded.
//   * Strict-accepted bytes are permissive-accepted, to an equal descriptor.
//   * Every accepted dense descriptor is addressable (parser/addressing.h):
//     the row-major walk visits each element once, at Offset(index),
//     inside the offset range and inside buffer 0; Fill() in runs gives
//     the same offsets.
#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "fuzz/fuzz_util.h"
#include "parser/addressing.h"
#include "parser/decoder.h"
#include "parser/descriptor.h"
#include "parser/element_type.h"
#include "parser/encoder.h"
#include "parser/options.h"
#include "parser/quantization.h"
#include "parser/rules.h"
#include "parser/validator.h"
#include "tests/vectors.h"

namespace hurray::fuzz {
namespace {

// Limits on lengths the encoder allocates for (quantization padding,
// extension data, trailing bytes): the encoded descriptor stays small.
constexpr uint32_t kMaxPadding = 4096;

const std::vector<vectors::Named>& Bases() {
  static const std::vector<vectors::Named>* bases =
      new std::vector<vectors::Named>(vectors::AllValid());
  return *bases;
}

// An interesting value of an unsigned field, or a raw one.
template <typename T>
T Pick(FuzzedDataProvider& in) {
  static constexpr uint64_t kValues[] = {0,   1,   2,   3,    4,     5,    7,
                                         8,   16,  31,  32,   63,    64,   127,
                                         128, 255, 256, 4096, 65535, 65536};
  switch (in.ConsumeIntegralInRange(0, 3)) {
    case 0:
      return static_cast<T>(in.PickValueInArray(kValues));
    case 1:
      return std::numeric_limits<T>::max() -
             static_cast<T>(in.ConsumeIntegralInRange(0, 2));
    default:
      return in.ConsumeIntegral<T>();
  }
}

double PickDouble(FuzzedDataProvider& in) {
  static constexpr double kValues[] = {
      0.0,
      -0.0,
      1.0,
      -1.0,
      0.5,
      2.0,
      std::numeric_limits<double>::infinity(),
      -std::numeric_limits<double>::infinity(),
      std::numeric_limits<double>::quiet_NaN()};
  if (in.ConsumeBool()) return in.PickValueInArray(kValues);
  const uint64_t bits = in.ConsumeIntegral<uint64_t>();
  double v;
  std::memcpy(&v, &bits, 8);
  return v;
}

float PickFloat(FuzzedDataProvider& in) {
  static constexpr float kValues[] = {0.0f,
                                      -0.0f,
                                      1.0f,
                                      0.05f,
                                      -2.0f,
                                      std::numeric_limits<float>::infinity(),
                                      std::numeric_limits<float>::quiet_NaN(),
                                      std::numeric_limits<float>::denorm_min()};
  if (in.ConsumeBool()) return in.PickValueInArray(kValues);
  const uint32_t bits = in.ConsumeIntegral<uint32_t>();
  float v;
  std::memcpy(&v, &bits, 4);
  return v;
}

// A dense descriptor of a chosen type, shape and dense layout: row-major,
// column-major, or Morton / Hilbert with the bits, order and buffer their
// shape needs (layouts/morton.md, layouts/hilbert.md).
std::unique_ptr<TensorDescriptor> DenseFrom(FuzzedDataProvider& in) {
  static constexpr uint8_t kLayouts[] = {
      layout_tag::kRowMajor, layout_tag::kColumnMajor, layout_tag::kMorton,
      layout_tag::kHilbert};
  std::vector<uint64_t> shape(in.ConsumeIntegralInRange(0, 4));
  for (uint64_t& n : shape) {
    n = in.ConsumeIntegralInRange(0, 15) == 0
            ? kDynamicDim
            : in.ConsumeIntegralInRange<uint64_t>(0, 40);
  }
  const uint8_t type = in.ConsumeIntegral<uint8_t>();
  const uint8_t layout = in.PickValueInArray(kLayouts);
  auto d = vectors::Dense(type, shape, layout);
  uint32_t total_bits = 0, order = 1;
  for (uint32_t k = 0; k < d->rank; ++k) {
    const uint64_t n = d->shape[k] == kDynamicDim ? 1 : d->shape[k];
    uint32_t bits = 0;
    while (bits < 40 && (uint64_t{1} << bits) < n) ++bits;
    d->layout.morton_bits[k] = bits;
    total_bits += bits;
    order = std::max(order, bits);
  }
  if (layout == layout_tag::kMorton && total_bits < 40) {
    StorageBytes(type, uint64_t{1} << total_bits, &d->buffers[0].byte_size);
  } else if (layout == layout_tag::kHilbert) {
    d->layout.hilbert_order = order;
    d->layout.hilbert_rank = d->rank;
    if (order * d->rank < 40) {
      StorageBytes(type, uint64_t{1} << (order * d->rank),
                   &d->buffers[0].byte_size);
    }
  }
  return d;
}

// A quantization descriptor from a scheme factory, with its parameter
// buffers appended to the table (sizes chosen, not computed: the validator
// judges them).
void QuantizeFrom(FuzzedDataProvider& in, TensorDescriptor* d) {
  const uint32_t axis = in.ConsumeIntegralInRange<uint32_t>(0, 4);
  const uint32_t block = Pick<uint32_t>(in);
  static constexpr uint8_t kScaleTypes[] = {
      type_tag::kFloat16, type_tag::kBFloat16, type_tag::kFloat32, 0x10};
  const uint8_t scale_type = in.PickValueInArray(kScaleTypes);
  const uint32_t first = d->buffer_count;
  std::optional<QuantizationDescriptor> q;
  switch (in.ConsumeIntegralInRange(0, 6)) {
    case 0: {
      auto v = PerTensorAffine::Create(PickFloat(in), Pick<int32_t>(in));
      if (v.ok()) q = *v;
      break;
    }
    case 1: {
      auto v = PerChannelAffine::Symmetric(axis, first);
      if (v.ok()) q = *v;
      break;
    }
    case 2: {
      auto v = PerChannelAffine::Asymmetric(
          axis, first, in.ConsumeBool() ? first : first + 1);
      if (v.ok()) q = *v;
      break;
    }
    case 3: {
      auto v = PerBlockAffine::Symmetric(axis, block, first, scale_type);
      if (v.ok()) q = *v;
      break;
    }
    case 4: {
      auto v =
          PerBlockAffine::Asymmetric(axis, block, first, first + 1, scale_type);
      if (v.ok()) q = *v;
      break;
    }
    case 5: {
      auto v = Nf4::Create(axis, block, first);
      if (v.ok()) q = *v;
      break;
    }
    default: {
      auto v = Mxfp::Create(axis, block, first);
      if (v.ok()) q = *v;
      break;
    }
  }
  if (!q.has_value()) return;
  d->flags |= flag::kHasQuantization;
  d->quantization = *q;
  const uint32_t params = in.ConsumeIntegralInRange<uint32_t>(0, 2);
  for (uint32_t i = 0; i < params && d->buffer_count < kMaxBuffers; ++i) {
    BufferHandle h;
    h.byte_size = in.ConsumeIntegralInRange<uint64_t>(0, 512);
    d->buffers[d->buffer_count++] = h;
  }
}

uint32_t Index(FuzzedDataProvider& in, uint32_t n) {
  return in.ConsumeIntegralInRange<uint32_t>(0, n == 0 ? 0 : n - 1);
}

// Changes one field of `d` to a chosen value.
void MutateOneField(FuzzedDataProvider& in, TensorDescriptor* d) {
  const uint32_t k = Index(in, kMaxRank);  // a dimension, used or not
  const uint32_t level = Index(in, kMaxTiledDepth);
  const uint32_t b = Index(in, kMaxBuffers);
  LayoutFields& l = d->layout;
  QuantizationDescriptor& q = d->quantization;
  Statistics& s = d->statistics;
  ExtensionType& e = d->extension_type;
  switch (in.ConsumeIntegralInRange(0, 79)) {
    case 0:
      d->version_major = Pick<uint8_t>(in);
      break;
    case 1:
      d->version_minor = Pick<uint8_t>(in);
      break;
    case 2:
      d->flags ^= 1u << Index(in, 32);
      break;
    case 3:
      d->type_tag = Pick<uint8_t>(in);
      break;
    case 4:
      d->layout_tag = Pick<uint8_t>(in);
      break;
    case 5:
      d->rank = in.ConsumeIntegralInRange<uint32_t>(0, kMaxRank + 2);
      break;
    case 6:
      d->shape[k] = Pick<uint64_t>(in);
      break;
    case 7:
      d->byte_offset = Pick<uint64_t>(in);
      break;
    case 8:
      l.strides[k] = static_cast<int64_t>(Pick<uint64_t>(in));
      break;
    case 9:
      l.tiled_depth =
          in.ConsumeIntegralInRange<uint32_t>(0, kMaxTiledDepth + 1);
      break;
    case 10:
      l.tiled[level].outer_layout = Pick<uint8_t>(in);
      break;
    case 11:
      l.tiled[level].inner_layout = Pick<uint8_t>(in);
      break;
    case 12:
      l.tiled[level].reserved[Index(in, 2)] = Pick<uint8_t>(in);
      break;
    case 13:
      l.tiled[level].tile_shape[k] = Pick<uint64_t>(in);
      break;
    case 14:
      l.tiled[level].outer_strides[k] =
          static_cast<int64_t>(Pick<uint64_t>(in));
      break;
    case 15:
      l.tiled[level].inner_strides[k] =
          static_cast<int64_t>(Pick<uint64_t>(in));
      break;
    case 16:
      l.morton_bits[k] = Pick<uint32_t>(in);
      break;
    case 17:
      l.nnz = Pick<uint64_t>(in);
      break;
    case 18:
      l.is_sorted = Pick<uint8_t>(in);
      break;
    case 19:
      l.sparse_reserved[Index(in, 8)] = Pick<uint8_t>(in);
      break;
    case 20:
      l.mode_order[k] = Pick<uint32_t>(in);
      break;
    case 21:
      l.page_size = Pick<uint32_t>(in);
      break;
    case 22:
      l.num_pages = Pick<uint64_t>(in);
      break;
    case 23:
      l.paged_axis = Pick<uint32_t>(in);
      break;
    case 24:
      l.num_seqs = Pick<uint32_t>(in);
      break;
    case 25:
      l.kv_role = Pick<uint8_t>(in);
      break;
    case 26:
      l.layer_index = Pick<uint32_t>(in);
      break;
    case 27:
      l.block_table_index_type = Pick<uint8_t>(in);
      break;
    case 28:
      l.paged_reserved[Index(in, 6)] = Pick<uint8_t>(in);
      break;
    case 29:
      l.composition_rule = Pick<uint8_t>(in);
      break;
    case 30:
      l.combine_op = Pick<uint8_t>(in);
      break;
    case 31:
      l.composite_reserved[Index(in, 2)] = Pick<uint8_t>(in);
      break;
    case 32:
      l.member_count = Pick<uint32_t>(in);
      break;
    case 33:
      l.hilbert_order = Pick<uint32_t>(in);
      break;
    case 34:
      l.hilbert_rank = Pick<uint32_t>(in);
      break;
    case 35:
      l.extension_layout_id = Pick<uint64_t>(in);
      break;
    case 36:
      l.extension_data_length = Pick<uint32_t>(in) % (kMaxPadding + 1);
      break;
    case 37:
      d->buffer_count = in.ConsumeIntegralInRange<uint32_t>(0, kMaxBuffers);
      break;
    case 38:
      d->buffers[b].byte_size = Pick<uint64_t>(in);
      break;
    case 39:
      d->buffers[b].alignment = Pick<uint32_t>(in);
      break;
    case 40:
      d->buffers[b].device_tag = Pick<uint8_t>(in);
      break;
    case 41:
      d->buffers[b].sync_mode = Pick<uint8_t>(in);
      break;
    case 42:
      d->buffers[b].memory_class = Pick<uint8_t>(in);
      break;
    case 43:
      d->buffers[b].reserved = Pick<uint8_t>(in);
      break;
    case 44:
      q.scheme_tag = Pick<uint8_t>(in);
      break;
    case 45:
      q.scheme_version = Pick<uint8_t>(in);
      break;
    case 46:
      q.flags = Pick<uint16_t>(in);
      break;
    case 47:
      q.scale = PickFloat(in);
      break;
    case 48:
      q.zero_point = static_cast<int32_t>(Pick<uint32_t>(in));
      break;
    case 49:
      q.axis = Pick<uint32_t>(in);
      break;
    case 50:
      q.block_size = Pick<uint32_t>(in);
      break;
    case 51:
      q.scale_buffer_index = Pick<uint32_t>(in);
      break;
    case 52:
      q.zero_point_buffer_index = Pick<uint32_t>(in);
      break;
    case 53:
      q.scale_type_tag = Pick<uint8_t>(in);
      break;
    case 54:
      q.reserved[Index(in, 4)] = Pick<uint8_t>(in);
      break;
    case 55:
      q.extra_length = Pick<uint32_t>(in) % (kMaxPadding + 1);
      break;
    case 56:
      d->shard.parent_shape[k] = Pick<uint64_t>(in);
      break;
    case 57:
      d->shard.shard_offset[k] = Pick<uint64_t>(in);
      break;
    case 58:
      s.computed_mask = Pick<uint32_t>(in);
      break;
    case 59:
      s.reserved = Pick<uint32_t>(in);
      break;
    case 60:
      s.nnz = Pick<uint64_t>(in);
      break;
    case 61: {
      double* fields[] = {&s.sparsity_ratio, &s.value_min,  &s.value_max,
                          &s.value_abs_max,  &s.value_mean, &s.value_stddev};
      *fields[Index(in, 6)] = PickDouble(in);
      break;
    }
    case 62:
      (in.ConsumeBool() ? s.nm_n : s.nm_m) = Pick<uint8_t>(in);
      break;
    case 63:
      (in.ConsumeBool() ? s.has_nan : s.has_inf) = Pick<uint8_t>(in);
      break;
    case 64:
      s.reserved2[Index(in, 4)] = Pick<uint8_t>(in);
      break;
    case 65:
      e.bit_width = Pick<uint32_t>(in);
      break;
    case 66:
      e.packing_factor = Pick<uint8_t>(in);
      break;
    case 67:
      (in.ConsumeBool() ? e.is_float : e.is_signed) = Pick<uint8_t>(in);
      break;
    case 68: {
      uint8_t* fields[] = {&e.sign_bits, &e.exponent_bits, &e.mantissa_bits};
      *fields[Index(in, 3)] = Pick<uint8_t>(in);
      break;
    }
    case 69:
      e.reserved[Index(in, 2)] = Pick<uint8_t>(in);
      break;
    case 70:
      e.exponent_bias = Pick<uint32_t>(in);
      break;
    case 71:
      (in.ConsumeBool() ? e.has_nan : e.has_inf) = Pick<uint8_t>(in);
      break;
    case 72:
      e.reserved2[Index(in, 2)] = Pick<uint8_t>(in);
      break;
    case 73:
      d->composite_member.member_role = Pick<uint8_t>(in);
      break;
    case 74:
      d->composite_member.reserved[Index(in, 15)] = Pick<uint8_t>(in);
      break;
    case 75:
      d->trailing_length = Pick<uint32_t>(in) % (kMaxPadding + 1);
      if (in.ConsumeBool()) d->version_minor = kSupportedMinor + 1;
      break;
    case 76:
      QuantizeFrom(in, d);
      break;
    case 77:
      d->rank = in.ConsumeIntegralInRange<uint32_t>(0, 6);
      break;
    case 78:
      d->buffers[Index(in, d->buffer_count)].byte_size +=
          in.ConsumeBool() ? 1 : -1;
      break;
    default:
      break;  // no change
  }
}

absl::Status ValidateAs(const TensorDescriptor& d, uint32_t length,
                        const ParseOptions& options) {
  auto copy = std::make_unique<TensorDescriptor>(d);
  copy->descriptor_length = length;
  return Validate(*copy, options);
}

void SameVerdict(const absl::Status& in_memory, const OneShot& decoded) {
  HURRAY_FUZZ_CHECK(in_memory.ok() == decoded.done());
  if (in_memory.ok()) return;
  const std::optional<absl::string_view> id = RuleIdOf(in_memory);
  const std::optional<uint64_t> at = OffsetOf(in_memory);
  HURRAY_FUZZ_CHECK(id.has_value() && at.has_value());
  if (*id != RuleId(decoded.rejection().rule) ||
      *at != decoded.rejection().offset) {
    std::fprintf(stderr, "Validate: %s; decoder: %s\n",
                 in_memory.ToString().c_str(),
                 Describe(*decoded.decoder).c_str());
    HURRAY_FUZZ_CHECK(false);
  }
}

// A valid dense descriptor is addressable (parser/addressing.h: Create
// fails only for what the validator rejects, a dynamic dimension or an
// unsizeable type); walking it in row-major order gives Offset() of each
// index, inside [min_offset, max_offset] and inside buffer 0.
void CheckAddressing(const TensorDescriptor& d) {
  uint64_t count = 0;
  if (!layout_tag::IsDense(d.layout_tag) || d.ElementBits() == 0 ||
      !d.ElementCount(&count)) {
    return;  // not addressable by contract
  }
  const absl::StatusOr<ElementAddresser> a = ElementAddresser::Create(d);
  if (!a.ok()) {
    std::fprintf(stderr, "ElementAddresser::Create: %s\n",
                 a.status().ToString().c_str());
    HURRAY_FUZZ_CHECK(false);
  }
  HURRAY_FUZZ_CHECK(a->empty() == (count == 0));
  if (count > 4096) return;  // bounded work per input
  const unsigned __int128 buffer_bits =
      static_cast<unsigned __int128>(d.buffers[0].byte_size) * 8;
  HURRAY_FUZZ_CHECK(a->rank() == d.rank && a->layout_tag() == d.layout_tag &&
                    a->byte_offset() == d.byte_offset);
  std::vector<int64_t> offsets;
  uint64_t n = 0;
  for (RowMajorWalker w(*a); !w.done(); w.Next(), ++n) {
    offsets.push_back(w.offset());
    HURRAY_FUZZ_CHECK(n < count);
    HURRAY_FUZZ_CHECK(a->Contains(w.index()));
    HURRAY_FUZZ_CHECK(w.offset() == a->Offset(w.index()));
    HURRAY_FUZZ_CHECK(w.offset() >= a->min_offset() &&
                      w.offset() <= a->max_offset());
    HURRAY_FUZZ_CHECK(a->BitOffsetOf(w.offset()) +
                          uint64_t{a->element_bits()} <=
                      buffer_bits);
  }
  HURRAY_FUZZ_CHECK(n == count);
  // Fill() in runs of 7 gives the same offsets.
  std::vector<int64_t> filled;
  RowMajorWalker w(*a);
  int64_t run[7];
  while (!w.done()) {
    const size_t got = w.Fill(absl::MakeSpan(run));
    HURRAY_FUZZ_CHECK(got > 0 && got <= 7);
    filled.insert(filled.end(), run, run + got);
    HURRAY_FUZZ_CHECK(filled.size() <= count);
  }
  HURRAY_FUZZ_CHECK(filled == offsets);
}

// Decodes `bytes` (encoded from `d`) in one mode; the validated outcome.
// `extension_data`: what the encoder was given for an extension layout.
OneShot CheckMode(const TensorDescriptor& d, const std::vector<uint8_t>& bytes,
                  const std::vector<uint8_t>& extension_data,
                  ParseOptions options) {
  options.validate = false;
  const OneShot framing = DecodeOneShot(bytes, options);
  options.validate = true;
  OneShot validated = DecodeOneShot(bytes, options);
  HURRAY_FUZZ_CHECK(framing.consumed == validated.consumed);
  if (!framing.done()) {
    HURRAY_FUZZ_CHECK(!validated.done());
    HURRAY_FUZZ_CHECK(framing.rejection() == validated.rejection());
    return validated;
  }
  const TensorDescriptor& back = framing.descriptor();
  HURRAY_FUZZ_CHECK(framing.consumed == bytes.size());
  if (validated.done()) HURRAY_FUZZ_CHECK(validated.descriptor() == back);
  if (back.layout_parsed) {
    const absl::StatusOr<std::vector<uint8_t>> again =
        Encode(back, extension_data);
    HURRAY_FUZZ_CHECK(again.ok() && *again == bytes);
  }
  if (back == d) {
    SameVerdict(ValidateAs(d, static_cast<uint32_t>(bytes.size()), options),
                validated);
  }
  if (validated.done() && options.mode == Mode::kStrict) {
    HURRAY_FUZZ_CHECK(back == d);
  }
  if (validated.done()) CheckAddressing(validated.descriptor());
  return validated;
}

// `d` as the wire can carry it: the quantization record holds the fields of
// every scheme, the encoder writes those of q's scheme only.
std::unique_ptr<TensorDescriptor> Canonical(const TensorDescriptor& d) {
  auto c = std::make_unique<TensorDescriptor>(d);
  if (d.has(flag::kHasQuantization)) {
    const std::vector<uint8_t> q = d.quantization.EncodeToVector();
    ParseQuantizationFields(q.data(), static_cast<uint32_t>(q.size()),
                            &c->quantization);
  }
  return c;
}

void Run(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  const std::vector<vectors::Named>& bases = Bases();
  const uint32_t pick = in.ConsumeIntegralInRange<uint32_t>(
      0, static_cast<uint32_t>(bases.size()) + 1);
  std::unique_ptr<TensorDescriptor> d;
  bool valid_base = false;
  if (pick < bases.size()) {
    d = std::make_unique<TensorDescriptor>(*bases[pick].descriptor);
    valid_base = true;
  } else {
    d = DenseFrom(in);
    if (pick > bases.size()) QuantizeFrom(in, d.get());
  }
  const bool mutate = in.ConsumeBool();
  std::unique_ptr<TensorDescriptor> before;
  if (mutate) {
    before = std::make_unique<TensorDescriptor>(*d);
    MutateOneField(in, d.get());
    // operator== is reflexive and symmetric, changed field or not.
    HURRAY_FUZZ_CHECK(*d == *d);
    HURRAY_FUZZ_CHECK((*d == *before) == (*before == *d));
  }
  // The names of what the descriptor holds: never null or empty.
  HURRAY_FUZZ_CHECK(LayoutName(d->layout_tag)[0] != '\0');
  HURRAY_FUZZ_CHECK(!ElementTypeName(d->type_tag).empty());
  HURRAY_FUZZ_CHECK(SchemeName(d->quantization.scheme_tag)[0] != '\0');

  const ParseOptions strict = vectors::AgreedOptions(Mode::kStrict);
  const ParseOptions permissive = vectors::AgreedOptions(Mode::kPermissive);
  const absl::Status strict_ok = Validate(*d, strict);
  const absl::Status permissive_ok = Validate(*d, permissive);
  if (strict_ok.ok()) HURRAY_FUZZ_CHECK(permissive_ok.ok());

  const absl::StatusOr<PartOffsets> offsets = ComputeOffsets(*d);
  const std::vector<uint8_t> extension_data =
      in.ConsumeBytes<uint8_t>(d->layout.extension_data_length);
  const absl::StatusOr<std::vector<uint8_t>> bytes = Encode(*d, extension_data);
  HURRAY_FUZZ_CHECK(bytes.ok() == offsets.ok());
  if (!bytes.ok()) return;
  HURRAY_FUZZ_CHECK(bytes->size() ==
                    offsets->end + uint64_t{d->trailing_length});
  if (valid_base && !mutate) {
    HURRAY_FUZZ_CHECK(strict_ok.ok());
  }

  const std::unique_ptr<TensorDescriptor> wire = Canonical(*d);
  const OneShot s = CheckMode(*wire, *bytes, extension_data, strict);
  const OneShot p = CheckMode(*wire, *bytes, extension_data, permissive);
  if (s.done()) {
    HURRAY_FUZZ_CHECK(p.done());
    HURRAY_FUZZ_CHECK(p.descriptor() == s.descriptor());
  }
}

}  // namespace
}  // namespace hurray::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  hurray::fuzz::Run(data, size);
  return 0;
}
