#include "stream/container/testing/temp_dir.h"

#include <cstdlib>
#include <filesystem>

#include "absl/strings/str_cat.h"

namespace hurray::stream::container::testing {

std::string FreshDir(const std::string& name) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::string dir =
      absl::StrCat(tmp != nullptr ? tmp : "/tmp", "/", name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

}  // namespace hurray::stream::container::testing
