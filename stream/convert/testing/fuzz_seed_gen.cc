// Writes the seed corpora of //fuzz:safetensors_fuzz and //fuzz:gguf_fuzz:
//   bazel run //stream/convert/testing:fuzz_seed_gen -- "$PWD/corpus"
// writes CORPUS/safetensors_fuzz/*.bin and CORPUS/gguf_fuzz/*.bin: small
// valid files of every type and a few hostile ones each reader refuses.
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "stream/convert/testing/source_builders.h"

namespace {

using hurray::convert::testing::BuildSafetensors;
using hurray::convert::testing::GgufBuilder;
using hurray::convert::testing::RawSafetensors;

std::vector<uint8_t> Bytes(size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(seed + i * 37);
  return v;
}

void Write(const std::string& dir, const std::string& name,
           const std::vector<uint8_t>& bytes) {
  std::ofstream f(dir + "/" + name + ".bin", std::ios::binary);
  f.write(reinterpret_cast<const char*>(bytes.data()),
          static_cast<std::streamsize>(bytes.size()));
}

void Safetensors(const std::string& dir) {
  const std::pair<const char*, size_t> dtypes[] = {
      {"F64", 8}, {"F32", 4}, {"F16", 2},     {"BF16", 2},    {"I64", 8},
      {"I32", 4}, {"I16", 2}, {"I8", 1},      {"U64", 8},     {"U32", 4},
      {"U16", 2}, {"U8", 1},  {"F8_E4M3", 1}, {"F8_E5M2", 1}, {"C64", 8}};
  for (const auto& [dtype, bytes] : dtypes) {
    Write(dir, std::string("dtype_") + dtype,
          BuildSafetensors({{"w", dtype, {2, 3}, Bytes(6 * bytes, 1)}}));
  }
  Write(dir, "bool", BuildSafetensors({{"m", "BOOL", {5}, {1, 0, 1, 1, 0}}}));
  Write(dir, "e8m0",
        BuildSafetensors({{"s", "F8_E8M0", {4}, {1, 127, 128, 254}}}));
  Write(dir, "metadata",
        BuildSafetensors(
            {{"a", "F32", {2}, Bytes(8, 2)}, {"b", "I8", {3}, Bytes(3, 3)}},
            {{"format", "pt"}, {"k", "v"}}));
  Write(dir, "scalar_and_empty",
        BuildSafetensors(
            {{"s", "F32", {}, Bytes(4, 4)}, {"e", "F16", {0, 3}, {}}}));
  Write(dir, "empty_header", RawSafetensors("{}", {}));
  Write(dir, "lying_length", RawSafetensors("{}", {}, 1000));
  Write(dir, "truncated",
        RawSafetensors(
            "{\"w\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}",
            Bytes(10, 5)));
  Write(dir, "overlap",
        RawSafetensors(
            "{\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]},"
            "\"b\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[2,6]}}",
            Bytes(6, 6)));
  Write(dir, "duplicate",
        RawSafetensors(
            "{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]},"
            "\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[1,2]}}",
            Bytes(2, 7)));
  Write(
      dir, "huge_dim",
      RawSafetensors("{\"a\":{\"dtype\":\"U8\",\"shape\":[9223372036854775808],"
                     "\"data_offsets\":[0,0]}}",
                     {}));
  Write(dir, "size_mismatch",
        RawSafetensors(
            "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,4]}}",
            Bytes(4, 8)));
  Write(dir, "bad_utf8", RawSafetensors("{\"\xc3\x28\":{}}", {}));
  Write(dir, "bad_bool", BuildSafetensors({{"m", "BOOL", {2}, {1, 7}}}));
  Write(dir, "unicode_names",
        BuildSafetensors(
            {{"\xe5\xb1\x82.0", "U8", {1}, {1}}, {"a\\\"b", "U8", {1}, {2}}}));
}

std::vector<uint8_t> Q8Block(uint16_t d, uint8_t seed) {
  std::vector<uint8_t> b = {static_cast<uint8_t>(d),
                            static_cast<uint8_t>(d >> 8)};
  std::vector<uint8_t> q = Bytes(32, seed);
  b.insert(b.end(), q.begin(), q.end());
  return b;
}
std::vector<uint8_t> Q4Block(uint16_t d, uint8_t seed) {
  std::vector<uint8_t> b = {static_cast<uint8_t>(d),
                            static_cast<uint8_t>(d >> 8)};
  std::vector<uint8_t> q = Bytes(16, seed);
  b.insert(b.end(), q.begin(), q.end());
  return b;
}
std::vector<uint8_t> MxBlock(uint8_t e, uint8_t seed) {
  std::vector<uint8_t> b = {e};
  std::vector<uint8_t> q = Bytes(16, seed);
  b.insert(b.end(), q.begin(), q.end());
  return b;
}
std::vector<uint8_t> Cat(std::vector<std::vector<uint8_t>> parts) {
  std::vector<uint8_t> out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

// ggml type ids (ggml.h enum ggml_type).
constexpr uint32_t kF32 = 0, kF16 = 1, kQ4_0 = 2, kQ4_1 = 3, kQ8_0 = 8,
                   kBF16 = 30, kMxfp4 = 39;

void Gguf(const std::string& dir) {
  {
    GgufBuilder b;
    b.KvString("general.architecture", "llama");
    b.KvU32("llama.context_length", 4096);
    b.KvI32("i", -5);
    b.KvF32("f", 0.25f);
    b.KvBool("flag", true);
    b.KvStringArray("tokenizer.ggml.tokens", {"<s>", "a", "\xc3\x28"});
    b.KvI32Array("tokenizer.ggml.token_type", {1, 2, 3});
    b.Tensor("tok_embd", {4, 2}, kF32, Bytes(32, 1));
    Write(dir, "kv_all_types", b.Build());
  }
  {
    GgufBuilder b;
    b.Tensor("a", {4, 3, 2}, kF32, Bytes(96, 2));
    b.Tensor("b", {8}, kF16, Bytes(16, 3));
    b.Tensor("c", {2, 2}, kBF16, Bytes(8, 4));
    Write(dir, "floats", b.Build());
  }
  {
    GgufBuilder b;
    // Block 1: ggml's zero block (d = +0, codes 0).
    const std::vector<uint8_t> zero(34, 0);
    b.Tensor("q8", {64, 2}, kQ8_0,
             Cat({Q8Block(0x3C00, 1), zero, Q8Block(0xB800, 3),
                  Q8Block(0x0001, 4)}));
    Write(dir, "q8_0", b.Build());
  }
  {
    std::vector<uint8_t> zero = Q4Block(0x8000, 0);
    for (size_t i = 2; i < zero.size(); ++i) zero[i] = 0x88;
    GgufBuilder b;
    b.Tensor("q4", {32, 3}, kQ4_0,
             Cat({Q4Block(0x3C00, 5), zero, Q4Block(0x4400, 6)}));
    Write(dir, "q4_0", b.Build());
  }
  {
    GgufBuilder b;
    // Block 1: ggml's zero block (e = 0, codes 0 and 8); block 2: e = 0
    // with halvable codes (1.0 and 2.0).
    std::vector<uint8_t> zero(17, 0x80), halvable(17, 0x42);
    zero[0] = 0;
    halvable[0] = 0;
    b.Tensor("mx", {32, 4}, kMxfp4,
             Cat({MxBlock(127, 7), zero, halvable, MxBlock(254, 9)}));
    Write(dir, "mxfp4", b.Build());
  }
  {
    GgufBuilder b;
    b.KvU32("general.alignment", 64);
    b.set_alignment(64);
    b.Tensor("a", {16}, kF32, Bytes(64, 10));
    b.Tensor("b", {32}, kQ8_0, Q8Block(0x3C00, 11));
    Write(dir, "alignment_64", b.Build());
  }
  {
    GgufBuilder b(2);
    b.Tensor("a", {2}, kF32, Bytes(8, 12));
    Write(dir, "version_2", b.Build());
  }
  {
    GgufBuilder b;
    b.Tensor("w", {32}, kQ4_1, Bytes(20, 13));
    Write(dir, "q4_1_refused", b.Build());
  }
  {
    GgufBuilder b;
    b.Tensor("a", {8}, kF32, Bytes(32, 14), 0);
    b.Tensor("b", {8}, kF32, Bytes(32, 15), 0);
    Write(dir, "overlap", b.Build());
  }
  {
    GgufBuilder b;
    b.Tensor("a", {8}, kF32, Bytes(32, 16));
    std::vector<uint8_t> bytes = b.Build();
    bytes.resize(bytes.size() - 8);
    Write(dir, "truncated", bytes);
  }
  {
    GgufBuilder b;
    b.Tensor("a", {uint64_t{1} << 62, 4}, kF32, {});
    Write(dir, "huge_dims", b.Build());
  }
  {
    GgufBuilder b;
    b.set_counts(uint64_t{1} << 63, uint64_t{1} << 63);
    Write(dir, "huge_counts", b.Build());
  }
  {
    GgufBuilder b;
    b.Tensor("a", {4}, kF32, Bytes(16, 17));
    b.Tensor("a", {4}, kF32, Bytes(16, 18));
    Write(dir, "duplicate_names", b.Build());
  }
  {
    GgufBuilder b;
    b.Tensor("mx", {32}, kMxfp4, MxBlock(0xFF, 19));
    Write(dir, "mxfp4_e_ff", b.Build());
  }
  {
    GgufBuilder b;  // ±0 in one block: refused
    b.Tensor("q8", {32}, kQ8_0, Q8Block(0x0000, 0));
    Write(dir, "q8_0_mixed_zero_block", b.Build());
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: fuzz_seed_gen CORPUS_DIR\n");
    return 2;
  }
  const std::string root = argv[1];
  Safetensors(root + "/safetensors_fuzz");
  Gguf(root + "/gguf_fuzz");
  return 0;
}
