// A fresh, empty directory for a test's files.
#ifndef HURRAY_STREAM_CONTAINER_TESTING_TEMP_DIR_H_
#define HURRAY_STREAM_CONTAINER_TESTING_TEMP_DIR_H_

#include <string>

namespace hurray::stream::container::testing {

// TEST_TMPDIR (or /tmp) / `name`, emptied if it exists, created.
std::string FreshDir(const std::string& name);

}  // namespace hurray::stream::container::testing

#endif  // HURRAY_STREAM_CONTAINER_TESTING_TEMP_DIR_H_
