// MappedFile: a read-only, private mmap of a whole local file (POSIX), or a
// read-only anonymous mapping holding a copy of some bytes.
//
// Either way the base address is a multiple of kMapAlignment (2 MiB, the
// largest data_buffer_alignment a .hrry file may declare, FILE-HDR-07), not
// just of the page size: a buffer at a file offset that is a multiple of
// A ≤ 2 MiB then has an address that is a multiple of A, which is what
// buffer-protocol.md § Alignment (Minimum) asks of the views handed out
// (BUF-19, stream/container/hrry_mmap.h).
#ifndef HURRAY_STREAM_CONTAINER_MAPPED_FILE_H_
#define HURRAY_STREAM_CONTAINER_MAPPED_FILE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace hurray::stream::container {

inline constexpr size_t kMapAlignment = size_t{2} << 20;

class MappedFile {
 public:
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<MappedFile>> Open(
      const std::string& path);
  // A copy of `bytes` (an in-memory file) at an address aligned as above.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<MappedFile>> Copy(
      absl::Span<const uint8_t> bytes);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  absl::Span<const uint8_t> bytes() const {
    return {static_cast<const uint8_t*>(data_), size_};
  }

 private:
  MappedFile(void* data, size_t size) : data_(data), size_(size) {}

  void* data_;  // nullptr when empty
  size_t size_;
};

}  // namespace hurray::stream::container

#endif  // HURRAY_STREAM_CONTAINER_MAPPED_FILE_H_
