// Fuzz target: the bare stream reader (stream/container/stream_reader.h) fed at
// input-chosen split points.
//
// Input format (bytes missing at the end read as 0):
//   byte 0   bit 0 permissive mode (else strict)
//            bit 1 tight container limits (64-byte buffers, 2048-byte
//                  stream, composite depth 2, 4 members, 24 words of
//                  partition boxes, overlap work 4)
//            bit 2 vectors::AgreedOptions (private type 0xF3 and one
//                  extension layout id agreed)
//            bit 3 end the split feed with FailSource() instead of Finish()
//            bit 4 also feed byte by byte (inputs up to 4 KiB)
//   byte 1   number of split points (0–31)
//   byte 2-3 seed of the split points (and of the istream chunk size)
//   rest     the stream: tensors back to back.
//
// The stream is read one-shot (Feed all, Finish), at the split points (each
// chunk copied into a heap block of exactly its size and freed after Feed,
// so ASan sees reads past a chunk or after Feed returned; empty chunks
// included), byte by byte, and through ReadStream(std::istream&). All must
// agree exactly: state, rule id and offset, position, tensors completed,
// and the events (descriptors, buffer bytes, completeness, end of stream).
// Each run's sink checks the TensorSink contract as events arrive
// (fuzz/checking_sink.h): OnTensorEnd only once all of a tensor's bytes
// arrived, pieces in order, contiguous, within byte_size, inside the chunk
// and exactly where the bare format puts them. And:
//   * kDone ⇔ accepted; then position = input size, OnEndOfStream came and
//     every tensor seen is complete;
//   * a rejection names a rule and an offset ≤ the input size; the
//     tensors completed are those the sink saw end;
//   * FailSource() on a stream still needing bytes is STREAM-IO at the
//     position reached; after a rejection it changes nothing;
//   * a stream accepted in strict mode is written again by StreamWriter
//     from the events (every tensor accepted, the same length) and reads
//     back to the same events.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "fuzz/checking_sink.h"
#include "fuzz/fuzz_util.h"
#include "parser/options.h"
#include "parser/rules.h"
#include "stream/container/stream_reader.h"
#include "stream/container/stream_writer.h"
#include "tests/vectors.h"

