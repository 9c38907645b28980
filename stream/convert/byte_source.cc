#include "stream/convert/byte_source.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"

namespace hurray::stream::convert {

absl::Status ByteSource::ReadAt(uint64_t offset, absl::Span<uint8_t> out,
                                absl::string_view what) const {
  if (offset > size() || out.size() > size() - offset) {
    return absl::OutOfRangeError(
        absl::StrCat(what, ": ", out.size(), " bytes at offset ", offset,
                     " run past the end of the input (", size(), " bytes)"));
  }
  if (out.empty()) return absl::OkStatus();
  return DoRead(offset, out);
}

absl::Status ByteSource::FileRangeAt(uint64_t offset, uint64_t length,
                                     FileRange* r,
                                     absl::string_view what) const {
  *r = FileRange();
  if (offset > size() || length > size() - offset) {
    return absl::OutOfRangeError(
        absl::StrCat(what, ": ", length, " bytes at offset ", offset,
                     " run past the end of the input (", size(), " bytes)"));
  }
  if (length == 0) return absl::OkStatus();
  absl::Status s = DoFileRange(offset, length, r);
  if (s.ok() && r->fd >= 0 && (r->length == 0 || r->length > length))
    return absl::InternalError("a source gave a wrong file range");
  return s;
}

absl::Status MemorySource::DoRead(uint64_t offset,
                                  absl::Span<uint8_t> out) const {
  std::memcpy(out.data(), bytes_.data() + offset, out.size());
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<FileSource>> FileSource::Open(
    const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return absl::NotFoundError(
        absl::StrCat(path, ": cannot open: ", std::strerror(errno)));
  }
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": not a regular file"));
  }
  return std::unique_ptr<FileSource>(
      new FileSource(fd, static_cast<uint64_t>(st.st_size), path));
}

FileSource::~FileSource() { ::close(fd_); }

absl::Status FileSource::DoRead(uint64_t offset,
                                absl::Span<uint8_t> out) const {
  size_t done = 0;
  while (done < out.size()) {
    const ssize_t n = ::pread(fd_, out.data() + done, out.size() - done,
                              static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      return absl::DataLossError(
          absl::StrCat(path_, ": read error: ", std::strerror(errno)));
    }
    if (n == 0) {
      return absl::DataLossError(
          absl::StrCat(path_, ": the file shrank while being read"));
    }
    done += static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

absl::Status FileSource::DoFileRange(uint64_t offset, uint64_t length,
                                     FileRange* r) const {
  r->fd = fd_;
  r->offset = offset;
  r->length = length;
  return absl::OkStatus();
}

}  // namespace hurray::stream::convert
