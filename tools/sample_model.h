// A small built-in model for demos and tests: a .hrry file whose tensors
// use each of the five quantization schemes (quantization.md), plus an
// unquantized float32 tensor, quantized from deterministic pseudo-random
// weights. `hurray pack --sample` writes it; the README's demo serves and
// ingests it.
#ifndef HURRAY_TOOLS_SAMPLE_MODEL_H_
#define HURRAY_TOOLS_SAMPLE_MODEL_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "parser/descriptor.h"
#include "stream/container/byte_sink.h"

namespace hurray::tools {

struct SampleTensor {
  std::string name;
  // What the tensor's values were before quantization, row-major.
  std::vector<float> original;
  std::unique_ptr<TensorDescriptor> descriptor;
  std::vector<std::vector<uint8_t>> buffers;  // buffer-table order
  // Largest |dequantized - original| the scheme's rounding allows.
  float tolerance = 0;
};

// The sample's tensors, always the same: per-tensor affine uint8,
// per-channel affine int8 (symmetric), per-block affine uint4 with float16
// scales, NF4, MXFP float8_e4m3, MXFP float4_e2m1, and float32.
[[nodiscard]] absl::StatusOr<std::vector<SampleTensor>> BuildSampleTensors();

// The sample as a .hrry file (sorted index, CRC, KV metadata).
[[nodiscard]] absl::Status WriteSampleModel(stream::container::ByteSink sink);

}  // namespace hurray::tools

#endif  // HURRAY_TOOLS_SAMPLE_MODEL_H_
