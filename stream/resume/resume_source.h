// What binds a resume state to its source file (issue 13 item 2): the
// file's identity when the state was written (device, inode, size, mtime in
// ns) and the CRC-32C of the bytes consumed before the checkpoint (computed
// as they passed, Checkpoint::crc32c of stream/container/checkpoint.h). A
// resumed run continues only when the file is still the same file with the
// same bytes: replacing it (another inode), rewriting it (size, mtime) or
// changing the consumed bytes behind an unchanged mtime is refused.
#ifndef HURRAY_STREAM_RESUME_RESUME_SOURCE_H_
#define HURRAY_STREAM_RESUME_RESUME_SOURCE_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace hurray::stream::resume {

struct SourceIdentity {
  uint64_t device = 0;
  uint64_t inode = 0;
  uint64_t size = 0;
  int64_t mtime_ns = 0;

  bool operator==(const SourceIdentity& o) const {
    return device == o.device && inode == o.inode && size == o.size &&
           mtime_ns == o.mtime_ns;
  }
  bool operator!=(const SourceIdentity& o) const { return !(*this == o); }
};

// The identity of the regular file at `path` (FailedPrecondition for
// anything else: a pipe or a device cannot be resumed).
[[nodiscard]] absl::StatusOr<SourceIdentity> IdentifyFile(
    const std::string& path);

// OK when `path` is the file `recorded` describes and its first `offset`
// bytes have CRC-32C `crc` (read once, here: a replaced file is refused
// before anything is written); else FailedPrecondition saying what differs.
[[nodiscard]] absl::Status CheckResumeSource(const std::string& path,
                                             const SourceIdentity& recorded,
                                             uint64_t offset, uint32_t crc);

}  // namespace hurray::stream::resume

#endif  // HURRAY_STREAM_RESUME_RESUME_SOURCE_H_
