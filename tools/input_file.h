// How inspect and validate read one input FILE: opened once, and read only
// as far as its first descriptor needs.
//
// A regular file that starts with the .hrry magic is left to the .hrry
// reader (it is mapped, not read). Anything else (a descriptor file, a pipe,
// a device such as /dev/zero) is fed to the decoder chunk by chunk until the
// decoder is done or has rejected it: never past the descriptor's end, and
// never more than the decoder's own limit (ParseOptions::limits, the same
// as the loader's) plus one chunk. Directories are refused before any read.
#ifndef HURRAY_TOOLS_INPUT_FILE_H_
#define HURRAY_TOOLS_INPUT_FILE_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "parser/decoder.h"
#include "parser/rules.h"

namespace hurray::tools {

enum class InputKind { kHrry, kDescriptor };

struct DescriptorRead {
  Rejection rejection;                // the decoder's verdict
  uint64_t bytes_read = 0;            // from the file
  std::optional<uint64_t> file_size;  // regular files only
};

// kHrry: nothing decoded. kDescriptor: `decoder` was reset and fed, its
// verdict is in *read (and decoder->descriptor() when ok). Errors: the file
// cannot be opened or read, is a directory, or is a .hrry file that is not
// a regular file (I/O errors, exit 2).
[[nodiscard]] absl::StatusOr<InputKind> ReadInput(const std::string& path,
                                                  DescriptorDecoder* decoder,
                                                  DescriptorRead* read);

}  // namespace hurray::tools

#endif  // HURRAY_TOOLS_INPUT_FILE_H_
