// HrryWriter: writes a valid .hrry file in one forward pass, never seeking
// back (file-format.md § Writer Protocol): header, then each tensor
// (descriptor at an 8-byte boundary, its buffers at data_buffer_alignment
// boundaries, zero padding, no padding after a composite head), then the KV
// section, the index and the trailer.
//
// Every file flag is decided before the header is written (RESOLUTIONS.md
// 13): HAS_KV_METADATA from HrryWriterOptions::with_kv (the KV section is
// then always written, possibly empty), SORTED_INDEX and HAS_INDEX_CRC32C
// from their options. What a strict reader would reject is refused: invalid
// descriptors (the validator's rule id), buffers not matching the table,
// empty, overlong, non-UTF-8 or duplicate names, composites the composite
// validator refuses (CMP-MEM-*, CMP-CLS-*, LIMIT-MEMBERS), heads left without
// their members, a tensor_count_hint that does not count the tensors.
#ifndef HURRAY_STREAM_CONTAINER_HRRY_WRITER_H_
#define HURRAY_STREAM_CONTAINER_HRRY_WRITER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "parser/decoder.h"
#include "parser/descriptor.h"
#include "parser/options.h"
#include "stream/container/byte_sink.h"
#include "stream/container/composite_binder.h"
#include "stream/container/file_format.h"
#include "stream/container/file_index.h"
#include "stream/container/kv_builder.h"

namespace hurray::stream::container {

struct HrryWriterOptions {
  // Descriptors are checked as a reader with these options would.
  ParseOptions parse;
  uint32_t data_buffer_alignment = kMinDataAlignment;
  uint64_t first_descriptor_offset = kFileHeaderSize;
  uint64_t tensor_count_hint = kUnknownTensorCount;
  bool with_kv = false;       // HAS_KV_METADATA
  bool sorted_index = false;  // SORTED_INDEX: index entries sorted by name
  bool index_crc = true;      // HAS_INDEX_CRC32C
};

class HrryWriter {
 public:
  explicit HrryWriter(const HrryWriterOptions& options = HrryWriterOptions());
  ~HrryWriter();

  // Writes the header and the padding up to first_descriptor_offset.
  [[nodiscard]] absl::Status Begin(ByteSink sink);
  // Writes one tensor (`buffers`: one span per buffer-table entry, exactly
  // byte_size bytes each; `extension_data`: an extension layout's opaque
  // data, zeros when empty).
  [[nodiscard]] absl::Status Add(
      absl::string_view name, const TensorDescriptor& d,
      absl::Span<const absl::Span<const uint8_t>> buffers, ByteSink sink,
      absl::Span<const uint8_t> extension_data = {});
  // Same, but buffer i's bytes come from `write_buffer(i, sink)`, which must
  // pass exactly d.buffers[i].byte_size bytes to `sink`, in pieces of any
  // size: tensors of any size go through in bounded memory. A wrong count
  // fails the writer (the file is then unusable).
  using BufferWriter =
      absl::FunctionRef<absl::Status(uint32_t index, ByteSink sink)>;
  [[nodiscard]] absl::Status AddStreamed(
      absl::string_view name, const TensorDescriptor& d,
      BufferWriter write_buffer, ByteSink sink,
      absl::Span<const uint8_t> extension_data = {});
  // Only inside a BufferWriter of AddStreamed: counts `n` bytes of the
  // buffer that the caller put on the sink's destination itself, after
  // every byte it passed to the sink (convert copies data spans with
  // copy_file_range this way, the sink flushed first). They count toward
  // the buffer's byte_size like bytes passed to the sink.
  [[nodiscard]] absl::Status CountWritten(uint64_t n);
  // KV entries, added any time before Finish (with_kv must be set).
  KvBuilder& kv() { return kv_; }
  // Writes the KV section, the index and the trailer.
  [[nodiscard]] absl::Status Finish(ByteSink sink);

  uint64_t bytes_written() const { return pos_; }

 private:
  [[nodiscard]] absl::Status Put(ByteSink sink,
                                 absl::Span<const uint8_t> bytes);
  [[nodiscard]] absl::Status PadTo(ByteSink sink, uint64_t alignment);
  [[nodiscard]] absl::Status AddImpl(absl::string_view name,
                                     const TensorDescriptor& d,
                                     BufferWriter write_buffer, ByteSink sink,
                                     absl::Span<const uint8_t> extension_data);

  enum class Stage : uint8_t { kNew, kTensors, kFinished, kFailed };

  HrryWriterOptions options_;
  Stage stage_ = Stage::kNew;
  bool in_buffer_ = false;  // inside a BufferWriter
  uint64_t pos_ = 0;
  std::unique_ptr<DescriptorDecoder> decoder_;
  CompositeBinder composites_;
  KvBuilder kv_;
  std::vector<std::string> names_;  // owns the index names
  std::vector<IndexEntry> entries_;
  absl::flat_hash_set<std::string> seen_;
};

}  // namespace hurray::stream::container

#endif  // HURRAY_STREAM_CONTAINER_HRRY_WRITER_H_
