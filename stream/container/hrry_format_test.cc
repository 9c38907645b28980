// Unit tests of the .hrry building blocks: strict UTF-8, the KV builder and
// parser, and the index encoder, parser and lookups.
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "stream/container/crc32c.h"
#include "stream/container/file_index.h"
#include "stream/container/file_kv.h"
#include "stream/container/kv_builder.h"
#include "stream/container/utf8.h"

namespace hurray::stream::container {
namespace {

// The incremental CRC-32C equals the one-shot one over any split, on the
// hardware and the table path; "123456789" is the RFC 3720 check value.
TEST(Crc32cTest, ExtendEqualsOneShotOverAnySplit) {
  const std::string check = "123456789";
  const auto span = [](const std::string& s) {
    return absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(s.data()),
                               s.size());
  };
  EXPECT_EQ(Crc32c(span(check)), 0xE3069283u);
  EXPECT_EQ(Crc32cExtend(0, span(check)), 0xE3069283u);
  EXPECT_EQ(Crc32cExtendPortable(0, span(check)), 0xE3069283u);
  std::vector<uint8_t> bytes(1000);
  for (size_t i = 0; i < bytes.size(); ++i) {
    bytes[i] = static_cast<uint8_t>(i * 131 + 7);
  }
  const uint32_t whole = Crc32c(bytes);
  for (size_t cut : {size_t{0}, size_t{1}, size_t{7}, size_t{8}, size_t{13},
                     size_t{500}, size_t{999}, size_t{1000}}) {
    const auto a = absl::MakeConstSpan(bytes).first(cut);
    const auto b = absl::MakeConstSpan(bytes).subspan(cut);
    EXPECT_EQ(Crc32cExtend(Crc32cExtend(0, a), b), whole) << cut;
    EXPECT_EQ(Crc32cExtendPortable(Crc32cExtendPortable(0, a), b), whole)
        << cut;
  }
}

// Long inputs take the three-chain hardware path (stripes of 4 KiB joined
// through the shift tables): equal to the table path at every length and
// offset around the stripes' bounds.
TEST(Crc32cTest, LongInputsEqualTheTablePath) {
  std::vector<uint8_t> bytes(3 * 3 * 4096 + 100);
  uint32_t x = 12345;
  for (uint8_t& b : bytes) {
    x = x * 1103515245 + 12345;
    b = static_cast<uint8_t>(x >> 24);
  }
  const auto all = absl::MakeConstSpan(bytes);
  for (size_t offset : {size_t{0}, size_t{1}, size_t{5}}) {
    for (size_t n :
         {size_t{3 * 4096 - 1}, size_t{3 * 4096}, size_t{3 * 4096 + 1},
          size_t{3 * 4096 + 8}, size_t{6 * 4096}, size_t{6 * 4096 + 77},
          size_t{9 * 4096 + 20}}) {
      const auto span = all.subspan(offset, n);
      for (uint32_t start : {0u, 0xDEADBEEFu}) {
        EXPECT_EQ(Crc32cExtend(start, span), Crc32cExtendPortable(start, span))
            << offset << " " << n << " " << start;
      }
    }
  }
}

TEST(Utf8Test, AcceptsWellFormedText) {
  for (const char* s :
       {"", "plain", "\xC3\xA9", "\xE2\x82\xAC", "\xF0\x9F\x98\x80",
        "\xF4\x8F\xBF\xBF", "\xEF\xBF\xBF", "\xED\x9F\xBF"}) {
    EXPECT_TRUE(IsValidUtf8(absl::string_view(s))) << s;
  }
}

TEST(Utf8Test, RejectsMalformedText) {
  for (const char* s : {
           "\x80",              // lone continuation
           "\xC0\x80",          // overlong NUL
           "\xC1\xBF",          // overlong
           "\xE0\x80\x80",      // overlong 3-byte
           "\xF0\x80\x80\x80",  // overlong 4-byte
           "\xED\xA0\x80",      // surrogate U+D800
           "\xF4\x90\x80\x80",  // above U+10FFFF
           "\xF5\x80\x80\x80",  // invalid lead
           "\xFF",              // invalid byte
           "\xE2\x82",          // truncated
           "a\xC3",             // truncated at the end
           "\xE2\x28\xA1",      // bad continuation
       }) {
    EXPECT_FALSE(IsValidUtf8(absl::string_view(s))) << s;
  }
}

TEST(KvBuilderTest, RefusesWhatAReaderWouldReject) {
  KvBuilder kv;
  ASSERT_TRUE(kv.AddBool("k", false).ok());
  const std::vector<uint8_t> before = kv.Build();
  EXPECT_FALSE(kv.AddBool("", true).ok());          // FILE-KV-02
  EXPECT_FALSE(kv.AddBool("\xC0\x80", true).ok());  // FILE-KV-03
  EXPECT_FALSE(kv.AddInt64("k", 1).ok());           // FILE-KV-04
  EXPECT_FALSE(kv.AddString("s", "\xFF").ok());     // FILE-KV-10
  const absl::string_view strings[] = {"ok", "\xED\xA0\x80"};
  EXPECT_FALSE(kv.AddStringArray("a", strings).ok());
  EXPECT_FALSE(kv.AddBool(std::string(70000, 'k'), true).ok());
  // Nothing of the refused entries was written.
  EXPECT_EQ(kv.count(), 1u);
  EXPECT_EQ(kv.Build(), before);
}

TEST(KvSectionTest, ParsesWhatTheBuilderWrites) {
  KvBuilder kv;
  ASSERT_TRUE(kv.AddString("name", "model").ok());
  ASSERT_TRUE(kv.AddFloat64("scale", 0.25).ok());
  const bool flags[] = {false, true};
  ASSERT_TRUE(kv.AddBoolArray("flags", flags).ok());
  const std::vector<uint8_t> bytes = kv.Build();
  KvSection section;
  ASSERT_TRUE(section.Parse(bytes, 1000, Mode::kStrict).ok());
  ASSERT_EQ(section.entries().size(), 3u);
  EXPECT_EQ(section.entries()[0].at, 1004u);
  EXPECT_EQ(section.Find("name")->value.str(), "model");
  EXPECT_EQ(section.Find("scale")->value.f64, 0.25);
  const KvValue& a = section.Find("flags")->value;
  EXPECT_EQ(a.type, KvType::kArray);
  EXPECT_EQ(a.element_type, KvType::kBool);
  ASSERT_EQ(a.Elements().size(), 2u);
  EXPECT_TRUE(a.Elements()[1].boolean);
  // A count larger than the bytes can hold is refused before allocating.
  std::vector<uint8_t> huge = bytes;
  huge[3] = 0xFF;
  const Rejection r = section.Parse(huge, 1000, Mode::kStrict);
  EXPECT_EQ(r.rule, Rule::kFileKv01);
  EXPECT_EQ(r.offset, 1000u);
}

std::vector<IndexEntry> Entries(std::vector<std::string>* names) {
  std::vector<IndexEntry> out;
  uint64_t at = 64;
  for (const std::string& n : *names) {
    IndexEntry e;
    e.name = n;
    e.descriptor_offset = at;
    e.descriptor_length = 40;
    e.data_offset = 4096;
    out.push_back(e);
    at += 48;
  }
  return out;
}

TEST(FileIndexTest, RoundTripAndLookup) {
  std::vector<std::string> names = {"alpha", "beta", "gamma", "zeta"};
  const std::vector<uint8_t> bytes = EncodeIndex(Entries(&names));
  for (bool sorted : {false, true}) {
    FileIndex index;
    ASSERT_TRUE(index.Parse(bytes, 8000, sorted, Mode::kStrict).ok());
    ASSERT_EQ(index.size(), 4u);
    EXPECT_EQ(index.entries()[0].at, 8008u);
    EXPECT_EQ(index.entries()[1].descriptor_offset, 112u);
    for (const std::string& n : names) {
      ASSERT_NE(index.Find(n), nullptr);
      EXPECT_EQ(index.Find(n)->name, n);
    }
    EXPECT_EQ(index.Find("delta"), nullptr);
    EXPECT_EQ(index.Find("zz"), nullptr);
    EXPECT_EQ(index.Find(""), nullptr);
  }
  // A count larger than the bytes can hold is refused before allocating.
  std::vector<uint8_t> huge = bytes;
  huge[7] = 0x7F;
  FileIndex index;
  const Rejection r = index.Parse(huge, 8000, false, Mode::kStrict);
  EXPECT_EQ(r.rule, Rule::kFileIdx01);
  EXPECT_EQ(r.offset, 8000u);
}

// Unsigned byte order (file-format.md § Index Encoding): 0xC3 sorts after
// 'z'.
TEST(FileIndexTest, SortedOrderIsUnsignedBytes) {
  std::vector<std::string> names = {"z", "\xC3\xA9"};
  FileIndex index;
  EXPECT_TRUE(
      index.Parse(EncodeIndex(Entries(&names)), 0, true, Mode::kStrict).ok());
  std::vector<std::string> reversed = {"\xC3\xA9", "z"};
  EXPECT_EQ(
      index.Parse(EncodeIndex(Entries(&reversed)), 0, true, Mode::kStrict).rule,
      Rule::kFileIdx06);
}

}  // namespace
}  // namespace hurray::stream::container
