// Shared by safetensors_fuzz and gguf_fuzz: converts an input with given
// options into memory and checks that a success opens with the strict
// .hrry readers: a converter never writes what our reader refuses.
#ifndef HURRAY_FUZZ_CONVERT_FUZZ_UTIL_H_
#define HURRAY_FUZZ_CONVERT_FUZZ_UTIL_H_

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <vector>

#include "stream/container/hrry_file.h"
#include "stream/container/hrry_mmap.h"
#include "stream/convert/byte_source.h"
#include "stream/convert/convert.h"

namespace hurray::fuzz {

// nullptr when the conversion refused the input; aborts when it succeeded
// but the output does not open, or when the forward reader `hurray ingest`
// runs (strict, with the limits the conversion was given: options.reader)
// refuses it.
inline std::unique_ptr<stream::container::HrryFile> ConvertAndOpen(
    const stream::convert::ByteSource& src,
    const stream::convert::ConvertOptions& options) {
  std::vector<uint8_t> out;
  absl::StatusOr<stream::convert::ConvertReport> report =
      stream::convert::Convert(src, options,
                               [&out](absl::Span<const uint8_t> b) {
                                 out.insert(out.end(), b.begin(), b.end());
                                 return absl::OkStatus();
                               });
  if (!report.ok()) return nullptr;
  stream::container::FileOptions strict = options.reader;
  strict.parse.mode = Mode::kStrict;
  if (!stream::container::ReadHrry(out, strict, nullptr).ok()) std::abort();
  absl::StatusOr<std::unique_ptr<stream::container::HrryFile>> file =
      stream::container::HrryFile::CopyOf(out, strict);
  if (!file.ok()) std::abort();
  return *std::move(file);
}

// Reader limits for a conversion, picked by `selector`: the defaults, or a
// metadata limit of 64 bytes to 16 KiB and a buffer limit of 16 bytes to
// 4 KiB, so that refusals at the limits and successes just under them both
// happen.
inline void PickReaderLimits(size_t selector,
                             stream::convert::ConvertOptions* options) {
  if (selector % 4 < 2) return;
  options->reader.max_metadata_bytes = 64 + (selector * 40503u) % 16321;
  options->reader.limits.max_buffer_bytes =
      16 + (selector * 2654435761u) % 4081;
}

// --quantize (and --requantize) with a scheme picked by `selector`.
inline void AddQuantizeOptions(size_t selector,
                               stream::convert::ConvertOptions* options) {
  static const char* const kSchemes[] = {"per_tensor:int8",
                                         "per_channel:uint8",
                                         "per_block:int4:16",
                                         "per_block:uint8",
                                         "nf4:8",
                                         "mxfp:e2m1:16",
                                         "mxfp:e4m3"};
  absl::StatusOr<stream::convert::QuantizeSpec> spec =
      stream::convert::ParseQuantizeSpec(kSchemes[selector % 7]);
  if (!spec.ok()) std::abort();
  options->quantize = *spec;
  options->requantize = *spec;
  options->skip = {"*.skip"};
}

}  // namespace hurray::fuzz

#endif  // HURRAY_FUZZ_CONVERT_FUZZ_UTIL_H_
