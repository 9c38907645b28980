// Fuzz target: differential test of the decoder's whole-descriptor fast paths
// (parser/fast_path.h, issue 18; parser/whole_decode.h, issue 47) against the
// general state machine and validator (ParseOptions::fast_path = false).
//
// Input format (bytes missing at the end read as 0):
//   byte 0   options:  bit 0 permissive mode (else strict)
//                      bit 1 validate = false (framing rules only)
//                      bit 2 default ParseOptions (else
//                            vectors::AgreedOptions)
//                      bit 3 tight limits (as descriptor_chunked_fuzz)
//                      bit 4 mutation mode (below)
//                      bit 5 disable the column-major layout (LAY-TAG-03)
//   byte 1   split:    0 = none, else where the fast-path decoder's input is
//                      cut in two (1 + (value - 1) % length of the stream)
//   rest     raw mode: the stream, descriptors back to back;
//            mutation mode: byte 2 picks a valid vector (vectors::AllValid,
//            modulo their number), then (position, op, value) triples edit
//            its encoded bytes: position modulo the length, op & 3 = xor /
//            set / add / set to one of the boundary values 0x00 0x01 0x02
//            0x03 0x08 0x0F 0x10 0x20 0x40 0x7F 0x80 0xF0 0xFE 0xFF; op bit 2
//            also cuts the bytes at the position, op bit 3 appends the vector
//            again (a second descriptor).
//
// Checked, for up to 8 descriptors of the stream:
//   * decoder A (fast path on, fed whole or split at the chosen point) and
//     decoder B (fast path off, fed whole) reach the same state after the
//     same number of bytes, with equal descriptors (operator== and every
//     part offset) or the same rule and byte offset; both are reused through
//     Reset(), so state leaking from one descriptor into the next shows;
//   * the fast path is only taken by an accepted, unsplit descriptor;
//   * FastAccepts() never says yes to a descriptor that ValidateDescriptor()
//     rejects (over what the general decoder produced with validation off,
//     which reaches descriptors FastDecodeFields() never builds).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/types/span.h"
#include "fuzz/fuzz_util.h"
#include "parser/decoder.h"
#include "parser/descriptor.h"
#include "parser/fast_path.h"
#include "parser/options.h"
#include "parser/rules.h"
#include "parser/validator.h"
#include "tests/vectors.h"

