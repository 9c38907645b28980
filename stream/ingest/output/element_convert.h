// The element types of `hurray ingest --dequant` / `hurray dequant` outputs
// (issue 16 part 2) and the conversion of a tensor's elements to them.
//
// Output type of a tensor (ChooseOutput):
//   --format f32             float32, always (the raw .f32 files).
//   --dtype float32|float16|bfloat16
//                            that type for every tensor.
//   otherwise (npy, safetensors, no --dtype): the tensor's own type where
//     the format has it (npy: float16/32/64, int8…uint64, bool, complex64/
//     128; safetensors: those but complex, plus bfloat16 and float8
//     e4m3/e5m2); float128 becomes float64; every other type (bfloat16 and
//     float8 in npy, int4/uint4/int2/uint2, float4/float6, e8m0) and every
//     quantized tensor becomes float32.
// A complex tensor written as a real type (f32 format, --dtype, or
// safetensors) gets a trailing dimension of 2: (real, imaginary).
//
// Conversions round once, to nearest, ties to even, from the exact value:
// every source type but int64/uint64 and float128 is exact in a double and
// is rounded from it; int64/uint64 and float128 are rounded from their own
// bits straight to float32/float16/bfloat16 (float128 to float64 too),
// never through a double. float8 e8m0's NaN code and float128 NaN give a
// quiet NaN.
#ifndef HURRAY_STREAM_INGEST_OUTPUT_ELEMENT_CONVERT_H_
#define HURRAY_STREAM_INGEST_OUTPUT_ELEMENT_CONVERT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace hurray::stream::ingest {

enum class OutputFormat : uint8_t { kNpy, kSafetensors, kF32 };
enum class OutputDtype : uint8_t { kAuto, kFloat32, kFloat16, kBFloat16 };

[[nodiscard]] absl::StatusOr<OutputFormat> ParseOutputFormat(
    absl::string_view s);
[[nodiscard]] absl::StatusOr<OutputDtype> ParseOutputDtype(absl::string_view s);
absl::string_view OutputFormatName(OutputFormat f);
absl::string_view OutputDtypeName(OutputDtype d);
// Usage errors of the pair (npy has no bfloat16; f32 is float32 only).
[[nodiscard]] absl::Status CheckFormatAndDtype(OutputFormat f, OutputDtype d);

// The file name suffix of a tensor output: ".npy" or ".f32" (safetensors:
// none, every tensor goes into model.safetensors).
absl::string_view OutputSuffix(OutputFormat f);

// The output element type: a Hurray type tag among float16, bfloat16,
// float32, float64, int8…uint64, bool (one byte each), complex64/128,
// float8 e4m3/e5m2.
struct OutputType {
  uint8_t tag = 0;
  bool pairs = false;      // complex source written as (re, im) reals
  uint32_t bytes() const;  // per output value
  // "<f4", "|b1", ...; empty when npy has none.
  absl::string_view npy_descr() const;
  // "F32", "BOOL", ...; empty when safetensors has none.
  absl::string_view safetensors_dtype() const;
};

// `source_tag`: the tensor's element type (its storage type when
// quantized). InvalidArgument for a type with no numeric value (an
// extension type).
[[nodiscard]] absl::StatusOr<OutputType> ChooseOutput(uint8_t source_tag,
                                                      bool quantized,
                                                      OutputFormat format,
                                                      OutputDtype dtype);

// Converts a packed, row-major stream of elements of `source_tag` (LSB-first
// sub-byte packing, element-types.md) to little-endian elements of `out`,
// the bytes cut anywhere; stops after `count` elements (later bytes are
// ignored).
class ElementConverter {
 public:
  ElementConverter(uint8_t source_tag, OutputType out, uint64_t count);

  // Appends the converted elements completed by `bytes` to *out.
  void Feed(absl::Span<const uint8_t> bytes, std::vector<uint8_t>* out);
  // Counts the elements `bytes` complete, converting nothing (an output
  // nobody reads). Not mixed with Feed in one tensor.
  void Discard(absl::Span<const uint8_t> bytes);
  uint64_t done() const { return done_; }
  uint64_t count() const { return count_; }
  // Output bytes for one source element (2 values for pairs).
  uint32_t out_bytes_per_element() const { return out_bytes_; }

 private:
  void Group(const uint8_t* p, uint32_t elements, std::vector<uint8_t>* out);

  uint8_t src_;
  OutputType out_;
  uint64_t count_;
  uint64_t done_ = 0;
  uint32_t bits_;
  uint32_t group_bytes_;
  uint32_t group_elements_;
  uint32_t out_bytes_;
  bool copy_;  // same bytes in and out
  // float32 in, float16 / bfloat16 out: converted in bulk from the bits.
  bool f32_to_16_;
  uint8_t carry_[16] = {};
  uint32_t carry_n_ = 0;
};

// Rounds to float16 / bfloat16 bits (nearest, ties to even).
uint16_t DoubleToF16Bits(double x);
uint16_t DoubleToBf16Bits(double x);
// The same from float32 bits, without the trip through double (the bulk
// path of the float32 -> float16 / bfloat16 output).
uint16_t F32BitsToF16Bits(uint32_t b);
uint16_t F32BitsToBf16Bits(uint32_t b);
// IEEE binary128 (little-endian bytes) to the nearest double.
double Float128ToDouble(const uint8_t* p);

}  // namespace hurray::stream::ingest

#endif  // HURRAY_STREAM_INGEST_OUTPUT_ELEMENT_CONVERT_H_
