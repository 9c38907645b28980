// HrryForwardReader: reads a .hrry file in one forward pass, fed chunks of
// any size as they arrive (a download, a pipe), so a file can be validated
// while it is still being received (file-format.md § Sequential Reader).
//
// In order: the header (FILE-HDR-02..09), the zero padding up to
// first_descriptor_offset (FILE-HDR-10, strict), the tensor region through
// the same TensorWalker as bare streams — descriptors at 8-byte boundaries,
// buffers at data_buffer_alignment, zero padding (FILE-REG-01/02/04, strict),
// limits, torn composites — with events to a TensorSink as the bytes arrive;
// then, at the end of the input, the trailer (FILE-HDR-01, FILE-TRL-*), the
// index (FILE-IDX-01..07) and KV section (FILE-KV-*), and the index checked
// against the tensors the walk saw (FILE-IDX-08..15, FILE-REG-03).
//
// Only the bytes after the tensor region (KV, index, trailer) are kept, up to
// FileOptions::max_metadata_bytes (LIMIT-BUFFER-BYTES); buffers are handed to
// the sink as views into the fed chunks. A tensor is reported complete
// (OnTensorEnd) once all its bytes arrived; the file as a whole is valid only
// when Finish() returns kDone (OnEndOfStream).
//
// Rejections carry a rule id and an absolute file offset. When a file has
// several faults, which one is reported may differ from the random-access
// reader (hrry_mmap.h), which reads the trailer first; a file with one fault
// gets the same rule from both.
#ifndef HURRAY_STREAM_CONTAINER_HRRY_FILE_H_
#define HURRAY_STREAM_CONTAINER_HRRY_FILE_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "parser/rules.h"
#include "stream/container/file_format.h"
#include "stream/container/file_index.h"
#include "stream/container/file_kv.h"
#include "stream/container/tensor_sink.h"
#include "stream/container/tensor_walker.h"

namespace hurray::stream::container {

using FileState = Progress;

class HrryForwardReader {
 public:
  // `sink` may be null; it must outlive the reader.
  explicit HrryForwardReader(const FileOptions& options = FileOptions(),
                             TensorSink* sink = nullptr);
  ~HrryForwardReader();

  // Consumes all of `chunk` unless the file is rejected.
  FileState Feed(absl::Span<const uint8_t> chunk);
  // End of the input: the trailer, index and KV checks.
  FileState Finish();
  // The byte source failed: STREAM-IO at the current offset.
  FileState FailSource();

  // Resume (stream/resume/ingest_state.h): continue a file an earlier reader
  // read up to `offset`, the end of a tensor outside any composite and with
  // buffers. `header` is the file's first 64 bytes, `last` the 40 bytes
  // before `offset`, `done` the extents of the tensors before it. Call
  // before the first Feed; the next byte fed is the one at `offset`.
  // Rejects (and returns) what the header check rejects.
  Rejection ResumeAt(absl::Span<const uint8_t> header,
                     absl::Span<const uint8_t> last, uint64_t offset,
                     std::vector<TensorExtent> done);

  FileState state() const { return state_; }
  // Composite heads still waiting for members (0 outside the region).
  uint32_t open_composites() const {
    return walker_ == nullptr ? 0 : walker_->open_composites();
  }
  const Rejection& rejection() const { return rejection_; }
  // OK, the rejection, or the status the sink stopped the read with (the
  // walker remembers it).
  [[nodiscard]] absl::Status status() const {
    return walker_ != nullptr && walker_->stopped_by_sink()
               ? walker_->status()
               : ToStatus(rejection_);
  }
  uint64_t position() const { return pos_; }
  // The 40 bytes before absolute offset `end` (a resume checkpoint's
  // `last`): `end` is position(), or, during Feed (in a sink callback),
  // inside the chunk being fed, at least 40 bytes into the file. The one
  // copy of the file's last bytes (the trailer's window) is the reader's.
  void LastBytesBefore(uint64_t end, std::vector<uint8_t>* out) const;

  // Valid once the header arrived.
  const FileHeader& header() const { return geometry_.header; }
  // Valid after kDone.
  const FileGeometry& geometry() const { return geometry_; }
  const FileIndex& index() const { return index_; }
  const KvSection& kv() const { return kv_; }
  // The tensors of the region, in file order.
  absl::Span<const TensorExtent> tensors() const;
  // The index entry of tensors()[i]; nullptr in permissive mode when no
  // entry names it.
  const IndexEntry* entry_of_tensor(size_t i) const {
    return entry_of_tensor_[i];
  }

 private:
  enum class Phase : uint8_t { kHeader, kLeadPad, kRegion, kTail, kStopped };

  size_t StepHeader(absl::Span<const uint8_t> in);
  size_t StepLeadPad(absl::Span<const uint8_t> in);
  size_t StepRegion(absl::Span<const uint8_t> in);
  size_t StepTail(absl::Span<const uint8_t> in);
  void StartRegion();
  void KeepLast(absl::Span<const uint8_t> in);
  // The region ran past `limit`, where the KV or index section starts.
  Rejection CutAt(uint64_t limit) const;
  Rejection CheckTail();
  void Reject(const Rejection& r);

  FileOptions options_;
  TensorSink* sink_;
  Phase phase_ = Phase::kHeader;
  FileState state_ = FileState::kNeedMore;
  Rejection rejection_;
  uint64_t pos_ = 0;

  uint8_t header_bytes_[kFileHeaderSize] = {};
  uint64_t first_nonzero_pad_ = 0;
  bool nonzero_pad_ = false;
  std::unique_ptr<TensorWalker> walker_;
  // Bytes from the end of the tensor region on, and the last 40 bytes seen.
  std::vector<uint8_t> tail_;
  uint64_t tail_start_ = 0;
  // The last 40 bytes before the chunk being fed (after Feed: before
  // pos_), and that chunk.
  uint8_t last_[kTrailerSize] = {};
  absl::Span<const uint8_t> feeding_;
  uint64_t feed_start_ = 0;

  FileGeometry geometry_;
  FileIndex index_;
  KvSection kv_;
  std::vector<const IndexEntry*> entry_of_tensor_;
};

// One shot over bytes in memory: Feed(bytes) then Finish().
Rejection ReadHrry(absl::Span<const uint8_t> bytes, const FileOptions& options,
                   TensorSink* sink);

}  // namespace hurray::stream::container

#endif  // HURRAY_STREAM_CONTAINER_HRRY_FILE_H_
