// OutputFile: the one output of a TensorWriter (stream/ingest/tensor_writer.h)
// while it is written: a hidden temp of OUT_DIR (SafeOutputDir) with the .npy
// header first, the tensor's entry in model.safetensors, or the in-memory
// values buffer (WriterContext::values, stream/ingest/values_buffer.h) when
// the output fits in it; the bytes pass a buffer of about kOutBufferBytes and
// their CRC-32C is kept (not in memory). A temp's buffers are written by the
// run's WriteBehind thread when WriterContext::write_behind is set
// (stream/ingest/write_behind.h; it takes their CRC-32C as it queues them), so
// a write's error may come from a later Flush or from Close. Destroyed before
// Close, it removes the temp and abandons the entry. Also the small file
// helpers the writers share.
#ifndef HURRAY_STREAM_INGEST_OUTPUT_FILE_H_
#define HURRAY_STREAM_INGEST_OUTPUT_FILE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "parser/descriptor.h"
#include "stream/ingest/output/element_convert.h"
#include "stream/ingest/tensor_writer.h"
#include "stream/ingest/values_buffer.h"
#include "stream/ingest/write_behind.h"

namespace hurray::stream::ingest {

// Data bytes handed to the dequantizer at once: bounds the float buffer
// (2-bit codes: 4 floats per byte, 2 MiB of output).
inline constexpr size_t kSubPiece = size_t{128} << 10;
inline constexpr size_t kSpoolReadBytes = size_t{1} << 20;
inline constexpr size_t kOutBufferBytes = size_t{512} << 10;
// Source bytes Emit converts at once: the buffer passes kOutBufferBytes
// by at most their output (256 KiB of float32 from 8-bit elements).
inline constexpr size_t kEmitSliceBytes = size_t{64} << 10;
// Input bytes read from mapped spools between two releases of their pages.
inline constexpr size_t kReleaseBytes = size_t{4} << 20;

// DataLoss: "<what> <path>: <strerror(errno)>".
[[nodiscard]] absl::Status ErrnoStatus(absl::string_view what,
                                       const std::string& path);

// The CRC-32C of a whole file of `dir`, read never through a symlink.
[[nodiscard]] absl::StatusOr<uint32_t> FileCrc32c(
    const container::SafeOutputDir& dir, const std::string& name);

// The logical shape of the output of `d` (complex as pairs: a trailing 2).
std::vector<uint64_t> OutputShape(const TensorDescriptor& d,
                                  const OutputType& out_type);

class OutputFile {
 public:
  explicit OutputFile(const WriterContext& ctx) : ctx_(ctx) {}
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;
  ~OutputFile() { Abandon(); }

  // Without write_files, nothing. Else the values buffer when there is one
  // and the output (`shape` of `type`) fits in it, else the entry `name` of
  // model.safetensors or a temp; for .npy, the header (the shape and type
  // known now) buffered. With a values buffer and no directory, an output
  // that does not fit fails (ResourceExhausted).
  [[nodiscard]] absl::Status Open(const std::string& name,
                                  const OutputType& type,
                                  const std::vector<uint64_t>& shape);
  // Something is being written (else write_files is off or nothing opened).
  bool writing() const { return fd_ >= 0 || in_safetensors_ || in_memory_; }
  bool in_safetensors() const { return in_safetensors_; }
  // Written into WriterContext::values.
  bool in_memory() const { return in_memory_; }
  int fd() const { return fd_; }
  const std::string& temp() const { return temp_; }
  std::vector<uint8_t>& buffer() { return buf_; }
  // The CRC-32C of the bytes, when they were written around the buffer
  // (after Sync).
  void set_crc(uint32_t crc);

  // Writes out the buffer (or queues it on the WriteBehind: then the error
  // of an earlier write, if any).
  [[nodiscard]] absl::Status Flush();
  // Flush, and waits until every byte is in the file (before writing it
  // around the buffer).
  [[nodiscard]] absl::Status Sync();
  [[nodiscard]] absl::Status FlushIfFull() {
    return buf_.size() >= kOutBufferBytes ? Flush() : absl::OkStatus();
  }
  // `source` converted by `conv` into the buffer, written out in writes of
  // about kOutBufferBytes (in memory: at once); without an output, only
  // counted by `conv`.
  [[nodiscard]] absl::Status Emit(ElementConverter& conv,
                                  absl::Span<const uint8_t> source);
  // The output is complete: flush and close it; r->temp and r->crc name it.
  [[nodiscard]] absl::Status Close(WriterResult* r);
  // Closes and removes what was written; nothing stays.
  void Abandon();

 private:
  WriterContext ctx_;
  std::string temp_;
  int fd_ = -1;
  std::vector<uint8_t> buf_;
  // The temp's writes on the WriteBehind thread; null: written here.
  std::unique_ptr<WriteBehind::File> behind_;
  uint32_t crc_ = 0;
  bool in_safetensors_ = false;
  bool in_memory_ = false;
};

}  // namespace hurray::stream::ingest

#endif  // HURRAY_STREAM_INGEST_OUTPUT_FILE_H_
