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

using hurray::stream::convert::testing::BuildSafetensors;
using hurray::stream::convert::testing::GgufBuilder;
using hurray::stream::convert::testing::RawSafetensors;

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
                   kQ2_K = 10, kQ3_K = 11, kQ4_K = 12, kQ5_K = 13, kQ6_K = 14,
                   kBF16 = 30, kMxfp4 = 39;

// `n` K-quant blocks of 256 (ggml-common.h layouts): bytes from `seed`,
// the float16 d (and dmin) set; `scale` fills the packed sub-block scales
// when not 0.
std::vector<uint8_t> KBlocks(uint32_t type, int n, uint16_t d, uint16_t dmin,
                             uint8_t seed, uint8_t scale = 0) {
  const size_t bytes = type == kQ2_K   ? 84
                       : type == kQ3_K ? 110
                       : type == kQ4_K ? 144
                       : type == kQ5_K ? 176
                                       : 210;
  const size_t d_at = type == kQ2_K   ? 80
                      : type == kQ3_K ? 108
                      : type == kQ6_K ? 208
                                      : 0;
  const size_t sc_at = type == kQ2_K   ? 0
                       : type == kQ3_K ? 96
                       : type == kQ6_K ? 192
                                       : 4;
  const size_t sc_len = type == kQ2_K || type == kQ6_K ? 16 : 12;
  std::vector<uint8_t> out;
  for (int i = 0; i < n; ++i) {
    std::vector<uint8_t> b = Bytes(bytes, static_cast<uint8_t>(seed + i));
    if (scale != 0)
      for (size_t k = 0; k < sc_len; ++k) b[sc_at + k] = scale;
    b[d_at] = static_cast<uint8_t>(d),
    b[d_at + 1] = static_cast<uint8_t>(d >> 8);
    if (type == kQ2_K || type == kQ4_K || type == kQ5_K)
      b[d_at + 2] = static_cast<uint8_t>(dmin),
               b[d_at + 3] = static_cast<uint8_t>(dmin >> 8);
    out.insert(out.end(), b.begin(), b.end());
  }
  return out;
}

