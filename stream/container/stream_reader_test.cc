// The bare stream reader and writer (interchange.md § Scope, RESOLUTIONS.md
// 14): round trips of every vector, chunking independence, truncation at every
// structural boundary, limits, composites, and source failures.
#include "stream/container/stream_reader.h"

#include <cstring>
#include <sstream>
#include <streambuf>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "parser/element_type.h"
#include "parser/encoder.h"
#include "parser/rules.h"
#include "stream/container/byte_sink.h"
#include "stream/container/stream_writer.h"
#include "stream/container/testing/test_util.h"
#include "tests/vectors.h"

namespace hurray::stream::container {
namespace {

using container::testing::ContainerVectors;
using container::testing::RecordingSink;

// Where each tensor of a written stream sits.
struct Layout {
  uint64_t start;              // descriptor
  uint64_t data;               // first buffer byte (= descriptor end)
  std::vector<uint64_t> ends;  // end of each buffer
  uint64_t end;                // end of the tensor
  bool head;
  uint64_t member_count_at = 0;  // heads: their member_count field
};

struct Written {
  std::vector<uint8_t> bytes;
  std::vector<Layout> layout;
  std::vector<std::vector<std::vector<uint8_t>>> buffers;
};

template <typename... T>
std::vector<vectors::Named> Tensors(T... named) {
  std::vector<vectors::Named> v;
  (v.push_back(vectors::Named{named.first, std::move(named.second)}), ...);
  return v;
}

std::pair<std::string, std::unique_ptr<TensorDescriptor>> T(
    std::string name, std::unique_ptr<TensorDescriptor> d) {
  return {std::move(name), std::move(d)};
}

StreamOptions Agreed(Mode mode = Mode::kStrict) {
  StreamOptions o;
  o.parse = vectors::AgreedOptions(mode);
  return o;
}

Written WriteAll(const std::vector<vectors::Named>& tensors,
                 Mode mode = Mode::kStrict, bool complete = true) {
  Written w;
  StreamWriter writer(vectors::AgreedOptions(mode));
  auto sink = [&w](absl::Span<const uint8_t> b) {
    w.bytes.insert(w.bytes.end(), b.begin(), b.end());
    return absl::OkStatus();
  };
  uint32_t seed = 1;
  for (const vectors::Named& t : tensors) {
    const TensorDescriptor& d = *t.descriptor;
    Layout l;
    l.start = w.bytes.size();
    l.head = d.layout_tag == layout_tag::kComposite;
    if (l.head) l.member_count_at = l.start + ComputeOffsets(d)->layout + 4;
    w.buffers.push_back(container::testing::BuffersFor(d, seed++));
    const absl::Status s =
        writer.Write(d, container::testing::Spans(w.buffers.back()), sink);
    EXPECT_TRUE(s.ok()) << t.name << ": " << s;
    l.data = l.start + vectors::Bytes(d).size();
    uint64_t at = l.data;
    for (uint32_t i = 0; i < d.buffer_count; ++i) {
      at += d.buffers[i].byte_size;
      l.ends.push_back(at);
    }
    l.end = at;
    EXPECT_EQ(l.end, w.bytes.size()) << t.name;
    w.layout.push_back(l);
  }
  EXPECT_EQ(writer.Close().ok(), complete);
  return w;
}

Rejection ReadChunked(absl::Span<const uint8_t> bytes, size_t chunk,
                      const StreamOptions& options, RecordingSink* sink) {
  StreamReader reader(options, sink);
  container::testing::FeedInChunks(
      bytes, chunk, [&](absl::Span<const uint8_t> piece) {
        return reader.Feed(piece) == StreamState::kNeedMore;
      });
  return reader.Finish() == StreamState::kRejected ? reader.rejection()
                                                   : kAccepted;
}

TEST(StreamReaderTest, EmptyStreamIsValid) {
  RecordingSink sink;
  StreamReader reader(StreamOptions(), &sink);
  EXPECT_EQ(reader.Finish(), StreamState::kDone);
  EXPECT_TRUE(sink.ended);
  EXPECT_TRUE(sink.tensors.empty());
}

TEST(StreamReaderTest, RoundTripsEveryVector) {
  const std::vector<vectors::Named> tensors = ContainerVectors();
  ASSERT_GE(tensors.size(), 36u);
  const Written w = WriteAll(tensors);
  RecordingSink sink;
  const Rejection r = ReadStream(w.bytes, Agreed(), &sink);
  ASSERT_TRUE(r.ok()) << RuleId(r.rule) << " at " << r.offset;
  EXPECT_TRUE(sink.errors.empty()) << sink.errors.front();
  ASSERT_EQ(sink.tensors.size(), tensors.size());
  EXPECT_TRUE(sink.ended);
  for (size_t i = 0; i < tensors.size(); ++i) {
    SCOPED_TRACE(tensors[i].name);
    EXPECT_TRUE(sink.tensors[i].descriptor == *tensors[i].descriptor);
    EXPECT_EQ(sink.tensors[i].buffers, w.buffers[i]);
    EXPECT_TRUE(sink.tensors[i].complete);
  }
}

// Vectors with a composite member section but no head are descriptor-valid;
// binding them is the composite validator's (CMP-MEM-11, strict-only), so
// permissive mode reads them here too.
TEST(StreamReaderTest, RoundTripsUnboundMembersInPermissiveMode) {
  const std::vector<vectors::Named> tensors =
      ContainerVectors(/*unbound_members=*/true);
  const Written w = WriteAll(tensors, Mode::kPermissive);
  RecordingSink sink;
  const Rejection r = ReadStream(w.bytes, Agreed(Mode::kPermissive), &sink);
  ASSERT_TRUE(r.ok()) << RuleId(r.rule) << " at " << r.offset;
  EXPECT_EQ(sink.tensors.size(), tensors.size());
}

TEST(StreamReaderTest, AnyChunkingGivesTheSameEvents) {
  const Written w = WriteAll(ContainerVectors());
  RecordingSink one_shot;
  ASSERT_TRUE(ReadStream(w.bytes, Agreed(), &one_shot).ok());
  for (size_t chunk :
       {size_t{1}, size_t{2}, size_t{3}, size_t{7}, size_t{61}, size_t{4096}}) {
    SCOPED_TRACE(chunk);
    RecordingSink sink;
    ASSERT_TRUE(ReadChunked(w.bytes, chunk, Agreed(), &sink).ok());
    EXPECT_TRUE(sink.errors.empty());
    EXPECT_TRUE(container::testing::SameEvents(one_shot, sink));
    if (chunk == 1) {  // a piece per byte: no piece was gathered or copied
      size_t bytes = 0;
      for (const auto& t : w.buffers) {
        for (const auto& b : t) bytes += b.size();
      }
      EXPECT_EQ(sink.pieces, bytes);
    }
  }
}

// Pieces are views into the fed chunk, not copies.
TEST(StreamReaderTest, PiecesPointIntoTheChunk) {
  auto d = vectors::Dense(type_tag::kFloat32, {3, 4});
  const Written w = WriteAll(Tensors(T("t", std::move(d))));
  struct Sink : TensorSink {
    absl::Status OnBufferPiece(uint32_t, uint64_t offset,
                               absl::Span<const uint8_t> piece) override {
      pointers.push_back(piece.data() - offset);
      return absl::OkStatus();
    }
    std::vector<const uint8_t*> pointers;
  } sink;
  ASSERT_TRUE(ReadStream(w.bytes, StreamOptions(), &sink).ok());
  ASSERT_EQ(sink.pointers.size(), 1u);
  EXPECT_EQ(sink.pointers[0], w.bytes.data() + w.layout[0].data);
}

// A sink's failure stops the reader at once (tensor_sink.h): no further
// event, and the reader's status is the sink's, whatever the chunking.
TEST(StreamReaderTest, SinkFailureStopsTheReaderAtOnce) {
  const Written w =
      WriteAll(Tensors(T("a", vectors::Dense(type_tag::kFloat32, {3, 4})),
                       T("b", vectors::Dense(type_tag::kFloat32, {2, 2})),
                       T("c", vectors::Dense(type_tag::kFloat32, {5}))));
  struct Sink : TensorSink {
    absl::Status OnDescriptor(const TensorDescriptor&) override {
      after_failure += failed;
      ++descriptors;
      return absl::OkStatus();
    }
    absl::Status OnBufferPiece(uint32_t, uint64_t,
                               absl::Span<const uint8_t>) override {
      after_failure += failed;
      if (descriptors < 2) return absl::OkStatus();
      failed = true;
      return absl::DataLossError("disk full");
    }
    absl::Status OnTensorEnd() override {
      after_failure += failed;
      ++ends;
      return absl::OkStatus();
    }
    absl::Status OnEndOfStream() override {
      ++after_failure;
      return absl::OkStatus();
    }
    bool failed = false;
    int descriptors = 0, ends = 0, after_failure = 0;
  };
  for (size_t chunk : {size_t{1}, size_t{7}, w.bytes.size()}) {
    SCOPED_TRACE(chunk);
    Sink sink;
    StreamReader reader(StreamOptions(), &sink);
    for (size_t at = 0; at < w.bytes.size(); at += chunk) {
      const size_t n = std::min(chunk, w.bytes.size() - at);
      (void)reader.Feed(absl::MakeConstSpan(w.bytes).subspan(at, n));
    }
    EXPECT_EQ(reader.Finish(), StreamState::kRejected);
    EXPECT_EQ(reader.status(), absl::DataLossError("disk full"));
    EXPECT_EQ(sink.descriptors, 2);
    EXPECT_TRUE(sink.failed);
    EXPECT_EQ(sink.after_failure, 0);
    EXPECT_EQ(sink.ends, 1);
    EXPECT_EQ(reader.tensors_completed(), 1u);
  }
}

// The sink may refuse the end of the stream itself: the walker remembers
// that failure like any other (the reader keeps no status of its own).
TEST(StreamReaderTest, SinkRefusingTheEndRejectsTheStream) {
  struct Sink : TensorSink {
    absl::Status OnEndOfStream() override {
      ++ends;
      return absl::NotFoundError("no tensor named 'x'");
    }
    int ends = 0;
  };
  Sink sink;
  StreamReader reader(StreamOptions(), &sink);
  EXPECT_EQ(reader.Finish(), StreamState::kRejected);
  EXPECT_EQ(reader.state(), StreamState::kRejected);
  EXPECT_EQ(reader.status(), absl::NotFoundError("no tensor named 'x'"));
  EXPECT_EQ(reader.rejection().rule, Rule::kStreamIo);
  // Sticky: asking again changes nothing and calls the sink no more.
  EXPECT_EQ(reader.Finish(), StreamState::kRejected);
  EXPECT_EQ(sink.ends, 1);
}

// RESOLUTIONS.md 14: a stream cut between tensors is valid; cut inside a
// descriptor it is DESC-HDR-01, inside a buffer STREAM-EOF-BUFFER; a tensor
// is reported complete only when all its bytes arrived; cut after a head
// before its members, CMP-CLS-03.
TEST(StreamReaderTest, TruncationAtEveryStructuralBoundary) {
  const Written w = WriteAll(ContainerVectors());
  std::vector<uint64_t> cuts = {0};
  for (const Layout& l : w.layout) {
    for (uint64_t c : {l.start + 1, l.start + 4, l.data - 1, l.data, l.end}) {
      cuts.push_back(c);
    }
    for (uint64_t e : l.ends) {
      cuts.push_back(e);
      if (e > l.data) cuts.push_back(e - 1);
    }
  }
  for (uint64_t cut : cuts) {
    SCOPED_TRACE(cut);
    RecordingSink sink;
    const Rejection r = ReadChunked(absl::MakeConstSpan(w.bytes).first(cut), 5,
                                    Agreed(), &sink);
    EXPECT_TRUE(sink.errors.empty());
    // Expected outcome from the layout.
    size_t complete = 0;
    Rule want = Rule::kNone;
    uint64_t want_at = cut;
    uint32_t open_members = 0;  // members still owed to the open head
    for (size_t i = 0; i < w.layout.size(); ++i) {
      const Layout& l = w.layout[i];
      if (l.end <= cut && !(l.start == cut && l.end == cut)) {
        ++complete;
        if (open_members > 0) --open_members;
        if (l.head) {
          open_members = 2;  // both heads have two members, none nested
          want_at = l.member_count_at;
        }
        continue;
      }
      if (cut > l.start && cut < l.data) want = Rule::kDescHdr01;
      if (cut >= l.data && cut < l.end) want = Rule::kStreamEofBuffer;
      break;
    }
    if (want == Rule::kNone && open_members > 0) {
      want = Rule::kCmpCls03;  // at the head's member_count
    } else {
      want_at = cut;
    }
    EXPECT_EQ(r.rule, want) << RuleId(r.rule);
    if (want != Rule::kNone) {
      EXPECT_EQ(r.offset, want_at);
    }
    size_t reported = 0;
    for (const auto& t : sink.tensors) reported += t.complete;
    EXPECT_EQ(reported, complete);
    EXPECT_EQ(sink.ended, want == Rule::kNone);
  }
}

TEST(StreamReaderTest, RejectionsCarryStreamOffsets) {
  auto a = vectors::Dense(type_tag::kFloat32, {3, 4});
  auto b = vectors::Dense(type_tag::kInt8, {5});
  const Written w =
      WriteAll(Tensors(T("a", std::move(a)), T("b", std::move(b))));
  const uint64_t second = w.layout[1].start;
  // A reserved flag bit in the second descriptor: DESC-HDR-07 at its flags.
  std::vector<uint8_t> bytes = w.bytes;
  bytes[second + 10 + 3] |= 0x80;
  RecordingSink sink;
  Rejection r = ReadChunked(bytes, 3, StreamOptions(), &sink);
  EXPECT_EQ(r.rule, Rule::kDescHdr07);
  EXPECT_EQ(r.offset, second + 10);
  ASSERT_EQ(sink.tensors.size(), 1u);  // nothing of the rejected tensor
  // Bytes after the last tensor that are not a descriptor: DESC-HDR-02.
  bytes = w.bytes;
  bytes.insert(bytes.end(), {'J', 'U', 'N', 'K'});
  r = ReadStream(bytes, StreamOptions(), nullptr);
  EXPECT_EQ(r.rule, Rule::kDescHdr02);
  EXPECT_EQ(r.offset, w.bytes.size());
}

// REJECT-RULES.md §5: a declared size of 2^63 bytes is refused by the limit
// before anything is read or allocated (stream/container/stream_alloc_test.cc
// counts).
TEST(StreamReaderTest, HugeDeclaredBufferIsRefusedByTheLimit) {
  auto d = vectors::Dense(type_tag::kFloat32, {uint64_t{1} << 61});
  ASSERT_EQ(d->buffers[0].byte_size, uint64_t{1} << 63);
  d->offsets = *ComputeOffsets(*d);
  const std::vector<uint8_t> bytes = vectors::Bytes(*d);
  RecordingSink sink;
  const Rejection r = ReadStream(bytes, StreamOptions(), &sink);
  EXPECT_EQ(r.rule, Rule::kLimitBufferBytes);
  EXPECT_EQ(r.offset, d->offsets.handle(0));
  EXPECT_TRUE(sink.tensors.empty());
  // Raising the buffer limit leaves the total limit to refuse it...
  StreamOptions options;
  options.limits.max_buffer_bytes = ~uint64_t{0};
  options.limits.max_total_bytes = uint64_t{1} << 40;
  EXPECT_EQ(ReadStream(bytes, options, &sink).rule, Rule::kLimitTotalBytes);
  // ...and with neither, the stream is only truncated.
  options.limits.max_total_bytes = ~uint64_t{0};
  const Rejection cut = ReadStream(bytes, options, &sink);
  EXPECT_EQ(cut.rule, Rule::kStreamEofBuffer);
  EXPECT_EQ(cut.offset, bytes.size());
}

TEST(StreamReaderTest, LimitsAreExact) {
  const Written w =
      WriteAll(Tensors(T("a", vectors::Dense(type_tag::kFloat32, {3, 4})),
                       T("b", vectors::Dense(type_tag::kInt8, {5}))));
  StreamOptions options;
  options.limits.max_buffer_bytes = 48;  // a's buffer is 48 bytes
  EXPECT_TRUE(ReadStream(w.bytes, options, nullptr).ok());
  options.limits.max_buffer_bytes = 47;
  Rejection r = ReadStream(w.bytes, options, nullptr);
  EXPECT_EQ(r.rule, Rule::kLimitBufferBytes);
  EXPECT_EQ(r.offset, w.layout[0].data - 16);  // a's only handle
  options = StreamOptions();
  options.limits.max_total_bytes = w.bytes.size();
  EXPECT_TRUE(ReadStream(w.bytes, options, nullptr).ok());
  // One byte less: b's buffer would end past the limit.
  options.limits.max_total_bytes = w.bytes.size() - 1;
  r = ReadStream(w.bytes, options, nullptr);
  EXPECT_EQ(r.rule, Rule::kLimitTotalBytes);
  EXPECT_EQ(r.offset, w.layout[1].data - 16);
  // A limit inside a descriptor: the first byte past it is refused.
  options.limits.max_total_bytes = w.layout[1].start + 3;
  for (size_t chunk : {size_t{1}, w.bytes.size()}) {
    r = ReadChunked(w.bytes, chunk, options, nullptr);
    EXPECT_EQ(r.rule, Rule::kLimitTotalBytes);
    EXPECT_EQ(r.offset, w.layout[1].start + 3);
  }
}

// A streambuf that serves `bytes` then fails (istream sets badbit).
class FailingBuf : public std::streambuf {
 public:
  explicit FailingBuf(std::string bytes) : bytes_(std::move(bytes)) {
    setg(bytes_.data(), bytes_.data(), bytes_.data() + bytes_.size());
  }

