// Fuzz target: `hurray convert` on a safetensors file (stream/convert/).
//
// The input is the whole file. Properties (any violation aborts):
//   * ReadSafetensorsHeader and Convert never crash, never read past the
//     input (MemorySource checks every range), and refuse with a status.
//   * A conversion that succeeds writes a .hrry file both strict readers
//     take (the forward one `hurray ingest` runs, with the reader limits
//     the conversion was given: the defaults, or small metadata and buffer
//     limits picked by the input's length), holding every tensor of the
//     header; so does one with --quantize (a scheme picked by the input's
//     length).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>

#include "fuzz/convert_fuzz_util.h"
#include "stream/convert/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace hurray;
  convert::MemorySource src(absl::MakeConstSpan(data, size));
  convert::SafetensorsLimits limits;
  limits.max_header_bytes = 1 << 16;
  absl::StatusOr<convert::SafetensorsFile> header =
      convert::ReadSafetensorsHeader(src, limits);
  // Each tensor costs a 4 KiB-aligned buffer in the output: keep it small.
  if (!header.ok() || header->tensors.size() > 64) return 0;
  convert::ConvertOptions options;
  options.safetensors = limits;
  options.chunk_bytes = 4096;
  fuzz::PickReaderLimits(size, &options);
  std::unique_ptr<stream::HrryFile> file = fuzz::ConvertAndOpen(src, options);
  if (file != nullptr) {
    for (const convert::SafetensorsTensor& t : header->tensors) {
      if (file->Find(t.name) == nullptr) std::abort();
    }
  }
  fuzz::AddQuantizeOptions(size, &options);
  fuzz::ConvertAndOpen(src, options);
  return 0;
}
