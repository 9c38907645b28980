// Files for tests of stream/convert: a new folder under the test's temp
// dir, and whole files written and read back with plain POSIX calls.
#ifndef HURRAY_STREAM_CONVERT_TESTING_TEMP_FILES_H_
#define HURRAY_STREAM_CONVERT_TESTING_TEMP_FILES_H_

#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace hurray::stream::convert::testing {

// A new empty folder <TEST_TMPDIR>/<prefix>XXXXXX.
inline std::string NewTempDir(const std::string& prefix) {
  std::string t = ::testing::TempDir() + "/" + prefix + "XXXXXX";
  EXPECT_NE(::mkdtemp(t.data()), nullptr) << t;
  return t;
}

inline void WriteFile(const std::string& path,
                      const std::vector<uint8_t>& bytes) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  ASSERT_GE(fd, 0) << path;
  ASSERT_EQ(::write(fd, bytes.data(), bytes.size()),
            static_cast<ssize_t>(bytes.size()));
  ::close(fd);
}

inline std::vector<uint8_t> ReadFile(const std::string& path) {
  std::vector<uint8_t> out;
  const int fd = ::open(path.c_str(), O_RDONLY);
  EXPECT_GE(fd, 0) << path;
  uint8_t buf[65536];
  for (ssize_t n; (n = ::read(fd, buf, sizeof(buf))) > 0;)
    out.insert(out.end(), buf, buf + n);
  ::close(fd);
  return out;
}

}  // namespace hurray::stream::convert::testing

#endif  // HURRAY_STREAM_CONVERT_TESTING_TEMP_FILES_H_
