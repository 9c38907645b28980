// Convert from a path to a path: `hurray convert SRC -o OUT`'s work as one
// library call, for the CLI (tools/convert_command.cc), the C ABI
// (capi/convert.cc) and Python (python/ext/convert_bindings.cc). SRC is a
// shard index or a directory holding
// model.safetensors.index.json (shards.h), the first part of a split GGUF
// (gguf_split.h), or one safetensors / GGUF file. OUT is written through
// SafeOutputFile (stream/container/safe_output_dir.h: a temp of its
// directory, published under its name only when the conversion succeeded,
// replacing what was there), with kernel copies of unchanged spans
// (ConvertOptions::direct_output).
#ifndef HURRAY_STREAM_CONVERT_CONVERT_FILE_H_
#define HURRAY_STREAM_CONVERT_CONVERT_FILE_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "stream/convert/byte_source.h"
#include "stream/convert/convert.h"

namespace hurray::stream::convert {

struct ConvertInput {
  std::unique_ptr<ByteSource> source;
  std::vector<std::string> warnings;  // a shard index's total_size, ...
};

// SRC as above; the shard and split readers take `options`' safetensors and
// GGUF limits.
[[nodiscard]] absl::StatusOr<ConvertInput> OpenConvertInput(
    const std::string& path, const ConvertOptions& options);

// Converts `input` to a new file at `output`. `options.direct_output` is
// set here; `options.on_tensor`, when set, is called as each tensor is
// written. `warnings` (optional) receives the input's warnings. `cancelled`
// (optional) is polled before each write and at the end: true stops the run
// (kCancelled, nothing published).
//
// Failures, by code (the message names the file, tensor or key):
//   kInvalidArgument: the input is refused (or an option, such as the data
//     alignment); the library's rule id and offset ride along when it has
//     them (parser/rules.h RuleIdOf: LIMIT-BUFFER-BYTES, a descriptor rule);
//   kUnimplemented: a GGUF type no conversion takes (Q8_K, IQ*, TQ*);
//   kNotFound, kPermissionDenied, kDataLoss, kInternal, ...: the input or
//     the output could not be opened, read or written;
//   kCancelled: `cancelled` returned true.
[[nodiscard]] absl::StatusOr<ConvertReport> ConvertFile(
    const std::string& input, const std::string& output, ConvertOptions options,
    std::vector<std::string>* warnings = nullptr,
    const std::function<bool()>& cancelled = nullptr);

}  // namespace hurray::stream::convert

#endif  // HURRAY_STREAM_CONVERT_CONVERT_FILE_H_
