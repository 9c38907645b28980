// The resume state of `hurray ingest --resume STATE_FILE`: what a rerun
// needs to continue after the last tensor that was fully validated (and
// written, with --dequant), so that its outputs and verdict equal those of
// an uninterrupted run.
//
//   files and pipes: the checkpoint of stream/consumers.h (the offset after
//     the last completed tensor, outside any composite; for .hrry the
//     header, the 40 bytes before the offset and the extents of the tensors
//     walked, for the index checks at the end);
//   the network: the tensor names still to fetch;
//   both: the summary records of the completed tensors.
//
// The file is text, one field per line ("key value"), strings hex-encoded;
// SaveState writes it to STATE_FILE.tmp and renames it over STATE_FILE, so
// a crash leaves the old or the new state, never a torn one. LoadState
// refuses a file that does not parse (InvalidArgument) or passes 256 MiB.
#ifndef HURRAY_STREAM_INGEST_STATE_H_
#define HURRAY_STREAM_INGEST_STATE_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "stream/consumers.h"
#include "stream/sinks.h"

namespace hurray::stream {

struct IngestState {
  // The SOURCE argument and --dequant directory of the run that wrote it: a
  // rerun must name the same ones.
  std::string source;
  std::string out_dir;
  Checkpoint checkpoint;
  std::vector<std::string> remaining_names;  // network sources
  std::vector<TensorRecord> records;
};

absl::Status SaveState(const std::string& path, const IngestState& state);
// NotFound when the file does not exist (a first run).
absl::StatusOr<IngestState> LoadState(const std::string& path);

}  // namespace hurray::stream

#endif  // HURRAY_STREAM_INGEST_STATE_H_
