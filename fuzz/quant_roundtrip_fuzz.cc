// Fuzz target: quantization descriptor decode → encode → decode round trip
// (parser/quantization.h; quantization.md and quantization/*.md), and the
// per-scheme factories on the decoded values.
//
// Input format (bytes missing at the end read as 0):
//   byte 0   bit 0 permissive mode (else strict)
//            bit 1 agree on every private scheme tag (0xF0–0xFE)
//   byte 1   extra length: bytes past the fixed payload for the
//            ParseQuantizationFields round trip (0–255)
//   byte 2   a storage type tag for PerTensorAffine::ValidateZeroPointFor
//   byte 3   a base offset for CheckQuantizationFields (0–255)
//   rest     the quantization descriptor (the bytes after the
//            quantization_length prefix).
//
// Properties (any violation aborts):
//   * DecodeQuantization either rejects with a rule id and an offset inside
//     the bytes it reads, or consumes exactly the scheme's fixed size (the
//     4-byte header when the payload is not interpreted).
//   * EncodeToVector of a decoded descriptor reproduces the consumed bytes
//     exactly; decoding them again gives an equal descriptor. EncodeInto
//     agrees and refuses a buffer one byte short.
//   * ParseQuantizationFields with extra bytes records them in extra_length;
//     encoding writes them as zeros after the same fixed bytes.
//   * CheckQuantizationFields at base B reports the rule it reports at base
//     0, at offset + B.
//   * Strict acceptance implies permissive acceptance of an equal
//     descriptor.
//   * The factories never crash: for every scheme they are called with the
//     decoded fields (and with the raw payload words); what they accept
//     passes CheckQuantizationFields in strict mode and converts to a
//     descriptor naming the same scheme and fields. A strict-accepted
//     descriptor whose buffer indices are usable (not 0, not 0xFFFFFFFF,
//     QNT-PLC-01/02) is accepted by its factory, which rebuilds it exactly.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "fuzz/fuzz_util.h"
#include "parser/element_type.h"
#include "parser/options.h"
#include "parser/quantization.h"
#include "parser/rules.h"
#include "parser/wire.h"

