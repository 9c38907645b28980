// Reading only some tensors of a .hrry file by name (`hurray ingest
// --tensors a,b`, issue 15 § 2), from any source that reads byte ranges: a
// mapped file (stream/container/hrry_mmap.h) or an HTTP(S) server with range
// support (stream/http/http_ranges.h).
//
// file-format.md § Random-Access Reader: the header, the trailer, the index
// (with its CRC-32C) and the KV section are read and checked first
// (ReadHrryMetadata: FILE-HDR-*, FILE-TRL-*, FILE-IDX-01..07, FILE-KV-*, plus
// FILE-IDX-09 and FILE-IDX-14 over every entry, which the index alone
// decides). Then only the named tensors are read (ReadSelected): a named
// composite head brings its members (§ Composite Tensors: the next
// member_count tensors in descriptor_offset order, nested heads pre-order;
// the descriptors of the tensors without data, the only possible heads, are
// read to find them), a named member is walked inside its whole composite
// (its validation needs the head) but only it is reported; each group of
// consecutive tensors is walked by a TensorWalker from its first descriptor,
// exactly as the forward reader walks it (descriptor rules, buffer placement
// and padding, limits, the composite validator), and each walked tensor is
// checked against its index entry (FILE-IDX-08, 10..13, 15, FILE-REG-03). Rules
// that need the tensors not read (FILE-IDX-15 for an unindexed tensor elsewhere
// in the region, the padding between groups, FILE-HDR-10) are not checked.
//
// Groups closer than kCoalesceGapBytes are read with one range (the bytes
// between them are read and dropped), so a run of named neighbours costs one
// request. The sink sees what it sees for a forward read of a file that holds
// only the named tensors: ExpectTensorNames, the tensors' events in file
// order (each OnDescriptor preceded by OnTensorKey with its index name), then
// OnMetadata (the KV section), OnTensorNames, OnEndOfStream; on a rejection
// OnInputRejected. Memory: the metadata (at most
// FileOptions::max_metadata_bytes) and the source's read buffer; tensor bytes
// go to the sink as they arrive.
#ifndef HURRAY_STREAM_INGEST_PARTIAL_HRRY_H_
#define HURRAY_STREAM_INGEST_PARTIAL_HRRY_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "stream/container/file_format.h"
#include "stream/container/file_index.h"
#include "stream/container/file_kv.h"
#include "stream/container/range_source.h"
#include "stream/ingest/sinks.h"

namespace hurray::stream::ingest {

inline constexpr uint64_t kCoalesceGapBytes = 64 << 10;

// Bytes in memory (a mapped file), kept alive by the caller.
class MemoryRangeSource final : public container::RangeSource {
 public:
  explicit MemoryRangeSource(absl::Span<const uint8_t> bytes) : bytes_(bytes) {}
  uint64_t size() const override { return bytes_.size(); }
  [[nodiscard]] absl::Status Read(uint64_t offset, uint64_t length,
                                  PieceFn feed) override;

 private:
  absl::Span<const uint8_t> bytes_;
};

// The checked header, trailer, index and KV section.
struct HrryMetadata {
  container::FileGeometry geometry;
  std::vector<uint8_t> tail;  // the bytes the index and KV views point into
  container::FileIndex index;
  container::KvSection kv;
};

[[nodiscard]] absl::StatusOr<std::unique_ptr<HrryMetadata>> ReadHrryMetadata(
    container::RangeSource* source, const container::FileOptions& options);

// The index entries named, in the order given (duplicates once). A name the
// index lacks: NotFound naming it (no rule: nothing about the file is wrong).
[[nodiscard]] absl::StatusOr<std::vector<const container::IndexEntry*>>
ResolveNames(const container::FileIndex& index,
             absl::Span<const std::string> names);

struct PartialReadStats {
  uint64_t ranges = 0;      // Read calls for tensor bytes
  uint64_t bytes_read = 0;  // bytes those calls delivered
  uint64_t tensors = 0;     // tensors walked (members included)
};

// Reads the `selected` tensors (and the members of selected composite heads)
// of the file `geometry` and `index` describe into `sink`. Rejections carry
// the rule id and the absolute file offset.
[[nodiscard]] absl::Status ReadSelected(
    container::RangeSource* source, const container::FileGeometry& geometry,
    const container::FileIndex& index, const container::KvSection& kv,
    absl::Span<const container::IndexEntry* const> selected,
    const container::FileOptions& options, IngestSink* sink,
    PartialReadStats* stats = nullptr);

}  // namespace hurray::stream::ingest

#endif  // HURRAY_STREAM_INGEST_PARTIAL_HRRY_H_
