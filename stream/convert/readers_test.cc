// The safetensors and GGUF header readers on valid and hostile headers:
// every refusal names what is wrong (and the tensor when there is one).
#include <cstdint>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "stream/convert/byte_source.h"
#include "stream/convert/gguf.h"
#include "stream/convert/safetensors.h"
#include "stream/convert/testing/source_builders.h"

namespace hurray::stream::convert {
namespace {

using testing::GgufBuilder;
using ::testing::HasSubstr;
using testing::RawSafetensors;

absl::Status StError(const std::vector<uint8_t>& bytes) {
  MemorySource src(bytes);
  return ReadSafetensorsHeader(src).status();
}
absl::Status StError(const std::string& header,
                     const std::vector<uint8_t>& data = {}) {
  return StError(RawSafetensors(header, data));
}

TEST(Safetensors, ReadsTensorsInDataOrderAndMetadata) {
  const std::vector<uint8_t> file =
      testing::BuildSafetensors({{"b", "F32", {2}, std::vector<uint8_t>(8, 1)},
                                 {"a", "U8", {3}, {1, 2, 3}}},
                                {{"format", "pt"}});
  MemorySource src(file);
  absl::StatusOr<SafetensorsFile> f = ReadSafetensorsHeader(src);
  ASSERT_TRUE(f.ok()) << f.status();
  ASSERT_EQ(f->tensors.size(), 2u);
  EXPECT_EQ(f->tensors[0].name, "b");
  EXPECT_EQ(f->tensors[1].name, "a");
  EXPECT_EQ(f->tensors[1].begin, f->data_start + 8);
  EXPECT_EQ(f->tensors[1].shape, (std::vector<uint64_t>{3}));
  ASSERT_EQ(f->metadata.size(), 1u);
  EXPECT_EQ(f->metadata[0].second, "pt");
}

TEST(Safetensors, RefusesTruncationAndLyingLength) {
  EXPECT_THAT(StError(std::vector<uint8_t>{1, 2, 3}).message(),
              HasSubstr("past the end"));
  // The length says 100 bytes; 2 follow.
  EXPECT_THAT(StError(RawSafetensors("{}", {}, 100)).message(),
              HasSubstr("runs past the end of the file"));
  EXPECT_THAT(StError(RawSafetensors("{}", {}, uint64_t{1} << 63)).message(),
              HasSubstr("above the limit"));
  // The length cuts the JSON short.
  EXPECT_THAT(StError(RawSafetensors("{\"a\":{}}", {}, 4)).message(),
              HasSubstr("invalid JSON"));
}

TEST(Safetensors, RefusesBadJsonAndDuplicates) {
  EXPECT_THAT(StError("{\"a\":").message(), HasSubstr("invalid JSON"));
  EXPECT_THAT(StError("[1,2]").message(), HasSubstr("not an object"));
  EXPECT_THAT(
      StError("{\"w\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[0,0]},"
              "\"w\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[0,0]}}")
          .message(),
      HasSubstr("duplicate key 'w'"));
  EXPECT_THAT(StError("{\"w\":{\"dtype\":{\"x\":[[1]]}}}").message(),
              HasSubstr("nested deeper"));
}

// The header is read without a DOM (each entry checked as it ends): the
// same refusals, and the metadata in the order written.
TEST(Safetensors, MetadataAndDuplicatesWithoutADom) {
  EXPECT_THAT(StError("{\"__metadata__\":{\"a\":\"1\",\"a\":\"2\"}}").message(),
              HasSubstr("duplicate key 'a'"));
  EXPECT_THAT(StError("{\"__metadata__\":{},\"__metadata__\":{}}").message(),
              HasSubstr("duplicate key '__metadata__'"));
  EXPECT_THAT(StError("{\"__metadata__\":{\"a\":1}}").message(),
              HasSubstr("__metadata__ 'a' is not a string"));
  EXPECT_THAT(StError("{\"__metadata__\":{\"a\":[\"x\"]}}").message(),
              HasSubstr("__metadata__ 'a' is not a string"));
  EXPECT_THAT(StError("{\"__metadata__\":[1]}").message(),
              HasSubstr("__metadata__ is not an object"));
  EXPECT_THAT(StError("{\"w\":{\"dtype\":\"U8\",\"dtype\":\"U8\"}}").message(),
              HasSubstr("duplicate key 'dtype'"));
  EXPECT_THAT(StError("{\"w\":7}").message(),
              HasSubstr("tensor 'w': the entry is not a JSON object"));
  EXPECT_THAT(StError("{\"w\":{}").message(), HasSubstr("invalid JSON"));
  const std::vector<uint8_t> file = RawSafetensors(
      "{\"__metadata__\":{\"z\":\"1\",\"a\":\"2\"},"
      "\"w\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,2]}}",
      {7, 8});
  MemorySource src(file);
  absl::StatusOr<SafetensorsFile> f = ReadSafetensorsHeader(src);
  ASSERT_TRUE(f.ok()) << f.status();
  ASSERT_EQ(f->metadata.size(), 2u);
  EXPECT_EQ(f->metadata[0].first, "z");
  EXPECT_EQ(f->metadata[1].second, "2");
  ASSERT_EQ(f->tensors.size(), 1u);
  EXPECT_EQ(f->tensors[0].shape, (std::vector<uint64_t>{2}));
}

TEST(Safetensors, RefusesNonUtf8) {
  EXPECT_THAT(StError("{\"w\xff\":{}}").message(), HasSubstr("UTF-8"));
  EXPECT_THAT(StError("{\"\\ud800\":{}}").message(), HasSubstr("invalid JSON"));
}

TEST(Safetensors, RefusesBadEntriesNamingTheTensor) {
  const std::vector<uint8_t> four(4, 0);
  EXPECT_THAT(StError("{\"w\":{\"dtype\":\"Q4\",\"shape\":[4],"
                      "\"data_offsets\":[0,4]}}",
                      four)
                  .message(),
              HasSubstr("tensor 'w': dtype 'Q4' is not supported"));
  EXPECT_THAT(StError("{\"w\":{\"dtype\":\"U8\",\"shape\":[-4],"
                      "\"data_offsets\":[0,4]}}",
                      four)
                  .message(),
              HasSubstr("tensor 'w': a shape entry"));
  EXPECT_THAT(StError("{\"w\":{\"dtype\":\"U8\",\"shape\":[4.5],"
                      "\"data_offsets\":[0,4]}}",
                      four)
                  .message(),
              HasSubstr("tensor 'w': a shape entry"));
  EXPECT_THAT(StError("{\"w\":{\"dtype\":\"U8\",\"shape\":[4],"
                      "\"data_offsets\":[0,4],\"extra\":1}}",
                      four)
                  .message(),
              HasSubstr("tensor 'w': unknown field 'extra'"));
  EXPECT_THAT(StError("{\"w\":{\"dtype\":\"U8\",\"shape\":[4],"
                      "\"data_offsets\":[4,0]}}",
                      four)
                  .message(),
              HasSubstr("tensor 'w': data_offsets [4, 0] run backwards"));
  EXPECT_THAT(StError("{\"w\":{\"dtype\":\"U8\",\"shape\":[4],"
                      "\"data_offsets\":[0,8]}}",
                      four)
                  .message(),
              HasSubstr("tensor 'w': data_offsets end 8 is past the data"));
  EXPECT_THAT(StError("{\"w\":{\"dtype\":\"U8\",\"shape\":[3],"
                      "\"data_offsets\":[0,4]}}",
                      four)
                  .message(),
              HasSubstr("tensor 'w': data_offsets hold 4 bytes but the shape "
                        "and dtype need 3"));
}

TEST(Safetensors, RefusesHugeSizes) {
  // 2^63: above the dimension limit; 2^62 · 2^62 overflows; 2^62 F32
  // elements overflow the byte size.
  EXPECT_THAT(
      StError("{\"w\":{\"dtype\":\"U8\",\"shape\":[9223372036854775808],"
              "\"data_offsets\":[0,0]}}")
          .message(),
      HasSubstr("tensor 'w': a shape entry"));
  EXPECT_THAT(StError("{\"w\":{\"dtype\":\"U8\",\"shape\":[4611686018427387904,"
                      "4611686018427387904],\"data_offsets\":[0,0]}}")
                  .message(),
              HasSubstr("tensor 'w': the element count overflows"));
  EXPECT_THAT(
      StError("{\"w\":{\"dtype\":\"F32\",\"shape\":[4611686018427387904],"
              "\"data_offsets\":[0,0]}}")
          .message(),
      HasSubstr("tensor 'w': the byte size overflows"));
  EXPECT_THAT(StError("{\"w\":{\"dtype\":\"U8\",\"shape\":[1],"
                      "\"data_offsets\":[9223372036854775807,"
                      "9223372036854775808]}}")
                  .message(),
              HasSubstr("tensor 'w': a data offset"));
}

TEST(Safetensors, RefusesOverlap) {
  EXPECT_THAT(StError("{\"a\":{\"dtype\":\"U8\",\"shape\":[4],"
                      "\"data_offsets\":[0,4]},"
                      "\"b\":{\"dtype\":\"U8\",\"shape\":[2],"
                      "\"data_offsets\":[3,5]}}",
                      std::vector<uint8_t>(8, 0))
                  .message(),
              HasSubstr("tensor 'b': its data overlaps tensor 'a'"));
}

TEST(Safetensors, RefusesBadMetadata) {
  EXPECT_THAT(StError("{\"__metadata__\":{\"k\":1}}").message(),
              HasSubstr("__metadata__ 'k' is not a string"));
  EXPECT_THAT(StError("{\"__metadata__\":[]}").message(),
              HasSubstr("__metadata__ is not an object"));
}

absl::Status GgufError(const std::vector<uint8_t>& bytes) {
  MemorySource src(bytes);
  return ReadGgufHeader(src).status();
}

GgufBuilder OneF32(uint32_t version = 3) {
  GgufBuilder b(version);
  b.KvString("general.architecture", "llama");
  b.Tensor("w", {2, 3}, ggml_type::kF32, std::vector<uint8_t>(24, 7));
  return b;
}

TEST(Gguf, ReadsKvAndTensors) {
  GgufBuilder b = OneF32();
  b.KvStringArray("tokenizer.ggml.tokens", {"a", "b"});
  b.Tensor("v", {32}, ggml_type::kQ8_0, std::vector<uint8_t>(34, 0));
  const std::vector<uint8_t> bytes = b.Build();
  MemorySource src(bytes);
  absl::StatusOr<GgufFile> f = ReadGgufHeader(src);
  ASSERT_TRUE(f.ok()) << f.status();
  ASSERT_EQ(f->kv.size(), 2u);
  ASSERT_EQ(f->kv[1].string_count(), 2u);
  EXPECT_EQ(f->kv[1].string(0), "a");
  EXPECT_EQ(f->kv[1].string(1), "b");
  ASSERT_EQ(f->tensors.size(), 2u);
  EXPECT_EQ(f->tensors[0].name, "w");
  EXPECT_EQ(f->tensors[0].ne, (std::vector<uint64_t>{2, 3}));
  EXPECT_EQ(f->tensors[0].begin, f->data_start);
  EXPECT_EQ(f->tensors[1].begin % 32, 0u);
  EXPECT_EQ(f->tensors[1].byte_size, 34u);
}

TEST(Gguf, RefusesEveryTruncation) {
  const std::vector<uint8_t> bytes = OneF32().Build();
  // Cut inside the header (the data is 24 bytes after an aligned start).
  for (size_t n = 0; n + 24 < bytes.size(); ++n) {
    std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + n);
    EXPECT_FALSE(GgufError(cut).ok()) << n;
  }
  // The last byte of the data (24 bytes, padded to 32) is missing.
  std::vector<uint8_t> cut(bytes.begin(), bytes.end() - 9);
  EXPECT_THAT(GgufError(cut).message(), HasSubstr("tensor 'w' at byte"));
  EXPECT_THAT(GgufError(cut).message(), HasSubstr("run past the end"));
}

TEST(Gguf, RefusesBadMagicVersionAndCounts) {
  std::vector<uint8_t> bytes = OneF32().Build();
  bytes[0] = 'X';
  EXPECT_THAT(GgufError(bytes).message(), HasSubstr("not \"GGUF\""));
  EXPECT_THAT(GgufError(OneF32(1).Build()).message(),
              HasSubstr("version 1 is not supported"));
  GgufBuilder b = OneF32();
  b.set_counts(uint64_t{1} << 63, std::nullopt);
  EXPECT_THAT(GgufError(b.Build()).message(),
              HasSubstr("the tensor count at byte 8"));
  b.set_counts(1000, std::nullopt);
  EXPECT_THAT(GgufError(b.Build()).message(),
              HasSubstr("cannot fit in the file"));
  b.set_counts(std::nullopt, uint64_t{1} << 63);
  EXPECT_THAT(GgufError(b.Build()).message(),
              HasSubstr("the KV count at byte 16"));
}

TEST(Gguf, RefusesHostileKv) {
  {
    GgufBuilder b;
    std::vector<uint8_t> v;
    testing::PutU32(&v, 8);
    testing::PutU64(&v, uint64_t{1} << 63);  // a 2^63-byte string
    b.KvRaw("k", v);
    EXPECT_THAT(GgufError(b.Build()).message(),
                HasSubstr("declares 9223372036854775808 bytes"));
  }
  {
    GgufBuilder b;
    std::vector<uint8_t> v;
    testing::PutU32(&v, 9);
    testing::PutU32(&v, 4);
    testing::PutU64(&v, uint64_t{1} << 62);  // 2^62 uint32s
    b.KvRaw("k", v);
    EXPECT_THAT(GgufError(b.Build()).message(),
                HasSubstr("value of 'k' at byte"));
  }
  {
    GgufBuilder b;
    std::vector<uint8_t> v;
    testing::PutU32(&v, 9);
    testing::PutU32(&v, 9);  // array of arrays
    testing::PutU64(&v, 0);
    b.KvRaw("k", v);
    EXPECT_THAT(GgufError(b.Build()).message(), HasSubstr("nested arrays"));
  }
  {
    GgufBuilder b;
    std::vector<uint8_t> v;
    testing::PutU32(&v, 13);
    b.KvRaw("k", v);
    EXPECT_THAT(GgufError(b.Build()).message(),
                HasSubstr("unknown value type 13"));
  }
  {
    GgufBuilder b;
    b.KvU32("k", 1);
    b.KvU32("k", 2);
    EXPECT_THAT(GgufError(b.Build()).message(), HasSubstr("key 'k' at byte"));
  }
  {
    GgufBuilder b;
    b.KvU32("k\xc3", 1);
    EXPECT_THAT(GgufError(b.Build()).message(), HasSubstr("not UTF-8"));
  }
  {
    GgufBuilder b;
    b.KvU32("general.alignment", 24);
    EXPECT_THAT(GgufError(b.Build()).message(),
                HasSubstr("not a power of two"));
  }
  {
    GgufBuilder b;
    std::vector<uint8_t> v;
    testing::PutU32(&v, 7);
    v.push_back(2);
    b.KvRaw("k", v);
    EXPECT_THAT(GgufError(b.Build()).message(), HasSubstr("neither 0 nor 1"));
  }
}

TEST(Gguf, RefusesHostileTensorInfos) {
  auto one = [](const std::vector<uint64_t>& ne, uint32_t type,
                std::vector<uint8_t> data,
                std::optional<uint64_t> offset = std::nullopt) {
    GgufBuilder b;
    b.Tensor("w", ne, type, data, offset);
    return GgufError(b.Build());
  };
  EXPECT_THAT(one({}, ggml_type::kF32, {}).message(),
              HasSubstr("tensor 'w' at byte"));
  EXPECT_THAT(one({1, 1, 1, 1, 1}, ggml_type::kF32, {}).message(),
              HasSubstr("n_dims 5 is outside 1..4"));
  EXPECT_THAT(one({uint64_t{1} << 63}, ggml_type::kF32, {}).message(),
              HasSubstr("tensor 'w' at byte"));
  EXPECT_THAT(one({uint64_t{1} << 62, 8}, ggml_type::kF32, {}).message(),
              HasSubstr("element count overflows"));
  EXPECT_THAT(one({uint64_t{1} << 62}, ggml_type::kF32, {}).message(),
              HasSubstr("byte size overflows"));
  EXPECT_THAT(one({16}, ggml_type::kQ8_0, {}).message(),
              HasSubstr("not a multiple of the Q8_0 block"));
  EXPECT_THAT(one({4}, 4, {}).message(), HasSubstr("unknown ggml type 4"));
  EXPECT_THAT(one({4}, ggml_type::kF32, std::vector<uint8_t>(16), 8).message(),
              HasSubstr("not a multiple of the alignment"));
  EXPECT_THAT(
      one({4}, ggml_type::kF32, std::vector<uint8_t>(16), uint64_t{1} << 62)
          .message(),
      HasSubstr("run past the end of the file"));
  {
    GgufBuilder b;
    b.Tensor("a", {8}, ggml_type::kF32, std::vector<uint8_t>(32), 0);
    b.Tensor("b", {8}, ggml_type::kF32, std::vector<uint8_t>(32), 0);
    EXPECT_THAT(GgufError(b.Build()).message(),
                HasSubstr("its data overlaps tensor"));
  }
  {
    GgufBuilder b;
    b.Tensor("a", {8}, ggml_type::kF32, std::vector<uint8_t>(32));
    b.Tensor("a", {8}, ggml_type::kF32, std::vector<uint8_t>(32));
    EXPECT_THAT(GgufError(b.Build()).message(),
                HasSubstr("tensor 'a' at byte"));
    EXPECT_THAT(GgufError(b.Build()).message(),
                HasSubstr("duplicate tensor name"));
  }
  {
    GgufBuilder b;
    b.Tensor("a\xff", {8}, ggml_type::kF32, std::vector<uint8_t>(32));
    EXPECT_THAT(GgufError(b.Build()).message(), HasSubstr("not UTF-8"));
  }
}

}  // namespace
}  // namespace hurray::stream::convert
