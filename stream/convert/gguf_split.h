// Split GGUF (issue 48): llama.cpp's gguf-split writes a model as
// `<prefix>-00001-of-0000N.gguf` … `<prefix>-0000N-of-0000N.gguf`, each a
// GGUF file with the keys split.no (0-based), split.count (N) and
// split.tensors.count (the tensors of all parts), the model's metadata in the
// first. Given the first part, the parts are presented to Convert() as one
// GGUF file: a header written here from the parts' headers (version 3), then
// the parts' tensor data, read from the part files as it is asked for (one
// part open at a time), so memory is the headers, never the parts' sizes.
//
// The part names are made here from the first part's name (the same
// directory; no name is taken from the input). Refused, naming the part or
// tensor: a first part whose split.count is not N of its name, more parts
// than the limit, a part that does not open or is not GGUF, a part whose
// split.no or split.count disagree with its name, a tensor in two parts, a
// split.tensors.count that is not the tensors' number, a combined header
// above the metadata limit. The combined file's alignment is the parts'
// general.alignment when they agree (32, GGUF's default, otherwise).
// Metadata: a key with one value in every part that has it is written
// once; a key whose values differ once per part as "<file name>:<key>"
// (split.no is such a key).
#ifndef HURRAY_STREAM_CONVERT_GGUF_SPLIT_H_
#define HURRAY_STREAM_CONVERT_GGUF_SPLIT_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "stream/convert/byte_source.h"
#include "stream/convert/gguf.h"

namespace hurray::stream::convert {

struct SplitLimits {
  uint64_t max_parts = 99999;  // gguf-split's five digits
  // Each part's header, and the combined header (its max_metadata_bytes
  // bounds the combined KV pairs and tensor infos).
  GgufLimits gguf;
};

struct SplitGguf {
  std::unique_ptr<ByteSource> source;  // one GGUF file
  uint64_t part_count = 0;
};

// Opens part `name` (made here: `<prefix>-%05d-of-%05d.gguf`).
using PartOpener = std::function<absl::StatusOr<std::unique_ptr<ByteSource>>(
    const std::string& name)>;

// `first_name` is the first part's file name ("m-00001-of-00003.gguf").
// Returns N, or 0 when the name is not the first of N ≥ 2 parts.
uint64_t SplitGgufParts(const std::string& first_name);

[[nodiscard]] absl::StatusOr<SplitGguf> OpenSplitGguf(
    const std::string& first_name, PartOpener open,
    const SplitLimits& limits = {});

// The first part at `path`, the others from its directory; for a `path`
// whose file name SplitGgufParts counts.
[[nodiscard]] absl::StatusOr<SplitGguf> OpenSplitGgufFiles(
    const std::string& path, const SplitLimits& limits = {});

}  // namespace hurray::stream::convert

#endif  // HURRAY_STREAM_CONVERT_GGUF_SPLIT_H_
