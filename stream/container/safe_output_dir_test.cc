// SafeOutputDir: temps are hidden, fresh and never opened through a planted
// symlink; only Publish gives a file its final name; what was not published
// (or kept) is gone with the object.
#include "stream/container/safe_output_dir.h"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"

namespace hurray::stream::container {
namespace {

std::string MakeDir() {
  const char* tmp = std::getenv("TEST_TMPDIR");
  std::string templ = absl::StrCat(tmp != nullptr ? tmp : "/tmp", "/sodXXXXXX");
  EXPECT_NE(::mkdtemp(templ.data()), nullptr);
  return templ;
}

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void Put(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

bool Exists(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0;
}

bool IsSymlink(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode);
}

// Entries of `dir` other than "." and "..".
int CountEntries(const std::string& dir) {
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    (void)e;
    ++n;
  }
  return n;
}

TEST(SafeOutputDir, TempIsHiddenAndOnlyPublishNamesIt) {
  const std::string dir = MakeDir();
  std::string temp;
  {
    absl::StatusOr<std::unique_ptr<SafeOutputDir>> d = SafeOutputDir::Open(dir);
    ASSERT_TRUE(d.ok()) << d.status();
    absl::StatusOr<TempFile> t = (*d)->CreateTemp();
    ASSERT_TRUE(t.ok()) << t.status();
    temp = t->name;
    EXPECT_TRUE(SafeOutputDir::IsTempName(temp)) << temp;
    EXPECT_EQ(temp[0], '.');
    ASSERT_TRUE(WriteAllFd(t->fd, "abc", 3, temp).ok());
    ::close(t->fd);
    EXPECT_TRUE(Exists(dir + "/" + temp));
    ASSERT_TRUE((*d)->Publish(temp, "out.f32").ok());
    EXPECT_FALSE(Exists(dir + "/" + temp));
    EXPECT_EQ(Slurp(dir + "/out.f32"), "abc");
    // Not ours any more: a second Publish is refused.
    EXPECT_FALSE((*d)->Publish(temp, "again").ok());
  }
  EXPECT_EQ(Slurp(dir + "/out.f32"), "abc");
  EXPECT_EQ(CountEntries(dir), 1);
}

TEST(SafeOutputDir, UnpublishedTempsAreRemovedKeptOnesSurvive) {
  const std::string dir = MakeDir();
  std::string kept;
  {
    std::unique_ptr<SafeOutputDir> d = *SafeOutputDir::Open(dir);
    TempFile a = *d->CreateTemp();
    TempFile b = *d->CreateTemp();
    ::close(a.fd);
    ::close(b.fd);
    EXPECT_NE(a.name, b.name);
    absl::StatusOr<std::string> k = d->Keep(b.name);
    ASSERT_TRUE(k.ok()) << k.status();
    kept = *k;
    EXPECT_TRUE(SafeOutputDir::IsTempName(kept)) << kept;
    EXPECT_TRUE(absl::EndsWith(kept, ".kept")) << kept;
    EXPECT_FALSE(Exists(dir + "/" + b.name));
    EXPECT_EQ(CountEntries(dir), 3);  // a, the kept b, the run's lock file
  }
  EXPECT_EQ(CountEntries(dir), 1);
  EXPECT_TRUE(Exists(dir + "/" + kept));
  {
    // A later run takes it over; RemoveAll removes kept temps too.
    std::unique_ptr<SafeOutputDir> d = *SafeOutputDir::Open(dir);
    ASSERT_TRUE(d->Adopt(kept).ok());
    EXPECT_FALSE(d->Adopt("tensor_0.f32").ok());
    d->RemoveAll();
  }
  EXPECT_EQ(CountEntries(dir), 0);
}

TEST(SafeOutputDir, PublishReplacesAPlantedSymlinkInsteadOfWritingThroughIt) {
  const std::string dir = MakeDir();
  const std::string victim = MakeDir() + "/victim";
  Put(victim, "precious");
  ASSERT_EQ(::symlink(victim.c_str(), (dir + "/out.f32").c_str()), 0);
  std::unique_ptr<SafeOutputDir> d = *SafeOutputDir::Open(dir);
  TempFile t = *d->CreateTemp();
  ASSERT_TRUE(WriteAllFd(t.fd, "new", 3, t.name).ok());
  ::close(t.fd);
  ASSERT_TRUE(d->Publish(t.name, "out.f32").ok());
  EXPECT_EQ(Slurp(victim), "precious");
  EXPECT_FALSE(IsSymlink(dir + "/out.f32"));
  EXPECT_EQ(Slurp(dir + "/out.f32"), "new");
}

TEST(SafeOutputDir, SymlinksAreNeverFollowed) {
  const std::string dir = MakeDir();
  const std::string other = MakeDir();
  Put(other + "/victim", "precious");
  // The directory itself.
  ASSERT_EQ(::symlink(other.c_str(), (dir + "/link").c_str()), 0);
  EXPECT_FALSE(SafeOutputDir::Open(dir + "/link").ok());
  EXPECT_FALSE(SafeOutputDir::Open(dir + "/link/").ok());
  EXPECT_FALSE(SafeOutputDir::Open(dir + "/link//").ok());
  EXPECT_TRUE(SafeOutputDir::Open(dir + "/").ok());
  // Reading.
  ASSERT_EQ(::symlink((other + "/victim").c_str(), (dir + "/state").c_str()),
            0);
  std::unique_ptr<SafeOutputDir> d = *SafeOutputDir::Open(dir);
  EXPECT_FALSE(d->OpenForReading("state").ok());
  EXPECT_FALSE(ReadFileNoFollow(dir + "/state", 100).ok());
  EXPECT_FALSE(d->Adopt("state").ok());
  // Whole-file writes replace the link.
  ASSERT_TRUE(WriteFileSafely(dir + "/state", [](int fd) {
                return WriteAllFd(fd, "mine", 4, "state");
              }).ok());
  EXPECT_EQ(Slurp(other + "/victim"), "precious");
  EXPECT_EQ(*ReadFileNoFollow(dir + "/state", 100), "mine");
}

TEST(SafeOutputDir, AFailedWholeFileWriteLeavesTheOldFile) {
  const std::string dir = MakeDir();
  Put(dir + "/f", "old");
  absl::Status s = WriteFileSafely(dir + "/f", [](int fd) {
    (void)WriteAllFd(fd, "half", 4, "f");
    return absl::DataLossError("disk full");
  });
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(Slurp(dir + "/f"), "old");
  EXPECT_EQ(CountEntries(dir), 1);
  EXPECT_FALSE(
      WriteFileSafely(dir + "/", [](int) { return absl::OkStatus(); }).ok());
}

// Spans below, at and above the size written without the buffer, in an
// order that makes both paths follow each other: the bytes in order.
TEST(SafeOutputFile, SmallAndLargeSpansKeepTheirOrder) {
  const std::string dir = MakeDir();
  std::string all(4 << 20, 0);
  for (size_t i = 0; i < all.size(); ++i)
    all[i] = static_cast<char>((i * 131) >> 7);
  const auto* p = reinterpret_cast<const uint8_t*>(all.data());
  std::unique_ptr<SafeOutputFile> f = *SafeOutputFile::Create(dir + "/out");
  size_t at = 0;
  for (size_t n : {size_t{100}, size_t{256} << 10, size_t{10},
                   (size_t{256} << 10) - 1, size_t{700} << 10, size_t{1},
                   size_t{1} << 20, size_t{900} << 10, size_t{5}}) {
    ASSERT_TRUE(f->Write(absl::MakeConstSpan(p + at, n)).ok());
    at += n;
  }
  ASSERT_TRUE(f->Commit().ok());
  EXPECT_TRUE(Slurp(dir + "/out") == all.substr(0, at));
}

TEST(SafeOutputFile, OnlyCommitReplacesTheFile) {
  const std::string dir = MakeDir();
  const std::string victim = MakeDir() + "/victim";
  Put(victim, "precious");
  ASSERT_EQ(::symlink(victim.c_str(), (dir + "/out").c_str()), 0);
  std::string big(3 << 20, 'x');
  big[12345] = 'y';
  {
    std::unique_ptr<SafeOutputFile> f = *SafeOutputFile::Create(dir + "/out");
    ASSERT_TRUE(f->Write(absl::MakeConstSpan(
                             reinterpret_cast<const uint8_t*>(big.data()), 10))
                    .ok());
    // Abandoned: the link and its target stay as they were.
  }
  EXPECT_TRUE(IsSymlink(dir + "/out"));
  EXPECT_EQ(Slurp(victim), "precious");
  EXPECT_EQ(CountEntries(dir), 1);
  std::unique_ptr<SafeOutputFile> f = *SafeOutputFile::Create(dir + "/out");
  const auto* p = reinterpret_cast<const uint8_t*>(big.data());
  ASSERT_TRUE(f->Write(absl::MakeConstSpan(p, 100)).ok());
  ASSERT_TRUE(f->Write(absl::MakeConstSpan(p + 100, 2 << 20)).ok());
  ASSERT_TRUE(f->Write(absl::MakeConstSpan(p + 100 + (2 << 20),
                                           big.size() - 100 - (2 << 20)))
                  .ok());
  ASSERT_TRUE(f->Commit(/*durable=*/true).ok());
  EXPECT_FALSE(f->Commit().ok());
  EXPECT_EQ(Slurp(victim), "precious");
  EXPECT_FALSE(IsSymlink(dir + "/out"));
  EXPECT_TRUE(Slurp(dir + "/out") == big);
  EXPECT_EQ(CountEntries(dir), 1);
}

TEST(SafeOutputDir, ReadFileNoFollowBoundsTheSize) {
  const std::string dir = MakeDir();
  Put(dir + "/f", std::string(101, 'x'));
  EXPECT_EQ(ReadFileNoFollow(dir + "/f", 100).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ReadFileNoFollow(dir + "/f", 101)->size(), 101u);
  EXPECT_EQ(ReadFileNoFollow(dir + "/none", 100).status().code(),
            absl::StatusCode::kNotFound);
}

TEST(SafeOutputDir, Names) {
  EXPECT_TRUE(SafeOutputDir::IsPlainName("tensor_0.f32"));
  for (const char* bad : {"", ".", "..", "a/b", "../victim", "/etc/passwd"}) {
    EXPECT_FALSE(SafeOutputDir::IsPlainName(bad)) << bad;
  }
  EXPECT_FALSE(SafeOutputDir::IsPlainName(std::string(256, 'a')));
  EXPECT_FALSE(SafeOutputDir::IsPlainName(std::string("a\0b", 3)));
  EXPECT_TRUE(SafeOutputDir::IsTempName(".hurray-123-0123456789abcdef-0.tmp"));
  for (const char* bad :
       {".hurray-123-0123456789abcdef-.tmp", ".hurray--0123456789abcdef-0.tmp",
        ".hurray-123-0123456789ABCDEF-0.tmp", ".hurray-123-0123456789abcdef-0",
        "hurray-123-0123456789abcdef-0.tmp",
        ".hurray-1/2-0123456789abcdef-0.tmp", ".hurray-123-0123-0.tmp"}) {
    EXPECT_FALSE(SafeOutputDir::IsTempName(bad)) << bad;
  }
  // Publishing under a temp name or a path is refused.
  const std::string dir = MakeDir();
  std::unique_ptr<SafeOutputDir> d = *SafeOutputDir::Open(dir);
  TempFile t = *d->CreateTemp();
  ::close(t.fd);
  EXPECT_FALSE(d->Publish(t.name, "../x").ok());
  EXPECT_FALSE(d->Publish(t.name, ".hurray-1-0123456789abcdef-0.tmp").ok());
}

// The names in `dir` (none of them "." or "..").
std::vector<std::string> Names(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    names.push_back(e.path().filename().string());
  }
  return names;
}