 protected:
  int_type underflow() override { throw std::runtime_error("disk on fire"); }

 private:
  std::string bytes_;
};

TEST(StreamReaderTest, SourceFailureIsStreamIo) {
  const Written w =
      WriteAll(Tensors(T("a", vectors::Dense(type_tag::kFloat32, {64}))));
  const std::string prefix(w.bytes.begin(), w.bytes.begin() + 100);
  FailingBuf buf(prefix);
  std::istream in(&buf);
  RecordingSink sink;
  const Rejection r = ReadStream(in, StreamOptions(), &sink, 25);
  EXPECT_EQ(r.rule, Rule::kStreamIo);
  EXPECT_EQ(r.offset, 100u);
  ASSERT_EQ(sink.tensors.size(), 1u);
  EXPECT_FALSE(sink.tensors[0].complete);
  // The same bytes from a healthy istream are read completely.
  std::istringstream ok(std::string(w.bytes.begin(), w.bytes.end()));
  EXPECT_TRUE(ReadStream(ok, StreamOptions(), nullptr, 16).ok());
}

// layouts/composite.md § Torn composite: strict rejects, permissive accepts.
TEST(StreamReaderTest, TornCompositeIsStrictOnly) {
  std::vector<vectors::Named> tensors;
  tensors.push_back({"head", container::testing::GroupHead(3)});
  tensors.push_back({"m0", vectors::Dense(type_tag::kInt8, {4})});
  tensors.push_back({"m1", vectors::Dense(type_tag::kInt8, {4})});
  const Written w = WriteAll(tensors, Mode::kStrict, /*complete=*/false);
  Rejection r = ReadStream(w.bytes, StreamOptions(), nullptr);
  EXPECT_EQ(r.rule, Rule::kCmpCls03);
  EXPECT_EQ(r.offset, w.layout[0].member_count_at);
  StreamOptions permissive;
  permissive.parse.mode = Mode::kPermissive;
  RecordingSink sink;
  EXPECT_TRUE(ReadStream(w.bytes, permissive, &sink).ok());
  EXPECT_EQ(sink.tensors.size(), 3u);
}

// layouts/composite.md § Binding: 8 nested heads are fine, 9 are not; a
// head with no members closes at once.
TEST(StreamReaderTest, CompositeNestingDepth) {
  for (uint32_t depth : {1u, 8u, 9u}) {
    SCOPED_TRACE(depth);
    std::vector<vectors::Named> tensors;
    for (uint32_t k = 0; k < depth; ++k) {
      tensors.push_back({"head", container::testing::GroupHead(1)});
    }
    tensors.push_back({"leaf", vectors::Dense(type_tag::kInt8, {4})});
    tensors.push_back({"empty_head", container::testing::GroupHead(0)});
    tensors.push_back({"after", vectors::Dense(type_tag::kInt8, {4})});
    Written w;
    for (const vectors::Named& t : tensors) {
      const std::vector<uint8_t> b = vectors::Bytes(*t.descriptor);
      if (t.name == "leaf" || t.name == "after") {
        w.bytes.insert(w.bytes.end(), b.begin(), b.end());
        w.bytes.insert(w.bytes.end(), 4, 0x11);
      } else {
        w.layout.push_back({w.bytes.size(), 0, {}, 0, true});
        w.bytes.insert(w.bytes.end(), b.begin(), b.end());
      }
    }
    const Rejection r = ReadStream(w.bytes, StreamOptions(), nullptr);
    if (depth <= 8) {
      EXPECT_TRUE(r.ok()) << RuleId(r.rule);
    } else {
      EXPECT_EQ(r.rule, Rule::kCmpMem10);
      EXPECT_EQ(r.offset, w.layout[8].start + 15);  // its layout_tag
    }
  }
}

// Raw stream bytes of descriptors, each followed by pattern buffers.
struct RawStream {
  std::vector<uint8_t> bytes;
  std::vector<uint64_t> starts;
  std::vector<PartOffsets> offsets;
  void Add(const TensorDescriptor& d) {
    starts.push_back(bytes.size());
    offsets.push_back(*ComputeOffsets(d));
    const std::vector<uint8_t> b = vectors::Bytes(d);
    bytes.insert(bytes.end(), b.begin(), b.end());
    for (const auto& buffer : container::testing::BuffersFor(d, 3)) {
      bytes.insert(bytes.end(), buffer.begin(), buffer.end());
    }
  }
};

std::unique_ptr<TensorDescriptor> Half(uint64_t row) {
  auto d = vectors::Dense(type_tag::kFloat32, {4, 8});
  d->flags |= flag::kHasShard;
  d->shard.parent_shape[0] = 8;
  d->shard.parent_shape[1] = 8;
  d->shard.shard_offset[0] = row;
  return d;
}

// The composite validator's rules come out with stream offsets
// (layouts/composite.md § Validation).
TEST(StreamReaderTest, CompositeRulesCarryStreamOffsets) {
  // A member section outside an overlay (CMP-MEM-11, strict-only).
  RawStream unbound;
  unbound.Add(*vectors::Dense(type_tag::kInt8, {3}));
  unbound.Add(*vectors::WithCompositeMember());
  Rejection r = ReadStream(unbound.bytes, StreamOptions(), nullptr);
  EXPECT_EQ(r.rule, Rule::kCmpMem11);
  EXPECT_EQ(r.offset, unbound.starts[1] + 10);  // its flags
  StreamOptions permissive;
  permissive.parse.mode = Mode::kPermissive;
  EXPECT_TRUE(ReadStream(unbound.bytes, permissive, nullptr).ok());
  // The same after a composite closed: still about the unbound descriptor.
  RawStream after;
  after.Add(*vectors::CompositePartition());
  after.Add(*Half(0));
  after.Add(*Half(4));
  after.Add(*vectors::WithCompositeMember());
  r = ReadStream(after.bytes, StreamOptions(), nullptr);
  EXPECT_EQ(r.rule, Rule::kCmpMem11);
  EXPECT_EQ(r.offset, after.starts[3] + 10);
  // A partition member without a shard section (CMP-MEM-01).
  RawStream no_shard;
  no_shard.Add(*vectors::CompositePartition());
  no_shard.Add(*Half(0));
  no_shard.Add(*vectors::Dense(type_tag::kFloat32, {4, 8}));
  r = ReadStream(no_shard.bytes, permissive, nullptr);
  EXPECT_EQ(r.rule, Rule::kCmpMem01);
  EXPECT_EQ(r.offset, no_shard.starts[2] + 10);
  // Two overlapping halves: CMP-CLS-01 at the later one's shard_offset,
  // found when the partition closes.
  RawStream overlap;
  overlap.Add(*vectors::Dense(type_tag::kInt8, {3}));
  overlap.Add(*vectors::CompositePartition());
  overlap.Add(*Half(0));
  overlap.Add(*Half(2));
  r = ReadStream(overlap.bytes, StreamOptions(), nullptr);
  EXPECT_EQ(r.rule, Rule::kCmpCls01);
  EXPECT_EQ(r.offset, overlap.starts[3] + overlap.offsets[3].shard + 16);
  // Halves that leave a gap: CMP-CLS-02 at the head's member_count.
  RawStream gap;
  gap.Add(*vectors::CompositePartition());
  gap.Add(*Half(0));
  auto quarter = Half(4);
  quarter->shape[0] = 2;
  gap.Add(*quarter);
  r = ReadStream(gap.bytes, StreamOptions(), nullptr);
  EXPECT_EQ(r.rule, Rule::kCmpCls02);
  EXPECT_EQ(r.offset, gap.offsets[0].layout + 4u);
}

TEST(StreamWriterTest, RefusesWhatAReaderWouldReject) {
  StreamWriter writer;
  std::vector<uint8_t> out;
  auto sink = [&out](absl::Span<const uint8_t> b) {
    out.insert(out.end(), b.begin(), b.end());
    return absl::OkStatus();
  };
  auto d = vectors::Dense(type_tag::kFloat32, {3, 4});
  const std::vector<uint8_t> short_buffer(47);
  const absl::Span<const uint8_t> one[] = {short_buffer};
  EXPECT_FALSE(writer.Write(*d, one, sink).ok());
  d->flags |= 1u << 7;  // reserved flag bit
  const std::vector<uint8_t> buffer(48);
  const absl::Span<const uint8_t> good[] = {buffer};
  const absl::Status s = writer.Write(*d, good, sink);
  EXPECT_EQ(RuleIdOf(s), "DESC-HDR-07");
  EXPECT_TRUE(out.empty());
  auto head = container::testing::GroupHead(1);
  EXPECT_TRUE(writer.Write(*head, {}, sink).ok());
  EXPECT_EQ(RuleIdOf(writer.Close()), "CMP-CLS-03");
  EXPECT_EQ(writer.tensors_written(), 1u);
  EXPECT_EQ(writer.bytes_written(), out.size());
}

TEST(StreamWriterTest, WritesToAnOstream) {
  auto d = vectors::Dense(type_tag::kInt8, {5});
  const std::vector<uint8_t> buffer = container::testing::Pattern(5, 9);
  const absl::Span<const uint8_t> buffers[] = {buffer};
  std::ostringstream os;
  OstreamSink out(&os);
  StreamWriter writer;
  ASSERT_TRUE(writer.Write(*d, buffers, out).ok());
  ASSERT_TRUE(writer.Write(*d, buffers, out).ok());
  const std::string bytes = os.str();
  EXPECT_EQ(bytes.size(), writer.bytes_written());
  RecordingSink sink;
  ASSERT_TRUE(
      ReadStream(container::testing::AsBytes(bytes), StreamOptions(), &sink)
          .ok());
  ASSERT_EQ(sink.tensors.size(), 2u);
  EXPECT_EQ(sink.tensors[1].buffers[0], buffer);
  // A failed ostream is an error, not a silent loss.
  os.setstate(std::ios::badbit);
  EXPECT_FALSE(writer.Write(*d, buffers, out).ok());
}

}  // namespace
}  // namespace hurray::stream::container
