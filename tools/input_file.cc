#include "tools/input_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "absl/status/status.h"
#include "stream/container/file_format.h"

namespace hurray::tools {
namespace {

constexpr size_t kChunkBytes = 64 << 10;

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

// read() that retries on EINTR; -1 on error (errno set).
ssize_t ReadSome(int fd, uint8_t* data, size_t size) {
  ssize_t n;
  do {
    n = ::read(fd, data, size);
  } while (n < 0 && errno == EINTR);
  return n;
}

}  // namespace

absl::StatusOr<InputKind> ReadInput(const std::string& path,
                                    DescriptorDecoder* decoder,
                                    DescriptorRead* read) {
  *read = DescriptorRead();
  const Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) return absl::ErrnoToStatus(errno, "cannot open");
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) {
    return absl::ErrnoToStatus(errno, "cannot open");
  }
  if (S_ISDIR(st.st_mode)) return absl::ErrnoToStatus(EISDIR, "cannot read");
  const bool regular = S_ISREG(st.st_mode);
  if (regular) read->file_size = static_cast<uint64_t>(st.st_size);

  std::vector<uint8_t> chunk(kChunkBytes);
  // The first bytes, up to the magic's length (a pipe may deliver less).
  size_t head = 0;
  while (head < stream::container::kFileMagic.size()) {
    const ssize_t n = ReadSome(fd.get(), chunk.data() + head,
                               stream::container::kFileMagic.size() - head);
    if (n < 0) return absl::ErrnoToStatus(errno, "read error");
    if (n == 0) break;
    head += static_cast<size_t>(n);
  }
  if (head == stream::container::kFileMagic.size() &&
      std::memcmp(chunk.data(), stream::container::kFileMagic.data(), head) ==
          0) {
    if (!regular) {
      return absl::FailedPreconditionError(
          "a .hrry file must be a regular file (it is mapped, not read)");
    }
    return InputKind::kHrry;
  }

  decoder->Reset();
  read->bytes_read = head;
  DecodeState state =
      decoder->Feed(absl::MakeConstSpan(chunk.data(), head)).state;
  while (head == stream::container::kFileMagic.size() &&
         state == DecodeState::kNeedMore) {
    const ssize_t n = ReadSome(fd.get(), chunk.data(), chunk.size());
    if (n < 0) return absl::ErrnoToStatus(errno, "read error");
    if (n == 0) break;
    read->bytes_read += static_cast<uint64_t>(n);
    state =
        decoder->Feed(absl::MakeConstSpan(chunk.data(), static_cast<size_t>(n)))
            .state;
  }
  if (state == DecodeState::kNeedMore) state = decoder->Finish();
  read->rejection =
      state == DecodeState::kRejected ? decoder->rejection() : kAccepted;
  return InputKind::kDescriptor;
}

}  // namespace hurray::tools
