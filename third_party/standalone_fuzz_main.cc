// Standalone driver for libFuzzer-style fuzz targets, used by
// //third_party:fuzz_main when NOT building with --config=fuzz.
//
// Usage: fuzz_target [FILE_OR_DIR ...]
// Every regular file (directories are scanned one level deep) is passed once
// to LLVMFuzzerTestOneInput. With no arguments, the empty input is run.
// Flags starting with '-' (libFuzzer options such as -runs=) are ignored.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <system_error>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv)
    __attribute__((weak));

namespace {

// Like libFuzzer: the input lives in an exactly-sized heap buffer, so that
// ASan catches reads past its end; the pointer is never null.
void RunBytes(const std::vector<char>& bytes) {
  const std::size_t size = bytes.size();
  std::unique_ptr<uint8_t[]> copy(new uint8_t[size == 0 ? 1 : size]);
  if (size != 0) std::memcpy(copy.get(), bytes.data(), size);
  LLVMFuzzerTestOneInput(copy.get(), size);
}

bool RunFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "cannot open %s\n", path.c_str());
    return false;
  }
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)),
                          std::istreambuf_iterator<char>());
  RunBytes(bytes);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (LLVMFuzzerInitialize != nullptr) LLVMFuzzerInitialize(&argc, &argv);
  std::size_t ran = 0;
  bool ok = true;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (!arg.empty() && arg[0] == '-') continue;
    std::error_code ec;
    const std::filesystem::path path(arg);
    if (std::filesystem::is_directory(path, ec)) {
      for (const auto& entry : std::filesystem::directory_iterator(path, ec)) {
        if (!entry.is_regular_file(ec)) continue;
        ok = RunFile(entry.path()) && ok;
        ++ran;
      }
    } else {
      ok = RunFile(path) && ok;
      ++ran;
    }
  }
  if (ran == 0) {
    RunBytes({});
    ran = 1;
  }
  std::fprintf(stderr, "standalone_fuzz_main: ran %zu input(s)\n", ran);
  return ok ? 0 : 1;
}
