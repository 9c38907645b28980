// The resume state of `hurray ingest --resume STATE_FILE`: what a rerun
// needs to continue after the last tensor that was fully validated (and
// written, with --dequant), so that its outputs and verdict equal those of
// an uninterrupted run.
//
//   files and pipes: the checkpoint (stream/container/checkpoint.h) the
//     consumers of stream/ingest/consumers.h hand out (the offset after the
//     last completed tensor, outside any composite, and the CRC-32C of the
//     bytes before it; for .hrry the header, the 40 bytes before the offset
//     and the extents of the tensors walked, for the index checks at the
//     end), and the file's identity (stream/resume/resume_source.h);
//   HTTP(S) sources: the same checkpoint, and the object's validator (a
//     strong ETag, else its Last-Modified date) and size: a resumed run
//     asks for the rest with Range and If-Range, so a changed object is
//     refused, never spliced (stream/http/http_body.h, issue 15);
//   the network: the tensor names still to fetch, what the server said
//     identifies its file (the `hurray:identity` key, docs/network.md
//     § Identity; a resumed run asks again and refuses another answer), and
//     for each completed tensor the CRC-32C of its data (a resumed run
//     fetches the last completed key again and compares,
//     stream/ingest/resume_check_sink.h);
//   both: the summary records of the completed tensors
//     (stream/resume/tensor_record.h), each output with its CRC-32C
//     (checked by DequantSink::Preload before a resumed run);
//     a sparse tensor kept as its arrays (issue 16) has a "part" line
//     (".values", the part of its main output's name) and one "more" line
//     per index array (its part, its published name or its temp, its
//     CRC-32C), each checked on resume like the main output.
//
// The file is text, one field per line ("key value"), strings hex-encoded.
// Its first line is "hurray-ingest-state 4". Older versions are read as
// they are: version 3 (before the server identity: no "server" line) and
// version 2 (before issue 16: no "part" or "more" lines either, every
// record has one output); the lines their version did not have are refused
// in them.
// SaveState writes it through a temp of its directory and renames it over
// STATE_FILE (stream/container/safe_output_dir.h: a symlink there is replaced,
// never written through; a crash leaves the old or the new state, never a torn
// one).
//
// The state file is hostile input (issue 13): LoadState reads it without
// following a symlink, at most kMaxStateBytes, and ParseState refuses
// (InvalidArgument) anything our own SaveState would not write: unknown or
// repeated keys, numbers out of range, strings or lines over their bound,
// more than kMaxStateEntries records, extents, names or index arrays,
// extents that do not lie in order before the offset, records that are not
// complete, and output names other than those our mapping gives the record
// (tensor_<i>.f32 or SafeFileName(name, i).f32, or the same with .npy,
// stream/container/safe_file_name.h, stream/ingest/sinks.h; for a kept sparse
// tensor <base>.values.npy and <base><part>.npy with the same base, part
// .indices, .indptr, .pos_L or .crd_L, .f32/.u64 for f32; published or pending
// together) or our temp names: never a '/', never '..', nothing outside OUT.
#ifndef HURRAY_STREAM_RESUME_INGEST_STATE_H_
#define HURRAY_STREAM_RESUME_INGEST_STATE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "stream/container/checkpoint.h"
#include "stream/resume/resume_source.h"
#include "stream/resume/tensor_record.h"

namespace hurray::stream::resume {

inline constexpr uint64_t kMaxStateBytes = uint64_t{256} << 20;
// Records, extents and remaining names, each.
inline constexpr uint64_t kMaxStateEntries = uint64_t{1} << 20;
// One decoded string field.
inline constexpr size_t kMaxStateString = size_t{64} << 10;

// The object an HTTP(S) checkpoint belongs to. The validator goes into an
// If-Range request header: ParseState accepts printable ASCII only.
struct HttpValidator {
  std::string validator;  // "\"etag\"" or an HTTP date
  uint64_t size = 0;      // the whole object's
  bool operator==(const HttpValidator& o) const {
    return validator == o.validator && size == o.size;
  }
};
inline constexpr size_t kMaxValidatorBytes = 1024;

// A server's identity (docs/network.md § Identity): 1 to
// kMaxServerIdentityBytes bytes of printable ASCII (it is printed in
// errors).
inline constexpr size_t kMaxServerIdentityBytes = 1024;
bool IsServerIdentity(absl::string_view id);

struct IngestState {
  // The SOURCE argument and --dequant directory of the run that wrote it: a
  // rerun must name the same ones.
  std::string source;
  std::string out_dir;
  // The --format/--dtype of the outputs ("npy/auto", ...; empty in states
  // of runs before issue 16: f32): a rerun must ask for the same.
  std::string outputs;
  // File sources: the file the checkpoint belongs to.
  std::optional<SourceIdentity> identity;
  // HTTP(S) sources: the object the checkpoint belongs to.
  std::optional<HttpValidator> http;
  // tcp:// sources: what the server said identifies its file, when it did.
  std::optional<std::string> server;
  container::Checkpoint checkpoint;
  std::vector<std::string> remaining_names;  // network sources
  std::vector<TensorRecord> records;
};

std::string SerializeState(const IngestState& state);
// Parses what SerializeState wrote; refuses anything else (see above).
[[nodiscard]] absl::StatusOr<IngestState> ParseState(absl::string_view text);

[[nodiscard]] absl::Status SaveState(const std::string& path,
                                     const IngestState& state);
// NotFound when the file does not exist (a first run).
[[nodiscard]] absl::StatusOr<IngestState> LoadState(const std::string& path);

}  // namespace hurray::stream::resume

#endif  // HURRAY_STREAM_RESUME_INGEST_STATE_H_
