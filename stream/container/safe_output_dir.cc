#include "stream/container/safe_output_dir.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <random>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace hurray::stream::container {
namespace {

constexpr absl::string_view kTempPrefix = ".hurray-";
constexpr absl::string_view kTempSuffix = ".tmp";
constexpr absl::string_view kKeptSuffix = ".kept";
constexpr absl::string_view kLockName = "lock";
// Clean-up looks at this many of our names at most (a directory is the
// user's, and may hold anything).
constexpr size_t kMaxStaleNames = 1 << 16;

absl::Status ErrnoError(absl::string_view what, absl::string_view path,
                        int err) {
  std::string message = absl::StrCat(what, " ", path, ": ", std::strerror(err));
  if (err == ELOOP) message += " (a symlink is never followed here)";
  switch (err) {
    case ENOENT:
      return absl::NotFoundError(message);
    case EACCES:
    case EPERM:
      return absl::PermissionDeniedError(message);
    default:
      return absl::DataLossError(message);
  }
}

// Decimal digits, 1 to 20 of them.
bool AllDigits(absl::string_view s, size_t max) {
  if (s.empty() || s.size() > max) return false;
  for (char c : s) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

bool AllLowerHex(absl::string_view s, size_t size) {
  if (s.size() != size) return false;
  for (char c : s) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c)) &&
        !(c >= 'a' && c <= 'f')) {
      return false;
    }
  }
  return true;
}

// Splits one of our names, ".hurray-<pid>-<16 hex>-<rest>", into the run's
// prefix (up to the last '-') and <rest>.
bool SplitOurName(absl::string_view name, absl::string_view* run,
                  absl::string_view* rest) {
  absl::string_view n = name;
  if (!absl::ConsumePrefix(&n, kTempPrefix)) return false;
  const size_t a = n.find('-');
  if (a == absl::string_view::npos || !AllDigits(n.substr(0, a), 10)) {
    return false;
  }
  n.remove_prefix(a + 1);
  if (n.size() < 18 || !AllLowerHex(n.substr(0, 16), 16) || n[16] != '-') {
    return false;
  }
  *rest = n.substr(17);
  *run = name.substr(0, name.size() - rest->size());
  return true;
}

// Splits "a/b/c" into "a/b" and "c" ("" and "c" for "c", "/" and "c" for
// "/c").
void SplitPath(const std::string& path, std::string* dir, std::string* base) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) {
    dir->clear();
    *base = path;
    return;
  }
  *dir = slash == 0 ? "/" : path.substr(0, slash);
  *base = path.substr(slash + 1);
}

}  // namespace

absl::Status WriteAllFd(int fd, const void* bytes, size_t size,
                        absl::string_view what) {
  const uint8_t* p = static_cast<const uint8_t*>(bytes);
  while (size > 0) {
    const ssize_t w = ::write(fd, p, size);
    if (w < 0) {
      if (errno == EINTR) continue;
      return ErrnoError("cannot write", what, errno);
    }
    p += w;
    size -= static_cast<size_t>(w);
  }
  return absl::OkStatus();
}

SafeOutputDir::SafeOutputDir(int fd, std::string path)
    : fd_(fd), path_(std::move(path)) {
  // The nonce keeps names of two runs with the same pid (containers, pid
  // reuse) apart; O_EXCL refuses the rest.
  std::random_device rd;
  const uint64_t nonce = (uint64_t{rd()} << 32) ^ rd();
  char hex[17];
  for (int i = 0; i < 16; ++i) {
    hex[i] = "0123456789abcdef"[(nonce >> (60 - 4 * i)) & 15];
  }
  hex[16] = '\0';
  prefix_ = absl::StrCat(kTempPrefix, ::getpid(), "-", hex, "-");
}

