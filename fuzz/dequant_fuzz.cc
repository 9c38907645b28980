// Fuzz target: differential test of the SIMD Dequantizer against the scalar
// reference (dequant/), on arbitrary descriptors and data, fed in pieces.
//
// Input format (bytes missing at the end read as 0):
//   byte 0   bit 0 permissive mode (else strict)
//            bit 1 decode without the validator (structure only)
//            bits 4-7 Highway target: the (n mod k)-th of the k targets this
//                     CPU supports, 0 = the best one
//   byte 1   bits 0-2 maximum piece length: one of 1, 2, 3, 5, 8, 64,
//                     4096, all
//            bits 3-4 threads for the whole-buffer pass: 1 + (n)
//            bits 5-6 store mode: auto, cached, non-temporal, auto
//   byte 2-3 seed of the piece-length generator
//   rest     one tensor in the streaming format: the descriptor, then its
//            buffers back to back in table order (missing bytes read as 0).
//
// The descriptor is decoded (strict or permissive, with or without the
// validator); rejected or oversized ones are skipped. Then the reference,
// DequantizeAll and a Dequantizer fed in pseudo-random pieces (Consume for
// row-major, ConsumeScattered for the other dense layouts) must agree exactly:
// the same status code, rule id and offset; on success bit-identical floats and
// the same padding warnings. Last, the same Dequantizer is Restart()ed and
// given the whole buffer at once (ConsumeWhole, split over 1-4 threads), and
// DequantizeAll runs with that thread count: both must agree again. Then
// API misuse (pieces past the buffer, outputs one float short, Consume on a
// scattered layout, Finish before the last byte) must be refused cleanly.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "dequant/dequantizer.h"
#include "dequant/kernels.h"
#include "dequant/scalar.h"
#include "fuzz/fuzz_util.h"
#include "hwy/targets.h"
#include "parser/descriptor.h"
#include "parser/options.h"
#include "parser/rules.h"

