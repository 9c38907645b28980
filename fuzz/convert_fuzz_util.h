// Shared by safetensors_fuzz and gguf_fuzz: converts an input with given
// options into memory and checks that a success opens with the strict
// .hrry reader.
#ifndef HURRAY_FUZZ_CONVERT_FUZZ_UTIL_H_
#define HURRAY_FUZZ_CONVERT_FUZZ_UTIL_H_

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <vector>

#include "stream/container/hrry_mmap.h"
#include "stream/convert/byte_source.h"
#include "stream/convert/convert.h"

namespace hurray::fuzz {

// nullptr when the conversion refused the input; aborts when it succeeded
// but the output does not open.
inline std::unique_ptr<stream::HrryFile> ConvertAndOpen(
    const convert::ByteSource& src, const convert::ConvertOptions& options) {
  std::vector<uint8_t> out;
  absl::StatusOr<convert::ConvertReport> report =
      convert::Convert(src, options, [&out](absl::Span<const uint8_t> b) {
        out.insert(out.end(), b.begin(), b.end());
        return absl::OkStatus();
      });
  if (!report.ok()) return nullptr;
  absl::StatusOr<std::unique_ptr<stream::HrryFile>> file =
      stream::HrryFile::CopyOf(out);
  if (!file.ok()) std::abort();
  return *std::move(file);
}

// --quantize (and --requantize) with a scheme picked by `selector`.
inline void AddQuantizeOptions(size_t selector,
                               convert::ConvertOptions* options) {
  static const char* const kSchemes[] = {"per_tensor:int8",
                                         "per_channel:uint8",
                                         "per_block:int4:16",
                                         "per_block:uint8",
                                         "nf4:8",
                                         "mxfp:e2m1:16",
                                         "mxfp:e4m3"};
  absl::StatusOr<convert::QuantizeSpec> spec =
      convert::ParseQuantizeSpec(kSchemes[selector % 7]);
  if (!spec.ok()) std::abort();
  options->quantize = *spec;
  options->requantize = *spec;
  options->skip = {"*.skip"};
}

}  // namespace hurray::fuzz

#endif  // HURRAY_FUZZ_CONVERT_FUZZ_UTIL_H_
