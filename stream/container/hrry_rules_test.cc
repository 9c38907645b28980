// One test per FILE-* rule of REJECT-RULES.md §3.13: a valid file, the same
// file broken in exactly that field, the expected rule id and absolute
// offset, from the forward reader (any chunking) and the random-access
// reader alike (file_test_util.h ExpectVerdict). Strict-only rules are also
// read in permissive mode, where the file is accepted.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "parser/element_type.h"
#include "parser/encoder.h"
#include "stream/container/hrry_file.h"
#include "stream/container/hrry_mmap.h"
#include "stream/container/kv_builder.h"
#include "stream/container/testing/file_test_util.h"
#include "stream/container/testing/test_util.h"
#include "tests/vectors.h"

namespace hurray::stream::container {
namespace {

using container::testing::EditableFile;
using container::testing::ExpectVerdict;
using container::testing::PatchU16;
using container::testing::PatchU32;
using container::testing::PatchU64;

FileOptions Strict() { return FileOptions(); }
FileOptions Permissive() {
  FileOptions o;
  o.parse.mode = Mode::kPermissive;
  return o;
}

uint64_t TrailerAt(const std::vector<uint8_t>& f) {
  return f.size() - kTrailerSize;
}

// "a" float32 [3, 4] at 64 (data at 4096), "b" int8 [5] at 4144 (data at
// 8192), KV at 8200.
EditableFile Small(bool with_kv = true) {
  return EditableFile::From(container::testing::SmallFile(with_kv));
}

TEST(HrryRulesTest, ValidFilesAreAccepted) {
  ExpectVerdict(container::testing::SmallFile(true), Strict(), Rule::kNone);
  ExpectVerdict(container::testing::SmallFile(false), Strict(), Rule::kNone);
  ExpectVerdict(Small().Build().bytes, Strict(), Rule::kNone);
}

// --- File header (file-format.md § File Header). --------------------------

TEST(HrryRulesTest, FileHdr01FileTooShort) {
  ExpectVerdict({}, Strict(), Rule::kFileHdr01, 0);
  std::vector<uint8_t> f = container::testing::SmallFile();
  f.resize(103);
  ExpectVerdict(f, Strict(), Rule::kFileHdr01, 103);
  f.resize(40);
  ExpectVerdict(f, Permissive(), Rule::kFileHdr01, 40);
}

TEST(HrryRulesTest, FileHdr02Magic) {
  std::vector<uint8_t> f = container::testing::SmallFile();
  f[7] = 'X';
  ExpectVerdict(f, Strict(), Rule::kFileHdr02, 0);
}

TEST(HrryRulesTest, FileHdr03NewerMajor) {
  std::vector<uint8_t> f = container::testing::SmallFile();
  f[8] = 2;
  ExpectVerdict(f, Strict(), Rule::kFileHdr03, 8);
  // A newer minor version is fine.
  f[8] = 1;
  f[9] = 7;
  ExpectVerdict(f, Strict(), Rule::kNone);
}

TEST(HrryRulesTest, FileHdr04MajorZero) {
  std::vector<uint8_t> f = container::testing::SmallFile();
  f[8] = 0;
  ExpectVerdict(f, Permissive(), Rule::kFileHdr04, 8);
}

TEST(HrryRulesTest, FileHdr05Reserved) {
  std::vector<uint8_t> f = container::testing::SmallFile();
  f[11] = 1;
  ExpectVerdict(f, Permissive(), Rule::kFileHdr05, 11);
}

TEST(HrryRulesTest, FileHdr06ReservedFlag) {
  std::vector<uint8_t> f = container::testing::SmallFile();
  f[header_at::kFlags] |= 0x08;
  ExpectVerdict(f, Permissive(), Rule::kFileHdr06, 12);
}

TEST(HrryRulesTest, FileHdr07Alignment) {
  for (uint32_t bad : {0u, 2048u, 4097u, 6144u, 4u << 20}) {
    SCOPED_TRACE(bad);
    std::vector<uint8_t> f = container::testing::SmallFile();
    PatchU32(&f, header_at::kAlignment, bad);
    ExpectVerdict(f, Strict(), Rule::kFileHdr07, 16);
  }
}

TEST(HrryRulesTest, FileHdr08FirstDescriptorOffset) {
  for (uint64_t bad : {uint64_t{56}, uint64_t{68}}) {
    std::vector<uint8_t> f = container::testing::SmallFile();
    PatchU64(&f, header_at::kFirstDescriptor, bad);
    ExpectVerdict(f, Strict(), Rule::kFileHdr08, 20);
  }
}

TEST(HrryRulesTest, FileHdr09ReservedHeader) {
  std::vector<uint8_t> f = container::testing::SmallFile();
  f[50] = 1;
  ExpectVerdict(f, Permissive(), Rule::kFileHdr09, 50);
}

TEST(HrryRulesTest, FileHdr10PaddingBeforeFirstDescriptor) {
  HrryWriterOptions options;
  options.first_descriptor_offset = 128;
  std::vector<vectors::Named> tensors;
  tensors.push_back({"a", vectors::Dense(type_tag::kInt8, {5})});
  std::vector<uint8_t> f = container::testing::WriteFile(tensors, options);
  ExpectVerdict(f, Strict(), Rule::kNone);
  f[100] = 7;
  ExpectVerdict(f, Strict(), Rule::kFileHdr10, 100, /*walk_only=*/true);
  ExpectVerdict(f, Permissive(), Rule::kNone);
}

// --- Trailer (file-format.md § Trailer). -----------------------------------

TEST(HrryRulesTest, FileTrl01TrailerMagic) {
  std::vector<uint8_t> f = container::testing::SmallFile();
  f.back() = 'Z';
  ExpectVerdict(f, Permissive(), Rule::kFileTrl01, f.size() - 4);
}

TEST(HrryRulesTest, FileTrl02TrailerReserved) {
  std::vector<uint8_t> f = container::testing::SmallFile();
  f[TrailerAt(f) + 33] = 1;
  ExpectVerdict(f, Permissive(), Rule::kFileTrl02, TrailerAt(f) + 33);
}

TEST(HrryRulesTest, FileTrl03IndexCrc) {
  std::vector<uint8_t> f = container::testing::SmallFile();
  const uint64_t t = TrailerAt(f);
  f[t + trailer_at::kIndexCrc] ^= 1;
  ExpectVerdict(f, Permissive(), Rule::kFileTrl03, t + 28);
  // A changed index byte with the old CRC.
  f = container::testing::SmallFile();
  const uint64_t index = wire::LoadU64(&f[t]);
  f[index + 10] = 'c';  // the first name, "a"
  ExpectVerdict(f, Strict(), Rule::kFileTrl03, t + 28);
  // The CRC is verified when the flag is set even if it is 0 (§4 item 16).
  f = container::testing::SmallFile();
  PatchU32(&f, t + trailer_at::kIndexCrc, 0);
  ExpectVerdict(f, Strict(), Rule::kFileTrl03, t + 28);
}

TEST(HrryRulesTest, FileTrl04CrcWithoutFlag) {
  HrryWriterOptions options;
  options.index_crc = false;
  std::vector<vectors::Named> tensors;
  tensors.push_back({"a", vectors::Dense(type_tag::kInt8, {5})});
  std::vector<uint8_t> f = container::testing::WriteFile(tensors, options);
  ExpectVerdict(f, Strict(), Rule::kNone);
  PatchU32(&f, TrailerAt(f) + trailer_at::kIndexCrc, 0x1234);
  ExpectVerdict(f, Permissive(), Rule::kFileTrl04, TrailerAt(f) + 28);
}

TEST(HrryRulesTest, FileTrl05IndexIntoTrailer) {
  std::vector<uint8_t> f = container::testing::SmallFile();
  const uint64_t t = TrailerAt(f);
  PatchU64(&f, t + trailer_at::kIndexLength, wire::LoadU64(&f[t + 8]) + 1);
  ExpectVerdict(f, Permissive(), Rule::kFileTrl05, t);
  // index_offset + index_length overflows.
  f = container::testing::SmallFile();
  PatchU64(&f, t, ~uint64_t{7});
  ExpectVerdict(f, Permissive(), Rule::kFileTrl05, t);
}

TEST(HrryRulesTest, FileTrl06IndexAlignment) {
  std::vector<uint8_t> f = container::testing::SmallFile();
  const uint64_t t = TrailerAt(f);
  PatchU64(&f, t, wire::LoadU64(&f[t]) + 4);
  PatchU64(&f, t + 8, wire::LoadU64(&f[t + 8]) - 4);
  ExpectVerdict(f, Permissive(), Rule::kFileTrl06, t);
}

TEST(HrryRulesTest, FileTrl07IndexPlacement) {
  // Before the first descriptor.
  std::vector<uint8_t> f = container::testing::SmallFile();
  const uint64_t t = TrailerAt(f);
  PatchU64(&f, t, 8);
  ExpectVerdict(f, Permissive(), Rule::kFileTrl07, t);
  // Overlapping the KV section.
  f = container::testing::SmallFile();
  PatchU64(&f, t, wire::LoadU64(&f[t + trailer_at::kKvOffset]));
  ExpectVerdict(f, Permissive(), Rule::kFileTrl07, t);
}

TEST(HrryRulesTest, FileTrl08FlagWithoutKv) {
  std::vector<uint8_t> f = container::testing::SmallFile(/*with_kv=*/true);
  const uint64_t t = TrailerAt(f);
  PatchU32(&f, t + trailer_at::kKvLength, 0);
  ExpectVerdict(f, Permissive(), Rule::kFileTrl08, t + 16);
  PatchU64(&f, t + trailer_at::kKvOffset, 0);
  ExpectVerdict(f, Permissive(), Rule::kFileTrl08, t + 16);
}

TEST(HrryRulesTest, FileTrl09KvWithoutFlagIsOptIn) {
  std::vector<uint8_t> f = container::testing::SmallFile(/*with_kv=*/true);
  f[header_at::kFlags] &= ~file_flag::kHasKvMetadata;
  ExpectVerdict(f, Strict(), Rule::kNone);  // RESOLUTIONS.md 13
  FileOptions strict = Strict();
  strict.reject_kv_without_flag = true;
  ExpectVerdict(f, strict, Rule::kFileTrl09, TrailerAt(f) + 16);
  FileOptions permissive = Permissive();
  permissive.reject_kv_without_flag = true;
  ExpectVerdict(f, permissive, Rule::kNone);
}

TEST(HrryRulesTest, FileTrl10HalfKvFields) {
  std::vector<uint8_t> f = container::testing::SmallFile(/*with_kv=*/false);
  const uint64_t t = TrailerAt(f);
  PatchU32(&f, t + trailer_at::kKvLength, 4);
  ExpectVerdict(f, Permissive(), Rule::kFileTrl10, t + 16);
  f = container::testing::SmallFile(/*with_kv=*/false);
  PatchU64(&f, t + trailer_at::kKvOffset, 64);
  ExpectVerdict(f, Permissive(), Rule::kFileTrl10, t + 16);
}

TEST(HrryRulesTest, FileTrl11KvPlacement) {
  std::vector<uint8_t> f = container::testing::SmallFile(/*with_kv=*/true);
  const uint64_t t = TrailerAt(f);
  const uint64_t kv = wire::LoadU64(&f[t + trailer_at::kKvOffset]);
  const uint32_t kv_length = wire::LoadU32(&f[t + trailer_at::kKvLength]);
  PatchU64(&f, t + trailer_at::kKvOffset, kv + 4);  // misaligned
  PatchU32(&f, t + trailer_at::kKvLength, kv_length - 4);
  ExpectVerdict(f, Permissive(), Rule::kFileTrl11, t + 16);
  f = container::testing::SmallFile(/*with_kv=*/true);
  PatchU64(&f, t + trailer_at::kKvOffset, 8);  // inside the header
  ExpectVerdict(f, Permissive(), Rule::kFileTrl11, t + 16);
}

// --- Index (file-format.md § Index Encoding). ------------------------------

TEST(HrryRulesTest, FileIdx01IndexTruncated) {
  EditableFile e = Small();
  EditableFile::Built b = e.Build();
  PatchU64(&b.bytes, b.index_offset, 3);  // 3 entries cannot fit
  container::testing::FixCrc(&b.bytes);
  ExpectVerdict(b.bytes, Permissive(), Rule::kFileIdx01, b.index_offset);
  b = e.Build();
  PatchU16(&b.bytes, b.entry_at[1], 300);  // the name runs past the end
  container::testing::FixCrc(&b.bytes);
  ExpectVerdict(b.bytes, Permissive(), Rule::kFileIdx01, b.name_at(1));
}

TEST(HrryRulesTest, FileIdx02EmptyName) {
  EditableFile::Built b = Small().Build();
  PatchU16(&b.bytes, b.entry_at[1], 0);
  container::testing::FixCrc(&b.bytes);
  ExpectVerdict(b.bytes, Permissive(), Rule::kFileIdx02, b.entry_at[1]);
}

TEST(HrryRulesTest, FileIdx03NameNotUtf8) {
  EditableFile e = Small();
  e.entries[1].name = "\xC3";  // truncated two-byte sequence
  const EditableFile::Built b = e.Build();
  ExpectVerdict(b.bytes, Permissive(), Rule::kFileIdx03, b.name_at(1));
}

TEST(HrryRulesTest, FileIdx04DuplicateName) {
  EditableFile e = Small();
  e.entries[1].name = "a";
  const EditableFile::Built b = e.Build();
  ExpectVerdict(b.bytes, Permissive(), Rule::kFileIdx04, b.name_at(1));
}

TEST(HrryRulesTest, FileIdx05EntryFlags) {
  EditableFile e = Small();
  e.entries[0].flags = 1;
  const EditableFile::Built b = e.Build();
  ExpectVerdict(b.bytes, Permissive(), Rule::kFileIdx05,
                b.field_at(0, e, testing::kFlagsField));
}

TEST(HrryRulesTest, FileIdx06SortedIndexOrder) {
  std::vector<vectors::Named> tensors;
  tensors.push_back({"m", vectors::Dense(type_tag::kInt8, {5})});
  tensors.push_back({"c", vectors::Dense(type_tag::kInt8, {5})});
  HrryWriterOptions options;
  options.sorted_index = true;
  EditableFile e =
      EditableFile::From(container::testing::WriteFile(tensors, options));
  ASSERT_EQ(e.entries[0].name, "c");  // the writer sorted the index
  ExpectVerdict(e.Build().bytes, Strict(), Rule::kNone);
  e.entries[1].name = "a";  // "c" then "a"
  EditableFile::Built b = e.Build();
  ExpectVerdict(b.bytes, Permissive(), Rule::kFileIdx06, b.name_at(1));
  e.entries[1].name = "c";  // equal names in a sorted index: duplicates
  b = e.Build();
  ExpectVerdict(b.bytes, Permissive(), Rule::kFileIdx04, b.name_at(1));
}

TEST(HrryRulesTest, FileIdx07BytesAfterTheIndex) {
  EditableFile e = Small();
  e.index_extra.assign(8, 0);
  const EditableFile::Built b = e.Build();
  const uint64_t leftover = b.bytes.size() - kTrailerSize - 8;
  ExpectVerdict(b.bytes, Strict(), Rule::kFileIdx07, leftover);
  ExpectVerdict(b.bytes, Permissive(), Rule::kNone);
}

TEST(HrryRulesTest, FileIdx08DescriptorLength) {
  EditableFile e = Small();
  e.entries[0].descriptor_length += 8;
  const EditableFile::Built b = e.Build();
  ExpectVerdict(b.bytes, Permissive(), Rule::kFileIdx08,
                b.field_at(0, e, testing::kDescriptorLengthField));
}

TEST(HrryRulesTest, FileIdx09DescriptorPlacement) {
  const EditableFile base = Small();
  for (uint64_t bad : {uint64_t{4148}, uint64_t{32}, uint64_t{8192}}) {
    SCOPED_TRACE(bad);
    EditableFile e = base;
    ASSERT_EQ(e.entries[1].descriptor_offset, 4144u);
    e.entries[1].descriptor_offset = bad;  // misaligned, before, into KV
    const EditableFile::Built b = e.Build();
    ExpectVerdict(b.bytes, Permissive(), Rule::kFileIdx09,
                  b.field_at(1, e, container::testing::kDescriptorOffsetField));
  }
}

TEST(HrryRulesTest, FileIdx10DataAlignment) {
  EditableFile e = Small();
  e.entries[0].data_offset += 8;
  const EditableFile::Built b = e.Build();
  ExpectVerdict(b.bytes, Permissive(), Rule::kFileIdx10,
                b.field_at(0, e, testing::kDataOffsetField));
}

TEST(HrryRulesTest, FileIdx11DataBeforeDescriptorEnd) {
  EditableFile e = Small();
  e.entries[0].data_offset = 0;  // aligned, but before the descriptor
  const EditableFile::Built b = e.Build();
  ExpectVerdict(b.bytes, Permissive(), Rule::kFileIdx11,
                b.field_at(0, e, testing::kDataOffsetField));
}

TEST(HrryRulesTest, FileIdx12DataLength) {
  EditableFile e = Small();
  e.entries[1].data_length += 1;
  const EditableFile::Built b = e.Build();
  ExpectVerdict(b.bytes, Permissive(), Rule::kFileIdx12,
                b.field_at(1, e, testing::kDataLengthField));
}

TEST(HrryRulesTest, FileIdx13DataIntoMetadata) {
  EditableFile e = Small();
  e.entries[1].data_offset += 4096;  // 8192 + 4096 is past the KV section
  const EditableFile::Built b = e.Build();
  ExpectVerdict(b.bytes, Permissive(), Rule::kFileIdx13,
                b.field_at(1, e, testing::kDataLengthField));
}

TEST(HrryRulesTest, FileIdx14Overlap) {
  EditableFile e = Small();
  const std::string name = e.entries[1].name;
  e.entries[1] = e.entries[0];  // "b" names the tensor of "a"
  e.entries[1].name = name;
  const EditableFile::Built b = e.Build();
  ExpectVerdict(b.bytes, Strict(), Rule::kFileIdx14,
                b.field_at(1, e, container::testing::kDescriptorOffsetField));
  ExpectVerdict(b.bytes, Permissive(), Rule::kNone);
}

TEST(HrryRulesTest, FileIdx15TensorNotIndexed) {
  EditableFile e = Small();
  e.entries.pop_back();
  const EditableFile::Built b = e.Build();
  ExpectVerdict(b.bytes, Strict(), Rule::kFileIdx15, 4144, /*walk_only=*/true);
  ExpectVerdict(b.bytes, Permissive(), Rule::kNone);
}

TEST(HrryRulesTest, FileIdx15RegionEndsBeforeKv) {
  EditableFile e = Small();
  e.InsertZeros(e.region.size(), 8);
  const EditableFile::Built b = e.Build();
  ExpectVerdict(b.bytes, Strict(), Rule::kFileIdx15, 8200, /*walk_only=*/true);
  ExpectVerdict(b.bytes, Permissive(), Rule::kNone);
}

TEST(HrryRulesTest, FileIdx15TensorCountHint) {
  std::vector<vectors::Named> tensors;
  tensors.push_back({"a", vectors::Dense(type_tag::kInt8, {5})});
  HrryWriterOptions options;
  options.tensor_count_hint = 1;
  std::vector<uint8_t> f = container::testing::WriteFile(tensors, options);
  ExpectVerdict(f, Strict(), Rule::kNone);
  PatchU64(&f, header_at::kTensorCountHint, 2);
  ExpectVerdict(f, Strict(), Rule::kFileIdx15, 28, /*walk_only=*/true);
  ExpectVerdict(f, Permissive(), Rule::kNone);
}

TEST(HrryRulesTest, FileIdx15DataOffsetNotAtTheBuffers) {
  std::vector<vectors::Named> tensors;
  tensors.push_back({"a", vectors::Dense(type_tag::kFloat32, {3, 4})});
  tensors.push_back({"b", vectors::Dense(type_tag::kInt8, {5000})});
  EditableFile e = EditableFile::From(container::testing::WriteFile(tensors));
  e.entries[0].data_offset += 4096;  // aligned, in range, but b's bytes
  const EditableFile::Built b = e.Build();
  ExpectVerdict(b.bytes, Strict(), Rule::kFileIdx15,
                b.field_at(0, e, testing::kDataOffsetField));
  ExpectVerdict(b.bytes, Permissive(), Rule::kNone);
  // A permissive reader still serves the bytes where the buffer is.
  auto file = HrryFile::CopyOf(b.bytes, Permissive());
  ASSERT_TRUE(file.ok());
  const IndexEntry* a = (*file)->Find("a");
  TensorDescriptor d;
  ASSERT_TRUE((*file)->ReadDescriptor(*a, &d).ok());
  EXPECT_EQ((*file)->Buffer(*a, d, 0)->data(), (*file)->bytes().data() + 4096);
}

// --- KV section (file-format.md § KV Section Encoding, § KV Value Types). --

// A file whose KV section is exactly `kv` (count included).
EditableFile::Built WithKv(std::vector<uint8_t> kv) {
  EditableFile e = Small();
  e.kv_bytes = std::move(kv);
  return e.Build();
}

std::vector<uint8_t> Kv(std::initializer_list<uint8_t> entries,
                        uint32_t count = 1) {
  std::vector<uint8_t> out(4);
  wire::StoreU32(out.data(), count);
  out.insert(out.end(), entries);
  return out;
}

TEST(HrryRulesTest, FileKv01KvTruncated) {
  KvBuilder kv;
  ASSERT_TRUE(kv.AddBool("k", true).ok());
  std::vector<uint8_t> bytes = kv.Build();
  PatchU32(&bytes, 0, 2);  // 2 entries cannot fit in 9 bytes
  EditableFile::Built b = WithKv(bytes);
  ExpectVerdict(b.bytes, Permissive(), Rule::kFileKv01, b.kv_offset);
  // A string whose length runs past the section.
  b = WithKv(Kv({1, 0, 'k', 0x01, 100, 0, 0, 0, 'a', 'b', 'c'}));
  ExpectVerdict(b.bytes, Permissive(), Rule::kFileKv01, b.kv_offset + 12);
}

TEST(HrryRulesTest, FileKv02EmptyKey) {
  const EditableFile::Built b = WithKv(Kv({0, 0, 0x05, 1, 0}));
  ExpectVerdict(b.bytes, Permissive(), Rule::kFileKv02, b.kv_offset + 4);
}

TEST(HrryRulesTest, FileKv03KeyNotUtf8) {
  // C0 80: an overlong NUL.
  const EditableFile::Built b = WithKv(Kv({2, 0, 0xC0, 0x80, 0x05, 1}));
  ExpectVerdict(b.bytes, Permissive(), Rule::kFileKv03, b.kv_offset + 6);
}

TEST(HrryRulesTest, FileKv04DuplicateKey) {
  const EditableFile::Built b =
      WithKv(Kv({1, 0, 'k', 0x05, 1, 1, 0, 'k', 0x05, 0}, 2));
  ExpectVerdict(b.bytes, Permissive(), Rule::kFileKv04, b.kv_offset + 11);
}

TEST(HrryRulesTest, FileKv05ReservedValueTag) {
  for (uint8_t tag : {uint8_t{0x08}, uint8_t{0xEF}}) {
    const EditableFile::Built b = WithKv(Kv({1, 0, 'k', tag, 0}));
    ExpectVerdict(b.bytes, Permissive(), Rule::kFileKv05, b.kv_offset + 7);
  }
}

TEST(HrryRulesTest, FileKv06InvalidValueTag) {
  for (uint8_t tag : {uint8_t{0x00}, uint8_t{0xFF}}) {
    const EditableFile::Built b = WithKv(Kv({1, 0, 'k', tag, 0}));
    ExpectVerdict(b.bytes, Permissive(), Rule::kFileKv06, b.kv_offset + 7);
  }
}

TEST(HrryRulesTest, FileKv07PrivateValueTag) {
  for (uint8_t tag : {uint8_t{0xF0}, uint8_t{0xFE}}) {
    const EditableFile::Built b = WithKv(Kv({1, 0, 'k', tag, 0}));
    ExpectVerdict(b.bytes, Permissive(), Rule::kFileKv07, b.kv_offset + 7);
  }
}

TEST(HrryRulesTest, FileKv08BoolPayload) {
  const EditableFile::Built b = WithKv(Kv({1, 0, 'k', 0x05, 2}));
  ExpectVerdict(b.bytes, Permissive(), Rule::kFileKv08, b.kv_offset + 8);
  // Inside an array too.
  const EditableFile::Built a =
      WithKv(Kv({1, 0, 'k', 0x07, 0x05, 2, 0, 0, 0, 1, 7}));
  ExpectVerdict(a.bytes, Permissive(), Rule::kFileKv08, a.kv_offset + 14);
}

TEST(HrryRulesTest, FileKv09ArrayElementTag) {
  for (uint8_t element : {uint8_t{0x07}, uint8_t{0x00}, uint8_t{0xF3}}) {
    const EditableFile::Built b =
        WithKv(Kv({1, 0, 'k', 0x07, element, 0, 0, 0, 0}));
    ExpectVerdict(b.bytes, Permissive(), Rule::kFileKv09, b.kv_offset + 8);
  }
}

TEST(HrryRulesTest, FileKv10StringNotUtf8) {
  EditableFile::Built b =
      WithKv(Kv({1, 0, 'k', 0x01, 3, 0, 0, 0, 'a', 0xED, 0xA0}));  // surrogate
  ExpectVerdict(b.bytes, Permissive(), Rule::kFileKv10, b.kv_offset + 12);
  // A string element of an array.
  b = WithKv(Kv({1, 0, 'k', 0x07, 0x01, 1, 0, 0, 0, 1, 0, 0, 0, 0xFF}));
  ExpectVerdict(b.bytes, Permissive(), Rule::kFileKv10, b.kv_offset + 17);
}

TEST(HrryRulesTest, FileKv11BytesAfterKv) {
  KvBuilder kv;
  ASSERT_TRUE(kv.AddUInt64("k", 7).ok());
  std::vector<uint8_t> bytes = kv.Build();
  const uint64_t end = bytes.size();
  bytes.insert(bytes.end(), 3, 0);
  const EditableFile::Built b = WithKv(bytes);
  ExpectVerdict(b.bytes, Strict(), Rule::kFileKv11, b.kv_offset + end);
  ExpectVerdict(b.bytes, Permissive(), Rule::kNone);
}

// --- Tensor region (file-format.md § Tensor Region, § Composite Tensors). --

TEST(HrryRulesTest, FileReg01NonZeroPadding) {
  // Descriptor to data, and after the last buffer to the next 8 bytes.
  for (uint64_t at : {uint64_t{200}, uint64_t{8198}}) {
    SCOPED_TRACE(at);
    EditableFile e = Small();
    e.region[at] = 1;
    const EditableFile::Built b = e.Build();
    ExpectVerdict(b.bytes, Strict(), Rule::kFileReg01, at, /*walk_only=*/true);
    ExpectVerdict(b.bytes, Permissive(), Rule::kNone);
  }
  // Between two buffers of one tensor: 32 bytes at 4096, then 8192.
  std::vector<vectors::Named> tensors;
  tensors.push_back({"q", vectors::PerChannelAsymInt8()});
  EditableFile e = EditableFile::From(container::testing::WriteFile(tensors));
  e.region[5000] = 1;
  const EditableFile::Built b = e.Build();
  ExpectVerdict(b.bytes, Strict(), Rule::kFileReg01, 5000, /*walk_only=*/true);
}

TEST(HrryRulesTest, FileReg02BufferOwnAlignment) {
  EditableFile e = Small();
  auto a = vectors::Dense(type_tag::kFloat32, {3, 4});
  const PartOffsets offsets = *ComputeOffsets(*a);
  PatchU32(&e.region, 64 + offsets.handle(0) + 8, 8192);  // its alignment
  const EditableFile::Built b = e.Build();
  ExpectVerdict(b.bytes, Strict(), Rule::kFileReg02, 4096, /*walk_only=*/true);
  ExpectVerdict(b.bytes, Permissive(), Rule::kNone);
}

// --- Buffer views (buffer-protocol.md § Alignment (Minimum)). -------------

// The status of Buffer() for tensor `name`'s buffer 0.
absl::Status BufferStatus(const HrryFile& file, absl::string_view name) {
  const IndexEntry* e = file.Find(name);
  if (e == nullptr) return absl::NotFoundError(name);
  TensorDescriptor d;
  absl::Status s = file.ReadDescriptor(*e, &d);
  if (!s.ok()) return s;
  return file.Buffer(*e, d, 0).status();
}

void ExpectBuf19(const absl::Status& s, uint64_t offset) {
  EXPECT_EQ(RuleIdOf(s), std::optional<absl::string_view>("BUF-19")) << s;
  EXPECT_EQ(OffsetOf(s), std::optional<uint64_t>(offset)) << s;
}

// BUF-19, in-process hand-off: the same valid file viewed where it lies. At
// a 4096 boundary every view keeps its declared 64-byte alignment; 32 bytes
// further on, a's buffer (file offset 4096) is refused at that offset.
TEST(HrryRulesTest, Buf19ViewAddressMissesDeclaredAlignment) {
  const std::vector<uint8_t> bytes = container::testing::SmallFile(true);
  std::vector<uint8_t> storage(bytes.size() + 2 * 4096);
  const uintptr_t base = reinterpret_cast<uintptr_t>(storage.data());
  uint8_t* aligned = storage.data() + ((4096 - base % 4096) % 4096);
  for (const size_t shift : {size_t{0}, size_t{32}}) {
    SCOPED_TRACE(shift);
    std::copy(bytes.begin(), bytes.end(), aligned + shift);
    auto file = HrryFile::FromBytes(
        absl::MakeConstSpan(aligned + shift, bytes.size()), Strict());
    ASSERT_TRUE(file.ok()) << file.status();  // the file itself is valid
    const IndexEntry* a = (*file)->Find("a");
    ASSERT_NE(a, nullptr);
    ASSERT_EQ(a->data_offset, 4096u);
    if (shift == 0) {
      EXPECT_TRUE(BufferStatus(**file, "a").ok());
      EXPECT_TRUE(BufferStatus(**file, "b").ok());
    } else {
      ExpectBuf19(BufferStatus(**file, "a"), 4096);
      ExpectBuf19(BufferStatus(**file, "b"), (*file)->Find("b")->data_offset);
    }
  }
}

// BUF-19, mmap hand-off: a mapped file sits at a 2 MiB boundary, so a view
// is misaligned exactly when its file offset misses the declared alignment.
// A permissive open accepts a's handle declaring 8192 for a buffer at 4096
// (FILE-REG-02 is strict-only); handing the buffer out is refused. b is
// served as before.
TEST(HrryRulesTest, Buf19MappedViewMissesDeclaredAlignment) {
  EditableFile e = Small();
  auto a = vectors::Dense(type_tag::kFloat32, {3, 4});
  const PartOffsets offsets = *ComputeOffsets(*a);
  const std::string dir = std::getenv("TEST_TMPDIR");
  for (const uint32_t alignment : {4096u, 8192u}) {
    SCOPED_TRACE(alignment);
    PatchU32(&e.region, 64 + offsets.handle(0) + 8, alignment);
    const std::vector<uint8_t> bytes = e.Build().bytes;
    const std::string path = absl::StrCat(dir, "/buf19_", alignment, ".hrry");
    {
      std::ofstream out(path, std::ios::binary);
      out.write(reinterpret_cast<const char*>(bytes.data()),
                static_cast<std::streamsize>(bytes.size()));
    }
    auto file = HrryFile::Open(path, Permissive());
    ASSERT_TRUE(file.ok()) << file.status();
    EXPECT_EQ(
        reinterpret_cast<uintptr_t>((*file)->bytes().data()) % kMapAlignment,
        0u);
    EXPECT_TRUE(BufferStatus(**file, "b").ok());
    if (alignment == 4096) {
      EXPECT_TRUE(BufferStatus(**file, "a").ok());
    } else {
      ExpectBuf19(BufferStatus(**file, "a"), 4096);
    }
  }
}

// TYPE-PACK-01 and TYPE-PACK-05 over the data of a mapped file
// (HrryFile::CheckElements): a bool [5] and a float8_e8m0 [4] tensor, valid,
// then each broken in one element. Offsets are element indices.
TEST(HrryRulesTest, TypePack01And05CheckedOverMappedData) {
  std::vector<vectors::Named> tensors;
  tensors.push_back({"flags", vectors::Dense(type_tag::kBool, {5})});
  tensors.push_back({"scales", vectors::Dense(type_tag::kFloat8E8M0, {4})});
  tensors.push_back({"a", vectors::Dense(type_tag::kFloat32, {3})});
  std::vector<uint8_t> bytes = container::testing::WriteFile(tensors);
  auto layout = HrryFile::CopyOf(bytes, Strict());
  ASSERT_TRUE(layout.ok()) << layout.status();
  const uint64_t flags_at = (*layout)->Find("flags")->data_offset;
  const uint64_t scales_at = (*layout)->Find("scales")->data_offset;
  // Valid elements: {1, 0, 1, 1, 0} and 2^0, 2^-126, 2^127, 2^1.
  bytes[flags_at] = 0x0D;
  const uint8_t scales[] = {0x7F, 0x01, 0xFE, 0x80};
  std::copy(std::begin(scales), std::end(scales), bytes.begin() + scales_at);

  const auto check = [](const std::vector<uint8_t>& file, Mode mode,
                        absl::string_view name) {
    FileOptions options;
    options.parse.mode = mode;
    auto f = HrryFile::CopyOf(file, options);
    EXPECT_TRUE(f.ok()) << f.status();
    if (!f.ok()) return f.status();
    const IndexEntry* e = (*f)->Find(name);
    TensorDescriptor d;
    EXPECT_TRUE((*f)->ReadDescriptor(*e, &d).ok());
    return (*f)->CheckElements(*e, d);
  };
  for (const char* name : {"flags", "scales", "a"}) {
    EXPECT_TRUE(check(bytes, Mode::kStrict, name).ok()) << name;
  }
  std::vector<uint8_t> broken = bytes;
  broken[flags_at] = 0x4D;  // bit 6: an unused slot
  absl::Status s = check(broken, Mode::kStrict, "flags");
  EXPECT_EQ(RuleIdOf(s), std::optional<absl::string_view>("TYPE-PACK-01")) << s;
  EXPECT_EQ(OffsetOf(s), std::optional<uint64_t>(6));
  EXPECT_TRUE(check(broken, Mode::kPermissive, "flags").ok());  // strict-only
  broken = bytes;
  broken[scales_at + 2] = 0xFF;
  for (const Mode mode : {Mode::kStrict, Mode::kPermissive}) {  // always
    s = check(broken, mode, "scales");
    EXPECT_EQ(RuleIdOf(s), std::optional<absl::string_view>("TYPE-PACK-05"))
        << s;
    EXPECT_EQ(OffsetOf(s), std::optional<uint64_t>(2));
  }
}

std::vector<vectors::Named> HeadAndMember() {
  std::vector<vectors::Named> tensors;
  tensors.push_back({"head", container::testing::GroupHead(1)});
  tensors.push_back({"member", vectors::Dense(type_tag::kInt8, {5})});
  return tensors;
}

TEST(HrryRulesTest, FileReg03HeadDataLength) {
  EditableFile e =
      EditableFile::From(container::testing::WriteFile(HeadAndMember()));
  ExpectVerdict(e.Build().bytes, Strict(), Rule::kNone);
  e.entries[0].data_length = 8;
  const EditableFile::Built b = e.Build();
  ExpectVerdict(b.bytes, Permissive(), Rule::kFileReg03,
                b.field_at(0, e, testing::kDataLengthField));
}

TEST(HrryRulesTest, FileReg04PaddingAfterHeadIsOptIn) {
  EditableFile e =
      EditableFile::From(container::testing::WriteFile(HeadAndMember()));
  // Lay the file out as the reference writer does: the head's descriptor
  // is padded to data_buffer_alignment, so the member starts at 4096 and its
  // data at 8192.
  const uint64_t after_head = e.entries[1].descriptor_offset;
  ASSERT_EQ(after_head % 8, 0u);
  e.InsertZeros(after_head, 4096 - after_head);
  const uint64_t member_end =
      e.entries[1].descriptor_offset + e.entries[1].descriptor_length;
  e.InsertZeros(member_end, 8192 - e.entries[1].data_offset);
  ASSERT_EQ(e.entries[1].descriptor_offset, 4096u);
  ASSERT_EQ(e.entries[1].data_offset, 8192u);
  const EditableFile::Built b = e.Build();
  ExpectVerdict(b.bytes, Strict(), Rule::kNone);
  FileOptions strict = Strict();
  strict.reject_padding_after_head = true;
  ExpectVerdict(b.bytes, strict, Rule::kFileReg04, after_head,
                /*walk_only=*/true);
  FileOptions permissive = Permissive();
  permissive.reject_padding_after_head = true;
  ExpectVerdict(b.bytes, permissive, Rule::kNone);
}

// FILE-REG-05: members are the tensors after the head in file order; too
// few is a torn composite (CMP-CLS-03, strict-only).
TEST(HrryRulesTest, FileReg05TornComposite) {
  EditableFile e =
      EditableFile::From(container::testing::WriteFile(HeadAndMember()));
  auto head = container::testing::GroupHead(1);
  const PartOffsets offsets = *ComputeOffsets(*head);
  const uint64_t member_count_at =
      e.entries[0].descriptor_offset + offsets.layout + 4;
  ASSERT_EQ(wire::LoadU32(&e.region[member_count_at]), 1u);
  PatchU32(&e.region, member_count_at, 2);
  const EditableFile::Built b = e.Build();
  // Reported at the head's member_count.
  ExpectVerdict(b.bytes, Strict(), Rule::kCmpCls03, member_count_at,
                /*walk_only=*/true);
  ExpectVerdict(b.bytes, Permissive(), Rule::kNone);
  auto file = HrryFile::FromBytes(b.bytes, Permissive());
  ASSERT_TRUE(file.ok());
  EXPECT_EQ(RuleIdOf((*file)->Members(*(*file)->Find("head")).status()),
            "CMP-CLS-03");
}

// --- Limits (REJECT-RULES.md §5).
// ---------------------------------------------

TEST(HrryRulesTest, HugeDeclaredBufferIsRefusedByTheLimit) {
  EditableFile e = Small();
  auto a = vectors::Dense(type_tag::kFloat32, {3, 4});
  const PartOffsets offsets = *ComputeOffsets(*a);
  PatchU64(&e.region, 64 + offsets.handle(0), uint64_t{1} << 63);
  const EditableFile::Built b = e.Build();
  ExpectVerdict(b.bytes, Permissive(), Rule::kLimitBufferBytes,
                64 + offsets.handle(0));
}

TEST(HrryRulesTest, TotalByteLimit) {
  const std::vector<uint8_t> f = container::testing::SmallFile();
  FileOptions o;
  o.limits.max_total_bytes = f.size();
  ExpectVerdict(f, o, Rule::kNone);
  o.limits.max_total_bytes = f.size() - 1;
  ExpectVerdict(f, o, Rule::kLimitTotalBytes, f.size() - 1);
}

// Only the forward reader keeps the metadata in memory.
TEST(HrryRulesTest, MetadataByteLimitOfTheForwardReader) {
  const std::vector<uint8_t> f = container::testing::SmallFile();
  FileOptions o;
  o.max_metadata_bytes = 100;
  HrryForwardReader reader(o);
  EXPECT_EQ(reader.Feed(f), FileState::kRejected);
  EXPECT_EQ(reader.rejection().rule, Rule::kLimitBufferBytes);
  EXPECT_EQ(reader.rejection().offset, 8200u + 100);
  o.max_metadata_bytes = f.size() - 8200;
  EXPECT_TRUE(ReadHrry(f, o, nullptr).ok());
}

TEST(HrryRulesTest, SourceFailureIsStreamIo) {
  const std::vector<uint8_t> f = container::testing::SmallFile();
  HrryForwardReader reader;
  EXPECT_EQ(reader.Feed(absl::MakeConstSpan(f).first(5000)),
            FileState::kNeedMore);
  EXPECT_EQ(reader.FailSource(), FileState::kRejected);
  EXPECT_EQ(reader.rejection().rule, Rule::kStreamIo);
  EXPECT_EQ(reader.rejection().offset, 5000u);
}

}  // namespace
}  // namespace hurray::stream::container
