#include "stream/resume/resume_source.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "stream/container/crc32c.h"

namespace hurray::stream::resume {
namespace {

SourceIdentity IdentityOf(const struct stat& st) {
  SourceIdentity id;
  id.device = static_cast<uint64_t>(st.st_dev);
  id.inode = static_cast<uint64_t>(st.st_ino);
  id.size = static_cast<uint64_t>(st.st_size);
  id.mtime_ns =
      static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  return id;
}

absl::Status Changed(const std::string& path, absl::string_view what) {
  return absl::FailedPreconditionError(absl::StrCat(
      "the source ", path, " is not the one the resume state was written for (",
      what, "): refusing to resume; remove the state file to start over"));
}

}  // namespace

absl::StatusOr<SourceIdentity> IdentifyFile(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    return absl::NotFoundError(
        absl::StrCat("cannot stat ", path, ": ", std::strerror(errno)));
  }
  if (!S_ISREG(st.st_mode)) {
    return absl::FailedPreconditionError(
        absl::StrCat(path, " is not a regular file: it cannot be resumed"));
  }
  return IdentityOf(st);
}

absl::Status CheckResumeSource(const std::string& path,
                               const SourceIdentity& recorded, uint64_t offset,
                               uint32_t crc) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return absl::NotFoundError(
        absl::StrCat("cannot open ", path, ": ", std::strerror(errno)));
  }
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return Changed(path, "not a regular file");
  }
  const SourceIdentity now = IdentityOf(st);
  absl::Status s;
  if (now.device != recorded.device || now.inode != recorded.inode) {
    s = Changed(path, "another file: device or inode differ");
  } else if (now.size != recorded.size) {
    s = Changed(path, absl::StrCat("size ", now.size, ", was ", recorded.size));
  } else if (now.mtime_ns != recorded.mtime_ns) {
    s = Changed(path, "modified since: mtime differs");
  } else if (offset > now.size) {
    s = Changed(path, "the checkpoint is past its end");
  }
  std::vector<uint8_t> buf(size_t{1} << 20);
  uint64_t at = 0;
  uint32_t got_crc = 0;
  while (s.ok() && at < offset) {
    const size_t want =
        static_cast<size_t>(std::min<uint64_t>(buf.size(), offset - at));
    const ssize_t got = ::pread(fd, buf.data(), want, static_cast<off_t>(at));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      s = Changed(path, "cannot read the bytes before the checkpoint");
      break;
    }
    got_crc = container::Crc32cExtend(
        got_crc, absl::MakeConstSpan(buf.data(), static_cast<size_t>(got)));
    at += static_cast<uint64_t>(got);
  }
  if (s.ok() && got_crc != crc) {
    s = Changed(path, "the bytes before the checkpoint differ: CRC-32C");
  }
  ::close(fd);
  return s;
}

}  // namespace hurray::stream::resume
