// HrryWriter → both readers, for a file holding every vector of
// tests/vectors.h and KV values of every type; lookups; chunking; truncation
// at every structural boundary; and the forward and random-access readers
// agreeing on every file they are given, valid or damaged.
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "parser/element_type.h"
#include "stream/container/hrry_file.h"
#include "stream/container/hrry_mmap.h"
#include "stream/container/hrry_writer.h"
#include "stream/container/kv_builder.h"
#include "stream/container/testing/file_test_util.h"
#include "stream/container/testing/test_util.h"
#include "tests/vectors.h"

namespace hurray::stream::container {
namespace {

using container::testing::ContainerVectors;
using container::testing::RecordingSink;

FileOptions Agreed() {
  FileOptions o;
  o.parse = vectors::AgreedOptions();
  return o;
}

const uint8_t kBlob[] = {0, 1, 0, 0xFF};

void EveryKvType(KvBuilder* kv) {
  ASSERT_TRUE(kv->AddString("string", "héllo wörld").ok());
  ASSERT_TRUE(kv->AddString("empty", "").ok());
  ASSERT_TRUE(kv->AddInt64("int64", -42).ok());
  ASSERT_TRUE(
      kv->AddUInt64("uint64", std::numeric_limits<uint64_t>::max()).ok());
  ASSERT_TRUE(kv->AddFloat64("float64", -0.5).ok());
  ASSERT_TRUE(kv->AddBool("bool", true).ok());
  ASSERT_TRUE(kv->AddBytes("bytes", kBlob).ok());
  const absl::string_view strings[] = {"a", "", "ü"};
  ASSERT_TRUE(kv->AddStringArray("strings", strings).ok());
  const int64_t ints[] = {-1, 0, 1};
  ASSERT_TRUE(kv->AddInt64Array("int64s", ints).ok());
  const uint64_t uints[] = {7};
  ASSERT_TRUE(kv->AddUInt64Array("uint64s", uints).ok());
  const double floats[] = {1.5, std::numeric_limits<double>::infinity()};
  ASSERT_TRUE(kv->AddFloat64Array("float64s", floats).ok());
  const bool bools[] = {true, false, true};
  ASSERT_TRUE(kv->AddBoolArray("bools", bools).ok());
  const absl::Span<const uint8_t> blobs[] = {kBlob, {}};
  ASSERT_TRUE(kv->AddBytesArray("blobs", blobs).ok());
  ASSERT_TRUE(kv->AddInt64Array("no_ints", {}).ok());
}

void ExpectEveryKvType(const KvSection& kv) {
  ASSERT_EQ(kv.entries().size(), 14u);
  EXPECT_EQ(kv.Find("string")->value.str(), "héllo wörld");
  EXPECT_EQ(kv.Find("empty")->value.str(), "");
  EXPECT_EQ(kv.Find("int64")->value.i64, -42);
  EXPECT_EQ(kv.Find("uint64")->value.u64, std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(kv.Find("float64")->value.f64, -0.5);
  EXPECT_EQ(kv.Find("bool")->value.type, KvType::kBool);
  EXPECT_TRUE(kv.Find("bool")->value.boolean);
  EXPECT_EQ(std::vector<uint8_t>(kv.Find("bytes")->value.bytes.begin(),
                                 kv.Find("bytes")->value.bytes.end()),
            std::vector<uint8_t>(std::begin(kBlob), std::end(kBlob)));
  const std::vector<KvValue> strings = kv.Find("strings")->value.Elements();
  ASSERT_EQ(strings.size(), 3u);
  EXPECT_EQ(strings[2].str(), "ü");
  EXPECT_EQ(kv.Find("int64s")->value.Elements()[0].i64, -1);
  EXPECT_EQ(kv.Find("uint64s")->value.Elements()[0].u64, 7u);
  EXPECT_TRUE(std::isinf(kv.Find("float64s")->value.Elements()[1].f64));
  const std::vector<KvValue> bools = kv.Find("bools")->value.Elements();
  ASSERT_EQ(bools.size(), 3u);
  EXPECT_FALSE(bools[1].boolean);
  const std::vector<KvValue> blobs = kv.Find("blobs")->value.Elements();
  ASSERT_EQ(blobs.size(), 2u);
  EXPECT_EQ(blobs[0].bytes.size(), 4u);
  EXPECT_EQ(blobs[1].bytes.size(), 0u);
  EXPECT_EQ(kv.Find("no_ints")->value.count, 0u);
  EXPECT_EQ(kv.Find("missing"), nullptr);
}

struct Written {
  std::vector<uint8_t> bytes;
  std::vector<std::string> names;
  std::vector<std::vector<std::vector<uint8_t>>> buffers;
};

Written WriteEverything(const HrryWriterOptions& options) {
  Written w;
  auto sink = [&w](absl::Span<const uint8_t> b) {
    w.bytes.insert(w.bytes.end(), b.begin(), b.end());
    return absl::OkStatus();
  };
  HrryWriter writer(options);
  EXPECT_TRUE(writer.Begin(sink).ok());
  uint32_t seed = 1;
  for (const vectors::Named& t : ContainerVectors()) {
    w.names.push_back(t.name);
    w.buffers.push_back(container::testing::BuffersFor(*t.descriptor, seed++));
    const absl::Status s =
        writer.Add(t.name, *t.descriptor,
                   container::testing::Spans(w.buffers.back()), sink);
    EXPECT_TRUE(s.ok()) << t.name << ": " << s;
  }
  EveryKvType(&writer.kv());
  EXPECT_TRUE(writer.Finish(sink).ok());
  EXPECT_EQ(writer.bytes_written(), w.bytes.size());
  return w;
}

HrryWriterOptions EverythingOptions() {
  HrryWriterOptions o;
  o.parse = vectors::AgreedOptions();
  o.with_kv = true;
  return o;
}

TEST(HrryRoundTripTest, ForwardReaderReadsWhatWasWritten) {
  const std::vector<vectors::Named> tensors = ContainerVectors();
  const Written w = WriteEverything(EverythingOptions());
  RecordingSink one_shot;
  for (size_t chunk : {w.bytes.size(), size_t{1}, size_t{4093}}) {
    SCOPED_TRACE(chunk);
    RecordingSink sink;
    HrryForwardReader reader(Agreed(), &sink);
    container::testing::FeedInChunks(
        w.bytes, chunk, [&](absl::Span<const uint8_t> p) {
          return reader.Feed(p) == FileState::kNeedMore;
        });
    ASSERT_EQ(reader.Finish(), FileState::kDone) << reader.status();
    EXPECT_TRUE(sink.errors.empty());
    ASSERT_EQ(sink.tensors.size(), tensors.size());
    for (size_t i = 0; i < tensors.size(); ++i) {
      SCOPED_TRACE(tensors[i].name);
      EXPECT_TRUE(sink.tensors[i].descriptor == *tensors[i].descriptor);
      EXPECT_EQ(sink.tensors[i].buffers, w.buffers[i]);
      ASSERT_NE(reader.entry_of_tensor(i), nullptr);
      EXPECT_EQ(reader.entry_of_tensor(i)->name, w.names[i]);
    }
    ExpectEveryKvType(reader.kv());
    if (chunk == w.bytes.size()) {
      one_shot = sink;
    } else {
      EXPECT_TRUE(container::testing::SameEvents(one_shot, sink));
    }
  }
}

TEST(HrryRoundTripTest, RandomAccessReaderReadsWhatWasWritten) {
  const std::vector<vectors::Named> tensors = ContainerVectors();
  for (bool sorted : {false, true}) {
    for (bool walk : {true, false}) {
      SCOPED_TRACE(sorted);
      SCOPED_TRACE(walk);
      HrryWriterOptions options = EverythingOptions();
      options.sorted_index = sorted;
      const Written w = WriteEverything(options);
      FileOptions read = Agreed();
      read.verify_region = walk;
      auto file = HrryFile::CopyOf(w.bytes, read);
      ASSERT_TRUE(file.ok()) << file.status();
      EXPECT_EQ((*file)->index().sorted(), sorted);
      std::vector<std::string> in_order;
      for (const IndexEntry* e : (*file)->InFileOrder()) {
        in_order.emplace_back(e->name);
      }
      EXPECT_EQ(in_order, w.names);
      for (size_t i = 0; i < tensors.size(); ++i) {
        SCOPED_TRACE(w.names[i]);
        const IndexEntry* e = (*file)->Find(w.names[i]);
        ASSERT_NE(e, nullptr);
        TensorDescriptor d;
        ASSERT_TRUE((*file)->ReadDescriptor(*e, &d).ok());
        EXPECT_TRUE(d == *tensors[i].descriptor);
        for (uint32_t b = 0; b < d.buffer_count; ++b) {
          absl::StatusOr<absl::Span<const uint8_t>> data =
              (*file)->Buffer(*e, d, b);
          ASSERT_TRUE(data.ok());
          EXPECT_EQ(std::vector<uint8_t>(data->begin(), data->end()),
                    w.buffers[i][b]);
        }
      }
      ExpectEveryKvType((*file)->kv());
      // Composite members, in file order (file-format.md § Composite
      // Tensors).
      auto members = (*file)->Members(*(*file)->Find("composite_overlay"));
      ASSERT_TRUE(members.ok());
      ASSERT_EQ(members->size(), 2u);
      EXPECT_EQ((*members)[0]->name, "overlay_base");
      EXPECT_EQ((*members)[1]->name, "overlay_correction");
      EXPECT_FALSE((*file)->Members(*(*file)->Find("overlay_base")).ok());
    }
  }
}

TEST(HrryRoundTripTest, OpensFromDisk) {
  const Written w = WriteEverything(EverythingOptions());
  const std::string path =
      std::string(std::getenv("TEST_TMPDIR")) + "/everything.hrry";
  {
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(w.bytes.data()),
              static_cast<std::streamsize>(w.bytes.size()));
  }
  auto file = HrryFile::Open(path, Agreed());
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ((*file)->bytes().size(), w.bytes.size());
  EXPECT_EQ((*file)->index().size(), w.names.size());
  EXPECT_FALSE(HrryFile::Open(path + ".missing").ok());
  const std::string empty = std::string(std::getenv("TEST_TMPDIR")) + "/empty";
  { std::ofstream out(empty, std::ios::binary); }
  EXPECT_EQ(RuleIdOf(HrryFile::Open(empty).status()), "FILE-HDR-01");
}

// Nested composites: a head's members skip over a nested head's members.
TEST(HrryRoundTripTest, NestedCompositeMembersInFileOrder) {
  std::vector<vectors::Named> tensors;
  tensors.push_back({"outer", container::testing::GroupHead(2)});
  tensors.push_back({"z_inner", container::testing::GroupHead(2)});
  tensors.push_back({"y", vectors::Dense(type_tag::kInt8, {3})});
  tensors.push_back({"x", vectors::Dense(type_tag::kInt8, {3})});
  tensors.push_back({"a_last", vectors::Dense(type_tag::kInt8, {3})});
  HrryWriterOptions options;
  options.sorted_index = true;  // index order differs from file order
  const std::vector<uint8_t> bytes =
      container::testing::WriteFile(tensors, options);
  container::testing::ExpectVerdict(bytes, FileOptions(), Rule::kNone);
  auto file = HrryFile::FromBytes(bytes);
  ASSERT_TRUE(file.ok());
  auto names = [&](absl::string_view head) {
    std::vector<std::string> out;
    const auto members = (*file)->Members(*(*file)->Find(head));
    EXPECT_TRUE(members.ok()) << members.status();
    if (!members.ok()) return out;
    for (const IndexEntry* e : *members) out.emplace_back(e->name);
    return out;
  };
  EXPECT_EQ(names("outer"), (std::vector<std::string>{"z_inner", "a_last"}));
  EXPECT_EQ(names("z_inner"), (std::vector<std::string>{"y", "x"}));
}

TEST(HrryRoundTripTest, LookupByName) {
  std::vector<vectors::Named> tensors;
  std::vector<std::string> names;
  for (int i = 0; i < 40; ++i) {
    names.push_back("layer." + std::to_string((i * 17) % 40) + ".weight");
    tensors.push_back({names.back(), vectors::Dense(type_tag::kInt8, {1})});
  }
  for (bool sorted : {false, true}) {
    HrryWriterOptions options;
    options.sorted_index = sorted;
    const std::vector<uint8_t> bytes =
        container::testing::WriteFile(tensors, options);
    auto file = HrryFile::FromBytes(bytes);
    ASSERT_TRUE(file.ok());
    for (const std::string& n : names) {
      const IndexEntry* e = (*file)->Find(n);
      ASSERT_NE(e, nullptr) << n;
      EXPECT_EQ(e->name, n);
    }
    for (const char* missing : {"", "a", "layer.", "layer.5.weigh", "zzz"}) {
      EXPECT_EQ((*file)->Find(missing), nullptr) << missing;
    }
  }
}

// Every structural boundary of a file: both readers refuse the truncated
// file with the same rule at the same offset; the forward reader reports a
// tensor complete only when its bytes all arrived, and never the end.
TEST(HrryRoundTripTest, TruncationAtEveryStructuralBoundary) {
  const Written w = WriteEverything(EverythingOptions());
  auto file = HrryFile::FromBytes(w.bytes, Agreed());
  ASSERT_TRUE(file.ok());
  const FileGeometry& g = (*file)->geometry();
  std::vector<uint64_t> cuts = {1,
                                63,
                                64,
                                65,
                                103,
                                104,
                                g.trailer.kv_offset,
                                g.trailer.kv_offset + 3,
                                g.trailer.index_offset,
                                g.trailer.index_offset + 9,
                                w.bytes.size() - kTrailerSize,
                                w.bytes.size() - 4,
                                w.bytes.size() - 1};
  std::vector<uint64_t> ends;  // where each tensor's bytes end
  for (const IndexEntry* e : (*file)->InFileOrder()) {
    const uint64_t d = e->descriptor_offset;
    const uint64_t d_end = d + e->descriptor_length;
    ends.push_back(e->data_length > 0 ? e->data_offset + e->data_length
                                      : d_end);
    for (uint64_t c :
         {d, d + 1, d + 4, d + 10, d_end - 1, d_end, d_end + 1, e->data_offset,
          e->data_offset + 1, ends.back(), ends.back() + 1}) {
      cuts.push_back(c);
    }
  }
  for (uint64_t cut : cuts) {
    SCOPED_TRACE(cut);
    const absl::Span<const uint8_t> part =
        absl::MakeConstSpan(w.bytes).first(cut);
    RecordingSink sink;
    const Rejection forward = ReadHrry(part, Agreed(), &sink);
    EXPECT_FALSE(forward.ok());
    if (cut < kMinFileSize) {
      EXPECT_EQ(forward.rule, Rule::kFileHdr01);
      EXPECT_EQ(forward.offset, cut);
    }
    // Same verdict in chunks and from the random-access reader (with and
    // without the walk).
    HrryForwardReader chunked(Agreed());
    container::testing::FeedInChunks(
        part, 4093, [&](absl::Span<const uint8_t> p) {
          return chunked.Feed(p) == FileState::kNeedMore;
        });
    // The verdict, accepted or not, is compared below.
    (void)chunked.Finish();
    EXPECT_EQ(chunked.rejection(), forward);
    for (bool walk : {true, false}) {
      FileOptions options = Agreed();
      options.verify_region = walk;
      const absl::Status mmap = HrryFile::FromBytes(part, options).status();
      EXPECT_EQ(RuleIdOf(mmap), RuleId(forward.rule)) << walk;
      EXPECT_EQ(OffsetOf(mmap), forward.offset) << walk;
    }
    EXPECT_TRUE(sink.errors.empty());
    EXPECT_FALSE(sink.ended);
    size_t complete = 0;
    for (const auto& t : sink.tensors) complete += t.complete;
    size_t arrived = 0;
    for (uint64_t end : ends) arrived += end <= cut;
    EXPECT_LE(complete, arrived);
  }
}

// A damaged file is judged alike by both readers: every byte, flipped in two
// ways, gives the same verdict, rule and offset. Two files: two tensors with
// a KV section, and a composite head with a multi-buffer member.
TEST(HrryRoundTripTest, ReadersAgreeOnEverySingleByteCorruption) {
  std::vector<vectors::Named> composite;
  composite.push_back({"head", container::testing::GroupHead(2)});
  composite.push_back({"m0", vectors::Dense(type_tag::kInt8, {5})});
  composite.push_back({"m1", vectors::PerChannelAsymInt8()});
  // Small partition box memory: a validator per read stays cheap.
  FileOptions options;
  options.limits.max_box_words = 4096;
  for (const std::vector<uint8_t>& original :
       {container::testing::SmallFile(true),
        container::testing::WriteFile(composite)}) {
    size_t rejected = 0;
    for (uint64_t at = 0; at < original.size(); ++at) {
      for (uint8_t flip : {uint8_t{0x01}, uint8_t{0x80}}) {
        std::vector<uint8_t> f = original;
        f[at] ^= flip;
        const Rejection forward = ReadHrry(f, options, nullptr);
        auto mmap = HrryFile::FromBytes(f, options);
        ASSERT_EQ(forward.ok(), mmap.ok())
            << "byte " << at << " ^ " << int{flip} << ": forward "
            << (forward.ok() ? "accepts" : RuleId(forward.rule));
        if (forward.ok()) continue;
        ++rejected;
        EXPECT_EQ(RuleIdOf(mmap.status()), RuleId(forward.rule))
            << "byte " << at << " ^ " << int{flip};
        EXPECT_EQ(OffsetOf(mmap.status()), forward.offset)
            << "byte " << at << " ^ " << int{flip};
      }
    }
    // Buffer bytes may change freely; nearly every other byte may not
    // (padding, header, descriptors, index, trailer).
    EXPECT_GT(rejected, original.size()) << original.size();
  }
}

TEST(HrryWriterTest, RefusesWhatAReaderWouldReject) {
  std::vector<uint8_t> out;
  auto sink = [&out](absl::Span<const uint8_t> b) {
    out.insert(out.end(), b.begin(), b.end());
    return absl::OkStatus();
  };
  auto d = vectors::Dense(type_tag::kInt8, {5});
  const std::vector<uint8_t> data(5, 1);
  const absl::Span<const uint8_t> buffers[] = {data};
  HrryWriter writer;
  EXPECT_FALSE(writer.Add("early", *d, buffers, sink).ok());
  ASSERT_TRUE(writer.Begin(sink).ok());
  EXPECT_TRUE(writer.Add("t", *d, buffers, sink).ok());
  EXPECT_FALSE(writer.Add("t", *d, buffers, sink).ok());     // duplicate
  EXPECT_FALSE(writer.Add("", *d, buffers, sink).ok());      // empty
  EXPECT_FALSE(writer.Add("\xFF", *d, buffers, sink).ok());  // not UTF-8
  EXPECT_FALSE(writer.Add(std::string(70000, 'n'), *d, buffers, sink).ok());
  auto aligned = vectors::Dense(type_tag::kInt8, {5});
  aligned->buffers[0].alignment = 16384;  // above data_buffer_alignment
  EXPECT_FALSE(writer.Add("big_alignment", *aligned, buffers, sink).ok());
  auto head = container::testing::GroupHead(1);
  ASSERT_TRUE(writer.Add("head", *head, {}, sink).ok());
  EXPECT_EQ(RuleIdOf(writer.Finish(sink)), "CMP-CLS-03");
  ASSERT_TRUE(writer.Add("member", *d, buffers, sink).ok());
  ASSERT_TRUE(writer.kv().AddBool("k", true).ok());
  EXPECT_FALSE(writer.Finish(sink).ok());  // KV without with_kv
}

TEST(HrryWriterTest, TensorCountHintMustCount) {
  HrryWriterOptions options;
  options.tensor_count_hint = 2;
  std::vector<uint8_t> out;
  auto sink = [&out](absl::Span<const uint8_t> b) {
    out.insert(out.end(), b.begin(), b.end());
    return absl::OkStatus();
  };
  HrryWriter writer(options);
  ASSERT_TRUE(writer.Begin(sink).ok());
  auto d = vectors::Dense(type_tag::kInt8, {0});
  const absl::Span<const uint8_t> buffers[] = {{}};
  ASSERT_TRUE(writer.Add("empty", *d, buffers, sink).ok());
  EXPECT_FALSE(writer.Finish(sink).ok());
}

// An empty tensor still gets an aligned data_offset (RESOLUTIONS.md 12) and
// a file with no tensor at all is valid.
TEST(HrryWriterTest, EmptyTensorsAndEmptyFiles) {
  std::vector<vectors::Named> tensors;
  tensors.push_back({"empty", vectors::Dense(type_tag::kFloat32, {0, 4})});
  tensors.push_back({"next", vectors::Dense(type_tag::kInt8, {2})});
  const std::vector<uint8_t> f = container::testing::WriteFile(tensors);
  container::testing::ExpectVerdict(f, FileOptions(), Rule::kNone);
  auto file = HrryFile::FromBytes(f);
  ASSERT_TRUE(file.ok());
  const IndexEntry* e = (*file)->Find("empty");
  EXPECT_EQ(e->data_offset % 4096, 0u);
  EXPECT_EQ(e->data_length, 0u);
  EXPECT_EQ((*file)->Find("next")->descriptor_offset, e->data_offset);
  // An empty tensor last: its empty data range starts where the KV section
  // does, which is not an overlap (FILE-IDX-13).
  std::vector<vectors::Named> last;
  last.push_back({"empty", vectors::Dense(type_tag::kFloat32, {0, 4})});
  HrryWriterOptions kv_options;
  kv_options.with_kv = true;
  const std::vector<uint8_t> g =
      container::testing::WriteFile(last, kv_options);
  container::testing::ExpectVerdict(g, FileOptions(), Rule::kNone);
  auto touching = HrryFile::FromBytes(g);
  ASSERT_TRUE(touching.ok());
  EXPECT_EQ((*touching)->Find("empty")->data_offset,
            (*touching)->geometry().trailer.kv_offset);
  const std::vector<uint8_t> none = container::testing::WriteFile({});
  container::testing::ExpectVerdict(none, FileOptions(), Rule::kNone);
  HrryWriterOptions with_kv;
  with_kv.with_kv = true;  // an empty KV section still sets the fields
  container::testing::ExpectVerdict(container::testing::WriteFile({}, with_kv),
                                    FileOptions(), Rule::kNone);
}

}  // namespace
}  // namespace hurray::stream::container