// A run that dies without cleaning up (SIGKILL, power loss): a child process
// makes two temps, keeps two more for a resume, and leaves with _exit (no
// destructor runs). Returns the kept temps' names.
std::vector<std::string> RunThatIsKilled(const std::string& dir) {
  int pipe_fds[2];
  EXPECT_EQ(::pipe(pipe_fds), 0);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(pipe_fds[0]);
    std::unique_ptr<SafeOutputDir> d = *SafeOutputDir::Open(dir);
    TempFile a = *d->CreateTemp();
    TempFile b = *d->CreateTemp();
    TempFile c = *d->CreateTemp();
    TempFile e = *d->CreateTemp();
    const std::string kept = *d->Keep(c.name) + "\n" + *d->Keep(e.name);
    (void)!::write(pipe_fds[1], kept.data(), kept.size());
    ::_exit(0);  // a, b and the lock file stay behind
  }
  ::close(pipe_fds[1]);
  char buf[512];
  const ssize_t n = ::read(pipe_fds[0], buf, sizeof(buf));
  ::close(pipe_fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  EXPECT_GT(n, 0);
  return absl::StrSplit(std::string(buf, n > 0 ? static_cast<size_t>(n) : 0),
                        '\n');
}

TEST(SafeOutputDir, TempsOfAKilledRunAreRemovedByTheNextRun) {
  const std::string dir = MakeDir();
  const std::vector<std::string> kept = RunThatIsKilled(dir);
  ASSERT_EQ(kept.size(), 2u);
  ASSERT_EQ(CountEntries(dir), 5) << "two temps, two kept, the lock";
  Put(dir + "/model.npy", "user's");
  std::unique_ptr<SafeOutputDir> d = *SafeOutputDir::Open(dir);
  EXPECT_EQ(CountEntries(dir), 6) << "opening alone changes nothing";
  TempFile t = *d->CreateTemp();  // the run starts writing
  ::close(t.fd);
  EXPECT_EQ(d->stale_temps_removed(), 2);
  d->Remove(t.name);
  // The kept temps wait for --resume; the user's file is untouched.
  std::vector<std::string> names = Names(dir);
  std::sort(names.begin(), names.end());
  std::vector<std::string> want = {kept[0], kept[1], "model.npy"};
  std::sort(want.begin(), want.end());
  EXPECT_EQ(names, want);
}

