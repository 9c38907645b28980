// Fuzz target: `hurray convert` on a GGUF file (stream/convert/).
//
// The input is the whole file. Properties (any violation aborts):
//   * ReadGgufHeader and Convert never crash, never read past the input
//     (MemorySource checks every range), and refuse with a status.
//   * A conversion that succeeds writes a .hrry file both strict readers
//     take (the forward one `hurray ingest` runs, with the reader limits
//     the conversion was given: the defaults, or small metadata and buffer
//     limits picked by the input's length), holding every tensor of the
//     header, and each quantized tensor
//     (Q8_0, Q4_0, MXFP4, Q6_K, Q3_K, Q4_K, Q5_K, Q2_K) dequantizes with
//     the scalar reference (strict: zero points in range); one with
//     --quantize and --requantize (schemes picked by the input's length)
//     opens too.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <vector>

#include "dequant/params.h"
#include "dequant/scalar.h"
#include "fuzz/convert_fuzz_util.h"
#include "parser/descriptor.h"
#include "stream/convert/gguf.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace hurray;
  convert::MemorySource src(absl::MakeConstSpan(data, size));
  convert::GgufLimits limits;
  limits.max_tensors = 64;
  limits.max_kv = 256;
  limits.max_metadata_bytes = 1 << 20;
  absl::StatusOr<convert::GgufFile> header =
      convert::ReadGgufHeader(src, limits);
  if (!header.ok()) return 0;
  convert::ConvertOptions options;
  options.gguf = limits;
  options.chunk_bytes = 4096;
  // Both ways to the scales of a quantized tensor: kept from the codes
  // pass, or read again.
  if (size % 2 == 1) options.scale_spool_bytes = 0;
  fuzz::PickReaderLimits(size / 2, &options);
  std::unique_ptr<stream::HrryFile> file = fuzz::ConvertAndOpen(src, options);
  auto d = std::make_unique<TensorDescriptor>();
  for (const convert::GgufTensor& t : header->tensors) {
    if (file == nullptr) break;
    const stream::IndexEntry* e = file->Find(t.name);
    if (e == nullptr || !file->ReadDescriptor(*e, d.get()).ok()) std::abort();
    if (!d->has(flag::kHasQuantization)) continue;
    std::vector<absl::Span<const uint8_t>> buffers;
    for (uint32_t i = 0; i < d->buffer_count; ++i) {
      absl::StatusOr<absl::Span<const uint8_t>> b = file->Buffer(*e, *d, i);
      if (!b.ok()) std::abort();
      buffers.push_back(*b);
    }
    absl::StatusOr<dequant::ParameterBytes> params =
        dequant::ParametersFromBuffers(*d, buffers);
    if (!params.ok()) std::abort();
    std::vector<float> values;
    if (!dequant::ReferenceDequantize(*d, buffers[0], *params, &values).ok())
      std::abort();
  }
  fuzz::AddQuantizeOptions(size, &options);
  fuzz::ConvertAndOpen(src, options);
  return 0;
}
