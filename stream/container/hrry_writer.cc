#include "stream/container/hrry_writer.h"

#include <algorithm>

#include "parser/wire.h"
#include "stream/container/crc32c.h"
#include "stream/container/stream_writer.h"
#include "stream/container/utf8.h"

namespace hurray::stream::container {

HrryWriter::HrryWriter(const HrryWriterOptions& options)
    : options_(options),
      decoder_(std::make_unique<DescriptorDecoder>(options.parse)),
      composites_(options.parse.mode, ContainerLimits()) {}

HrryWriter::~HrryWriter() = default;

absl::Status HrryWriter::Put(ByteSink sink, absl::Span<const uint8_t> bytes) {
  absl::Status s = sink(bytes);
  if (!s.ok()) {
    stage_ = Stage::kFailed;
    return s;
  }
  pos_ += bytes.size();
  return s;
}

absl::Status HrryWriter::CountWritten(uint64_t n) {
  if (!in_buffer_ || stage_ != Stage::kTensors) {
    return absl::FailedPreconditionError(
        "CountWritten() is for a BufferWriter of AddStreamed()");
  }
  pos_ += n;
  return absl::OkStatus();
}

absl::Status HrryWriter::PadTo(ByteSink sink, uint64_t alignment) {
  const uint64_t pad = (alignment - pos_ % alignment) % alignment;
  absl::Status s = WriteZeros(sink, pad);
  if (!s.ok()) {
    stage_ = Stage::kFailed;
    return s;
  }
  pos_ += pad;
  return s;
}

absl::Status HrryWriter::Begin(ByteSink sink) {
  if (stage_ != Stage::kNew) {
    return absl::FailedPreconditionError("Begin() was already called");
  }
  const uint32_t a = options_.data_buffer_alignment;
  if (!wire::IsPowerOfTwo(a) || a < kMinDataAlignment ||
      a > kMaxDataAlignment) {
    return absl::InvalidArgumentError(
        "data_buffer_alignment must be a power of two in 4096..2097152");
  }
  if (options_.first_descriptor_offset < kFileHeaderSize ||
      options_.first_descriptor_offset % 8 != 0) {
    return absl::InvalidArgumentError(
        "first_descriptor_offset must be a multiple of 8, at least 64");
  }
  FileHeader h;
  h.flags = (options_.with_kv ? file_flag::kHasKvMetadata : 0) |
            (options_.sorted_index ? file_flag::kSortedIndex : 0) |
            (options_.index_crc ? file_flag::kHasIndexCrc32c : 0);
  h.data_buffer_alignment = a;
  h.first_descriptor_offset = options_.first_descriptor_offset;
  h.tensor_count_hint = options_.tensor_count_hint;
  uint8_t bytes[kFileHeaderSize];
  EncodeFileHeader(h, bytes);
  absl::Status s = Put(sink, bytes);
  if (!s.ok()) return s;
  s = WriteZeros(sink, options_.first_descriptor_offset - pos_);
  if (!s.ok()) {
    stage_ = Stage::kFailed;
    return s;
  }
  pos_ = options_.first_descriptor_offset;
  stage_ = Stage::kTensors;
  return s;
}

absl::Status HrryWriter::Add(
    absl::string_view name, const TensorDescriptor& d,
    absl::Span<const absl::Span<const uint8_t>> buffers, ByteSink sink,
    absl::Span<const uint8_t> extension_data) {
  if (stage_ == Stage::kTensors) {
    absl::Status s = CheckBuffers(d, buffers);
    if (!s.ok()) return s;
  }
  return AddImpl(
      name, d, [&buffers](uint32_t i, ByteSink out) { return out(buffers[i]); },
      sink, extension_data);
}

absl::Status HrryWriter::AddStreamed(absl::string_view name,
                                     const TensorDescriptor& d,
                                     BufferWriter write_buffer, ByteSink sink,
                                     absl::Span<const uint8_t> extension_data) {
  return AddImpl(name, d, write_buffer, sink, extension_data);
}

absl::Status HrryWriter::AddImpl(absl::string_view name,
                                 const TensorDescriptor& d,
                                 BufferWriter write_buffer, ByteSink sink,
                                 absl::Span<const uint8_t> extension_data) {
  if (stage_ != Stage::kTensors) {
    return absl::FailedPreconditionError("Add() needs Begin() and no Finish()");
  }
  // file-format.md § Index Encoding: names are unique, 1..65535 UTF-8 bytes.
  if (name.empty() || name.size() > 0xFFFF || !IsValidUtf8(name)) {
    return absl::InvalidArgumentError(
        "tensor names hold 1 to 65535 bytes of UTF-8");
  }
  if (seen_.contains(name)) {
    return absl::AlreadyExistsError("duplicate tensor name (FILE-IDX-04)");
  }
  absl::Status s;
  absl::StatusOr<std::vector<uint8_t>> descriptor =
      EncodeChecked(d, extension_data, decoder_.get());
  if (!descriptor.ok()) return descriptor.status();
  const uint64_t a = options_.data_buffer_alignment;
  // Where each buffer will land; its own alignment must hold too
  // (FILE-REG-02).
  uint64_t at = pos_ + descriptor->size();
  for (uint32_t i = 0; i < d.buffer_count; ++i) {
    at = (at + a - 1) & ~(a - 1);
    if (d.buffers[i].byte_size > 0 && at % d.buffers[i].alignment != 0) {
      return absl::InvalidArgumentError(
          "a buffer's alignment is larger than data_buffer_alignment");
    }
    at += d.buffers[i].byte_size;
  }
  const Rejection bound =
      composites_.OnDescriptor(decoder_->descriptor(), pos_);
  if (!bound.ok()) return ToStatus(bound);
  IndexEntry e;
  e.descriptor_offset = pos_;
  e.descriptor_length = static_cast<uint32_t>(descriptor->size());
  s = Put(sink, *descriptor);
  if (!s.ok()) return s;
  // No padding after a buffer-less tensor such as a composite head
  // (file-format.md § Composite Tensors).
  e.data_offset = pos_;
  for (uint32_t i = 0; i < d.buffer_count; ++i) {
    s = PadTo(sink, a);
    if (s.ok() && i == 0) e.data_offset = pos_;
    if (!s.ok()) return s;
    const uint64_t start = pos_;
    in_buffer_ = true;
    s = write_buffer(i, [this, sink](absl::Span<const uint8_t> piece) {
      return Put(sink, piece);
    });
    in_buffer_ = false;
    if (s.ok() && pos_ - start != d.buffers[i].byte_size) {
      s = absl::InternalError("a buffer writer gave the wrong byte count");
    }
    if (!s.ok()) {
      stage_ = Stage::kFailed;
      return s;
    }
  }
  e.data_length = pos_ - e.data_offset;
  s = PadTo(sink, 8);
  if (!s.ok()) return s;
  names_.emplace_back(name);
  seen_.emplace(name);
  entries_.push_back(e);
  return absl::OkStatus();
}

absl::Status HrryWriter::Finish(ByteSink sink) {
  if (stage_ != Stage::kTensors) {
    return absl::FailedPreconditionError("Finish() needs Begin()");
  }
  // Refused without side effects: the missing members may still be added.
  if (composites_.open() > 0) {
    return ToStatus(
        {Rule::kCmpCls03, pos_, "a composite head still waits for members"});
  }
  if (!options_.with_kv && !kv_.empty()) {
    return absl::FailedPreconditionError(
        "KV entries need HrryWriterOptions::with_kv (RESOLUTIONS.md 13)");
  }
  if (options_.tensor_count_hint != kUnknownTensorCount &&
      options_.tensor_count_hint != entries_.size()) {
    return absl::FailedPreconditionError(
        "tensor_count_hint does not match the tensors written");
  }
  FileTrailer t;
  absl::Status s;
  if (options_.with_kv) {
    const std::vector<uint8_t> kv = kv_.Build();
    if (kv.size() > 0xFFFFFFFFu) {
      return absl::OutOfRangeError("the KV section exceeds 4 GiB");
    }
    t.kv_offset = pos_;
    t.kv_length = static_cast<uint32_t>(kv.size());
    s = Put(sink, kv);
    if (s.ok()) s = PadTo(sink, 8);
    if (!s.ok()) return s;
  }
  for (size_t i = 0; i < entries_.size(); ++i) entries_[i].name = names_[i];
  std::vector<IndexEntry> ordered = entries_;
  if (options_.sorted_index) {
    std::sort(ordered.begin(), ordered.end(),
              [](const IndexEntry& x, const IndexEntry& y) {
                return x.name < y.name;
              });
  }
  const std::vector<uint8_t> index = EncodeIndex(ordered);
  t.index_offset = pos_;
  t.index_length = index.size();
  t.index_crc32c = options_.index_crc ? Crc32c(index) : 0;
  s = Put(sink, index);
  if (!s.ok()) return s;
  // RESOLUTIONS.md 12: the trailer follows the index directly.
  uint8_t trailer[kTrailerSize];
  EncodeTrailer(t, trailer);
  s = Put(sink, trailer);
  if (s.ok()) stage_ = Stage::kFinished;
  return s;
}

}  // namespace hurray::stream::container
