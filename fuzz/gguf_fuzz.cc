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
//   * An input starting with 'S' is a split GGUF (gguf_split.h): byte 1 the
//     part count n (2..9), then n little-endian uint32 lengths, then the
//     parts back to back; part i of "m-0000i-of-0000n.gguf" is the i-th.
//     OpenSplitGguf never crashes and refuses with a status; the file it
//     gives converts like one GGUF file (the properties above, without the
//     dequantization check).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "dequant/params.h"
#include "dequant/scalar.h"
#include "fuzz/convert_fuzz_util.h"
#include "parser/descriptor.h"
#include "stream/convert/gguf.h"
#include "stream/convert/gguf_split.h"

namespace {

int Split(const uint8_t* data, size_t size) {
  using namespace hurray;
  if (size < 2 || data[1] < 2 || data[1] > 9) return 0;
  const size_t n = data[1];
  if (size < 2 + 4 * n) return 0;
  std::vector<absl::Span<const uint8_t>> parts;
  size_t at = 2 + 4 * n;
  for (size_t i = 0; i < n; ++i) {
    const uint8_t* l = data + 2 + 4 * i;
    const size_t len =
        l[0] | (l[1] << 8) | (l[2] << 16) | (static_cast<size_t>(l[3]) << 24);
    if (len > size - at) return 0;
    parts.push_back(absl::MakeConstSpan(data + at, len));
    at += len;
  }
  stream::convert::PartOpener open = [&parts, n](const std::string& name)
      -> absl::StatusOr<std::unique_ptr<stream::convert::ByteSource>> {
    // "m-0000i-of-0000n.gguf"
    if (name.size() != 21 || name[6] < '1' ||
        static_cast<size_t>(name[6] - '0') > n)
      return absl::NotFoundError("no such part");
    return std::unique_ptr<stream::convert::ByteSource>(
        new stream::convert::MemorySource(parts[name[6] - '1']));
  };
  stream::convert::SplitLimits limits;
  limits.max_parts = 9;
  limits.gguf.max_tensors = 64;
  limits.gguf.max_kv = 256;
  limits.gguf.max_metadata_bytes = 1 << 20;
  absl::StatusOr<stream::convert::SplitGguf> split =
      stream::convert::OpenSplitGguf(
          "m-00001-of-0000" + std::to_string(n) + ".gguf", open, limits);
  if (!split.ok()) return 0;
  stream::convert::ConvertOptions options;
  options.gguf = limits.gguf;
  options.chunk_bytes = 4096;
  if (size % 2 == 1) options.scale_spool_bytes = 0;
  fuzz::PickReaderLimits(size / 2, &options);
  fuzz::ConvertAndOpen(*split->source, options);
  return 0;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace hurray;
  if (size > 0 && data[0] == 'S') return Split(data, size);
  stream::convert::MemorySource src(absl::MakeConstSpan(data, size));
  stream::convert::GgufLimits limits;
  limits.max_tensors = 64;
  limits.max_kv = 256;
  limits.max_metadata_bytes = 1 << 20;
  absl::StatusOr<stream::convert::GgufFile> header =
      stream::convert::ReadGgufHeader(src, limits);
  if (!header.ok()) return 0;
  stream::convert::ConvertOptions options;
  options.gguf = limits;
  options.chunk_bytes = 4096;
  // Both ways to the scales of a quantized tensor: kept from the codes
  // pass, or read again.
  if (size % 2 == 1) options.scale_spool_bytes = 0;
  fuzz::PickReaderLimits(size / 2, &options);
  std::unique_ptr<stream::container::HrryFile> file =
      fuzz::ConvertAndOpen(src, options);
  auto d = std::make_unique<TensorDescriptor>();
  for (const stream::convert::GgufTensor& t : header->tensors) {
    if (file == nullptr) break;
    const stream::container::IndexEntry* e = file->Find(t.name);
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
