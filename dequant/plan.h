// The shape of a dequantization: which scheme and codec, and the tensor
// folded to [outer, axis, inner] around the quantization axis.
//
// The stored grid of a quantized tensor is the logical shape, except that
// per-block affine and NF4 round shape[axis] up to a multiple of block_size
// (RESOLUTIONS.md 2): storage element (p, a, i) of the grid
// [outer, padded_axis_len, inner] is padding when a >= axis_len. Per-tensor
// affine folds to [1, 1, N]. Row-major storage holds that grid in order;
// the other dense layouts place it through their element addressing
// (dequant/storage_walk.h). An empty tensor stores nothing, but its
// per-channel parameters are still shape[axis] entries (RESOLUTIONS.md 7);
// MXFP with an empty non-axis dimension has zero blocks (RESOLUTIONS.md 6).
#ifndef HURRAY_DEQUANT_PLAN_H_
#define HURRAY_DEQUANT_PLAN_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "dequant/codec.h"
#include "parser/descriptor.h"

namespace hurray::dequant {

enum class Scheme : uint8_t {
  kPerTensorAffine,
  kPerChannelAffine,
  kPerBlockAffine,
  kNf4,
  kMxfp,
};

const char* SchemeLabel(Scheme s);  // "per_tensor", "per_channel", ...

struct Plan {
  Scheme scheme = Scheme::kPerTensorAffine;
  uint8_t storage_type = 0;
  uint8_t layout_tag = 0;  // a dense layout
  Codec codec = Codec::kInt8;
  uint32_t axis = 0;  // the quantization axis (0 for per-tensor)
  // [outer, axis_len, inner]; padded_axis_len = blocks_per_axis · block_size
  // for per-block affine and NF4, axis_len otherwise.
  uint64_t outer = 1;
  uint64_t axis_len = 1;
  uint64_t padded_axis_len = 1;
  uint64_t inner = 1;
  uint64_t block_size = 0;        // per-block affine, NF4, MXFP
  uint64_t blocks_per_axis = 0;   // ceil(axis_len / block_size)
  uint64_t storage_elements = 0;  // outer · padded_axis_len · inner
  uint64_t logical_elements = 0;  // outer · axis_len · inner
  // Bytes of storage_elements, packed (the data of row- and column-major
  // storage; other layouts may span more, with gaps).
  uint64_t storage_bytes = 0;
  // Entries of the scale buffer (and of the zero-point buffer when
  // asymmetric): 1 for per-tensor (inline), axis_len for per-channel,
  // the block count otherwise.
  uint64_t param_count = 1;
  bool symmetric = true;
  uint8_t scale_type = 0;  // float32, float16 or bfloat16 tag; e8m0 for MXFP
  float tensor_scale = 0;  // per-tensor affine
  int32_t tensor_zero_point = 0;
  // The data buffer (buffer 0): elements start at byte_offset.
  uint64_t byte_offset = 0;
  uint64_t data_buffer_size = 0;

  // Row-major storage: elements arrive in logical order (Consume).
  bool row_major() const { return layout_tag == layout_tag::kRowMajor; }
  bool has_blocks() const {
    return scheme == Scheme::kPerBlockAffine || scheme == Scheme::kNf4 ||
           scheme == Scheme::kMxfp;
  }
  // Number of logical (non-padding) elements among storage elements
  // [0, storage_index).
  uint64_t LogicalBefore(uint64_t storage_index) const;
};

// Checks that `d` can be dequantized here and computes its plan. Errors:
// FailedPrecondition for a tensor without quantization or with a dynamic
// dimension; Unimplemented for a scheme this reader does not interpret or a
// layout that is not dense (sparse, block-paged, composite, extension);
// InvalidArgument for a descriptor that the validator would have rejected
// (wrong storage type, axis, sizes).
[[nodiscard]] absl::StatusOr<Plan> MakePlan(const TensorDescriptor& d);

}  // namespace hurray::dequant

#endif  // HURRAY_DEQUANT_PLAN_H_