namespace hurray::fuzz {
namespace {

constexpr size_t kHeaderSize = 4;
constexpr uint64_t kMaxBufferBytes = 1 << 16;
constexpr uint64_t kMaxElements = 1 << 14;
constexpr size_t kMaxPiece[8] = {1, 2, 3, 5, 8, 64, 4096, SIZE_MAX};
constexpr dequant::StoreMode kStores[4] = {
    dequant::StoreMode::kAuto, dequant::StoreMode::kCached,
    dequant::StoreMode::kNonTemporal, dequant::StoreMode::kAuto};

bool SameBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() &&
         (a.empty() || std::memcmp(a.data(), b.data(), a.size() * 4) == 0);
}

void ExpectSameStatus(const absl::Status& a, const absl::Status& b) {
  HURRAY_FUZZ_CHECK(a.code() == b.code());
  HURRAY_FUZZ_CHECK(RuleIdOf(a) == RuleIdOf(b));
  HURRAY_FUZZ_CHECK(OffsetOf(a) == OffsetOf(b));
}

// Forces the (pick mod k)-th supported Highway target (0: the best).
void ChooseTarget(uint32_t pick) {
  std::vector<int64_t> targets;
  for (int64_t bits = hwy::SupportedTargets(); bits != 0; bits &= bits - 1) {
    targets.push_back(bits & -bits);
  }
  hwy::SetSupportedTargetsForTest(
      pick == 0 || targets.empty() ? 0 : targets[pick % targets.size()]);
}

// Misuse is refused with the documented status and consumes nothing; a
// short input never passes Finish. `dq` has consumed the whole data buffer
// without a rejection.
void CheckMisuse(dequant::Dequantizer* dq,
                 absl::Span<const uint8_t> tensor_data) {
  const size_t logical = static_cast<size_t>(dq->plan().logical_elements);
  const uint8_t extra[1] = {0};
  std::vector<float> tensor(logical + 1, 0.0f);
  size_t written = 0;
  // One byte more than the data buffer holds.
  HURRAY_FUZZ_CHECK(
      dq->ConsumeScattered(extra, absl::MakeSpan(tensor)).code() ==
      absl::StatusCode::kOutOfRange);
  if (dq->in_order()) {
    HURRAY_FUZZ_CHECK(
        dq->Consume(extra, absl::MakeSpan(tensor), &written).code() ==
        absl::StatusCode::kOutOfRange);
  }
  HURRAY_FUZZ_CHECK(dq->Finish().ok());

  dq->Restart();
  if (logical > 0) {  // outputs one float short
    const absl::Span<float> short_tensor =
        absl::MakeSpan(tensor).first(logical - 1);
    HURRAY_FUZZ_CHECK(dq->ConsumeScattered(tensor_data, short_tensor).code() ==
                      absl::StatusCode::kInvalidArgument);
    HURRAY_FUZZ_CHECK(dq->ConsumeWhole(tensor_data, short_tensor, 2).code() ==
                      absl::StatusCode::kInvalidArgument);
  }
  if (!dq->in_order()) {
    HURRAY_FUZZ_CHECK(
        dq->Consume(tensor_data, absl::MakeSpan(tensor), &written).code() ==
        absl::StatusCode::kFailedPrecondition);
    if (!dq->streamable() && tensor_data.size() > 1) {
      HURRAY_FUZZ_CHECK(
          dq->ConsumeScattered(tensor_data.first(1), absl::MakeSpan(tensor))
              .code() == absl::StatusCode::kFailedPrecondition);
    }
    HURRAY_FUZZ_CHECK(dq->elements_written() == 0);
    return;
  }
  const size_t need =
      static_cast<size_t>(dq->OutputCountFor(tensor_data.size()));
  if (need > 0) {
    HURRAY_FUZZ_CHECK(dq->Consume(tensor_data,
                                  absl::MakeSpan(tensor).first(need - 1),
                                  &written)
                          .code() == absl::StatusCode::kInvalidArgument);
  }
  HURRAY_FUZZ_CHECK(dq->elements_written() == 0);
  if (tensor_data.empty()) return;
  // All but the last byte: Finish passes only when every element arrived
  // (the last byte held padding only).
  HURRAY_FUZZ_CHECK(dq->Consume(tensor_data.first(tensor_data.size() - 1),
                                absl::MakeSpan(tensor), &written)
                        .ok());
  HURRAY_FUZZ_CHECK(dq->Finish().ok() == dq->done());
  if (!dq->done()) {
    HURRAY_FUZZ_CHECK(dq->Finish().code() == absl::StatusCode::kOutOfRange);
    // (Every logical element may be out already: the bytes missing can be
    // a padded grid's, which strict mode still has to check.)
    HURRAY_FUZZ_CHECK(dq->elements_written() <= logical);
  }
}

// The whole data buffer in one call from a Restart()ed Dequantizer, then
// DequantizeAll over `threads` threads: the same outcome as the reference.
void CheckWholePasses(dequant::Dequantizer* dq, const TensorDescriptor& d,
                      absl::Span<const uint8_t> tensor_data,
                      const dequant::ParameterBytes& params,
                      dequant::DequantOptions options, int threads,
                      const absl::Status& ref, const std::vector<float>& want,
                      const dequant::DequantWarnings& want_w) {
  dq->Restart();
  HURRAY_FUZZ_CHECK(dq->elements_written() == 0);
  std::vector<float> whole(static_cast<size_t>(dq->plan().logical_elements),
                           0.0f);
  absl::Status status =
      dq->ConsumeWhole(tensor_data, absl::MakeSpan(whole), threads);
  if (status.ok()) status = dq->Finish();
  ExpectSameStatus(status, ref);
  if (ref.ok()) {
    HURRAY_FUZZ_CHECK(SameBits(want, whole));
    HURRAY_FUZZ_CHECK(dq->warnings().nonzero_padding == want_w.nonzero_padding);
    HURRAY_FUZZ_CHECK(dq->warnings().first_nonzero_padding ==
                      want_w.first_nonzero_padding);
  }
  options.threads = threads;
  std::vector<float> all;
  dequant::DequantWarnings all_w;
  status =
      dequant::DequantizeAll(d, tensor_data, params, &all, options, &all_w);
  ExpectSameStatus(status, ref);
  if (ref.ok()) {
    HURRAY_FUZZ_CHECK(SameBits(want, all));
    HURRAY_FUZZ_CHECK(all_w.nonzero_padding == want_w.nonzero_padding);
    CheckMisuse(dq, tensor_data);
  }
}

void Run(const uint8_t* data, size_t size) {
  uint8_t h[kHeaderSize] = {};
  std::memcpy(h, data, std::min(size, kHeaderSize));
  if (size <= kHeaderSize) return;
  ParseOptions options;
  options.mode = (h[0] & 1) ? Mode::kPermissive : Mode::kStrict;
  // Structure only: the dequantizer must also stand descriptors that never
  // went through the validator (built by code, or trusted too early).
  options.validate = (h[0] & 2) == 0;
  const absl::Span<const uint8_t> rest(data + kHeaderSize, size - kHeaderSize);

  const OneShot decoded = DecodeOneShot(rest, options);
  if (!decoded.done()) return;
  const TensorDescriptor& d = decoded.descriptor();
  for (const BufferHandle& b : d.buffer_table()) {
    if (b.byte_size > kMaxBufferBytes) return;
  }
  uint64_t elements = 0;
  if (d.ElementCount(&elements) && elements > kMaxElements) return;

  // The buffers, back to back after the descriptor.
  std::vector<std::vector<uint8_t>> buffers(d.buffer_count);
  size_t at = decoded.consumed;
  for (uint32_t i = 0; i < d.buffer_count; ++i) {
    buffers[i].assign(d.buffers[i].byte_size, 0);
    const size_t n = std::min<size_t>(buffers[i].size(),
                                      at < rest.size() ? rest.size() - at : 0);
    if (n > 0) std::memcpy(buffers[i].data(), rest.data() + at, n);
    at += buffers[i].size();
  }
  std::vector<absl::Span<const uint8_t>> spans(buffers.begin(), buffers.end());
  absl::StatusOr<dequant::ParameterBytes> params =
      dequant::ParametersFromBuffers(d, spans);
  if (!params.ok()) return;

  ChooseTarget(h[0] >> 4);
  HURRAY_FUZZ_CHECK(dequant::KernelTargetName() != nullptr);
  dequant::DequantOptions dq_options;
  dq_options.mode = options.mode;
  dq_options.stores = kStores[(h[1] >> 5) & 3];
  dq_options.min_elements_per_thread = 0;  // small inputs: split them anyway
  const int threads = 1 + ((h[1] >> 3) & 3);
  const absl::Span<const uint8_t> tensor_data =
      buffers.empty() ? absl::Span<const uint8_t>() : spans[0];

  std::vector<float> want, got;
  dequant::DequantWarnings want_w, got_w;
  const absl::Status ref = dequant::ReferenceDequantize(
      d, tensor_data, *params, &want, dq_options, &want_w);
  const absl::Status all =
      dequant::DequantizeAll(d, tensor_data, *params, &got, dq_options, &got_w);
  ExpectSameStatus(ref, all);
  if (ref.ok()) {
    HURRAY_FUZZ_CHECK(SameBits(want, got));
    HURRAY_FUZZ_CHECK(want_w.nonzero_padding == got_w.nonzero_padding);
    HURRAY_FUZZ_CHECK(want_w.first_nonzero_padding ==
                      got_w.first_nonzero_padding);
  }

  // The same data in pseudo-random pieces.
  absl::StatusOr<dequant::Dequantizer> dq =
      dequant::Dequantizer::Create(d, *params, dq_options);
  if (!dq.ok()) {
    ExpectSameStatus(dq.status(), ref);
    hwy::SetSupportedTargetsForTest(0);
    return;
  }
  std::mt19937 rng(static_cast<uint32_t>(h[2] | h[3] << 8));
  const size_t max_piece = kMaxPiece[h[1] & 7];
  if (!dq->in_order()) {
    // Other dense layouts: scattered into a whole-tensor output; a layout
    // whose strides interleave takes the whole buffer at once.
    std::vector<float> tensor(static_cast<size_t>(dq->plan().logical_elements),
                              0.0f);
    absl::Status status;
    for (size_t pos = 0; pos < tensor_data.size() && status.ok();) {
      const size_t len = std::min(tensor_data.size() - pos,
                                  max_piece == SIZE_MAX || !dq->streamable()
                                      ? tensor_data.size()
                                      : 1 + rng() % max_piece);
      const std::vector<uint8_t> piece(tensor_data.begin() + pos,
                                       tensor_data.begin() + pos + len);
      status = dq->ConsumeScattered(piece, absl::MakeSpan(tensor));
      pos += len;
    }
    if (status.ok()) status = dq->Finish();
    ExpectSameStatus(status, ref);
    if (ref.ok()) {
      HURRAY_FUZZ_CHECK(SameBits(want, tensor));
      HURRAY_FUZZ_CHECK(dq->warnings().nonzero_padding ==
                        want_w.nonzero_padding);
    }
    CheckWholePasses(&*dq, d, tensor_data, *params, dq_options, threads, ref,
                     want, want_w);
    hwy::SetSupportedTargetsForTest(0);
    return;
  }
  std::vector<float> chunked;
  absl::Status status;
  for (size_t pos = 0; pos < tensor_data.size() && status.ok();) {
    const size_t len = std::min(
        tensor_data.size() - pos,
        max_piece == SIZE_MAX ? tensor_data.size() : 1 + rng() % max_piece);
    // An exactly sized heap copy, so ASan sees reads past the piece.
    const std::vector<uint8_t> piece(tensor_data.begin() + pos,
                                     tensor_data.begin() + pos + len);
    const size_t start = chunked.size();
    chunked.resize(start + dq->OutputCountFor(len));
    size_t written = 0;
    status =
        dq->Consume(piece, absl::MakeSpan(chunked).subspan(start), &written);
    HURRAY_FUZZ_CHECK(status.ok() ? start + written == chunked.size()
                                  : start + written <= chunked.size());
    chunked.resize(start + written);
    pos += len;
  }
  if (status.ok()) status = dq->Finish();
  ExpectSameStatus(status, ref);
  if (ref.ok()) HURRAY_FUZZ_CHECK(SameBits(want, chunked));
  CheckWholePasses(&*dq, d, tensor_data, *params, dq_options, threads, ref,
                   want, want_w);
  hwy::SetSupportedTargetsForTest(0);
}

}  // namespace
}  // namespace hurray::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  hurray::fuzz::Run(data, size);
  return 0;
}
