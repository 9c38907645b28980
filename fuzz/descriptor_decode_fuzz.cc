// Fuzz target: one-shot decode of a descriptor (the whole input), in strict
// and permissive mode, with and without the validator, plus a round trip
// through the encoder.
//
// Properties (any violation aborts):
//   * Decode always ends done or rejected; consumed() agrees with Feed; a
//     done descriptor consumed exactly descriptor_length bytes.
//   * hurray::Decode (the StatusOr API) agrees with Feed + Finish: same
//     acceptance, same descriptor, same rule id and offset in the status.
//   * Structure vs validation: validate=false is the framing rules alone, so
//     a framing rejection is the same rejection (rule, offset, consumed)
//     with the validator on, and a descriptor the validator accepts is the
//     descriptor the framing pass produced.
//   * Strict-accepted => permissive-accepted, with an equal descriptor.
//   * Round trip of every descriptor the framing pass accepts (valid or not:
//     the encoder encodes what it is given), when its layout was parsed:
//     Encode succeeds, produces descriptor_length bytes, equal to the input
//     except where the encoder writes zeros (extension-layout data,
//     quantization padding, trailing bytes); decoding them again gives an
//     equal descriptor (operator==) with the same part offsets, and the
//     validator says of the re-encoded bytes what it said of the input
//     (same acceptance, same rule and offset). EncodeInto agrees with Encode
//     and refuses a buffer one byte short. The decoded part offsets are those
//     ComputeOffsets() predicts.
//   * A descriptor with an unparsed layout (permissive, unassigned layout
//     tag) cannot be encoded.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "fuzz/fuzz_util.h"
#include "parser/decoder.h"
#include "parser/descriptor.h"
#include "parser/encoder.h"
#include "parser/options.h"
#include "parser/quantization.h"
#include "parser/rules.h"
#include "tests/vectors.h"