TEST(SafeOutputDir, AResumeRemovesTheKeptTempsItsStateNeverNamed) {
  // Killed after keeping a finished output and before recording it: the
  // resume adopts what its state names and removes the rest of that run.
  const std::string dir = MakeDir();
  const std::vector<std::string> kept = RunThatIsKilled(dir);
  ASSERT_EQ(kept.size(), 2u);
  std::unique_ptr<SafeOutputDir> d = *SafeOutputDir::Open(dir);
  ASSERT_TRUE(d->Adopt(kept[0]).ok());
  TempFile t = *d->CreateTemp();
  ::close(t.fd);
  EXPECT_EQ(d->stale_temps_removed(), 3);  // two .tmp, the unnamed .kept
  EXPECT_TRUE(Exists(dir + "/" + kept[0]));
  EXPECT_FALSE(Exists(dir + "/" + kept[1]));
  ASSERT_TRUE(d->Publish(kept[0], "out.npy").ok());
}

TEST(SafeOutputDir, TempsOfALiveRunAreNotTouched) {
  const std::string dir = MakeDir();
  std::unique_ptr<SafeOutputDir> live = *SafeOutputDir::Open(dir);
  TempFile t = *live->CreateTemp();
  ::close(t.fd);
  std::unique_ptr<SafeOutputDir> other = *SafeOutputDir::Open(dir);
  TempFile u = *other->CreateTemp();
  ::close(u.fd);
  EXPECT_EQ(other->stale_temps_removed(), 0);
  EXPECT_TRUE(Exists(dir + "/" + t.name));
  ASSERT_TRUE(live->Publish(t.name, "out.f32").ok());
}