namespace hurray::fuzz {
namespace {

constexpr size_t kHeaderSize = 4;

bool Usable(uint32_t index) { return index != kNoBufferIndex && index != 0; }

// The factory's result must be a valid descriptor of the same fields.
template <typename T>
void CheckBuilt(const absl::StatusOr<T>& built) {
  if (!built.ok()) {
    HURRAY_FUZZ_CHECK(RuleIdOf(built.status()).has_value());
    return;
  }
  const QuantizationDescriptor q(*built);
  HURRAY_FUZZ_CHECK(CheckQuantizationFields(q, 0, ParseOptions()).ok());
  HURRAY_FUZZ_CHECK(q.interpreted());
  HURRAY_FUZZ_CHECK(q.extra_length == 0);
  // Through the wire and back: the same descriptor.
  const std::vector<uint8_t> bytes = q.EncodeToVector();
  const absl::StatusOr<DecodedQuantization> again = DecodeQuantization(bytes);
  HURRAY_FUZZ_CHECK(again.ok());
  HURRAY_FUZZ_CHECK(again->descriptor == q);
}

// Calls the factory of q's scheme with q's fields. `accepted`: q passed
// CheckQuantizationFields in strict mode.
void CheckFactories(QuantizationDescriptor q, bool accepted,
                    uint8_t storage_tag) {
  q.extra_length = 0;  // writer padding is not a factory's business
  const bool indices_usable =
      Usable(q.scale_buffer_index) &&
      (q.symmetric() || Usable(q.zero_point_buffer_index));
  auto expect = [&](const auto& built) {
    CheckBuilt(built);
    if (accepted && indices_usable) {
      HURRAY_FUZZ_CHECK(built.ok());
      HURRAY_FUZZ_CHECK(QuantizationDescriptor(*built) == q);
    }
  };
  switch (q.scheme_tag) {
    case scheme_tag::kPerTensorAffine: {
      const absl::StatusOr<PerTensorAffine> v =
          PerTensorAffine::Create(q.scale, q.zero_point);
      CheckBuilt(v);
      if (accepted) {
        HURRAY_FUZZ_CHECK(v.ok() && QuantizationDescriptor(*v) == q);
      }
      if (v.ok()) {
        const absl::Status s = v->ValidateZeroPointFor(storage_tag);
        int64_t lo = 0, hi = 0;
        if (s.ok()) {
          HURRAY_FUZZ_CHECK(IntegerStorageRange(storage_tag, &lo, &hi));
          HURRAY_FUZZ_CHECK(v->zero_point >= lo && v->zero_point <= hi);
        } else {
          HURRAY_FUZZ_CHECK(RuleIdOf(s).has_value());
        }
      }
      break;
    }
    case scheme_tag::kPerChannelAffine:
      if (q.symmetric()) {
        expect(PerChannelAffine::Symmetric(q.axis, q.scale_buffer_index));
      } else {
        expect(PerChannelAffine::Asymmetric(q.axis, q.scale_buffer_index,
                                            q.zero_point_buffer_index));
      }
      break;
    case scheme_tag::kPerBlockAffine:
      if (q.symmetric()) {
        expect(PerBlockAffine::Symmetric(
            q.axis, q.block_size, q.scale_buffer_index, q.scale_type_tag));
      } else {
        expect(PerBlockAffine::Asymmetric(
            q.axis, q.block_size, q.scale_buffer_index,
            q.zero_point_buffer_index, q.scale_type_tag));
      }
      break;
    case scheme_tag::kNf4:
      expect(Nf4::Create(q.axis, q.block_size, q.scale_buffer_index));
      break;
    case scheme_tag::kMxfp:
      expect(Mxfp::Create(q.axis, q.block_size, q.scale_buffer_index));
      break;
    default:
      break;
  }
}

// Every factory on raw payload words (not only the decoded scheme's).
void CheckFactoriesOnRawWords(absl::Span<const uint8_t> bytes) {
  uint8_t p[24] = {};
  if (!bytes.empty()) {
    std::memcpy(p, bytes.data(), std::min(bytes.size(), sizeof(p)));
  }
  const uint32_t a = wire::LoadU32(p + 4), b = wire::LoadU32(p + 8),
                 c = wire::LoadU32(p + 12), d = wire::LoadU32(p + 16);
  const uint8_t t = p[20];
  CheckBuilt(
      PerTensorAffine::Create(wire::LoadF32(p + 4), wire::LoadI32(p + 8)));
  CheckBuilt(PerChannelAffine::Symmetric(a, b));
  CheckBuilt(PerChannelAffine::Asymmetric(a, b, c));
  CheckBuilt(PerBlockAffine::Symmetric(a, b, c, t));
  CheckBuilt(PerBlockAffine::Asymmetric(a, b, c, d, t));
  CheckBuilt(Nf4::Create(a, b, c));
  CheckBuilt(Mxfp::Create(a, b, c));
}

void CheckEncodeInto(const QuantizationDescriptor& q,
                     const std::vector<uint8_t>& want) {
  std::unique_ptr<uint8_t[]> out(new uint8_t[want.size()]);
  const absl::StatusOr<size_t> n =
      q.EncodeInto(absl::MakeSpan(out.get(), want.size()));
  HURRAY_FUZZ_CHECK(n.ok() && *n == want.size());
  HURRAY_FUZZ_CHECK(std::memcmp(out.get(), want.data(), want.size()) == 0);
  std::unique_ptr<uint8_t[]> short_out(new uint8_t[want.size() - 1]);
  HURRAY_FUZZ_CHECK(
      !q.EncodeInto(absl::MakeSpan(short_out.get(), want.size() - 1)).ok());
}

// Decodes in one mode and checks the round trip; the decoded descriptor, or
// nullopt when rejected.
std::optional<QuantizationDescriptor> CheckMode(absl::Span<const uint8_t> input,
                                                const ParseOptions& options) {
  const absl::StatusOr<DecodedQuantization> decoded =
      DecodeQuantization(input, options);
  const uint32_t fixed = input.empty() ? 0 : SchemeFixedSize(input[0]);
  const bool interpreted =
      fixed != 0 && input.size() >= 2 && input[1] == kCurrentSchemeVersion;
  const size_t reads = interpreted ? fixed : kQuantizationHeaderSize;
  if (!decoded.ok()) {
    const std::optional<absl::string_view> id = RuleIdOf(decoded.status());
    const std::optional<uint64_t> at = OffsetOf(decoded.status());
    HURRAY_FUZZ_CHECK(id.has_value() && at.has_value());
    HURRAY_FUZZ_CHECK(*at < reads);
    if (input.size() < kQuantizationHeaderSize) {
      HURRAY_FUZZ_CHECK(*id == "QNT-HDR-01");
    } else if (input.size() < reads) {
      HURRAY_FUZZ_CHECK(*id == "QNT-HDR-02");
    }
    return std::nullopt;
  }
  const QuantizationDescriptor& q = decoded->descriptor;
  HURRAY_FUZZ_CHECK(decoded->consumed == reads);
  HURRAY_FUZZ_CHECK(q.interpreted() == interpreted);
  HURRAY_FUZZ_CHECK(q.extra_length == 0);
  HURRAY_FUZZ_CHECK(q.encoded_len() == reads);
  HURRAY_FUZZ_CHECK(CheckQuantizationFields(q, 0, options).ok());

  const std::vector<uint8_t> bytes = q.EncodeToVector();
  HURRAY_FUZZ_CHECK(bytes.size() == reads);
  HURRAY_FUZZ_CHECK(std::memcmp(bytes.data(), input.data(), reads) == 0);
  CheckEncodeInto(q, bytes);
  const absl::StatusOr<DecodedQuantization> again =
      DecodeQuantization(bytes, options);
  HURRAY_FUZZ_CHECK(again.ok());
  HURRAY_FUZZ_CHECK(again->descriptor == q);
  HURRAY_FUZZ_CHECK(again->consumed == reads);
  return q;
}

void Run(const uint8_t* data, size_t size) {
  uint8_t h[kHeaderSize] = {};
  if (size > 0) std::memcpy(h, data, std::min(size, kHeaderSize));
  const absl::Span<const uint8_t> input =
      size > kHeaderSize
          ? absl::MakeConstSpan(data + kHeaderSize, size - kHeaderSize)
          : absl::Span<const uint8_t>();
  ParseOptions strict;
  ParseOptions permissive;
  permissive.mode = Mode::kPermissive;
  if (h[0] & 2) {
    strict.agreed.scheme_tags = permissive.agreed.scheme_tags = 0x7FFF;
  }
  const ParseOptions& chosen = (h[0] & 1) ? permissive : strict;

  const std::optional<QuantizationDescriptor> s = CheckMode(input, strict);
  const std::optional<QuantizationDescriptor> p = CheckMode(input, permissive);
  if (s.has_value()) {
    HURRAY_FUZZ_CHECK(p.has_value() && *p == *s);
  }

  CheckFactoriesOnRawWords(input);
  if (input.size() < kQuantizationHeaderSize) return;

  // The raw fields, checked or not, with extra bytes after them.
  const uint32_t fixed = SchemeFixedSize(input[0]);
  const bool interpreted = fixed != 0 && input[1] == kCurrentSchemeVersion;
  const uint32_t reads = interpreted ? fixed : kQuantizationHeaderSize;
  if (input.size() < reads) return;
  const uint32_t extra = h[1];
  QuantizationDescriptor raw;
  ParseQuantizationFields(input.data(), reads + extra, &raw);
  HURRAY_FUZZ_CHECK(raw.extra_length == extra);
  HURRAY_FUZZ_CHECK(raw.encoded_len() == reads + extra);
  const std::vector<uint8_t> padded = raw.EncodeToVector();
  HURRAY_FUZZ_CHECK(padded.size() == reads + extra);
  HURRAY_FUZZ_CHECK(std::memcmp(padded.data(), input.data(), reads) == 0);
  for (size_t i = reads; i < padded.size(); ++i) {
    HURRAY_FUZZ_CHECK(padded[i] == 0);
  }
  CheckEncodeInto(raw, padded);
  QuantizationDescriptor reparsed;
  ParseQuantizationFields(padded.data(), reads + extra, &reparsed);
  HURRAY_FUZZ_CHECK(reparsed == raw);

  // Offsets move with the base; the verdict does not.
  const Rejection at0 = CheckQuantizationFields(raw, 0, chosen);
  const Rejection atb = CheckQuantizationFields(raw, h[3], chosen);
  HURRAY_FUZZ_CHECK(at0.rule == atb.rule);
  HURRAY_FUZZ_CHECK(at0.ok() ? atb.offset == 0
                             : atb.offset == at0.offset + h[3]);
  HURRAY_FUZZ_CHECK(at0.ok() == (((h[0] & 1) ? p : s).has_value()));

  CheckFactories(raw, CheckQuantizationFields(raw, 0, strict).ok(), h[2]);
}

}  // namespace
}  // namespace hurray::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  hurray::fuzz::Run(data, size);
  return 0;
}
