// HrryFile: random-access reader of a local .hrry file over mmap
// (file-format.md § Random-Access Reader). Open() validates the whole file
// the spec's way — header, trailer, index CRC, index, KV section, each
// indexed descriptor — and, with FileOptions::verify_region (default), walks
// the tensor region as the forward reader does (hrry_file.h), touching only
// descriptors and padding. Afterwards tensors are found by name (binary
// search when SORTED_INDEX is set) and their buffers are views into the map.
//
// Rejections come back as absl::Status with the rule id and absolute file
// offset (RuleIdOf, OffsetOf). A file with one fault gets the same rule as
// from the forward reader.
//
// Buffer views honour the handle's declared alignment (buffer-protocol.md
// § Alignment (Minimum), BUF-19): Buffer() refuses a non-empty buffer whose
// address is not a multiple of its `alignment`. Open() and CopyOf() place the
// file at a 2 MiB boundary (stream/container/mapped_file.h), so that happens
// only when the buffer's file offset is not a multiple of its alignment
// (FILE-REG-02, relaxed by a permissive open) or the alignment passes 2 MiB;
// FromBytes() views the caller's bytes where they are, and their address
// counts.
#ifndef HURRAY_STREAM_CONTAINER_HRRY_MMAP_H_
#define HURRAY_STREAM_CONTAINER_HRRY_MMAP_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "parser/descriptor.h"
#include "stream/container/file_format.h"
#include "stream/container/file_index.h"
#include "stream/container/file_kv.h"
#include "stream/container/mapped_file.h"
#include "stream/container/tensor_walker.h"

namespace hurray::stream::container {

class HrryFile {
 public:
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<HrryFile>> Open(
      const std::string& path, const FileOptions& options = FileOptions());
  // Over bytes the caller keeps alive and unchanged, at their address.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<HrryFile>> FromBytes(
      absl::Span<const uint8_t> bytes,
      const FileOptions& options = FileOptions());
  // Over a copy of `bytes`, aligned like a mapped file.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<HrryFile>> CopyOf(
      absl::Span<const uint8_t> bytes,
      const FileOptions& options = FileOptions());

  absl::Span<const uint8_t> bytes() const { return bytes_; }
  const FileGeometry& geometry() const { return geometry_; }
  const FileHeader& header() const { return geometry_.header; }
  const FileIndex& index() const { return index_; }
  const KvSection& kv() const { return kv_; }

  // nullptr when no tensor has that name.
  const IndexEntry* Find(absl::string_view name) const {
    return index_.Find(name);
  }
  // Where the entry's tensor sits; nullptr only in permissive mode, for an
  // entry naming no tensor of the region.
  const TensorExtent* extent(const IndexEntry& e) const;
  // The entries in file (descriptor_offset) order.
  std::vector<const IndexEntry*> InFileOrder() const;

  // The entry's descriptor (checked at open).
  [[nodiscard]] absl::Status ReadDescriptor(const IndexEntry& e,
                                            TensorDescriptor* out) const;
  // Bytes of buffer `i` of the entry's tensor, a view into the file. BUF-19
  // (offset: the buffer's file offset) when the view's address is not a
  // multiple of the handle's declared alignment.
  [[nodiscard]] absl::StatusOr<absl::Span<const uint8_t>> Buffer(
      const IndexEntry& e, const TensorDescriptor& d, uint32_t i) const;
  // The data-level element rules TYPE-PACK-01…05 over the entry's data
  // buffer (parser/element_checks.h), in the mode the file was opened in:
  // OK, or the rule id with the element offset (OffsetUnit::kElement). Not
  // run by Open(), which touches no tensor data; reads every element byte of
  // a contiguous bool, sub-byte or float8_e8m0 tensor, nothing otherwise.
  [[nodiscard]] absl::Status CheckElements(const IndexEntry& e,
                                           const TensorDescriptor& d) const;
  // The direct members of a composite head: the tensors that follow it in
  // descriptor_offset order, a nested head standing for its own members
  // (file-format.md § Composite Tensors). CMP-CLS-03 when the file ends
  // first (a permissive open accepts such files; the members are refused).
  [[nodiscard]] absl::StatusOr<std::vector<const IndexEntry*>> Members(
      const IndexEntry& head) const;

 private:
  HrryFile() = default;
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<HrryFile>> Load(
      std::unique_ptr<HrryFile> file, const FileOptions& options);
  Rejection Check(const FileOptions& options);
  Rejection WalkRegion(const FileOptions& options);
  Rejection DecodeEntries(const FileOptions& options);
  size_t EntryIndex(const IndexEntry& e) const {
    return static_cast<size_t>(&e - index_.entries().data());
  }

  std::unique_ptr<MappedFile> map_;
  absl::Span<const uint8_t> bytes_;
  ParseOptions parse_;
  FileGeometry geometry_;
  FileIndex index_;
  KvSection kv_;
  std::vector<TensorExtent> extents_;
  std::vector<const TensorExtent*> extent_of_entry_;
  std::vector<uint32_t> by_offset_;  // entry indices, file order
};

}  // namespace hurray::stream::container

#endif  // HURRAY_STREAM_CONTAINER_HRRY_MMAP_H_
