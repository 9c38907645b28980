// Test helpers: valid quantized row-major tensors of any scheme, storage
// type, shape and axis, with random data and parameters, and bit-level
// comparison of float outputs.
#ifndef HURRAY_DEQUANT_TESTING_TEST_TENSOR_H_
#define HURRAY_DEQUANT_TESTING_TEST_TENSOR_H_

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

// The dense layout of a test tensor (row-major by default). Its fields are
// those of the descriptor (parser/descriptor.h LayoutFields), over the
// stored grid (shape[axis] padded for per-block affine and NF4).
struct TiledLevelSpec {
  uint8_t outer = 0x01;  // row-major, column-major or strided
  uint8_t inner = 0x01;  // row-major, column-major, strided or tiled
  std::vector<uint64_t> tile;
  std::vector<int64_t> outer_strides;  // in tiles
  std::vector<int64_t> inner_strides;  // in elements
};

struct LayoutSpec {
  uint8_t tag = 0x01;                  // layout_tag
  std::vector<int64_t> strides;        // strided
  std::vector<TiledLevelSpec> levels;  // tiled, outermost first
  std::vector<uint32_t> morton_bits;   // Morton
  uint32_t hilbert_order = 0;          // Hilbert (every dim 2^order)

  std::string Name() const;
};

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
  LayoutSpec layout;

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
// the last element are zero. Other layouts than row-major get a data buffer
// just large enough for the stored grid's addresses (and byte_offset raised
// to reach negative strides); every byte outside the elements is random.
TestTensor MakeTensor(const TensorSpec& spec, std::mt19937_64& rng);

// Overwrite one entry of a tensor made by MakeTensor (separate, unshared
// parameter buffers): the code of storage element `index` (element offset
// from byte_offset: the row-major index of the stored grid for row-major),
// a float32 / 16-bit / e8m0 scale, a zero point.
void SetCode(TestTensor* t, uint64_t index, uint32_t code);
void SetScaleF32(TestTensor* t, uint64_t index, float scale);
void SetScale16(TestTensor* t, uint64_t index, uint16_t bits);
void SetScaleByte(TestTensor* t, uint64_t index, uint8_t e8m0);
void SetZeroPoint(TestTensor* t, uint64_t index, int32_t zero_point);

// The stored grid of `spec`: its shape with shape[axis] rounded up to whole
// blocks for per-block affine and NF4.
std::vector<uint64_t> StoredShape(const TensorSpec& spec);

// A random valid layout of tag `tag` for a stored grid of `shape`:
// column-major; strided (a permutation of contiguous strides with random
// gaps, signs, broadcast and, with `interleaved`, overlapping strides); tiled
// (one or two levels, every outer/inner kind, partial tiles); Morton (spare
// bits); Hilbert needs equal power-of-two dimensions (order from the shape).
LayoutSpec RandomLayout(uint8_t tag, const std::vector<uint64_t>& shape,
                        std::mt19937_64& rng, bool interleaved = false);

// Storage types a scheme allows.
std::vector<uint8_t> StorageTypes(Scheme scheme);

// Index of the first element whose bits differ, or -1.
int64_t FirstBitDifference(absl::Span<const float> a,
                           absl::Span<const float> b);

uint32_t Bits(float f);

}  // namespace hurray::dequant::testing

#endif  // HURRAY_DEQUANT_TESTING_TEST_TENSOR_H_