absl::StatusOr<std::unique_ptr<SafeOutputDir>> SafeOutputDir::Open(
    const std::string& path) {
  std::string p = path.empty() ? "." : path;
  // "link/" would make open(2) follow the link whatever O_NOFOLLOW says.
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  const int fd =
      ::open(p.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    // O_NOFOLLOW | O_DIRECTORY on a symlink: ELOOP or ENOTDIR.
    struct stat st;
    if (::lstat(p.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) {
      return ErrnoError("cannot open the directory", p, ELOOP);
    }
    return ErrnoError("cannot open the directory", p, err);
  }
  return std::unique_ptr<SafeOutputDir>(new SafeOutputDir(fd, p));
}

SafeOutputDir::~SafeOutputDir() {
  for (const std::string& t : temps_) {
    if (kept_.count(t) == 0) ::unlinkat(fd_, t.c_str(), 0);
  }
  temps_.clear();
  Unlock();
  ::close(fd_);
}

void SafeOutputDir::Unlock() {
  if (lock_fd_ < 0 || !temps_.empty()) return;
  ::unlinkat(fd_, absl::StrCat(prefix_, kLockName).c_str(), 0);
  ::close(lock_fd_);
  lock_fd_ = -1;
}

absl::Status SafeOutputDir::Lock() {
  if (lock_fd_ >= 0) return absl::OkStatus();
  SweepOnce();
  const std::string name = absl::StrCat(prefix_, kLockName);
  const int fd =
      ::openat(fd_, name.c_str(),
               O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return ErrnoError("cannot create", Describe(name), errno);
  // Held until this object goes away (or the process dies). A clean-up of
  // another run may hold it for a moment: wait for it.
  while (::flock(fd, LOCK_EX) != 0) {
    if (errno != EINTR) {
      const int err = errno;
      ::close(fd);
      ::unlinkat(fd_, name.c_str(), 0);
      return ErrnoError("cannot lock", Describe(name), err);
    }
  }
  lock_fd_ = fd;
  return absl::OkStatus();
}

void SafeOutputDir::SweepOnce() {
  // Clean up after killed runs once, when this run writes or publishes (a
  // run refused before, e.g. a resume against a changed source, changes
  // nothing in the directory).
  if (swept_) return;
  swept_ = true;
  RemoveStaleTemps();
}

void SafeOutputDir::RemoveStaleTemps() {
  const int list_fd = ::openat(fd_, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (list_fd < 0) return;
  DIR* listing = ::fdopendir(list_fd);
  if (listing == nullptr) {
    ::close(list_fd);
    return;
  }
  // Per run prefix: its temps (".tmp" and ".kept"), and whether it has a
  // lock file.
  std::map<std::string, std::vector<std::string>, std::less<>> temps;
  std::set<std::string, std::less<>> locked;
  size_t seen = 0;
  while (const dirent* e = ::readdir(listing)) {
    absl::string_view run, rest;
    if (!SplitOurName(e->d_name, &run, &rest)) continue;
    if (++seen > kMaxStaleNames) break;
    if (rest == kLockName) {
      locked.emplace(run);
    } else if (IsTempName(e->d_name) && temps_.count(e->d_name) == 0) {
      temps[std::string(run)].emplace_back(e->d_name);
    }
  }
  ::closedir(listing);
  // Removes what `run` left: its ".tmp" temps, and its ".kept" ones too when
  // this run took that run's place (adopted some of its temps: the others
  // are finished outputs its state never recorded, a kill between the two).
  auto remove_leftovers = [&](const std::string& run) {
    const auto it = temps.find(run);
    if (it == temps.end()) return;
    const bool ours = adopted_runs_.count(run) != 0;
    for (const std::string& t : it->second) {
      if (!ours && !absl::EndsWith(t, kTempSuffix)) continue;
      if (::unlinkat(fd_, t.c_str(), 0) == 0) ++stale_temps_removed_;
    }
  };
  for (const std::string& run : locked) {
    if (run == prefix_) continue;
    const std::string lock_name = absl::StrCat(run, kLockName);
    const int fd =
        ::openat(fd_, lock_name.c_str(), O_RDWR | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) continue;
    struct stat st;
    // Held: its run is alive. Taken: nobody holds it, the run is dead.
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
        ::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      ::close(fd);
      continue;
    }
    remove_leftovers(run);
    ::unlinkat(fd_, lock_name.c_str(), 0);
    ::close(fd);
  }
  // A run this one took over that has no lock file any more (it ended, with
  // its finished outputs kept for the resume).
  for (const std::string& run : adopted_runs_) {
    if (locked.count(run) == 0) remove_leftovers(run);
  }
}

std::string SafeOutputDir::Describe(absl::string_view name) const {
  return path_ == "." ? std::string(name) : absl::StrCat(path_, "/", name);
}

absl::StatusOr<TempFile> SafeOutputDir::CreateTemp(mode_t mode) {
  absl::Status locked = Lock();
  if (!locked.ok()) return locked;
  // A name taken by someone else (EEXIST) is skipped, a few times.
  for (int attempt = 0; attempt < 16; ++attempt) {
    TempFile t;
    t.name = absl::StrCat(prefix_, counter_++, kTempSuffix);
    t.fd = ::openat(fd_, t.name.c_str(),
                    O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
    if (t.fd >= 0) {
      temps_.insert(t.name);
      return t;
    }
    if (errno != EEXIST)
      return ErrnoError("cannot create", Describe(t.name), errno);
  }
  return absl::AlreadyExistsError(
      absl::StrCat("cannot create a temporary file in ", path_,
                   ": every name tried exists"));
}

absl::Status SafeOutputDir::Publish(const std::string& temp,
                                    const std::string& final_name) {
  if (temps_.count(temp) == 0) {
    return absl::InternalError(
        absl::StrCat(Describe(temp), " is not a temporary file of this run"));
  }
  if (!IsPlainName(final_name) || IsTempName(final_name)) {
    return absl::InvalidArgumentError(
        absl::StrCat("refusing the output name '", final_name, "'"));
  }
  if (::renameat(fd_, temp.c_str(), fd_, final_name.c_str()) != 0) {
    return ErrnoError("cannot rename to", Describe(final_name), errno);
  }
  SweepOnce();
  temps_.erase(temp);
  kept_.erase(temp);
  Unlock();
  return absl::OkStatus();
}

void SafeOutputDir::Remove(const std::string& temp) {
  if (temps_.erase(temp) == 0) return;
  kept_.erase(temp);
  ::unlinkat(fd_, temp.c_str(), 0);
  Unlock();
}

absl::StatusOr<std::string> SafeOutputDir::Keep(const std::string& temp) {
  if (temps_.count(temp) == 0 || !absl::EndsWith(temp, kTempSuffix)) {
    return absl::InternalError(
        absl::StrCat(Describe(temp), " is not a temporary file of this run"));
  }
  const std::string kept =
      absl::StrCat(absl::StripSuffix(temp, kTempSuffix), kKeptSuffix);
  if (::renameat(fd_, temp.c_str(), fd_, kept.c_str()) != 0) {
    return ErrnoError("cannot rename to", Describe(kept), errno);
  }
  temps_.erase(temp);
  temps_.insert(kept);
  kept_.insert(kept);
  return kept;
}

absl::Status SafeOutputDir::Adopt(const std::string& temp) {
  if (!IsTempName(temp)) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", temp, "' is not a temporary file name of ours"));
  }
  struct stat st;
  if (::fstatat(fd_, temp.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    return ErrnoError("cannot find", Describe(temp), errno);
  }
  if (!S_ISREG(st.st_mode)) {
    return absl::FailedPreconditionError(
        absl::StrCat(Describe(temp), " is not a regular file"));
  }
  temps_.insert(temp);
  kept_.insert(temp);
  absl::string_view run, rest;
  if (SplitOurName(temp, &run, &rest)) adopted_runs_.emplace(run);
  return absl::OkStatus();
}

void SafeOutputDir::RemoveAll() {
  for (const std::string& t : temps_) ::unlinkat(fd_, t.c_str(), 0);
  temps_.clear();
  kept_.clear();
  Unlock();
}

absl::StatusOr<int> SafeOutputDir::OpenForReading(
    const std::string& name) const {
  if (!IsPlainName(name)) {
    return absl::InvalidArgumentError(
        absl::StrCat("refusing the file name '", name, "'"));
  }
  const int fd = ::openat(fd_, name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return ErrnoError("cannot open", Describe(name), errno);
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return absl::FailedPreconditionError(
        absl::StrCat(Describe(name), " is not a regular file"));
  }
  return fd;
}

bool SafeOutputDir::IsPlainName(absl::string_view name) {
  return !name.empty() && name.size() <= 255 && name != "." && name != ".." &&
         name.find('/') == absl::string_view::npos &&
         name.find('\0') == absl::string_view::npos;
}

bool SafeOutputDir::IsTempName(absl::string_view name) {
  // ".hurray-<pid>-<16 hex>-<n>.tmp" or ".kept"
  absl::string_view run, rest;
  if (!SplitOurName(name, &run, &rest)) return false;
  if (!absl::ConsumeSuffix(&rest, kTempSuffix) &&
      !absl::ConsumeSuffix(&rest, kKeptSuffix)) {
    return false;
  }
  return AllDigits(rest, 20);
}

SafeOutputFile::SafeOutputFile(std::unique_ptr<SafeOutputDir> dir,
                               TempFile temp, std::string base,
                               std::string path)
    : dir_(std::move(dir)),
      temp_(std::move(temp)),
      base_(std::move(base)),
      path_(std::move(path)) {}

absl::StatusOr<std::unique_ptr<SafeOutputFile>> SafeOutputFile::Create(
    const std::string& path) {
  std::string dir, base;
  SplitPath(path, &dir, &base);
  if (!SafeOutputDir::IsPlainName(base)) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", path, "' does not name a file"));
  }
  absl::StatusOr<std::unique_ptr<SafeOutputDir>> d = SafeOutputDir::Open(dir);
  if (!d.ok()) return d.status();
  absl::StatusOr<TempFile> t = (*d)->CreateTemp();
  if (!t.ok()) return t.status();
  return std::unique_ptr<SafeOutputFile>(
      new SafeOutputFile(*std::move(d), *std::move(t), base, path));
}

SafeOutputFile::~SafeOutputFile() {
  if (temp_.fd >= 0) ::close(temp_.fd);
  // ~SafeOutputDir removes the temp unless it was published.
}

absl::Status SafeOutputFile::Flush() {
  if (temp_.fd < 0) return absl::FailedPreconditionError("already committed");
  absl::Status s = WriteAllFd(temp_.fd, buffer_.data(), buffer_.size(), path_);
  buffer_.clear();
  return s;
}

absl::Status SafeOutputFile::Write(absl::Span<const uint8_t> bytes) {
  constexpr size_t kBufferBytes = size_t{1} << 20;
  // Spans this large are written as they are: copying them into the buffer
  // first cost a convert of K-quants (512 KiB to 1 MiB chunks) 3 % of its
  // CPU, while a write of 256 KiB costs its syscall no more than one of
  // 1 MiB does.
  constexpr size_t kDirectBytes = kBufferBytes / 4;
  if (temp_.fd < 0) return absl::FailedPreconditionError("already committed");
  if (buffer_.size() + bytes.size() > kBufferBytes ||
      (bytes.size() >= kDirectBytes && !buffer_.empty())) {
    absl::Status s = Flush();
    if (!s.ok()) return s;
  }
  if (bytes.size() >= kDirectBytes) {
    return WriteAllFd(temp_.fd, bytes.data(), bytes.size(), path_);
  }
  buffer_.insert(buffer_.end(), bytes.begin(), bytes.end());
  return absl::OkStatus();
}

absl::Status SafeOutputFile::Commit(bool durable) {
  if (temp_.fd < 0) return absl::FailedPreconditionError("already committed");
  absl::Status s = Flush();
  // Durable before it replaces the old file.
  if (s.ok() && durable && ::fsync(temp_.fd) != 0) {
    s = ErrnoError("cannot write", path_, errno);
  }
  if (::close(temp_.fd) != 0 && s.ok()) {
    s = ErrnoError("cannot write", path_, errno);
  }
  temp_.fd = -1;
  if (s.ok()) s = dir_->Publish(temp_.name, base_);
  return s;
}

absl::Status WriteFileSafely(const std::string& path,
                             absl::FunctionRef<absl::Status(int fd)> write,
                             bool durable) {
  absl::StatusOr<std::unique_ptr<SafeOutputFile>> f =
      SafeOutputFile::Create(path);
  if (!f.ok()) return f.status();
  absl::Status s = write((*f)->fd());
  if (!s.ok()) return s;  // ~SafeOutputFile removes the temp
  return (*f)->Commit(durable);
}

absl::StatusOr<std::string> ReadFileNoFollow(const std::string& path,
                                             uint64_t max_bytes) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return ErrnoError("cannot open", path, errno);
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return absl::FailedPreconditionError(
        absl::StrCat(path, " is not a regular file"));
  }
  if (static_cast<uint64_t>(st.st_size) > max_bytes) {
    ::close(fd);
    return absl::InvalidArgumentError(
        absl::StrCat(path, " is larger than ", max_bytes, " bytes"));
  }
  // Read at most max_bytes + 1, whatever st_size said (the file may grow).
  std::string out;
  char buf[1 << 16];
  for (;;) {
    const ssize_t got = ::read(fd, buf, sizeof(buf));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      const int err = errno;
      ::close(fd);
      return ErrnoError("cannot read", path, err);
    }
    if (got == 0) break;
    if (out.size() + static_cast<size_t>(got) > max_bytes) {
      ::close(fd);
      return absl::InvalidArgumentError(
          absl::StrCat(path, " is larger than ", max_bytes, " bytes"));
    }
    out.append(buf, static_cast<size_t>(got));
  }
  ::close(fd);
  return out;
}

}  // namespace hurray::stream::container