namespace hurray::fuzz {
namespace {

constexpr int kMaxDescriptors = 8;
constexpr uint8_t kBoundary[14] = {0x00, 0x01, 0x02, 0x03, 0x08, 0x0F, 0x10,
                                   0x20, 0x40, 0x7F, 0x80, 0xF0, 0xFE, 0xFF};

const std::vector<std::vector<uint8_t>>& ValidVectors() {
  static const auto* const v = [] {
    auto* out = new std::vector<std::vector<uint8_t>>;
    for (const vectors::Named& n : vectors::AllValid()) {
      out->push_back(vectors::Bytes(*n.descriptor));
    }
    return out;
  }();
  return *v;
}

ParseOptions OptionsFor(uint8_t bits) {
  const Mode mode = (bits & 1) ? Mode::kPermissive : Mode::kStrict;
  ParseOptions o;
  if (bits & 4) {
    o.mode = mode;
  } else {
    o = vectors::AgreedOptions(mode);
  }
  o.validate = (bits & 2) == 0;
  if (bits & 8) {
    Limits& l = o.limits;
    l.max_descriptor_bytes = 512;
    l.max_rank = 8;
    l.max_tiled_depth = 2;
    l.max_quantization_bytes = 32;
    l.max_extension_data_bytes = 16;
  }
  if (bits & 32) o.disabled_layouts.set(layout_tag::kColumnMajor);
  return o;
}

std::vector<uint8_t> Mutated(const uint8_t* data, size_t size) {
  const auto& all = ValidVectors();
  std::vector<uint8_t> bytes = all[(size > 0 ? data[0] : 0) % all.size()];
  const std::vector<uint8_t> original = bytes;
  for (size_t i = 1; i + 3 <= size && !bytes.empty(); i += 3) {
    const size_t at = data[i] % bytes.size();
    const uint8_t op = data[i + 1];
    const uint8_t value = data[i + 2];
    switch (op & 3) {
      case 0:
        bytes[at] ^= value;
        break;
      case 1:
        bytes[at] = value;
        break;
      case 2:
        bytes[at] = static_cast<uint8_t>(bytes[at] + value);
        break;
      default:
        bytes[at] = kBoundary[value % sizeof(kBoundary)];
        break;
    }
    if (op & 4) bytes.resize(at + 1);
    if ((op & 8) && bytes.size() < 4096) {
      bytes.insert(bytes.end(), original.begin(), original.end());
    }
  }
  return bytes;
}

bool SameOffsets(const PartOffsets& a, const PartOffsets& b) {
  return a.layout == b.layout && a.buffer_table == b.buffer_table &&
         a.quantization == b.quantization && a.shard == b.shard &&
         a.statistics == b.statistics && a.extension_type == b.extension_type &&
         a.composite_member == b.composite_member && a.end == b.end;
}

[[noreturn]] void Mismatch(const char* what, size_t base,
                           const DescriptorDecoder& fast,
                           const DescriptorDecoder& general) {
  std::fprintf(stderr,
               "fast/general mismatch (%s) for the descriptor at stream "
               "offset %zu:\n  fast:    %s%s\n  general: %s\n",
               what, base, Describe(fast).c_str(),
               fast.fast_path_taken() ? " (fast path taken)" : "",
               Describe(general).c_str());
  std::abort();
}

// Feed(bytes) (in two pieces when 0 < split < size) then Finish().
size_t FeedAll(DescriptorDecoder& d, absl::Span<const uint8_t> bytes,
               size_t split) {
  size_t consumed = 0;
  if (split > 0 && split < bytes.size()) {
    const FeedResult r = d.Feed(bytes.subspan(0, split));
    HURRAY_FUZZ_CHECK(r.consumed <= split);
    consumed = r.consumed;
    if (r.state == DecodeState::kNeedMore) {
      HURRAY_FUZZ_CHECK(r.consumed == split);
      // The first piece ended mid-descriptor: the rest is split input.
      HURRAY_FUZZ_CHECK(!d.fast_path_taken());
    }
  }
  if (d.state() == DecodeState::kNeedMore) {
    const FeedResult r = d.Feed(bytes.subspan(consumed));
    consumed += r.consumed;
  }
  const DecodeState ended = d.Finish();
  HURRAY_FUZZ_CHECK(ended != DecodeState::kNeedMore);
  HURRAY_FUZZ_CHECK(d.consumed() == consumed);
  return consumed;
}

// FastAccepts ⇒ ValidateDescriptor accepts, on whatever the general decoder
// builds without validation.
void CheckFastAccepts(absl::Span<const uint8_t> bytes,
                      const ParseOptions& options, DescriptorDecoder& raw) {
  raw.Reset();
  FeedAll(raw, bytes, 0);
  if (raw.state() != DecodeState::kDone) return;
  ParseOptions validating = options;
  validating.validate = true;
  if (FastAccepts(raw.descriptor(), validating)) {
    const Rejection r = ValidateDescriptor(raw.descriptor(), validating);
    if (!r.ok()) {
      std::fprintf(stderr,
                   "FastAccepts accepted what the validator rejects: "
                   "%s @%llu\n",
                   std::string(RuleId(r.rule)).c_str(),
                   static_cast<unsigned long long>(r.offset));
      std::abort();
    }
  }
}

void Run(const uint8_t* data, size_t size) {
  uint8_t h[2] = {};
  std::memcpy(h, data, std::min<size_t>(size, 2));
  const size_t skip = std::min<size_t>(size, 2);
  std::vector<uint8_t> stream =
      (h[0] & 16) ? Mutated(data + skip, size - skip)
                  : std::vector<uint8_t>(data + skip, data + size);

  ParseOptions fast_options = OptionsFor(h[0]);
  fast_options.fast_path = true;
  ParseOptions general_options = fast_options;
  general_options.fast_path = false;
  ParseOptions raw_options = general_options;
  raw_options.validate = false;

  auto fast = std::make_unique<DescriptorDecoder>(fast_options);
  auto general = std::make_unique<DescriptorDecoder>(general_options);
  auto raw = std::make_unique<DescriptorDecoder>(raw_options);

  size_t base = 0;
  for (int k = 0; k < kMaxDescriptors && base < stream.size(); ++k) {
    // An exact copy, so that a read past the end of the input is an ASan
    // report.
    const size_t n = stream.size() - base;
    std::unique_ptr<uint8_t[]> copy(new uint8_t[n]);
    std::memcpy(copy.get(), stream.data() + base, n);
    const absl::Span<const uint8_t> bytes(copy.get(), n);
    const size_t split = h[1] == 0 ? 0 : 1 + (h[1] - 1) % n;

    fast->Reset();
    general->Reset();
    const size_t fast_consumed = FeedAll(*fast, bytes, split);
    const size_t general_consumed = FeedAll(*general, bytes, 0);
    HURRAY_FUZZ_CHECK(!general->fast_path_taken());

    if (fast->state() != general->state()) {
      Mismatch("state", base, *fast, *general);
    }
    if (fast_consumed != general_consumed) {
      Mismatch("bytes consumed", base, *fast, *general);
    }
    if (fast->state() == DecodeState::kDone) {
      const TensorDescriptor& a = fast->descriptor();
      const TensorDescriptor& b = general->descriptor();
      if (!(a == b) || !(b == a)) Mismatch("descriptor", base, *fast, *general);
      if (!SameOffsets(a.offsets, b.offsets) ||
          a.descriptor_length != b.descriptor_length) {
        Mismatch("offsets", base, *fast, *general);
      }
    } else {
      HURRAY_FUZZ_CHECK(!fast->fast_path_taken());
      if (!(fast->rejection() == general->rejection())) {
        Mismatch("rejection", base, *fast, *general);
      }
    }
    if (fast->fast_path_taken()) {
      HURRAY_FUZZ_CHECK(split == 0 || split >= fast_consumed);
    }

    CheckFastAccepts(bytes, fast_options, *raw);

    if (fast->state() != DecodeState::kDone || fast_consumed == 0) break;
    base += fast_consumed;
  }
}

}  // namespace
}  // namespace hurray::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  hurray::fuzz::Run(data, size);
  return 0;
}