// A split GGUF input of gguf_fuzz: 'S', the part count, the parts' uint32
// lengths, the parts.
std::vector<uint8_t> SplitInput(
    const std::vector<std::vector<uint8_t>>& parts) {
  std::vector<uint8_t> out = {'S', static_cast<uint8_t>(parts.size())};
  for (const auto& p : parts)
    for (int i = 0; i < 4; ++i)
      out.push_back(static_cast<uint8_t>(p.size() >> (8 * i)));
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

// Part `no` of `count` (gguf-split's keys: split.no and split.count uint16,
// split.tensors.count int32) holding `tensors` (name, type, ne, data).
struct PartTensor {
  std::string name;
  uint32_t type;
  std::vector<uint64_t> ne;
  std::vector<uint8_t> data;
};
std::vector<uint8_t> Part(int no, int count, int total,
                          const std::vector<PartTensor>& tensors) {
  GgufBuilder b;
  b.KvRaw("split.no", {2, 0, 0, 0, static_cast<uint8_t>(no), 0});
  b.KvRaw("split.count", {2, 0, 0, 0, static_cast<uint8_t>(count), 0});
  b.KvI32("split.tensors.count", total);
  if (no == 0) b.KvString("general.architecture", "llama");
  for (const PartTensor& t : tensors) b.Tensor(t.name, t.ne, t.type, t.data);
  return b.Build();
}

void KQuantAndSplitSeeds(const std::string& dir) {
  // K-quants: the exact ones (Q6_K, Q3_K), the approximate ones, and the
  // corners (a zero sub-block scale, NaN d, m1 / d1 past uint8).
  struct K {
    const char* name;
    uint32_t type;
  };
  for (const K& k : {K{"q6_k", kQ6_K}, K{"q3_k", kQ3_K}, K{"q4_k", kQ4_K},
                     K{"q5_k", kQ5_K}, K{"q2_k", kQ2_K}}) {
    GgufBuilder b;
    b.Tensor("norm", {4}, kF32, Bytes(16, 5));
    b.Tensor("w", {256, 2}, k.type, KBlocks(k.type, 2, 0x2C00, 0x2800, 7));
    Write(dir, k.name, b.Build());
  }
  {
    GgufBuilder b;  // sub-block scales 0 (Q6_K: d·0; Q4_K: d1 = 0, m1 = 0)
    b.Tensor("q6", {256}, kQ6_K, KBlocks(kQ6_K, 1, 0x2C00, 0, 9, 0x00));
    b.Tensor("q4", {256}, kQ4_K, KBlocks(kQ4_K, 1, 0x2C00, 0x2C00, 9, 0x00));
    Write(dir, "kquant_zero_scales", b.Build());
  }
  {
    GgufBuilder b;  // NaN d: refused
    b.Tensor("w", {256}, kQ4_K, KBlocks(kQ4_K, 1, 0x7E00, 0x2800, 3));
    Write(dir, "q4_k_nan_d", b.Build());
  }
  {
    GgufBuilder b;  // dmin = 256·d, scales 1: m1 / d1 past uint8
    b.Tensor("w", {256}, kQ4_K, KBlocks(kQ4_K, 1, 0x3C00, 0x5C00, 3, 0x01));
    Write(dir, "q4_k_wide_zero_point", b.Build());
  }
  // Split GGUF (the 'S' inputs of gguf_fuzz).
  const std::vector<uint8_t> f32 = Bytes(32, 1);
  const std::vector<uint8_t> q4k = KBlocks(kQ4_K, 1, 0x2C00, 0x2800, 4);
  Write(dir, "split_two_parts",
        SplitInput({Part(0, 2, 2, {{"a", kF32, {4, 2}, f32}}),
                    Part(1, 2, 2, {{"b", kQ4_K, {256}, q4k}})}));
  Write(dir, "split_three_parts_kquant",
        SplitInput(
            {Part(0, 3, 3, {{"a", kF32, {4, 2}, f32}}),
             Part(1, 3, 3, {{"b", kQ4_K, {256}, q4k}}),
             Part(2, 3, 3,
                  {{"c", kQ6_K, {256}, KBlocks(kQ6_K, 1, 0x2C00, 0, 8)}})}));
  Write(dir, "split_tensor_in_two_parts",
        SplitInput({Part(0, 2, 2, {{"a", kF32, {4, 2}, f32}}),
                    Part(1, 2, 2, {{"a", kF32, {4, 2}, f32}})}));
  Write(dir, "split_missing_part",
        SplitInput({Part(0, 3, 3, {{"a", kF32, {4, 2}, f32}}),
                    Part(1, 3, 3, {{"b", kF32, {4, 2}, f32}}),
                    {}}));
  Write(dir, "split_wrong_no",
        SplitInput({Part(0, 2, 2, {{"a", kF32, {4, 2}, f32}}),
                    Part(0, 2, 2, {{"b", kF32, {4, 2}, f32}})}));
  Write(dir, "split_lying_tensor_count",
        SplitInput({Part(0, 2, 9, {{"a", kF32, {4, 2}, f32}}),
                    Part(1, 2, 9, {{"b", kF32, {4, 2}, f32}})}));
}

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

// Sharded safetensors (the '{' inputs of safetensors_fuzz): the index, then
// each shard after a 0xFF byte; shard name n opens file 1 + (sum of n's
// bytes) mod the file count, so "a.st" (sum even... or odd) is placed by
// that sum here.
void ShardSeeds(const std::string& dir) {
  auto input =
      [](const std::string& index,
         const std::vector<std::pair<std::string, std::vector<uint8_t>>>&
             shards) {
        std::vector<std::vector<uint8_t>> files(shards.size());
        for (const auto& [name, bytes] : shards) {
          size_t h = 0;
          for (unsigned char c : name) h += c;
          files[h % shards.size()] = bytes;
        }
        std::vector<uint8_t> out(index.begin(), index.end());
        for (const auto& f : files) {
          out.push_back(0xFF);
          out.insert(out.end(), f.begin(), f.end());
        }
        return out;
      };
  // Tensor data without 0xFF bytes.
  const std::vector<uint8_t> a = {1, 2, 3, 4, 5, 6, 7, 8};
  const std::vector<uint8_t> s1 = BuildSafetensors({{"x", "U8", {8}, a}});
  const std::vector<uint8_t> s2 =
      BuildSafetensors({{"y", "U8", {8}, a}}, {{"format", "pt"}});
  const std::string map2 =
      R"({"metadata":{"total_size":16},"weight_map":{"x":"a.st","y":"b.st"}})";
  Write(dir, "shards_two", input(map2, {{"a.st", s1}, {"b.st", s2}}));
  Write(dir, "shards_total_size_lies",
        input(R"({"metadata":{"total_size":999},)"
              R"("weight_map":{"x":"a.st","y":"b.st"}})",
              {{"a.st", s1}, {"b.st", s2}}));
  Write(dir, "shards_tensor_in_two",
        input(map2, {{"a.st", s1},
                     {"b.st", BuildSafetensors({{"x", "U8", {8}, a},
                                                {"y", "U8", {8}, a}})}}));
  Write(dir, "shards_missing_tensor",
        input(R"({"weight_map":{"x":"a.st","y":"b.st","z":"b.st"}})",
              {{"a.st", s1}, {"b.st", s2}}));
  Write(dir, "shards_dotdot_name",
        input(R"({"weight_map":{"x":"../a.st","y":"b.st"}})",
              {{"../a.st", s1}, {"b.st", s2}}));
  Write(dir, "shards_missing_shard",
        input(R"({"weight_map":{"x":"a.st"}})", {}));
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
  KQuantAndSplitSeeds(root + "/gguf_fuzz");
  ShardSeeds(root + "/safetensors_fuzz");
  return 0;
}
