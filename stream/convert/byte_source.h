// ByteSource: random-access reads of an importer's input (a file through
// pread, or bytes in memory for tests and fuzzing). Every read is checked
// against size(): a read past the end is an OutOfRange error naming `what`,
// never a short read.
#ifndef HURRAY_STREAM_CONVERT_BYTE_SOURCE_H_
#define HURRAY_STREAM_CONVERT_BYTE_SOURCE_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace hurray::stream::convert {

// Where a stretch of a source lies in an open file (ByteSource::FileRangeAt).
struct FileRange {
  int fd = -1;          // -1: not in a file (memory, a built header)
  uint64_t offset = 0;  // in that file
  uint64_t length = 0;  // bytes from the asked offset lying there contiguously
};

class ByteSource {
 public:
  virtual ~ByteSource() = default;
  virtual uint64_t size() const = 0;
  // Fills `out` with the bytes at [offset, offset + out.size()).
  [[nodiscard]] absl::Status ReadAt(uint64_t offset, absl::Span<uint8_t> out,
                                    absl::string_view what) const;
  // Where the bytes at [offset, offset + length) lie in one open file, for
  // the kernel to copy them (fd_copy.h): r->fd is -1 when they are not in a
  // file, else r->length (1..length) of them lie at r->offset of r->fd. The
  // range is checked as ReadAt checks it. The descriptor stays valid until
  // the next call on this source.
  [[nodiscard]] absl::Status FileRangeAt(uint64_t offset, uint64_t length,
                                         FileRange* r,
                                         absl::string_view what) const;

 protected:
  // Called with a range inside [0, size()).
  [[nodiscard]] virtual absl::Status DoRead(uint64_t offset,
                                            absl::Span<uint8_t> out) const = 0;
  // Called with a non-empty range inside [0, size()); r starts as "none".
  [[nodiscard]] virtual absl::Status DoFileRange(uint64_t /*offset*/,
                                                 uint64_t /*length*/,
                                                 FileRange* /*r*/) const {
    return absl::OkStatus();
  }
};

class MemorySource : public ByteSource {
 public:
  explicit MemorySource(absl::Span<const uint8_t> bytes) : bytes_(bytes) {}
  uint64_t size() const override { return bytes_.size(); }

 private:
  [[nodiscard]] absl::Status DoRead(uint64_t offset,
                                    absl::Span<uint8_t> out) const override;
  absl::Span<const uint8_t> bytes_;
};

// A regular file read with pread(2); its size is taken at open.
class FileSource : public ByteSource {
 public:
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<FileSource>> Open(
      const std::string& path);
  ~FileSource() override;
  uint64_t size() const override { return size_; }

 private:
  FileSource(int fd, uint64_t size, std::string path)
      : fd_(fd), size_(size), path_(std::move(path)) {}
  [[nodiscard]] absl::Status DoRead(uint64_t offset,
                                    absl::Span<uint8_t> out) const override;
  [[nodiscard]] absl::Status DoFileRange(uint64_t offset, uint64_t length,
                                         FileRange* r) const override;
  int fd_;
  uint64_t size_;
  std::string path_;
};

}  // namespace hurray::stream::convert

#endif  // HURRAY_STREAM_CONVERT_BYTE_SOURCE_H_
