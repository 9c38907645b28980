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

namespace hurray::convert {

class ByteSource {
 public:
  virtual ~ByteSource() = default;
  virtual uint64_t size() const = 0;
  // Fills `out` with the bytes at [offset, offset + out.size()).
  [[nodiscard]] absl::Status ReadAt(uint64_t offset, absl::Span<uint8_t> out,
                                    absl::string_view what) const;

 protected:
  // Called with a range inside [0, size()).
  [[nodiscard]] virtual absl::Status DoRead(uint64_t offset,
                                            absl::Span<uint8_t> out) const = 0;
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
  int fd_;
  uint64_t size_;
  std::string path_;
};

}  // namespace hurray::convert

#endif  // HURRAY_STREAM_CONVERT_BYTE_SOURCE_H_
