#include "stream/container/testing/file_test_util.h"

#include <cstdlib>

#include "gtest/gtest.h"
#include "parser/element_type.h"
#include "stream/container/crc32c.h"
#include "stream/container/file_index.h"
#include "stream/container/hrry_file.h"
#include "stream/container/hrry_mmap.h"
#include "stream/container/testing/test_util.h"

namespace hurray::stream::container::testing {

std::vector<uint8_t> WriteFile(const std::vector<vectors::Named>& tensors,
                               const HrryWriterOptions& options,
                               void (*kv)(KvBuilder*)) {
  std::vector<uint8_t> out;
  auto sink = [&out](absl::Span<const uint8_t> b) {
    out.insert(out.end(), b.begin(), b.end());
    return absl::OkStatus();
  };
  HrryWriter writer(options);
  if (!writer.Begin(sink).ok()) {
    ADD_FAILURE() << "Begin failed";
    return out;
  }
  uint32_t seed = 100;
  for (const vectors::Named& t : tensors) {
    const auto buffers = BuffersFor(*t.descriptor, ++seed);
    const absl::Status s =
        writer.Add(t.name, *t.descriptor, Spans(buffers), sink);
    if (!s.ok()) {
      ADD_FAILURE() << "writing " << t.name << ": " << s;
      return out;
    }
  }
  if (kv != nullptr) kv(&writer.kv());
  const absl::Status s = writer.Finish(sink);
  if (!s.ok()) ADD_FAILURE() << "finishing: " << s;
  return out;
}

std::vector<uint8_t> SmallFile(bool with_kv) {
  std::vector<vectors::Named> tensors;
  tensors.push_back({"a", vectors::Dense(type_tag::kFloat32, {3, 4})});
  tensors.push_back({"b", vectors::Dense(type_tag::kInt8, {5})});
  HrryWriterOptions options;
  options.with_kv = with_kv;
  void (*kv)(KvBuilder*) = [](KvBuilder* b) {
    (void)b->AddString("producer", "hurray-cpp");
    (void)b->AddInt64("tensor_count", 2);
  };
  return WriteFile(tensors, options, with_kv ? kv : nullptr);
}

EditableFile EditableFile::From(absl::Span<const uint8_t> file) {
  FileOptions options;
  options.parse = vectors::AgreedOptions(Mode::kPermissive);
  auto f = HrryFile::FromBytes(file, options);
  if (!f.ok()) std::abort();
  const FileGeometry& g = (*f)->geometry();
  EditableFile e;
  e.region.assign(file.begin(), file.begin() + g.region_limit);
  e.kv = g.kv_present;
  if (e.kv) {
    e.kv_bytes.assign(file.begin() + g.trailer.kv_offset,
                      file.begin() + g.trailer.kv_offset + g.trailer.kv_length);
  }
  for (const IndexEntry& x : (*f)->index().entries()) {
    e.entries.push_back({std::string(x.name), x.descriptor_offset,
                         x.descriptor_length, x.data_offset, x.data_length,
                         x.flags});
  }
  return e;
}

void EditableFile::InsertZeros(uint64_t at, uint64_t n) {
  region.insert(region.begin() + at, n, 0);
  for (Entry& x : entries) {
    if (x.descriptor_offset >= at) x.descriptor_offset += n;
    if (x.data_offset >= at) x.data_offset += n;
  }
}

uint64_t EditableFile::Built::field_at(size_t i, const EditableFile& f,
                                       int field) const {
  return name_at(i) + f.entries[i].name.size() + field;
}

EditableFile::Built EditableFile::Build() const {
  Built b;
  b.bytes = region;
  auto pad8 = [&b] {
    while (b.bytes.size() % 8 != 0) b.bytes.push_back(0);
  };
  pad8();
  if (kv) {
    b.kv_offset = b.bytes.size();
    b.bytes.insert(b.bytes.end(), kv_bytes.begin(), kv_bytes.end());
    pad8();
  }
  std::vector<IndexEntry> index_entries;
  for (const Entry& x : entries) {
    IndexEntry ie;
    ie.name = x.name;
    ie.descriptor_offset = x.descriptor_offset;
    ie.descriptor_length = x.descriptor_length;
    ie.data_offset = x.data_offset;
    ie.data_length = x.data_length;
    ie.flags = x.flags;
    index_entries.push_back(ie);
  }
  std::vector<uint8_t> index = EncodeIndex(index_entries);
  index.insert(index.end(), index_extra.begin(), index_extra.end());
  b.index_offset = b.bytes.size();
  uint64_t at = b.index_offset + 8;
  for (const Entry& x : entries) {
    b.entry_at.push_back(at);
    at += 2 + x.name.size() + 32;
  }
  b.bytes.insert(b.bytes.end(), index.begin(), index.end());
  FileTrailer t;
  t.index_offset = b.index_offset;
  t.index_length = index.size();
  if (kv) {
    t.kv_offset = b.kv_offset;
    t.kv_length = static_cast<uint32_t>(kv_bytes.size());
  }
  const uint32_t flags = wire::LoadU32(&region[header_at::kFlags]);
  if (fix_crc && (flags & file_flag::kHasIndexCrc32c)) {
    t.index_crc32c = Crc32c(index);
  }
  uint8_t trailer[kTrailerSize];
  EncodeTrailer(t, trailer);
  b.trailer = b.bytes.size();
  b.bytes.insert(b.bytes.end(), trailer, trailer + kTrailerSize);
  return b;
}

namespace {

std::string Show(const Rejection& r) {
  if (r.ok()) return "accepted";
  return std::string(RuleId(r.rule)) + " at " + std::to_string(r.offset) +
         " (" + r.message + ")";
}

Rejection Forward(absl::Span<const uint8_t> file, const FileOptions& options,
                  size_t chunk, RecordingSink* sink) {
  HrryForwardReader reader(options, sink);
  FeedInChunks(file, chunk, [&](absl::Span<const uint8_t> piece) {
    return reader.Feed(piece) == FileState::kNeedMore;
  });
  return reader.Finish() == FileState::kRejected ? reader.rejection()
                                                 : kAccepted;
}

Rejection Mmap(absl::Span<const uint8_t> file, const FileOptions& options) {
  absl::StatusOr<std::unique_ptr<HrryFile>> f =
      HrryFile::FromBytes(file, options);
  if (f.ok()) return kAccepted;
  const std::optional<absl::string_view> id = RuleIdOf(f.status());
  const std::optional<uint64_t> offset = OffsetOf(f.status());
  if (!id || !offset) return {Rule::kStreamIo, 0, "no rule in the status"};
  return {*RuleFromId(*id), *offset, ""};
}

}  // namespace

void FixCrc(std::vector<uint8_t>* file) {
  const uint64_t t = file->size() - kTrailerSize;
  const uint64_t offset = wire::LoadU64(&(*file)[t + trailer_at::kIndexOffset]);
  const uint64_t length = wire::LoadU64(&(*file)[t + trailer_at::kIndexLength]);
  PatchU32(file, t + trailer_at::kIndexCrc,
           Crc32c(absl::MakeConstSpan(*file).subspan(offset, length)));
}

void ExpectVerdict(absl::Span<const uint8_t> file, const FileOptions& options,
                   Rule rule, uint64_t offset, bool walk_only) {
  const Rejection want{rule, offset, ""};
  for (size_t chunk : {file.size() + 1, size_t{7}, size_t{1}}) {
    RecordingSink sink;
    const Rejection got = Forward(file, options, chunk, &sink);
    EXPECT_EQ(got, want) << "forward, chunk " << chunk << ": " << Show(got)
                         << ", want " << Show(want);
    EXPECT_TRUE(sink.errors.empty()) << sink.errors.front();
    EXPECT_EQ(sink.ended, rule == Rule::kNone);
  }
  const Rejection walked = Mmap(file, options);
  EXPECT_EQ(walked, want) << "random access: " << Show(walked) << ", want "
                          << Show(want);
  FileOptions no_walk = options;
  no_walk.verify_region = false;
  const Rejection direct = Mmap(file, no_walk);
  const Rejection want_direct = walk_only ? kAccepted : want;
  EXPECT_EQ(direct, want_direct)
      << "random access without the walk: " << Show(direct) << ", want "
      << Show(want_direct);
}

}  // namespace hurray::stream::container::testing
