// The plan of a conversion (convert.cc): what each source tensor becomes,
// decided from the headers before a byte of output is written, and the
// descriptor each plan writes. Private to //stream/convert:convert.
#ifndef HURRAY_STREAM_CONVERT_CONVERT_PLAN_H_
#define HURRAY_STREAM_CONVERT_CONVERT_PLAN_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "parser/descriptor.h"
#include "stream/container/kv_builder.h"
#include "stream/convert/convert.h"
#include "stream/convert/ggml_blocks.h"
#include "stream/convert/ggml_kmin.h"
#include "stream/convert/gguf.h"
#include "stream/convert/quantizer.h"
#include "stream/convert/safetensors.h"

namespace hurray::stream::convert::internal {

enum class Kind {
  kCopy,
  kBool,
  kE8M0,
  kQ8_0,
  kQ4_0,
  kMxfp4,
  kQ6_K,
  kQ3_K,
  kQ4_K,  // near-lossless (ggml_kmin.h)
  kQ5_K,
  kQ2_K,
  kQuantize
};

// How a tensor's source values read as float32 (for --quantize).
enum class Floats {
  kNone,
  kF32,
  kF16,
  kBF16,
  kF64,
  kQ4_1,
  kQ5_0,
  kQ5_1,
  kQ8_1,
  kQ4_K,  // blocks of 256 (ggml_kmin.h)
  kQ5_K,
  kQ2_K
};

// One tensor to write, decided before anything is written.
struct Plan {
  std::string name;
  Kind kind = Kind::kCopy;
  uint8_t type_tag = 0;
  std::string source_type;
  std::vector<uint64_t> shape;  // logical, row-major
  uint64_t elements = 0;
  uint64_t begin = 0;         // absolute source offset
  uint64_t source_bytes = 0;  // bytes of source data
  Floats floats = Floats::kNone;
  bool needs_requantize = false;  // a GGUF type with no exact form
  bool compact = false;           // Q4_K / Q2_K at the source's width
  QuantizeSpec spec;              // Kind::kQuantize
  std::string note;
};

// `s` with the tensor's name in front of its message.
[[nodiscard]] absl::Status ForTensor(absl::string_view name,
                                     const absl::Status& s);
// Q8_0 / Q4_0 / MXFP4 / Q6_K / Q3_K: re-blocked exactly (ggml_blocks.h).
bool Quantized(Kind k);
// Q4_K / Q5_K / Q2_K: a per-sub-block minimum (ggml_kmin.h).
bool IsKMin(Kind k);
KMinType KMinOf(Kind k);
GgmlBlockType BlockType(Kind k);
// The descriptor the plan's tensor is written with.
[[nodiscard]] absl::Status Describe(const Plan& p, TensorDescriptor* d);

// The plans of a file's tensors, in data-offset order.
[[nodiscard]] absl::StatusOr<std::vector<Plan>> PlanSafetensors(
    SafetensorsFile& f);
[[nodiscard]] absl::StatusOr<std::vector<Plan>> PlanGguf(GgufFile& f);
// One GGUF metadata pair as a KV entry.
[[nodiscard]] absl::Status AddGgufKv(const GgufKv& kv,
                                     stream::container::KvBuilder* out);
// --quantize / --requantize / --skip applied to the plans.
[[nodiscard]] absl::Status ChooseQuantized(const ConvertOptions& o,
                                           std::vector<Plan>* plans);

}  // namespace hurray::stream::convert::internal

#endif  // HURRAY_STREAM_CONVERT_CONVERT_PLAN_H_
