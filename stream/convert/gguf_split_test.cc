// Split GGUF (issue 48, gguf_split.h): the parts of a model converted as
// one file give the tensors and metadata of the unsplit model (differing
// values under "<part>:<key>"); hostile part sets are refused naming the
// part or tensor: a missing part, a tensor in two parts, split keys that
// disagree with the part's name, 10,000 parts past a limit, a lying
// split.tensors.count.
#include "stream/convert/gguf_split.h"

#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "stream/convert/convert.h"
#include "stream/convert/testing/source_builders.h"

namespace hurray::stream::convert {
namespace {

using testing::GgufBuilder;
using ::testing::HasSubstr;

std::vector<uint8_t> U16(uint16_t v) {
  return {2, 0, 0, 0, static_cast<uint8_t>(v), static_cast<uint8_t>(v >> 8)};
}

std::vector<uint8_t> F32s(size_t n, float base) {
  std::vector<uint8_t> out(4 * n);
  for (size_t i = 0; i < n; ++i) {
    const float f = base + static_cast<float>(i);
    std::memcpy(&out[4 * i], &f, 4);
  }
  return out;
}

// Parts in memory, by name; `opened` counts the opens.
struct Parts {
  std::map<std::string, std::vector<uint8_t>> files;
  int opened = 0;
  PartOpener Opener() {
    return [this](const std::string& name)
               -> absl::StatusOr<std::unique_ptr<ByteSource>> {
      ++opened;
      auto it = files.find(name);
      if (it == files.end()) return absl::NotFoundError("no such file");
      return std::unique_ptr<ByteSource>(
          std::make_unique<MemorySource>(it->second));
    };
  }
};

// n parts of "m": part i holds tensor "t<i>" (and the first the model's
// keys); split.tensors.count `total` (default n).
Parts MakeParts(int n, int total = -1) {
  Parts p;
  for (int i = 0; i < n; ++i) {
    GgufBuilder b;
    b.KvRaw("split.no", U16(static_cast<uint16_t>(i)));
    b.KvRaw("split.count", U16(static_cast<uint16_t>(n)));
    b.KvI32("split.tensors.count", total < 0 ? n : total);
    if (i == 0) b.KvString("general.name", "m");
    b.KvString("general.tag", i == 1 ? "other" : "same");
    b.Tensor(absl::StrCat("t", i), {4, 2}, /*F32*/ 0, F32s(8, 10.0f * i));
    p.files[absl::StrFormat("m-%05d-of-%05d.gguf", i + 1, n)] = b.Build();
  }
  return p;
}

absl::StatusOr<ConvertReport> ConvertParts(Parts& p, int n,
                                           std::vector<uint8_t>* out) {
  absl::StatusOr<SplitGguf> s =
      OpenSplitGguf(absl::StrFormat("m-00001-of-%05d.gguf", n), p.Opener());
  if (!s.ok()) return s.status();
  return Convert(*s->source, ConvertOptions(),
                 [out](absl::Span<const uint8_t> b) {
                   out->insert(out->end(), b.begin(), b.end());
                   return absl::OkStatus();
                 });
}

TEST(GgufSplit, NamesThePartsFromTheFirst) {
  EXPECT_EQ(SplitGgufParts("m-00001-of-00003.gguf"), 3u);
  EXPECT_EQ(SplitGgufParts("a-b-00001-of-12345.gguf"), 12345u);
  EXPECT_EQ(SplitGgufParts("m-00002-of-00003.gguf"), 0u);  // not the first
  EXPECT_EQ(SplitGgufParts("m-00001-of-00001.gguf"), 0u);  // one part
  EXPECT_EQ(SplitGgufParts("-00001-of-00003.gguf"), 0u);   // no prefix
  EXPECT_EQ(SplitGgufParts("m-00001-of-0000x.gguf"), 0u);
  EXPECT_EQ(SplitGgufParts("m.gguf"), 0u);
}

TEST(GgufSplit, PartsConvertAsOneFile) {
  Parts p = MakeParts(3);
  std::vector<uint8_t> out;
  absl::StatusOr<ConvertReport> r = ConvertParts(p, 3, &out);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->tensors.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(r->tensors[i].name, absl::StrCat("t", i));
    EXPECT_TRUE(r->tensors[i].exact);
  }
  const std::string text(out.begin(), out.end());
  // The tensors' data, from each part.
  for (int i = 0; i < 3; ++i) {
    const std::vector<uint8_t> d = F32s(8, 10.0f * i);
    EXPECT_NE(text.find(std::string(d.begin(), d.end())), std::string::npos)
        << i;
  }
  // Agreeing keys once, differing ones per part.
  EXPECT_THAT(text, HasSubstr("split.count"));
  EXPECT_THAT(text, HasSubstr("m-00001-of-00003.gguf:split.no"));
  EXPECT_THAT(text, HasSubstr("m-00003-of-00003.gguf:split.no"));
  EXPECT_THAT(text, HasSubstr("m-00002-of-00003.gguf:general.tag"));
  EXPECT_EQ(text.find("\"general.tag"), std::string::npos);
  EXPECT_EQ(r->kv_entries, 1u /*name*/ + 3 /*split.no*/ + 2 /*counts*/ +
                               3 /*tag: differs in part 2*/);
}

// general.alignment in one part only (gguf-split writes the model's keys
// in the first), or differing: the parts convert either way.
TEST(GgufSplit, PartsOfDifferentAlignments) {
  for (const uint32_t second : {0u, 32u, 128u}) {
    Parts p;
    for (int i = 0; i < 2; ++i) {
      GgufBuilder b;
      const uint32_t a = i == 0 ? 64 : second;
      if (a != 0) {
        b.KvU32("general.alignment", a);
        b.set_alignment(a);
      }
      b.KvRaw("split.no", U16(static_cast<uint16_t>(i)));
      b.KvRaw("split.count", U16(2));
      b.Tensor(absl::StrCat("t", i), {4, 2}, 0, F32s(8, 10.0f * i));
      p.files[absl::StrFormat("m-%05d-of-00002.gguf", i + 1)] = b.Build();
    }
    std::vector<uint8_t> out;
    absl::StatusOr<ConvertReport> r = ConvertParts(p, 2, &out);
    ASSERT_TRUE(r.ok()) << second << ": " << r.status();
    EXPECT_EQ(r->tensor_count, 2u);
    const std::string text(out.begin(), out.end());
    EXPECT_EQ(text.find("m-00001-of-00002.gguf:general.alignment") !=
                  std::string::npos,
              second != 0 && second != 64)
        << second;
  }
}

TEST(GgufSplit, RefusesAMissingPart) {
  Parts p = MakeParts(3);
  p.files.erase("m-00002-of-00003.gguf");
  std::vector<uint8_t> out;
  absl::StatusOr<ConvertReport> r = ConvertParts(p, 3, &out);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(std::string(r.status().message()),
              HasSubstr("part 'm-00002-of-00003.gguf': no such file"));
}

TEST(GgufSplit, RefusesATensorInTwoParts) {
  Parts p = MakeParts(2);
  GgufBuilder b;
  b.KvRaw("split.no", U16(1));
  b.KvRaw("split.count", U16(2));
  b.Tensor("t0", {4, 2}, 0, F32s(8, 1.0f));
  p.files["m-00002-of-00002.gguf"] = b.Build();
  std::vector<uint8_t> out;
  absl::StatusOr<ConvertReport> r = ConvertParts(p, 2, &out);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(std::string(r.status().message()),
              HasSubstr("part 'm-00002-of-00002.gguf': tensor 't0' is in two "
                        "parts"));
}

TEST(GgufSplit, RefusesSplitKeysThatDisagreeWithTheName) {
  Parts p = MakeParts(3);
  // Part 3's file holds part 2 again (split.no 1).
  p.files["m-00003-of-00003.gguf"] = p.files["m-00002-of-00003.gguf"];
  std::vector<uint8_t> out;
  absl::StatusOr<ConvertReport> r = ConvertParts(p, 3, &out);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(std::string(r.status().message()),
              HasSubstr("part 'm-00003-of-00003.gguf': split.no / "
                        "split.count are not 2 / 3"));
}

TEST(GgufSplit, RefusesALyingTensorsCount) {
  Parts p = MakeParts(2, 5);
  std::vector<uint8_t> out;
  absl::StatusOr<ConvertReport> r = ConvertParts(p, 2, &out);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(std::string(r.status().message()),
              HasSubstr("split.tensors.count is 5, the parts hold 2 tensors"));
}

// 10,000 parts: above a limit of 1,000, refused before any part opens;
// within the default limit, the first missing part stops the read, and
// 10,000 parts present convert.
TEST(GgufSplit, TenThousandParts) {
  Parts p = MakeParts(2);
  SplitLimits limits;
  limits.max_parts = 1000;
  absl::StatusOr<SplitGguf> s =
      OpenSplitGguf("m-00001-of-10000.gguf", p.Opener(), limits);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.status().message()),
              HasSubstr("10000 parts, above the limit of 1000"));
  EXPECT_EQ(p.opened, 0);
  s = OpenSplitGguf("m-00001-of-10000.gguf", p.Opener());
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.status().message()),
              HasSubstr("part 'm-00001-of-10000.gguf': no such file"));
  EXPECT_EQ(p.opened, 1);
  // 10,000 parts there: converted, one tensor each.
  Parts many = MakeParts(10000);
  s = OpenSplitGguf("m-00001-of-10000.gguf", many.Opener());
  ASSERT_TRUE(s.ok()) << s.status();
  uint64_t written = 0;
  ConvertOptions o;
  o.on_tensor = [](const ConvertedTensor&) {};
  absl::StatusOr<ConvertReport> r =
      Convert(*s->source, o, [&written](absl::Span<const uint8_t> b) {
        written += b.size();
        return absl::OkStatus();
      });
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->tensor_count, 10000u);
  EXPECT_EQ(r->bytes_written, written);
}

}  // namespace
}  // namespace hurray::stream::convert
