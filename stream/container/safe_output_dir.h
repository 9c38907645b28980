// SafeOutputDir: the one way hurray-cpp creates files (issue 13 item 1).
//
// Every file we write (ingest outputs and spools, the resume state, `hurray
// pack` and `hurray dequant` outputs) is created in a directory opened once
// (O_DIRECTORY | O_NOFOLLOW), relative to that descriptor, under a hidden
// name no user file and no other output of ours can have
// (".hurray-<pid>-<nonce>-<n>.tmp", created with O_CREAT | O_EXCL |
// O_NOFOLLOW: an existing file or a planted symlink there is never opened),
// and appears under its final name only through Publish (renameat, which
// replaces a symlink at the final name instead of writing through it). A
// temp that was neither published nor kept is removed when the object goes
// away, so a failed or rejected run leaves nothing of its own behind.
//
// A run that is killed cannot remove its temps; the next one does. Each
// object holds an exclusive flock(2) on a lock file of its own
// (".hurray-<pid>-<nonce>-lock", while it has temps), and its first temp
// (or first publish) removes the ".tmp" temps of every run whose lock nobody
// holds any more (the kernel drops a dead process's locks, across pid
// namespaces too). Temps kept for a resume are renamed
// ".hurray-<pid>-<nonce>-<n>.kept" and left to
// `--resume`, which removes the rest of the runs it takes over (a ".kept"
// its state never named: killed between the two); temps without a lock
// file (an older hurray's) are left alone.
//
// Reading a file we wrote (a spool, a resumed output, the state) goes through
// OpenForReading / ReadFileNoFollow: never through a symlink.
#ifndef HURRAY_STREAM_CONTAINER_SAFE_OUTPUT_DIR_H_
#define HURRAY_STREAM_CONTAINER_SAFE_OUTPUT_DIR_H_

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace hurray::stream::container {

// A temp file being written: its descriptor (owned by the caller, who closes
// it) and its name in the directory.
struct TempFile {
  int fd = -1;
  std::string name;
};

class SafeOutputDir {
 public:
  // Opens `path` ("" is the current directory). A symlink there is refused.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<SafeOutputDir>> Open(
      const std::string& path);
  ~SafeOutputDir();
  SafeOutputDir(const SafeOutputDir&) = delete;
  SafeOutputDir& operator=(const SafeOutputDir&) = delete;

  // A new empty temp, open for reading and writing.
  [[nodiscard]] absl::StatusOr<TempFile> CreateTemp(mode_t mode = 0644);
  // Renames a temp of this object to `final_name` (IsPlainName), replacing
  // what is there; the temp is ours no more.
  [[nodiscard]] absl::Status Publish(const std::string& temp,
                                     const std::string& final_name);
  // Removes a temp of this object (its descriptor is the caller's to close).
  void Remove(const std::string& temp);
  // The temp survives this object (a resumable run keeps finished outputs
  // that wait for their names) under the name returned (".kept": no later
  // run's clean-up removes it); Remove and RemoveAll still remove it.
  [[nodiscard]] absl::StatusOr<std::string> Keep(const std::string& temp);
  // Takes over a temp an earlier run kept: an IsTempName regular file.
  [[nodiscard]] absl::Status Adopt(const std::string& temp);
  // How many temps of killed runs this run removed (at its first CreateTemp
  // or Publish).
  int stale_temps_removed() const { return stale_temps_removed_; }
  // Removes every temp of this object, kept ones too.
  void RemoveAll();

  // Opens a regular file of the directory read-only, never through a
  // symlink (a plain name or one of our temp names).
  [[nodiscard]] absl::StatusOr<int> OpenForReading(
      const std::string& name) const;

  const std::string& path() const { return path_; }
  // `path_/name`, for messages.
  std::string Describe(absl::string_view name) const;

  // A file name: not empty, not "." or "..", no '/' or NUL, at most 255
  // bytes.
  static bool IsPlainName(absl::string_view name);
  // A name CreateTemp or Keep makes.
  static bool IsTempName(absl::string_view name);

 private:
  SafeOutputDir(int fd, std::string path);
  // Creates and locks this run's lock file (once, before its first temp).
  [[nodiscard]] absl::Status Lock();
  // Removes the lock file once no temp of this object is left.
  void Unlock();
  // Removes the ".tmp" temps (and lock files) of runs that hold no lock.
  void RemoveStaleTemps();
  // RemoveStaleTemps, the first time this run creates or publishes a file.
  void SweepOnce();

  int fd_;
  std::string path_;
  std::string prefix_;  // ".hurray-<pid>-<nonce>-"
  uint64_t counter_ = 0;
  std::set<std::string> temps_;  // created or adopted, not yet published
  std::set<std::string> kept_;
  int lock_fd_ = -1;
  std::set<std::string, std::less<>> adopted_runs_;  // run prefixes
  bool swept_ = false;
  int stale_temps_removed_ = 0;
};

// One whole file at `path`, written through a temp of its directory and
// published under its name only by Commit; destroyed without Commit, it
// leaves nothing (and whatever was at `path` stays).
class SafeOutputFile {
 public:
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<SafeOutputFile>> Create(
      const std::string& path);
  ~SafeOutputFile();

  // Buffered writes (1 MiB; a span of 256 KiB or more is written as it
  // is, after the bytes buffered before it); Commit flushes.
  [[nodiscard]] absl::Status Write(absl::Span<const uint8_t> bytes);
  // The temp's descriptor, for unbuffered writes of one's own (Flush
  // first: they go at its file position).
  int fd() const { return temp_.fd; }
  // Writes out the buffered bytes.
  [[nodiscard]] absl::Status Flush();
  // Flushes, closes (after fsync when `durable`) and publishes.
  [[nodiscard]] absl::Status Commit(bool durable = false);

 private:
  SafeOutputFile(std::unique_ptr<SafeOutputDir> dir, TempFile temp,
                 std::string base, std::string path);

  std::unique_ptr<SafeOutputDir> dir_;
  TempFile temp_;
  std::string base_, path_;
  std::vector<uint8_t> buffer_;
};

// Writes a whole file at `path` through a temp of its directory: `write`
// gets the temp's descriptor; the temp is published as `path` only when
// `write` succeeded (after fsync when `durable`), else removed.
[[nodiscard]] absl::Status WriteFileSafely(
    const std::string& path, absl::FunctionRef<absl::Status(int fd)> write,
    bool durable = false);

// The contents of a regular file, never read through a symlink; NotFound
// when there is no such file, InvalidArgument above `max_bytes`.
[[nodiscard]] absl::StatusOr<std::string> ReadFileNoFollow(
    const std::string& path, uint64_t max_bytes);

// write(2) until all of `bytes` is written, retrying on EINTR; `what` names
// the file in the error.
[[nodiscard]] absl::Status WriteAllFd(int fd, const void* bytes, size_t size,
                                      absl::string_view what);

}  // namespace hurray::stream::container

#endif  // HURRAY_STREAM_CONTAINER_SAFE_OUTPUT_DIR_H_
