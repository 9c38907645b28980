#include "stream/container/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace hurray::stream::container {
namespace {

size_t PageSize() {
  const long page = ::sysconf(_SC_PAGESIZE);
  return page > 0 ? static_cast<size_t>(page) : 4096;
}

// Reserves (PROT_NONE) `size` bytes, rounded up to whole pages, at a
// multiple of kMapAlignment: over-reserves by kMapAlignment and unmaps what
// lies outside. nullptr (errno set) on failure.
void* ReserveAligned(size_t size) {
  const size_t page = PageSize();
  if (size > SIZE_MAX - kMapAlignment - page) {
    errno = ENOMEM;
    return nullptr;
  }
  const size_t length = (size + page - 1) / page * page;
  const size_t span = length + kMapAlignment;
  void* r = ::mmap(nullptr, span, PROT_NONE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (r == MAP_FAILED) return nullptr;
  const uintptr_t base = reinterpret_cast<uintptr_t>(r);
  const uintptr_t aligned = (base + kMapAlignment - 1) & ~(kMapAlignment - 1);
  if (aligned > base) ::munmap(r, aligned - base);
  const uintptr_t end = aligned + length;
  if (base + span > end) {
    ::munmap(reinterpret_cast<void*>(end), base + span - end);
  }
  return reinterpret_cast<void*>(aligned);
}

}  // namespace

absl::StatusOr<std::unique_ptr<MappedFile>> MappedFile::Open(
    const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return absl::ErrnoToStatus(errno, absl::StrCat("open ", path));
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    const int e = errno;
    ::close(fd);
    return absl::ErrnoToStatus(e, absl::StrCat("stat ", path));
  }
  const size_t size = static_cast<size_t>(st.st_size);
  void* data = nullptr;
  if (size > 0) {  // mmap refuses a zero length
    void* at = ReserveAligned(size);
    data = at == nullptr
               ? MAP_FAILED
               : ::mmap(at, size, PROT_READ, MAP_PRIVATE | MAP_FIXED, fd, 0);
    if (data == MAP_FAILED) {
      const int e = errno;
      if (at != nullptr) ::munmap(at, size);
      ::close(fd);
      return absl::ErrnoToStatus(e, absl::StrCat("mmap ", path));
    }
  }
  ::close(fd);  // the mapping stays valid
  return std::unique_ptr<MappedFile>(new MappedFile(data, size));
}

absl::StatusOr<std::unique_ptr<MappedFile>> MappedFile::Copy(
    absl::Span<const uint8_t> bytes) {
  const size_t size = bytes.size();
  void* data = nullptr;
  if (size > 0) {
    void* at = ReserveAligned(size);
    data = at == nullptr
               ? MAP_FAILED
               : ::mmap(at, size, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    if (data == MAP_FAILED) {
      const int e = errno;
      if (at != nullptr) ::munmap(at, size);
      return absl::ErrnoToStatus(e, "mmap (copy)");
    }
    std::memcpy(data, bytes.data(), size);
    ::mprotect(data, size, PROT_READ);
  }
  return std::unique_ptr<MappedFile>(new MappedFile(data, size));
}

MappedFile::~MappedFile() {
  if (data_ != nullptr) ::munmap(data_, size_);
}

}  // namespace hurray::stream::container
