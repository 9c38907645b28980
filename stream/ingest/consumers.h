// ByteConsumer adapters (stream/container/byte_consumer.h) over the two readers
// of this folder, for the loader (stream/ingest/loader.h): StreamConsumer
// drives a StreamReader (bare stream, interchange.md § Scope), HrryConsumer a
// HrryForwardReader (.hrry, file-format.md § Sequential Reader), and
// SniffingConsumer picks one of them from the first 8 bytes (the file magic
// "HRRYFILE", file-format.md § File Header; anything else is a bare stream).
//
// Each adapter reports to an IngestSink (stream/ingest/sinks.h): TensorSink
// events plus, for .hrry, the index names once the file passed. A sink failure
// (sinks.h IngestSink::status, e.g. a data-level rule of the dequantizer or
// a full disk) stops the input: Feed returns it from then on, also when the
// reader rejects a later byte of the same chunk (the verdict does not depend
// on where the chunks end).
//
// Checkpoints (stream/resume/ingest_state.h, `hurray ingest --resume`): after
// each tensor whose bytes all arrived, the sink saw it whole, and that ends
// outside any composite (and, in a file, has buffers, so no head padding is
// pending), the adapter calls the checkpoint callback with what a resumed
// reader needs. Construct the adapter from a checkpoint to continue there:
// the next byte fed is the one at its offset (stream/container/checkpoint.h).
#ifndef HURRAY_STREAM_INGEST_CONSUMERS_H_
#define HURRAY_STREAM_INGEST_CONSUMERS_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "stream/container/byte_consumer.h"
#include "stream/container/checkpoint.h"
#include "stream/container/file_format.h"
#include "stream/container/file_kv.h"
#include "stream/container/hrry_file.h"
#include "stream/container/stream_reader.h"
#include "stream/container/tensor_walker.h"
#include "stream/ingest/sinks.h"

namespace hurray::stream::ingest {

// kHrry when `first` starts with "HRRYFILE", kStream when it cannot (or is
// empty at the end of the input), kUnknown while it is a proper prefix of
// the magic.
container::ContainerFormat SniffFormat(absl::Span<const uint8_t> first);

using CheckpointFn = std::function<void(const container::Checkpoint&)>;

// `status` with `why` appended to its message, rule payloads kept.
[[nodiscard]] absl::Status WithDetail(const absl::Status& status,
                                      absl::string_view why);

// The KV section as IngestSink::OnMetadata wants it: strings as they are,
// other scalars as JSON text, bytes in hex, arrays as JSON.
std::vector<std::pair<std::string, std::string>> KvText(
    const container::KvSection& kv);

// Common part: the tee sink in front of the caller's sink, the latched
// status, tensor counting and checkpoints.
class ReaderConsumer : public container::ByteConsumer,
                       protected container::TensorSink {
 public:
  ~ReaderConsumer() override = default;

  [[nodiscard]] absl::Status Feed(absl::Span<const uint8_t> chunk) final;
  [[nodiscard]] absl::Status Finish() final;
  [[nodiscard]] absl::Status FailSource(absl::string_view why) final;

  // Tensors completed, those before a resumed checkpoint included.
  uint64_t tensors_completed() const override { return tensors_; }
  void set_checkpoint(CheckpointFn fn) { checkpoint_ = std::move(fn); }

 protected:
  // `resume`: the checkpoint the reader continues from, or nullptr.
  ReaderConsumer(IngestSink* sink, const container::Checkpoint* resume)
      : sink_(sink),
        tensors_(resume == nullptr ? 0 : resume->tensors),
        crc_before_chunk_(resume == nullptr ? 0 : resume->crc32c) {}

  [[nodiscard]] virtual absl::Status DoFeed(
      absl::Span<const uint8_t> chunk) = 0;
  [[nodiscard]] virtual absl::Status DoFinish() = 0;
  [[nodiscard]] virtual absl::Status DoFail() = 0;
  // Fills `c` when the reader is at a resumable boundary.
  virtual bool AtBoundary(container::Checkpoint* c) = 0;

  // TensorSink, forwarded to sink_; its failure stops the reader.
  [[nodiscard]] absl::Status OnTensorKey(absl::string_view key) override;
  [[nodiscard]] absl::Status OnDescriptor(const TensorDescriptor& d) override;
  [[nodiscard]] absl::Status OnBufferPiece(
      uint32_t buffer_index, uint64_t offset_in_buffer,
      absl::Span<const uint8_t> piece) override;
  [[nodiscard]] absl::Status OnTensorEnd() override;
  [[nodiscard]] absl::Status OnEndOfStream() override;
  // `s`, noting that the sink failed.
  [[nodiscard]] absl::Status FromSink(absl::Status s);

  IngestSink* sink_;
  absl::Status status_;
  uint64_t tensors_;
  CheckpointFn checkpoint_;
  // The chunk being fed and its offset (for HrryConsumer's 40 last bytes).
  absl::Span<const uint8_t> chunk_;
  uint64_t chunk_base_ = 0;
  // With a checkpoint callback: CRC-32C of the bytes before chunk_.
  uint32_t crc_before_chunk_ = 0;

 private:
  [[nodiscard]] absl::Status Latch(absl::Status s);

  bool source_failed_ = false;  // FailSource: an interruption, no verdict
  bool sink_failed_ = false;    // the sink stopped the reader
};

class StreamConsumer : public ReaderConsumer {
 public:
  // `sink` must outlive the consumer. `resume`: continue from a checkpoint
  // (nullptr: from the first byte).
  StreamConsumer(const container::StreamOptions& options, IngestSink* sink,
                 const container::Checkpoint* resume = nullptr);
  uint64_t position() const override { return reader_.position(); }

