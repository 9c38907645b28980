// Convert: a safetensors or GGUF file (told apart by its first bytes) to a
// .hrry file, written in one forward pass through stream::HrryWriter with
// tensor data streamed in chunks (memory bounded by the chunk size and the
// header, whatever the tensor sizes).
//
// Every tensor keeps its values exactly (README.md in this directory has the
// type map): safetensors tensors and GGUF F32/F16/BF16/F64/I8..I64 tensors
// become row-major tensors of the same element type (the GGUF shape is ne[]
// reversed); GGUF Q8_0, Q4_0, MXFP4, Q6_K and Q3_K become per-block affine
// or MXFP tensors whose dequantized values are ggml's (ggml_blocks.h);
// Q4_K, Q5_K and Q2_K become uint8 per-block affine tensors within a
// documented bound of ggml's values (ggml_kmin.h; ConvertedTensor::exact
// false, errors measured). Other
// GGUF types are refused, naming the type. Source metadata goes to the KV
// section; `kv` entries are added and replace source keys of the same name.
// With `quantize` / `requantize`, chosen tensors are quantized instead
// (stream/convert/quantizer.h) and their errors reported.
#ifndef HURRAY_STREAM_CONVERT_CONVERT_H_
#define HURRAY_STREAM_CONVERT_CONVERT_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "stream/container/byte_sink.h"
#include "stream/container/file_format.h"
#include "stream/convert/byte_source.h"
#include "stream/convert/fd_copy.h"
#include "stream/convert/gguf.h"
#include "stream/convert/quantizer.h"
#include "stream/convert/safetensors.h"

namespace hurray::stream::convert {

struct ConvertedTensor {
  std::string name;
  std::string source_type;  // "F32", "Q8_0", ...
  std::string hurray_type;  // "float32", "int4", ...
  std::string scheme;       // "" or "per_block_affine", "mxfp"
  std::vector<uint64_t> shape;
  bool quantized = false;  // by --quantize / --requantize
  // Dequantizes to the source's values bit for bit (every tensor but those
  // --quantize / --requantize took and GGUF Q4_K / Q5_K / Q2_K, whose
  // errors are in max_abs_error / rms_error).
  bool exact = true;
  double max_abs_error = 0, rms_error = 0;
  std::string note;  // why --quantize kept it ("1-D", "--skip", ...)
};

struct ConvertOptions {
  std::vector<std::pair<std::string, std::string>> kv;
  SafetensorsLimits safetensors;
  GgufLimits gguf;
  // The reader the output is for (by default `hurray ingest`'s): nothing
  // it would refuse is written. Its descriptor rules check every tensor;
  // its max_metadata_bytes bounds the output's KV section, index and
  // trailer (and the GGUF metadata read), its limits.max_buffer_bytes
  // every buffer: past them the input is refused before a byte is written
  // (LIMIT-BUFFER-BYTES, output_limits.h), and the metadata held in memory
  // stays within them.
  stream::container::FileOptions reader;
  // Source bytes read at a time (rounded down to whole blocks).
  size_t chunk_bytes = size_t{512} << 10;
  // GGUF Q8_0 / Q4_0 / MXFP4 / K-quants: the scales (and Q4_K / Q5_K / Q2_K
  // zero points) of a tensor, kept in memory while its codes are written so
  // that the source is read once. A tensor with more parameter bytes than
  // this (a Q8_0 tensor over 17 × this many source bytes) is read again for
  // each parameter buffer instead.
  uint64_t scale_spool_bytes = uint64_t{32} << 20;
  // GGUF tensors re-blocked (Q8_0, Q4_0, MXFP4, K-quants) over two chunks or
  // more: each chunk is read and rewritten on a second thread while this
  // one writes the chunks before it (chunk_pipeline.h), holding up to
  // kPipelineDepth output chunks. The output, reports and refusals are the
  // same as without it (false: all on the caller's thread).
  bool rewrite_thread = true;
  // GGUF Q4_K and Q2_K in the compact form (ggml_kmin.h): codes at the
  // source's own width (uint4, uint2), within half of ggml's step, instead
  // of uint8 codes within 1/32 (Q4_K) or 1/128 (Q2_K) of it.
  bool kquant_compact = false;
  // Float tensors (F32, F16, BF16, F64) of rank >= 2 whose name matches no
  // `skip` pattern (fnmatch(3)) and whose shape the scheme takes are
  // quantized; the others are kept as they are.
  std::optional<QuantizeSpec> quantize;
  std::vector<std::string> skip;
  // GGUF Q4_1, Q5_0, Q5_1 and Q8_1 tensors, which have no exact Hurray form,
  // and Q4_K, Q5_K and Q2_K (instead of their near-lossless form) are
  // dequantized with ggml's formula and quantized with this scheme.
  std::optional<QuantizeSpec> requantize;
  // The output's data_buffer_alignment (file-format.md § File Header,
  // FILE-HDR-07): a power of two from 4096 to 2 MiB; every data buffer
  // starts at a multiple of it, after up to alignment - 1 zero bytes of
  // padding. 2 MiB lets the kernel's copy into ext4 use large page-cache
  // folios (bench/RESULTS.md, issue 47 item 3) at up to 2 MiB of padding
  // per buffer.
  uint32_t data_buffer_alignment = stream::container::kMinDataAlignment;
  // Kernel copies (fd_copy.h): when `fd` >= 0 (the sink's destination, a
  // file written at its file position), a tensor whose bytes are copied
  // unchanged and lie in the input's file moves from there to `fd` with
  // copy_file_range, after `flush` has written out what the sink holds.
  // Where the kernel cannot copy (EXDEV, EINVAL, ENOSYS, EOPNOTSUPP, or
  // `fd` is not a regular file), the bytes go through the sink as before.
  struct DirectOutput {
    int fd = -1;
    std::function<absl::Status()> flush;
    CopyFileRangeFn copy = nullptr;  // nullptr: copy_file_range (tests: own)
  };
  DirectOutput direct_output;
  // Called with each tensor once it is written; when set, the report does
  // not keep them (ConvertReport::tensors stays empty), so memory does not
  // grow with a report line per tensor.
  std::function<void(const ConvertedTensor&)> on_tensor;
};

struct ConvertReport {
  std::string format;  // "safetensors" or "gguf"
  // In output order; empty when ConvertOptions::on_tensor took them.
  std::vector<ConvertedTensor> tensors;
  uint64_t tensor_count = 0;
  uint64_t kv_entries = 0;
  uint64_t bytes_written = 0;
  // Of them, copied by the kernel (ConvertOptions::direct_output).
  uint64_t kernel_copied_bytes = 0;
  // Zero padding among them, mostly the alignment of every data buffer to
  // ConvertOptions::data_buffer_alignment (file-format.md: 4096 at least).
  uint64_t padding_bytes = 0;
};

// The foreign format `hurray convert` imports, from the source's first
// bytes (stream/container/checkpoint.h's ContainerFormat is which of our
// containers an ingest reads).
enum class ImportFormat { kUnknown, kSafetensors, kGguf };
ImportFormat DetectFormat(const ByteSource& source);

// Whether `a` may be ConvertOptions::data_buffer_alignment (FILE-HDR-07: a
// power of two from 4096 to 2 MiB); Convert refuses any other value before
// it writes a byte.
[[nodiscard]] bool IsValidDataAlignment(uint64_t a);

[[nodiscard]] absl::StatusOr<ConvertReport> Convert(
    const ByteSource& source, const ConvertOptions& options,
    stream::container::ByteSink sink);

}  // namespace hurray::stream::convert

#endif  // HURRAY_STREAM_CONVERT_CONVERT_H_
