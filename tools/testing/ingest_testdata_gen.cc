// Writes the inputs of ingest_cli_test.sh into DIR: mixed.hrry and
// mixed.hrs (the same tensors as a .hrry file and a bare stream),
// one.hrs (a single per-channel tensor, for `hurray dequant`), cut.hrry
// (mixed.hrry without its last 100 bytes), bad_scale.hrs (a NaN scale) and
// names.hrry (the mixed tensors under names with ESC, newline, NUL, CJK, '+',
// 300 bytes, and "..") and many.hrry / many2.hrry (40 quantized tensors of
// about 64 KiB each, two seeds: the HTTP resume and change tests).
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "dequant/testing/test_tensor.h"
#include "stream/ingest/testing/loader_test_util.h"

int main(int argc, char** argv) {
  using namespace hurray::stream::ingest::testing;
  if (argc != 2) {
    std::fprintf(stderr, "usage: ingest_testdata_gen DIR\n");
    return 2;
  }
  const std::string dir = argv[1];
  std::filesystem::create_directories(dir);
  std::vector<IngestTensor> tensors = MixedTensors(31, 2);
  const std::vector<uint8_t> hrry = HrryBytes(tensors);
  WriteAll(dir + "/mixed.hrry", hrry);
  WriteAll(dir + "/mixed.hrs", StreamBytes(tensors));
  WriteAll(dir + "/cut.hrry",
           absl::MakeConstSpan(hrry).first(hrry.size() - 100));
  {
    std::vector<IngestTensor> named = MixedTensors(31, 1);
    const std::string names[] = {"\x1b[31mred\x1b[0m",
                                 "line\nbreak",
                                 "\xE5\xB1\x82.0",
                                 "stats+shard",
                                 std::string("nul\0byte", 8),
                                 std::string(300, 'x'),
                                 ".."};
    for (size_t i = 0; i < named.size(); ++i) named[i].name = names[i];
    WriteAll(dir + "/names.hrry", HrryBytes(named));
  }
  WriteAll(dir + "/many.hrry", HrryBytes(QuantizedTensors(7, 40, 64 << 10)));
  WriteAll(dir + "/many2.hrry", HrryBytes(QuantizedTensors(8, 40, 64 << 10)));
  std::vector<IngestTensor> one;
  one.push_back(std::move(tensors[1]));
  WriteAll(dir + "/one.hrs", StreamBytes(one));
  hurray::dequant::testing::SetScaleF32(&one[0].tensor, 1, NAN);
  WriteAll(dir + "/bad_scale.hrs", StreamBytes(one));
  return 0;
}
