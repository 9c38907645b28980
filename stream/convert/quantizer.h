// `--quantize` / `--requantize`: float tensors quantized on their way into
// the .hrry file, streamed row by row (rows of the last, contiguous axis),
// with dequant/quantize.h's round-to-nearest quantizers.
//
// Schemes (SCHEME[:STORAGE][:BLOCK]):
//   per_tensor:int8|uint8            one scale (and zero point)
//   per_channel:int8|uint8           axis 0, float32 scales (int32 zero points)
//   per_block:int8|uint8|int4|uint4[:BLOCK]   last axis, BLOCK (default 32),
//                                    float32 scales (int32 zero points)
//   nf4[:BLOCK]                      last axis, BLOCK (default 64), float32
//                                    absmax
//   mxfp:e2m1|e4m3|e5m2[:BLOCK]      last axis, BLOCK (default 32), e8m0
// Signed storage is symmetric, unsigned asymmetric.
#ifndef HURRAY_STREAM_CONVERT_QUANTIZER_H_
#define HURRAY_STREAM_CONVERT_QUANTIZER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "dequant/quantize.h"
#include "parser/descriptor.h"
#include "stream/container/byte_sink.h"

namespace hurray::stream::convert {

struct QuantizeSpec {
  uint8_t scheme = 0;   // scheme_tag
  uint8_t storage = 0;  // element type of the codes
  uint32_t block = 0;   // per_block, nf4, mxfp
  std::string text;     // as given
};
[[nodiscard]] absl::StatusOr<QuantizeSpec> ParseQuantizeSpec(
    absl::string_view text);

// Whether `spec` can quantize a tensor of `shape`; `why` when not.
bool Applicable(const QuantizeSpec& spec, absl::Span<const uint64_t> shape,
                std::string* why);

// Reads a tensor's values as float32, by flat row-major element range. The
// Quantizer asks for whole rows (of the last axis), or for pieces of a row
// starting and ending at multiples of 32 elements (or the row's end), so
// that ggml block sources are read in whole blocks.
class FloatRows {
 public:
  virtual ~FloatRows() = default;
  [[nodiscard]] virtual absl::Status Read(uint64_t first, uint64_t count,
                                          float* out) = 0;
};

class Quantizer {
 public:
  Quantizer(const QuantizeSpec& spec, std::vector<uint64_t> shape,
            FloatRows* source, size_t chunk_bytes);
  // The statistics pass of per_tensor and per_channel (reads the source
  // once); refuses non-finite values.
  [[nodiscard]] absl::Status Prepare();
  [[nodiscard]] absl::Status Describe(TensorDescriptor* d) const;
  // Buffer 0: codes; 1: scales; 2: zero points (asymmetric affine).
  [[nodiscard]] absl::Status WriteBuffer(uint32_t index,
                                         stream::container::ByteSink out);

  double max_abs_error() const { return max_err_; }
  double rms_error() const;

 private:
  // Calls f on the tensor in order: whole rows when a row fits the chunk,
  // else pieces of a row (whole blocks, multiples of 32 elements).
  [[nodiscard]] absl::Status ForEachPiece(
      absl::FunctionRef<absl::Status(uint64_t row, const float* v, size_t n)>
          f);
  void Range(const float* v, size_t n, float* lo, float* hi) const;
  // One group of values (a block, or a row piece of a channel / the
  // tensor): codes into codes_ (one per value, padded to `stored`), its
  // parameters out, errors accumulated when `measure`.
  void QuantizeGroup(const float* v, size_t n, size_t stored,
                     const dequant::AffineParams* fixed, bool measure,
                     float* scale_out, int32_t* zp_out, uint8_t* e_out);
  void EmitCodes(std::vector<uint8_t>* out) const;

  QuantizeSpec spec_;
  std::vector<uint64_t> shape_;
  FloatRows* source_;
  size_t chunk_bytes_;
  uint64_t row_len_ = 0, rows_ = 0, elements_ = 0;
  int64_t qmin_ = 0, qmax_ = 0;
  bool symmetric_ = true;
  dequant::MinifloatQuantizer mini_;
  // per_tensor / per_channel parameters.
  std::vector<dequant::AffineParams> params_;
  std::vector<float> buf_;
  std::vector<int64_t> codes_;
  double max_err_ = 0, sum_sq_ = 0;
  uint64_t measured_ = 0;
};

}  // namespace hurray::stream::convert

#endif  // HURRAY_STREAM_CONVERT_QUANTIZER_H_
