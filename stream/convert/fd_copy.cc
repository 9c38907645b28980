#include "stream/convert/fd_copy.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace hurray::stream::convert {

bool IsRegularFile(int out_fd) {
  struct stat st;
  return ::fstat(out_fd, &st) == 0 && S_ISREG(st.st_mode);
}

absl::StatusOr<uint64_t> KernelCopy(int in_fd, uint64_t in_offset, int out_fd,
                                    uint64_t length, CopyFileRangeFn copy,
                                    absl::string_view what, bool* unsupported) {
  if (copy == nullptr) copy = ::copy_file_range;
  *unsupported = false;
  // At most 1 GiB a call (the kernel caps a call near 2 GiB anyway).
  constexpr uint64_t kMaxCall = uint64_t{1} << 30;
  uint64_t done = 0;
  while (done < length) {
    off64_t off = static_cast<off64_t>(in_offset + done);
    const size_t want =
        static_cast<size_t>(std::min<uint64_t>(kMaxCall, length - done));
    const ssize_t n = copy(in_fd, &off, out_fd, nullptr, want, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int e = errno;
      if (e == EXDEV || e == EINVAL || e == ENOSYS || e == EOPNOTSUPP) {
        *unsupported = true;
        return done;
      }
      return absl::DataLossError(
          absl::StrCat(what, ": copy_file_range at byte ", in_offset + done,
                       ": ", std::strerror(e)));
    }
    if (n == 0) {
      return absl::DataLossError(absl::StrCat(
          what, ": the input ended at byte ", in_offset + done, ", ",
          length - done, " bytes short: the file shrank while being read"));
    }
    done += static_cast<uint64_t>(n);
  }
  return done;
}

}  // namespace hurray::stream::convert
