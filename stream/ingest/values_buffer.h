// ValuesBuffer: the in-memory output of DequantSink for
// TensorData::kDequantized without an output directory
// (stream/ingest/ingest.h): one tensor's float32 values, written by the
// TensorWriter of its layout (stream/ingest/tensor_writer.h) through OutputFile
// instead of a file, and handed to the observer as a span
// (stream/ingest/observer_tap.h).
//
// Memory. Start() sizes it from a validated tensor's output size, never from
// the bytes that arrived, and refuses a size over `max_bytes` (the writer
// then writes a file instead: output_file.h). One block serves every tensor
// of a run: it grows to the largest tensor's size (at most max_bytes) and is
// kept, so same-sized tensors reuse its pages (dequant/large_buffer.h: huge
// pages for blocks of 2 MiB and more).
#ifndef HURRAY_STREAM_INGEST_VALUES_BUFFER_H_
#define HURRAY_STREAM_INGEST_VALUES_BUFFER_H_

#include <cstddef>
#include <cstdint>
#include <limits>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "dequant/large_buffer.h"

namespace hurray::stream::ingest {

class ValuesBuffer {
 public:
  // No tensor's values held.
  static constexpr size_t kNone = std::numeric_limits<size_t>::max();

  explicit ValuesBuffer(uint64_t max_bytes) : max_bytes_(max_bytes) {}
  ValuesBuffer(const ValuesBuffer&) = delete;
  ValuesBuffer& operator=(const ValuesBuffer&) = delete;

  uint64_t max_bytes() const { return max_bytes_; }
  bool Fits(uint64_t bytes) const { return bytes <= max_bytes_; }

  // Forgets the last tensor's values (the block stays).
  void Reset();
  // A tensor of exactly `bytes` output bytes begins (Reset first).
  // ResourceExhausted over max_bytes.
  [[nodiscard]] absl::Status Start(uint64_t bytes);
  // The next bytes of the output; DataLoss past the size Start was given
  // (a writer's bug, never the input's: the size is the tensor's).
  [[nodiscard]] absl::Status Append(absl::Span<const uint8_t> bytes);
  // Room for the next `n` bytes, written in place, then Advance(n): empty
  // when fewer than `n` are left. 4-byte aligned when size() is.
  absl::Span<uint8_t> Next(size_t n);
  void Advance(size_t n) { size_ += n; }
  // The whole tensor's bytes zero-filled and counted written (a sparse
  // tensor's dense form, its stored elements placed afterwards).
  [[nodiscard]] absl::Span<uint8_t> ZeroFilled();
  // The writer finished (Close) or gave up (Abandon).
  void Close() { closed_ = open_; }
  void Abandon() { open_ = closed_ = false; }
  // A closed output that holds every byte Start announced.
  bool complete() const { return closed_ && size_ == expected_; }

  // Whose values these are (the sink's record index), once complete; kNone
  // otherwise.
  void set_tensor(size_t index) { tensor_ = index; }
  size_t tensor() const { return tensor_; }
  // The values as float32 (little-endian hosts: the bytes as they are).
  absl::Span<const float> floats() const {
    return {reinterpret_cast<const float*>(block_.data()), size_ / 4};
  }
  size_t size() const { return size_; }

 private:
  uint64_t max_bytes_;
  dequant::LargeBytes block_;
  size_t size_ = 0;
  size_t expected_ = 0;
  bool open_ = false;
  bool closed_ = false;
  size_t tensor_ = kNone;
};

}  // namespace hurray::stream::ingest

#endif  // HURRAY_STREAM_INGEST_VALUES_BUFFER_H_