TEST(SafeOutputDir, TempsWithoutALockFileAreLeftAlone) {
  // An older hurray's temps (no lock file): nobody can tell if their run is
  // alive, so they stay. Likewise names that only look like ours.
  const std::string dir = MakeDir();
  const std::string old_temp = ".hurray-1-0123456789abcdef-0.tmp";
  Put(dir + "/" + old_temp, "x");
  Put(dir + "/.hurray-1-0123456789abcdeg-lock", "");
  Put(dir + "/.hurray-x-0123456789abcdef-0.tmp", "");
  {
    std::unique_ptr<SafeOutputDir> d = *SafeOutputDir::Open(dir);
    TempFile t = *d->CreateTemp();
    ::close(t.fd);
    EXPECT_EQ(d->stale_temps_removed(), 0);
  }
  EXPECT_EQ(CountEntries(dir), 3);
}

TEST(SafeOutputDir, ALockFileThatIsASymlinkIsNotFollowed) {
  const std::string dir = MakeDir();
  const std::string victim = MakeDir() + "/victim";
  Put(victim, "precious");
  const std::string run = ".hurray-1-0123456789abcdef-";
  Put(dir + "/" + run + "0.tmp", "x");
  ASSERT_EQ(::symlink(victim.c_str(), (dir + "/" + run + "lock").c_str()), 0);
  std::unique_ptr<SafeOutputDir> d = *SafeOutputDir::Open(dir);
  TempFile t = *d->CreateTemp();
  ::close(t.fd);
  EXPECT_EQ(d->stale_temps_removed(), 0);
  EXPECT_TRUE(Exists(dir + "/" + run + "0.tmp"));
  EXPECT_EQ(Slurp(victim), "precious");
}

}  // namespace
}  // namespace hurray::stream::container
