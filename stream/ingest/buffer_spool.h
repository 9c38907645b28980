// The spools of SparseWriter and PagedWriter (stream/ingest/tensor_writer.h):
// each buffer of a tensor kept until its end, in memory within a budget
// (spool_memory_bytes for all of them), else in a temp of OUT_DIR, and read
// back as bytes, a temp through a read-only mapping whose pages are dropped
// from the resident set as the reader goes.
#ifndef HURRAY_STREAM_INGEST_BUFFER_SPOOL_H_
#define HURRAY_STREAM_INGEST_BUFFER_SPOOL_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "parser/descriptor.h"
#include "stream/container/safe_output_dir.h"

namespace hurray::stream::ingest {

// One spooled buffer: in memory within the budget, else a temp of OUT.
struct BufferSpool {
  std::vector<uint8_t> mem;
  container::TempFile file;
  uint64_t size = 0;
};

// Opens *b for `bytes`: in memory when they fit in *budget (taken from it),
// else a temp of `dir` (an error when `dir` is null).
[[nodiscard]] absl::Status OpenSpool(container::SafeOutputDir* dir,
                                     BufferSpool* b, uint64_t bytes,
                                     uint64_t* budget);
[[nodiscard]] absl::Status AppendSpool(container::SafeOutputDir* dir,
                                       BufferSpool* b,
                                       absl::Span<const uint8_t> piece);
// Closes and removes its temp, if any.
void DropSpool(container::SafeOutputDir* dir, BufferSpool* b);

// A read-only (or, for `writable`, shared read-write) mapping of a
// file's first `size` bytes, unmapped when it goes away.
class Mapping {
 public:
  Mapping() = default;
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  ~Mapping() { Reset(); }
  void Reset();
  [[nodiscard]] absl::Status Map(int fd, uint64_t size, bool writable);
  uint8_t* data() const { return map_; }
  // Drops the pages touched so far from the resident set.
  void Release() const;

 private:
  uint8_t* map_ = nullptr;
  size_t size_ = 0;
};

// Every buffer of one tensor, spooled.
class BufferSpools {
 public:
  explicit BufferSpools(container::SafeOutputDir* dir) : dir_(dir) {}
  BufferSpools(const BufferSpools&) = delete;
  BufferSpools& operator=(const BufferSpools&) = delete;
  ~BufferSpools() { Drop(); }

  // One spool per buffer of `d`, within spool_memory_bytes in all.
  [[nodiscard]] absl::Status Open(const TensorDescriptor& d,
                                  uint64_t spool_memory_bytes);
  // A piece of buffer `buffer` (ignored past the spools).
  [[nodiscard]] absl::Status Append(uint32_t buffer,
                                    absl::Span<const uint8_t> piece);
  // Every spool as bytes: in memory, or its file mapped (the mappings in
  // *maps).
  [[nodiscard]] absl::Status View(
      std::vector<std::unique_ptr<Mapping>>* maps,
      std::vector<absl::Span<const uint8_t>>* views);
  // Closes and removes the spools.
  void Drop();

 private:
  container::SafeOutputDir* dir_;
  std::vector<BufferSpool> spools_;
};

// Drops the pages of every spool mapping read so far from the resident
// set (clean file pages: a later read faults them in again).
void ReleaseAll(const std::vector<std::unique_ptr<Mapping>>& maps);

}  // namespace hurray::stream::ingest

#endif  // HURRAY_STREAM_INGEST_BUFFER_SPOOL_H_
