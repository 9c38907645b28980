/* A program outside this Bazel tree, built against an installed hurray
 * (tools/install.sh) by pkg-config and by CMake (tools/install_test.sh):
 * prints the library's version and the tensor count of a .hrry file. */
#include <stdio.h>

#include "hurray.h"

int main(int argc, char** argv) {
  if ((hurray_version() >> 16) != HURRAY_API_VERSION_MAJOR) {
    fprintf(stderr, "header and library disagree on the interface\n");
    return 2;
  }
  printf("hurray %s\n", hurray_version_string());
  if (argc < 2) return 0;
  hurray_file* file = NULL;
  hurray_error error;
  if (hurray_file_open(argv[1], 0, &file, &error) != HURRAY_OK) {
    printf("%s at byte %llu\n", error.rule_id,
           (unsigned long long)error.offset);
    return 1;
  }
  printf("%zu tensors\n", hurray_file_tensor_count(file));
  hurray_file_close(file);
  return 0;
}
