// OUT/model.safetensors written in bounded memory (issue 16 part 2).
//
// A safetensors file is an 8-byte little-endian header length N, a JSON
// header of N bytes ({"__metadata__": {string: string}, "<name>": {"dtype",
// "shape", "data_offsets": [begin, end]}, ...}, padded with spaces to a
// multiple of 8 bytes as the reference writer does), then the tensors'
// bytes. The header must come first, but the names, shapes and sizes are
// only known as tensors arrive (.hrry names only at the end of the file):
// the data goes to a hidden temp of OUT as it is converted, and Finish
// writes the header into a second temp, copies the data after it
// (copy_file_range, in the kernel; read/write where that is not
// supported), publishes it as model.safetensors and removes the data temp.
// Memory: the header entries, never the data. Every file goes through
// SafeOutputDir (stream/container/safe_output_dir.h).
#ifndef HURRAY_STREAM_INGEST_OUTPUT_SAFETENSORS_H_
#define HURRAY_STREAM_INGEST_OUTPUT_SAFETENSORS_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "stream/container/safe_output_dir.h"

namespace hurray::stream::ingest {

inline constexpr char kSafetensorsFileName[] = "model.safetensors";

struct SafetensorsEntry {
  std::string name;
  std::string dtype;  // "F32", "BF16", ...
  std::vector<uint64_t> shape;
  uint64_t begin = 0, end = 0;  // data_offsets
};

// The header bytes (JSON padded with spaces to a multiple of 8, without
// the length prefix). Names that are not valid UTF-8 have their bad bytes
// replaced (U+FFFD); a name that repeats an earlier one, or "__metadata__",
// gets "~<index>" appended.
std::string SafetensorsHeader(
    const std::vector<SafetensorsEntry>& entries,
    const std::vector<std::pair<std::string, std::string>>& metadata);

class SafetensorsWriter {
 public:
  // `dir` outlives the writer.
  explicit SafetensorsWriter(container::SafeOutputDir* dir) : dir_(dir) {}
  ~SafetensorsWriter();
  SafetensorsWriter(const SafetensorsWriter&) = delete;
  SafetensorsWriter& operator=(const SafetensorsWriter&) = delete;

  // A new tensor; Append adds its bytes until EndTensor or AbandonTensor.
  [[nodiscard]] absl::Status BeginTensor(std::string name,
                                         absl::string_view dtype,
                                         std::vector<uint64_t> shape);
  [[nodiscard]] absl::Status Append(absl::Span<const uint8_t> bytes);
  void EndTensor() { in_tensor_ = false; }
  // Drops the current tensor's bytes and entry.
  void AbandonTensor();
  // Renames tensor `i` (in BeginTensor order).
  void SetName(size_t i, std::string name);
  void SetMetadata(std::vector<std::pair<std::string, std::string>> kv) {
    metadata_ = std::move(kv);
  }
  size_t tensor_count() const { return entries_.size(); }
  // Writes and publishes model.safetensors; the data temp is removed.
  [[nodiscard]] absl::Status Finish();
  // Removes the data temp.
  void Discard();

 private:
  [[nodiscard]] absl::Status Open();

  container::SafeOutputDir* dir_;
  container::TempFile data_;
  uint64_t size_ = 0;
  bool in_tensor_ = false;
  std::vector<SafetensorsEntry> entries_;
  std::vector<std::pair<std::string, std::string>> metadata_;
};

}  // namespace hurray::stream::ingest

#endif  // HURRAY_STREAM_INGEST_OUTPUT_SAFETENSORS_H_
