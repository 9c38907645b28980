// Descriptor decode over a cycle of many different descriptors (issue 47
// item 4): the corpus as a reader meets it, not one descriptor in a tight
// loop (which keeps its branches predicted and its bytes in L1).
//
//   corpus_decode_timing check LIST
//     one line per file of LIST (paths, one a line): "accept PATH" when the
//     whole file is one descriptor that strict validated decode accepts,
//     else "reject PATH WHY"
//   corpus_decode_timing time SECONDS MODE LIST
//     MODE validated (strict, validation on: what a reader runs) or decode
//     (ParseOptions::validate off: structure and framing rules only);
//     LIST a file of paths, one a line. Decodes every descriptor once per
//     round, in LIST's order, on one reused decoder, for SECONDS; prints
//     "<median ns per descriptor> ns (<rounds> rounds, <n> descriptors)".
//
// Driven by bench/rust_reference_corpus.py against the Rust reference's
// bench/rust_reference/corpus_timing.rs.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "parser/decoder.h"
#include "parser/options.h"
#include "parser/rules.h"
#include "tests/vectors.h"

namespace hurray {
namespace {

bool ReadAll(const std::string& path, std::vector<uint8_t>* out) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return false;
  out->assign(std::istreambuf_iterator<char>(f),
              std::istreambuf_iterator<char>());
  return true;
}

ParseOptions Options(bool validate) {
  ParseOptions o = vectors::AgreedOptions(Mode::kStrict);
  o.validate = validate;
  return o;
}

// "" when the whole file is one descriptor (its descriptor_length, bytes
// 6..9, is the file's size) that strict validated decode accepts, else why
// not.
std::string Refusal(const std::vector<uint8_t>& b, DescriptorDecoder* d) {
  if (b.size() < 10) return "short";
  const uint32_t length = static_cast<uint32_t>(b[6]) | b[7] << 8 | b[8] << 16 |
                          static_cast<uint32_t>(b[9]) << 24;
  const Rejection r = DecodeWith(b, d);
  if (!r.ok()) return std::string(ToStatus(r).message());
  if (length != b.size()) return "bytes after the descriptor";
  return "";
}

int Check(const char* list) {
  auto d = std::make_unique<DescriptorDecoder>(Options(true));
  std::ifstream names(list);
  std::vector<uint8_t> b;
  for (std::string path; std::getline(names, path);) {
    if (path.empty()) continue;
    const std::string why = ReadAll(path, &b) ? Refusal(b, d.get()) : "read";
    if (why.empty()) {
      std::printf("accept %s\n", path.c_str());
    } else {
      std::printf("reject %s %s\n", path.c_str(), why.c_str());
    }
  }
  return 0;
}

volatile uint64_t g_sink;

int Time(const char* seconds_arg, const char* mode, const char* list) {
  const double seconds = std::atof(seconds_arg);
  const bool validate = std::strcmp(mode, "validated") == 0;
  if (!validate && std::strcmp(mode, "decode") != 0) {
    std::fprintf(stderr, "MODE is validated or decode\n");
    return 2;
  }
  std::ifstream names(list);
  std::vector<std::vector<uint8_t>> all;
  for (std::string path; std::getline(names, path);) {
    if (path.empty()) continue;
    all.emplace_back();
    if (!ReadAll(path, &all.back())) {
      std::fprintf(stderr, "cannot read %s\n", path.c_str());
      return 2;
    }
  }
  if (all.empty()) return 2;
  auto d = std::make_unique<DescriptorDecoder>(Options(validate));
  for (const auto& b : all) {
    if (!DecodeWith(b, d.get()).ok()) {
      std::fprintf(stderr, "a listed descriptor is rejected in %s mode\n",
                   mode);
      return 1;
    }
  }
  using Clock = std::chrono::steady_clock;
  std::vector<double> per;
  uint64_t sink = 0;
  const Clock::time_point start = Clock::now();
  while (std::chrono::duration<double>(Clock::now() - start).count() <
         seconds) {
    const Clock::time_point t0 = Clock::now();
    for (const auto& b : all) {
      const Rejection r = DecodeWith(b, d.get());
      sink += r.ok() + d->descriptor().rank;
    }
    per.push_back(
        std::chrono::duration<double, std::nano>(Clock::now() - t0).count() /
        static_cast<double>(all.size()));
  }
  std::sort(per.begin(), per.end());
  g_sink = sink;
  std::printf("%.2f ns (%zu rounds, %zu descriptors)\n", per[per.size() / 2],
              per.size(), all.size());
  return 0;
}

}  // namespace
}  // namespace hurray

int main(int argc, char** argv) {
  if (argc == 3 && std::strcmp(argv[1], "check") == 0)
    return hurray::Check(argv[2]);
  if (argc == 5 && std::strcmp(argv[1], "time") == 0)
    return hurray::Time(argv[2], argv[3], argv[4]);
  std::fprintf(stderr,
               "usage: corpus_decode_timing check LIST | time SECONDS "
               "validated|decode LIST\n");
  return 2;
}
