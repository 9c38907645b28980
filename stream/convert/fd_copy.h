// Kernel-side copies of unchanged data spans (copy_file_range(2)), for
// `hurray convert` (issue 47 item 3): the bytes of a tensor that is copied
// as it is move from the input file to the output file without passing
// through user space, as `cp` moves them.
#ifndef HURRAY_STREAM_CONVERT_FD_COPY_H_
#define HURRAY_STREAM_CONVERT_FD_COPY_H_

#include <sys/types.h>

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace hurray::stream::convert {

// copy_file_range(2)'s signature: tests pass their own to force failures.
using CopyFileRangeFn = ssize_t (*)(int fd_in, off64_t* off_in, int fd_out,
                                    off64_t* off_out, size_t len,
                                    unsigned int flags);

// True when `out_fd` is a regular file, the only output kernel copies go to
// (a pipe or a socket takes the ordinary writes).
[[nodiscard]] bool IsRegularFile(int out_fd);

// Copies up to `length` bytes at `in_offset` of `in_fd` to `out_fd` at its
// file position with `copy` (nullptr: copy_file_range itself), looping over
// short copies. Returns the bytes copied; fewer than `length` only when the
// kernel cannot copy between these files (EXDEV, EINVAL, ENOSYS,
// EOPNOTSUPP), and then `*unsupported` is set: the caller writes the rest
// itself. The input ending before `length` bytes (a file that shrank while
// read) is DataLoss, and so is any other error; `what` names the bytes in
// the message.
[[nodiscard]] absl::StatusOr<uint64_t> KernelCopy(int in_fd, uint64_t in_offset,
                                                  int out_fd, uint64_t length,
                                                  CopyFileRangeFn copy,
                                                  absl::string_view what,
                                                  bool* unsupported);

}  // namespace hurray::stream::convert

#endif  // HURRAY_STREAM_CONVERT_FD_COPY_H_
