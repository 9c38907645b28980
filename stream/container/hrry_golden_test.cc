// The reference implementation's golden file basic.hrry (REJECT-RULES.md
// §2.8, corpus/golden/manifest.json "files") reads, with both readers, to
// exactly what the manifest lists.
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "parser/element_type.h"
#include "stream/container/crc32c.h"
#include "stream/container/hrry_file.h"
#include "stream/container/hrry_mmap.h"
#include "stream/container/testing/file_test_util.h"
#include "stream/container/testing/test_util.h"
#include "tests/json_lite.h"

namespace hurray::stream::container {
namespace {

std::string Runfile(const std::string& path) {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  return std::string(srcdir ? srcdir : ".") + "/hurray_cpp/" + path;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

const std::string kGolden = "corpus/golden/files/basic.hrry";

TEST(HrryGoldenTest, LayoutMatchesTheCatalog) {
  const std::string bytes = ReadFile(Runfile(kGolden));
  ASSERT_EQ(bytes.size(), 8391u);
  HrryForwardReader reader;
  ASSERT_NE(reader.Feed(container::testing::AsBytes(bytes)),
            FileState::kRejected)
      << reader.status();
  ASSERT_EQ(reader.Finish(), FileState::kDone) << reader.status();
  const FileGeometry& g = reader.geometry();
  EXPECT_EQ(g.header.flags, file_flag::kHasIndexCrc32c);
  EXPECT_EQ(g.header.data_buffer_alignment, 4096u);
  EXPECT_EQ(g.header.first_descriptor_offset, 64u);
  EXPECT_EQ(g.header.tensor_count_hint, kUnknownTensorCount);
  EXPECT_TRUE(g.kv_present);  // flag clear, fields set (RESOLUTIONS.md 13)
  EXPECT_EQ(g.trailer.kv_offset, 8200u);
  EXPECT_EQ(g.trailer.kv_length, 60u);
  EXPECT_EQ(g.trailer.index_offset, 8264u);
  EXPECT_EQ(g.trailer.index_length, 87u);
  EXPECT_EQ(g.trailer.index_crc32c, 0x51349F72u);
  EXPECT_EQ(Crc32c(container::testing::AsBytes(bytes).subspan(8264, 87)),
            0x51349F72u);
}

// The standard CRC-32C check value (RFC 3720 § B.4 parameters).
TEST(HrryGoldenTest, Crc32cCheckValue) {
  EXPECT_EQ(Crc32c(container::testing::AsBytes("123456789")), 0xE3069283u);
  EXPECT_EQ(Crc32c({}), 0u);
}

TEST(HrryGoldenTest, BothReadersMatchTheManifest) {
  const std::string bytes = ReadFile(Runfile(kGolden));
  absl::StatusOr<json::Value> manifest =
      json::Parse(ReadFile(Runfile("corpus/golden/manifest.json")));
  ASSERT_TRUE(manifest.ok()) << manifest.status();
  const json::Value& files = (*manifest)["files"];
  ASSERT_EQ(files.array.size(), 1u);
  const json::Value& want = files.array[0];
  ASSERT_EQ(want["file"].text, "files/basic.hrry");
  const std::vector<json::Value>& tensors = want["tensors"].array;
  ASSERT_EQ(tensors.size(), 2u);

  for (size_t chunk : {bytes.size(), size_t{1}, size_t{100}}) {
    SCOPED_TRACE(chunk);
    container::testing::RecordingSink sink;
    HrryForwardReader reader(FileOptions(), &sink);
    container::testing::FeedInChunks(container::testing::AsBytes(bytes), chunk,
                                     [&](absl::Span<const uint8_t> piece) {
                                       return reader.Feed(piece) ==
                                              FileState::kNeedMore;
                                     });
    ASSERT_EQ(reader.Finish(), FileState::kDone) << reader.status();
    ASSERT_EQ(sink.tensors.size(), tensors.size());
    EXPECT_TRUE(sink.ended);
    for (size_t i = 0; i < tensors.size(); ++i) {
      const json::Value& t = tensors[i];
      const TensorDescriptor& d = sink.tensors[i].descriptor;
      ASSERT_NE(reader.entry_of_tensor(i), nullptr);
      EXPECT_EQ(reader.entry_of_tensor(i)->name, t["name"].text);
      EXPECT_EQ(d.type_tag, t["element_type_tag"].AsU64());
      EXPECT_EQ(ElementTypeName(d.type_tag), t["element_type"].text);
      ASSERT_EQ(d.rank, t["shape"].array.size());
      for (uint32_t k = 0; k < d.rank; ++k) {
        EXPECT_EQ(d.shape[k], t["shape"].array[k].AsU64());
      }
      ASSERT_EQ(sink.tensors[i].buffers.size(), 1u);
      EXPECT_EQ(sink.tensors[i].buffers[0].size(), t["data_bytes"].AsU64());
      EXPECT_EQ(reader.entry_of_tensor(i)->data_length,
                t["data_bytes"].AsU64());
    }
    const KvSection& kv = reader.kv();
    ASSERT_EQ(kv.entries().size(), want["kv"].array.size());
    for (const json::Value& k : want["kv"].array) {
      const KvEntry* e = kv.Find(k["key"].text);
      ASSERT_NE(e, nullptr) << k["key"].text;
      if (k["kind"].text == "string") {
        EXPECT_EQ(e->value.type, KvType::kString);
        EXPECT_EQ(e->value.str(), k["value_string"].text);
      } else {
        ASSERT_EQ(k["kind"].text, "int64");
        EXPECT_EQ(e->value.type, KvType::kInt64);
        EXPECT_EQ(e->value.i64, static_cast<int64_t>(k["value_int"].AsU64()));
      }
    }
  }

  absl::StatusOr<std::unique_ptr<HrryFile>> file =
      HrryFile::Open(Runfile(kGolden));
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ((*file)->index().size(), 2u);
  for (const json::Value& t : tensors) {
    const IndexEntry* e = (*file)->Find(t["name"].text);
    ASSERT_NE(e, nullptr) << t["name"].text;
    TensorDescriptor d;
    ASSERT_TRUE((*file)->ReadDescriptor(*e, &d).ok());
    EXPECT_EQ(d.type_tag, t["element_type_tag"].AsU64());
    ASSERT_EQ(d.rank, t["shape"].array.size());
    absl::StatusOr<absl::Span<const uint8_t>> data = (*file)->Buffer(*e, d, 0);
    ASSERT_TRUE(data.ok());
    EXPECT_EQ(data->size(), t["data_bytes"].AsU64());
    EXPECT_EQ(data->data(), (*file)->bytes().data() + e->data_offset);
  }
  EXPECT_EQ((*file)->Find("missing"), nullptr);
  EXPECT_EQ((*file)->kv().Find("producer")->value.str(), "hurray-conformance");
  EXPECT_EQ((*file)->kv().Find("tensor_count")->value.i64, 2);
}

// FILE-TRL-09 is opt-in and strict-only: the golden file has a KV section
// while HAS_KV_METADATA is clear.
TEST(HrryGoldenTest, FileTrl09IsOptIn) {
  const std::string bytes = ReadFile(Runfile(kGolden));
  FileOptions options;
  container::testing::ExpectVerdict(container::testing::AsBytes(bytes), options,
                                    Rule::kNone);
  options.reject_kv_without_flag = true;
  container::testing::ExpectVerdict(container::testing::AsBytes(bytes), options,
                                    Rule::kFileTrl09, 8391 - 40 + 16);
  options.parse.mode = Mode::kPermissive;
  container::testing::ExpectVerdict(container::testing::AsBytes(bytes), options,
                                    Rule::kNone);
}

}  // namespace
}  // namespace hurray::stream::container
