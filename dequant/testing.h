// Test helpers: valid quantized row-major tensors of any scheme, storage
// type, shape and axis, with random data and parameters, and bit-level
// comparison of float outputs.
#ifndef HURRAY_DEQUANT_TESTING_H_
#define HURRAY_DEQUANT_TESTING_H_

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/types/span.h"
#include "dequant/params.h"
#include "dequant/plan.h"
#include "parser/descriptor.h"

namespace hurray::dequant::testing {

struct TensorSpec {
  Scheme scheme = Scheme::kPerTensorAffine;
  uint8_t storage_type = 0;
  std::vector<uint64_t> shape;
  uint32_t axis = 0;
  uint32_t block_size = 0;  // per-block, NF4, MXFP
  uint8_t scale_type = 0;   // per-block: f16/bf16/f32 tag (default f32)
  bool symmetric = false;   // per-channel, per-block
  uint64_t byte_offset = 0;
  bool shared_buffer = false;  // per-channel/per-block asymmetric
  // Zero points anywhere in int32 (only valid in permissive per-block mode).
  bool wild_zero_points = false;
  bool zero_padding = true;  // padding elements of partial blocks set to 0

  std::string Name() const;
};

struct TestTensor {
  std::unique_ptr<TensorDescriptor> descriptor;
  // Every buffer of the table by index; buffers[0] is the data buffer.
  std::vector<std::vector<uint8_t>> buffers;

  absl::Span<const uint8_t> data() const { return buffers[0]; }
  // The parameter buffers, through ParametersFromBuffers.
  ParameterBytes params() const;
};

// Random data and parameters for `spec`; the descriptor passes the parser's
// validator (except wild zero points, a data-level matter). Unused bits after
// the last element are zero.
TestTensor MakeTensor(const TensorSpec& spec, std::mt19937_64& rng);

// Overwrite one entry of a tensor made by MakeTensor (separate, unshared
// parameter buffers): the code of storage element `index` of the stored grid,
// a float32 / 16-bit / e8m0 scale, a zero point.
void SetCode(TestTensor* t, uint64_t index, uint32_t code);
void SetScaleF32(TestTensor* t, uint64_t index, float scale);
void SetScale16(TestTensor* t, uint64_t index, uint16_t bits);
void SetScaleByte(TestTensor* t, uint64_t index, uint8_t e8m0);
void SetZeroPoint(TestTensor* t, uint64_t index, int32_t zero_point);

// Storage types a scheme allows.
std::vector<uint8_t> StorageTypes(Scheme scheme);

// Index of the first element whose bits differ, or -1.
int64_t FirstBitDifference(absl::Span<const float> a,
                           absl::Span<const float> b);

uint32_t Bits(float f);

}  // namespace hurray::dequant::testing

#endif  // HURRAY_DEQUANT_TESTING_H_