 private:
  [[nodiscard]] absl::Status DoFeed(absl::Span<const uint8_t> chunk) override;
  [[nodiscard]] absl::Status DoFinish() override;
  [[nodiscard]] absl::Status DoFail() override;
  bool AtBoundary(container::Checkpoint* c) override;

  container::StreamReader reader_;
};

class HrryConsumer : public ReaderConsumer {
 public:
  HrryConsumer(const container::FileOptions& options, IngestSink* sink,
               const container::Checkpoint* resume = nullptr);
  uint64_t position() const override { return reader_.position(); }
  const container::HrryForwardReader& reader() const { return reader_; }

 private:
  [[nodiscard]] absl::Status DoFeed(absl::Span<const uint8_t> chunk) override;
  [[nodiscard]] absl::Status DoFinish() override;
  [[nodiscard]] absl::Status DoFail() override;
  bool AtBoundary(container::Checkpoint* c) override;
  [[nodiscard]] absl::Status OnEndOfStream() override;

  container::HrryForwardReader reader_;
};

// Buffers up to 8 bytes, sniffs them, then hands everything to a
// StreamConsumer or HrryConsumer.
class SniffingConsumer : public container::ByteConsumer {
 public:
  SniffingConsumer(const container::FileOptions& options, IngestSink* sink);

  [[nodiscard]] absl::Status Feed(absl::Span<const uint8_t> chunk) override;
  [[nodiscard]] absl::Status Finish() override;
  [[nodiscard]] absl::Status FailSource(absl::string_view why) override;
  uint64_t position() const override;

  container::ContainerFormat format() const { return format_; }
  uint64_t tensors_completed() const override {
    return inner_ == nullptr ? 0 : inner_->tensors_completed();
  }
  void set_checkpoint(CheckpointFn fn) { checkpoint_ = std::move(fn); }

 private:
  [[nodiscard]] absl::Status Start(container::ContainerFormat f);

  container::FileOptions options_;
  IngestSink* sink_;
  CheckpointFn checkpoint_;
  container::ContainerFormat format_ = container::ContainerFormat::kUnknown;
  uint8_t head_[8] = {};
  size_t head_n_ = 0;
  std::unique_ptr<ReaderConsumer> inner_;
};

// The consumer for `format` (kUnknown: a SniffingConsumer), continuing from
// `resume` when given (its format wins).
std::unique_ptr<container::ByteConsumer> MakeConsumer(
    container::ContainerFormat format, const container::FileOptions& options,
    IngestSink* sink, const container::Checkpoint* resume,
    CheckpointFn checkpoint);

}  // namespace hurray::stream::ingest

#endif  // HURRAY_STREAM_INGEST_CONSUMERS_H_
