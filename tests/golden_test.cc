// The golden descriptors of the reference implementation decode, in strict
// mode, to exactly the fields conformance/manifest.json expects, and encode
// back to the same bytes.
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "parser/decoder.h"
#include "parser/element_type.h"
#include "parser/encoder.h"
#include "tests/json_lite.h"

namespace hurray {
namespace {

std::string Runfile(const std::string& path) {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  return std::string(srcdir ? srcdir : ".") + "/hurray_cpp/" + path;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

TEST(GoldenTest, EveryDescriptorMatchesTheManifest) {
  absl::StatusOr<json::Value> manifest =
      json::Parse(ReadFile(Runfile("corpus/golden/manifest.json")));
  ASSERT_TRUE(manifest.ok()) << manifest.status();
  const json::Value& list = (*manifest)["descriptors"];
  ASSERT_GE(list.array.size(), 11u);
  for (const json::Value& entry : list.array) {
    const std::string file = entry["file"].text;
    SCOPED_TRACE(file);
    const std::string bytes = ReadFile(Runfile("corpus/golden/" + file));
    ASSERT_FALSE(bytes.empty());
    const auto span = absl::MakeConstSpan(
        reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
    absl::StatusOr<TensorDescriptor> d = Decode(span);
    ASSERT_TRUE(d.ok()) << d.status();
    const json::Value& want = entry["expect"];
    EXPECT_EQ(d->version_major, want["version_major"].AsU64());
    EXPECT_EQ(d->version_minor, want["version_minor"].AsU64());
    EXPECT_EQ(d->type_tag, want["element_type_tag"].AsU64());
    EXPECT_EQ(ElementTypeName(d->type_tag), want["element_type"].text);
    EXPECT_EQ(d->layout_tag, want["layout_tag"].AsU64());
    EXPECT_EQ(d->byte_offset, want["byte_offset"].AsU64());
    ASSERT_EQ(d->rank, want["shape"].array.size());
    for (uint32_t k = 0; k < d->rank; ++k) {
      EXPECT_EQ(d->shape[k], want["shape"].array[k].AsU64());
    }
    const json::Value& sizes = want["buffer_byte_sizes"];
    ASSERT_EQ(d->buffer_count, sizes.array.size());
    for (uint32_t i = 0; i < d->buffer_count; ++i) {
      EXPECT_EQ(d->buffers[i].byte_size, sizes.array[i].AsU64());
    }
    EXPECT_EQ(d->has(flag::kHasQuantization), want["has_quantization"].boolean);
    EXPECT_EQ(d->has(flag::kHasShard), want["has_shard"].boolean);
    EXPECT_EQ(d->descriptor_length, bytes.size());
    // Encoding the decoded record reproduces the reference's bytes.
    absl::StatusOr<std::vector<uint8_t>> again = Encode(*d);
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(std::string(again->begin(), again->end()), bytes);
  }
}

// metadata.md's worked example is wrong (RESOLUTIONS.md 8): float32 [3, 4]
// needs 48 bytes, and a 192-byte buffer is accepted only as oversized.
TEST(GoldenTest, WorkedExampleBufferSizeIs48) {
  const std::string bytes =
      ReadFile(Runfile("corpus/golden/descriptors/row_major_f32_3x4.bin"));
  absl::StatusOr<TensorDescriptor> d = Decode(absl::MakeConstSpan(
      reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()));
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->buffers[0].byte_size, 48u);
  EXPECT_EQ(bytes.size(), 61u);
}

}  // namespace
}  // namespace hurray
