// The work of `hurray dequant` (tools/dequant_command.h): one quantized
// tensor in the streaming format (its descriptor, then its buffers back to
// back) read from a regular file and written dequantized, in logical
// row-major order, to OUT as .npy, safetensors or raw values.
//
// The parameter buffers are read first, then the data buffer streams
// through the dequantizer into a hidden temp of OUT's directory, published
// as OUT only once complete (stream/container/safe_output_dir.h). A layout
// other than row-major is read back in logical row-major order from its
// whole data buffer (stream/ingest/output/row_major_gather.h), held in
// memory up to DequantLimits::data_memory_bytes, else copied to a hidden
// temp read back through a block cache.
#ifndef HURRAY_TOOLS_DEQUANT_FILE_H_
#define HURRAY_TOOLS_DEQUANT_FILE_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "parser/descriptor.h"
#include "parser/options.h"
#include "stream/ingest/output/element_convert.h"

namespace hurray::tools {

struct DequantLimits {
  // A non-row-major tensor's data buffer is held in memory up to this size,
  // else spooled to a temp file (tests lower it).
  uint64_t data_memory_bytes = uint64_t{24} << 20;
  // The temp is read back through a block cache of this size.
  size_t gather_cache_bytes = size_t{24} << 20;
};

struct DequantWritten {
  uint64_t elements = 0;
  uint64_t spooled_bytes = 0;  // of the data buffer, to a temp file
};

// Dequantizes the tensor in `file` into `output`; *desc receives its
// descriptor once decoded. *exit_code is the command's exit code
// (tools/command_util.h): 0 on success, 1 when the input broke a rule (the
// status carries the rule id and offset), 2 on an I/O error or a tensor
// this build cannot dequantize.
[[nodiscard]] absl::StatusOr<DequantWritten> DequantizeFile(
    const std::string& file, const std::string& output,
    const ParseOptions& options, stream::ingest::OutputFormat format,
    stream::ingest::OutputDtype dtype, const DequantLimits& limits,
    TensorDescriptor* desc, int* exit_code);

}  // namespace hurray::tools

#endif  // HURRAY_TOOLS_DEQUANT_FILE_H_
