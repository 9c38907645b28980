// MappedFile: a read-only, private mmap of a whole local file (POSIX).
#ifndef HURRAY_STREAM_MAPPED_FILE_H_
#define HURRAY_STREAM_MAPPED_FILE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace hurray::stream {

class MappedFile {
 public:
  static absl::StatusOr<std::unique_ptr<MappedFile>> Open(
      const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  absl::Span<const uint8_t> bytes() const {
    return {static_cast<const uint8_t*>(data_), size_};
  }

 private:
  MappedFile(void* data, size_t size) : data_(data), size_(size) {}

  void* data_;  // nullptr for an empty file
  size_t size_;
};

}  // namespace hurray::stream

#endif  // HURRAY_STREAM_MAPPED_FILE_H_