namespace hurray::fuzz {
namespace {

constexpr size_t kHeaderSize = 4;
constexpr size_t kByteByByteMax = 4096;

struct Outcome {
  stream::container::StreamState before_end;  // after the last Feed
  stream::container::StreamState state;
  Rejection rejection;
  uint64_t position = 0;
  uint64_t completed = 0;
  CheckingSink sink;
};

// Feeds `pieces` (a partition of `input`), then Finish() or FailSource().
void Read(absl::Span<const uint8_t> input, const std::vector<size_t>& cuts,
          const stream::container::StreamOptions& options, bool fail_source,
          Outcome* out) {
  out->sink.set_bare(true);
  stream::container::StreamReader reader(options, &out->sink);
  size_t at = 0;
  for (size_t i = 0; i <= cuts.size(); ++i) {
    const size_t end = i < cuts.size() ? cuts[i] : input.size();
    const size_t len = end - at;
    std::unique_ptr<uint8_t[]> block(new uint8_t[len == 0 ? 1 : len]);
    if (len > 0) std::memcpy(block.get(), input.data() + at, len);
    const absl::Span<const uint8_t> chunk(block.get(), len);
    out->sink.SetChunk(chunk, at);
    const stream::container::StreamState before = reader.state();
    const uint64_t position = reader.position();
    const stream::container::StreamState s = reader.Feed(chunk);
    HURRAY_FUZZ_CHECK(s == reader.state());
    if (before != stream::container::StreamState::kNeedMore) {
      // Nothing changes once rejected.
      HURRAY_FUZZ_CHECK(s == before && reader.position() == position);
    } else if (s == stream::container::StreamState::kNeedMore) {
      HURRAY_FUZZ_CHECK(reader.position() == end);  // consumed all of it
    }
    at = end;
  }
  out->sink.SetChunk({}, input.size());
  out->before_end = reader.state();
  const Rejection before = reader.rejection();
  out->state = fail_source ? reader.FailSource() : reader.Finish();
  HURRAY_FUZZ_CHECK(out->state == reader.state());
  out->rejection = reader.rejection();
  out->position = reader.position();
  out->completed = reader.tensors_completed();
  if (fail_source) {
    if (out->before_end == stream::container::StreamState::kNeedMore) {
      HURRAY_FUZZ_CHECK(out->state ==
                        stream::container::StreamState::kRejected);
      HURRAY_FUZZ_CHECK(out->rejection.rule == Rule::kStreamIo);
      HURRAY_FUZZ_CHECK(out->rejection.offset == input.size());
    } else {
      HURRAY_FUZZ_CHECK(out->rejection == before);
    }
  }
  // Finish() or FailSource() again: nothing changes.
  const stream::container::StreamState again = reader.Finish();
  HURRAY_FUZZ_CHECK(again == out->state &&
                    reader.rejection() == out->rejection);
}

void CheckOutcome(absl::Span<const uint8_t> input, const Outcome& o) {
  HURRAY_FUZZ_CHECK(o.state != stream::container::StreamState::kNeedMore);
  HURRAY_FUZZ_CHECK((o.state == stream::container::StreamState::kDone) ==
                    o.rejection.ok());
  HURRAY_FUZZ_CHECK(o.completed == o.sink.completed());
  HURRAY_FUZZ_CHECK(o.position <= input.size());
  if (o.state == stream::container::StreamState::kDone) {
    HURRAY_FUZZ_CHECK(o.position == input.size());
    HURRAY_FUZZ_CHECK(o.sink.ended());
    HURRAY_FUZZ_CHECK(o.completed == o.sink.tensors().size());
  } else {
    HURRAY_FUZZ_CHECK(!o.sink.ended());
    HURRAY_FUZZ_CHECK(o.rejection.offset <= input.size());
    if (o.rejection.rule == Rule::kStreamEofBuffer) {
      // The stream ended inside a buffer: that tensor is not complete.
      HURRAY_FUZZ_CHECK(!o.sink.tensors().empty() &&
                        !o.sink.tensors().back().complete);
    }
  }
}

void ExpectSame(const Outcome& a, const Outcome& b) {
  HURRAY_FUZZ_CHECK(a.state == b.state);
  HURRAY_FUZZ_CHECK(a.rejection == b.rejection);
  HURRAY_FUZZ_CHECK(a.position == b.position);
  HURRAY_FUZZ_CHECK(a.completed == b.completed);
  HURRAY_FUZZ_CHECK(SameEvents(a.sink, b.sink));
}

// A stream accepted in strict mode, written again by StreamWriter from what
// the reader reported (extension-layout data copied from the input), reads
// back to the same events.
void CheckRewrite(absl::Span<const uint8_t> input,
                  const stream::container::StreamOptions& options,
                  const Outcome& read) {
  std::vector<uint8_t> out;
  auto sink = [&out](absl::Span<const uint8_t> b) {
    out.insert(out.end(), b.begin(), b.end());
    return absl::OkStatus();
  };
  stream::container::StreamWriter writer(options.parse);
  for (const CheckingSink::Tensor& t : read.sink.tensors()) {
    const TensorDescriptor& d = *t.descriptor;
    std::vector<absl::Span<const uint8_t>> buffers(t.buffers.begin(),
                                                   t.buffers.end());
    absl::Span<const uint8_t> extension_data;
    if (layout_tag::IsExtension(d.layout_tag)) {
      extension_data = input.subspan(t.start + d.layout.extension_data_offset,
                                     d.layout.extension_data_length);
    }
    const absl::Status s = writer.Write(d, buffers, sink, extension_data);
    if (!s.ok()) {
      std::fprintf(stderr, "StreamWriter refused: %s\n", s.ToString().c_str());
      HURRAY_FUZZ_CHECK(false);
    }
  }
  HURRAY_FUZZ_CHECK(writer.Close().ok());
  HURRAY_FUZZ_CHECK(writer.bytes_written() == out.size());
  HURRAY_FUZZ_CHECK(writer.tensors_written() == read.sink.tensors().size());
  HURRAY_FUZZ_CHECK(out.size() == input.size());
  Outcome again;
  Read(out, {}, options, /*fail_source=*/false, &again);
  ExpectSame(read, again);
}

void Run(const uint8_t* data, size_t size) {
  uint8_t h[kHeaderSize] = {};
  if (size > 0) std::memcpy(h, data, std::min(size, kHeaderSize));
  const absl::Span<const uint8_t> input =
      size > kHeaderSize
          ? absl::MakeConstSpan(data + kHeaderSize, size - kHeaderSize)
          : absl::Span<const uint8_t>();

  stream::container::StreamOptions options;
  const Mode mode = (h[0] & 1) ? Mode::kPermissive : Mode::kStrict;
  if (h[0] & 4) {
    options.parse = vectors::AgreedOptions(mode);
  } else {
    options.parse.mode = mode;
  }
  if (h[0] & 2) {
    options.limits.max_buffer_bytes = 64;
    options.limits.max_total_bytes = 2048;
    options.limits.max_composite_depth = 2;
    options.limits.max_members = 4;
    options.limits.max_box_words = 24;
    options.limits.max_overlap_work = 4;
  }
  const bool fail_source = (h[0] & 8) != 0;

  // Split points: sorted, possibly repeated (empty chunks).
  std::mt19937 rng(static_cast<uint32_t>(h[2] | h[3] << 8));
  std::vector<size_t> cuts(h[1] & 31);
  for (size_t& c : cuts) c = input.empty() ? 0 : rng() % (input.size() + 1);
  std::sort(cuts.begin(), cuts.end());

  Outcome one_shot;
  Read(input, {}, options, /*fail_source=*/false, &one_shot);
  CheckOutcome(input, one_shot);

  Outcome split;
  Read(input, cuts, options, fail_source, &split);
  HURRAY_FUZZ_CHECK(split.before_end == one_shot.before_end);
  if (fail_source) {
    HURRAY_FUZZ_CHECK(!split.sink.ended());
    HURRAY_FUZZ_CHECK(SameTensors(split.sink, one_shot.sink));
    HURRAY_FUZZ_CHECK(split.completed == one_shot.completed);
  } else {
    CheckOutcome(input, split);
    ExpectSame(one_shot, split);
  }

  if ((h[0] & 16) && input.size() <= kByteByByteMax) {
    std::vector<size_t> every(input.size());
    for (size_t i = 0; i < every.size(); ++i) every[i] = i;
    Outcome bytes;
    Read(input, every, options, /*fail_source=*/false, &bytes);
    ExpectSame(one_shot, bytes);
  }

  if (one_shot.state == stream::container::StreamState::kDone &&
      options.parse.mode == Mode::kStrict) {
    CheckRewrite(input, options, one_shot);
  }

  // Through an istream, in chunks of 1–64 bytes.
  std::istringstream in(
      std::string(reinterpret_cast<const char*>(input.data()), input.size()));
  const Rejection from_istream =
      stream::container::ReadStream(in, options, nullptr, 1 + rng() % 64);
  HURRAY_FUZZ_CHECK(from_istream == one_shot.rejection);
  const Rejection from_memory =
      stream::container::ReadStream(input, options, nullptr);
  HURRAY_FUZZ_CHECK(from_memory == one_shot.rejection);
}

}  // namespace
}  // namespace hurray::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  hurray::fuzz::Run(data, size);
  return 0;
}