namespace hurray::fuzz {
namespace {

// The decoded part offsets must be where the encoder puts the parts. Only
// parts that are present were recorded by the decoder.
void CheckOffsets(const TensorDescriptor& d) {
  const absl::StatusOr<PartOffsets> want = ComputeOffsets(d);
  HURRAY_FUZZ_CHECK(want.ok());
  const PartOffsets& got = d.offsets;
  HURRAY_FUZZ_CHECK(got.layout == want->layout);
  HURRAY_FUZZ_CHECK(got.buffer_table == want->buffer_table);
  if (d.has(flag::kHasQuantization)) {
    HURRAY_FUZZ_CHECK(got.quantization == want->quantization);
  }
  if (d.has(flag::kHasShard)) HURRAY_FUZZ_CHECK(got.shard == want->shard);
  if (d.has(flag::kHasStatistics)) {
    HURRAY_FUZZ_CHECK(got.statistics == want->statistics);
  }
  if (d.has(flag::kHasExtensionType)) {
    HURRAY_FUZZ_CHECK(got.extension_type == want->extension_type);
  }
  if (d.has(flag::kHasCompositeMember)) {
    HURRAY_FUZZ_CHECK(got.composite_member == want->composite_member);
  }
  HURRAY_FUZZ_CHECK(got.end == want->end);
  HURRAY_FUZZ_CHECK(static_cast<uint64_t>(got.end) + d.trailing_length ==
                    d.descriptor_length);
}

// Marks the bytes the encoder does not reproduce (it writes zeros there).
std::vector<bool> ZeroFilled(const TensorDescriptor& d) {
  std::vector<bool> mask(d.descriptor_length, false);
  auto mark = [&mask](uint64_t from, uint64_t length) {
    HURRAY_FUZZ_CHECK(from + length <= mask.size());
    for (uint64_t i = from; i < from + length; ++i) mask[i] = true;
  };
  if (layout_tag::IsExtension(d.layout_tag)) {
    mark(d.layout.extension_data_offset, d.layout.extension_data_length);
  }
  if (d.has(flag::kHasQuantization)) {
    const QuantizationDescriptor& q = d.quantization;
    const uint64_t payload = q.interpreted() ? SchemeFixedSize(q.scheme_tag)
                                             : kQuantizationHeaderSize;
    mark(d.offsets.quantization + 4 + payload, q.extra_length);
  }
  mark(d.offsets.end, d.trailing_length);
  return mask;
}

// `first` was decoded with the validator off, `validated` with it on
// (`options.validate` is on).
void CheckRoundTrip(absl::Span<const uint8_t> input, const OneShot& first,
                    const OneShot& validated, ParseOptions options) {
  const TensorDescriptor& d = first.descriptor();
  absl::StatusOr<std::vector<uint8_t>> encoded = Encode(d);
  if (!d.layout_parsed) {
    HURRAY_FUZZ_CHECK(!encoded.ok());
    return;
  }
  HURRAY_FUZZ_CHECK(encoded.ok());
  const std::vector<uint8_t>& bytes = *encoded;
  HURRAY_FUZZ_CHECK(bytes.size() == d.descriptor_length);
  CheckOffsets(d);

  const std::vector<bool> zeros = ZeroFilled(d);
  for (size_t i = 0; i < bytes.size(); ++i) {
    HURRAY_FUZZ_CHECK(zeros[i] ? bytes[i] == 0 : bytes[i] == input[i]);
  }

  // EncodeInto: exact-size buffers (ASan catches a write past the end).
  {
    std::unique_ptr<uint8_t[]> out(new uint8_t[bytes.size()]);
    absl::StatusOr<size_t> n =
        EncodeInto(d, absl::MakeSpan(out.get(), bytes.size()));
    HURRAY_FUZZ_CHECK(n.ok() && *n == bytes.size());
    HURRAY_FUZZ_CHECK(std::memcmp(out.get(), bytes.data(), bytes.size()) == 0);
    std::unique_ptr<uint8_t[]> short_out(new uint8_t[bytes.size() - 1]);
    HURRAY_FUZZ_CHECK(
        !EncodeInto(d, absl::MakeSpan(short_out.get(), bytes.size() - 1)).ok());
  }

  options.validate = false;
  const OneShot second = DecodeOneShot(bytes, options);
  HURRAY_FUZZ_CHECK(second.done());
  HURRAY_FUZZ_CHECK(second.consumed == bytes.size());
  HURRAY_FUZZ_CHECK(second.descriptor() == d);
  HURRAY_FUZZ_CHECK(d == second.descriptor());
  HURRAY_FUZZ_CHECK(second.descriptor().descriptor_length ==
                    d.descriptor_length);
  CheckOffsets(second.descriptor());

  // The validator sees the same fields at the same offsets.
  options.validate = true;
  const OneShot third = DecodeOneShot(bytes, options);
  HURRAY_FUZZ_CHECK(third.done() == validated.done());
  HURRAY_FUZZ_CHECK(third.rejection() == validated.rejection());
  if (third.done()) HURRAY_FUZZ_CHECK(third.descriptor() == d);
}

// hurray::Decode must say what Feed + Finish said.
void CheckStatusApi(absl::Span<const uint8_t> input, const OneShot& r,
                    const ParseOptions& options) {
  const absl::StatusOr<TensorDescriptor> d = Decode(input, options);
  HURRAY_FUZZ_CHECK(d.ok() == r.done());
  if (d.ok()) {
    HURRAY_FUZZ_CHECK(*d == r.descriptor());
    return;
  }
  const std::optional<absl::string_view> id = RuleIdOf(d.status());
  const std::optional<uint64_t> offset = OffsetOf(d.status());
  HURRAY_FUZZ_CHECK(id.has_value() && *id == RuleId(r.rejection().rule));
  HURRAY_FUZZ_CHECK(offset.has_value() && *offset == r.rejection().offset);
}

// Decodes in one mode; returns the validated outcome.
OneShot CheckMode(absl::Span<const uint8_t> input, Mode mode) {
  ParseOptions options = vectors::AgreedOptions(mode);
  OneShot validated = DecodeOneShot(input, options);
  options.validate = false;
  const OneShot framing = DecodeOneShot(input, options);
  options.validate = true;

  // The validator runs only on a complete descriptor: both passes consume
  // the same bytes, and a framing rejection stands as it is.
  HURRAY_FUZZ_CHECK(validated.consumed == framing.consumed);
  if (!framing.done()) {
    HURRAY_FUZZ_CHECK(!validated.done());
    HURRAY_FUZZ_CHECK(validated.rejection() == framing.rejection());
  } else if (validated.done()) {
    HURRAY_FUZZ_CHECK(validated.descriptor() == framing.descriptor());
  }

  CheckStatusApi(input, validated, options);
  if (framing.done()) {
    const TensorDescriptor& d = framing.descriptor();
    HURRAY_FUZZ_CHECK(framing.consumed == d.descriptor_length);
    HURRAY_FUZZ_CHECK(d.descriptor_length <= input.size());
    CheckRoundTrip(input, framing, validated, options);
  }
  return validated;
}

}  // namespace
}  // namespace hurray::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using hurray::fuzz::OneShot;
  const absl::Span<const uint8_t> input(data, size);
  const OneShot strict = hurray::fuzz::CheckMode(input, hurray::Mode::kStrict);
  const OneShot permissive =
      hurray::fuzz::CheckMode(input, hurray::Mode::kPermissive);
  if (strict.done()) {
    HURRAY_FUZZ_CHECK(permissive.done());
    HURRAY_FUZZ_CHECK(permissive.consumed == strict.consumed);
    HURRAY_FUZZ_CHECK(permissive.descriptor() == strict.descriptor());
  }
  return 0;
}
