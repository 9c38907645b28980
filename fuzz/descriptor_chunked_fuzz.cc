// Fuzz target: differential test of chunked feeding against one-shot
// decoding, over a stream of descriptors.
//
// Input format (bytes missing at the end read as 0):
//   byte 0   options:  bit 0 permissive mode (else strict)
//                      bit 1 validate = false (framing rules only)
//                      bit 2 default ParseOptions (else
//                            vectors::AgreedOptions: private type 0xF3 and
//                            one extension layout id agreed)
//                      bit 3 tight limits (512-byte descriptors, rank 8,
//                            tiled depth 2, 32-byte quantization section,
//                            16 bytes of extension-layout data)
//   byte 1   chunking: bits 0-2 maximum chunk length, one of
//                            1, 2, 3, 5, 8, 16, 64, 4096 (index)
//                      bit 3 chunks may be empty (length 0)
//                      bits 4-7 seed, low bits
//   byte 2-3 seed, high bits (the seed of the chunk-length generator)
//   rest     the stream: descriptors back to back.
//
// One DescriptorDecoder (the "chunked" decoder) reads the whole stream in
// chunks of pseudo-random lengths, calling Finish() when the input ends.
// When it finishes a descriptor (done or rejected) it is Reset() and goes on
// with the rest of the current chunk, as a streaming reader would; after a
// rejection the next descriptor starts right after the bytes the decoder
// consumed. Each descriptor is also decoded one-shot, on a fresh decoder,
// from the same stream position to the end of the input (Feed + Finish).
// The two must agree exactly:
//   * the same state, the same bytes consumed (Feed results and
//     consumed());
//   * when done: equal descriptors (operator==) and consumed ==
//     descriptor_length;
//   * when rejected: the same rule and byte offset.
// Also checked: a chunk is consumed whole unless the descriptor ends in it;
// after done or rejected (by Feed or by Finish), Feed consumes nothing and
// Finish() changes nothing; Reset() clears the progress. Because the one-shot
// decoder is fresh and the chunked one is reused, any state that leaks through
// Reset() into the next descriptor's result is a difference too.
//
// Every chunk is copied into a heap block of exactly its length that is
// freed after the Feed call, so AddressSanitizer reports a read past the end
// of a chunk (not only past the end of the input) and any use of a chunk
// after Feed returned.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

#include "absl/types/span.h"
#include "fuzz/fuzz_util.h"
#include "parser/decoder.h"
#include "parser/descriptor.h"
#include "parser/options.h"
#include "parser/rules.h"
#include "tests/vectors.h"

namespace hurray::fuzz {
namespace {

constexpr size_t kHeaderSize = 4;
constexpr int kMaxDescriptors = 16;
constexpr uint32_t kMaxChunk[8] = {1, 2, 3, 5, 8, 16, 64, 4096};

struct Header {
  ParseOptions options;
  uint32_t max_chunk = 1;
  bool allow_empty = false;
  uint32_t seed = 0;
};

Header ParseHeader(const uint8_t* data, size_t size) {
  uint8_t h[kHeaderSize] = {};
  std::memcpy(h, data, std::min(size, kHeaderSize));
  Header out;
  const Mode mode = (h[0] & 1) ? Mode::kPermissive : Mode::kStrict;
  if (h[0] & 4) {
    out.options.mode = mode;
  } else {
    out.options = vectors::AgreedOptions(mode);
  }
  out.options.validate = (h[0] & 2) == 0;
  if (h[0] & 8) {
    Limits& l = out.options.limits;
    l.max_descriptor_bytes = 512;
    l.max_rank = 8;
    l.max_tiled_depth = 2;
    l.max_quantization_bytes = 32;
    l.max_extension_data_bytes = 16;
  }
  out.max_chunk = kMaxChunk[h[1] & 7];
  out.allow_empty = (h[1] & 8) != 0;
  out.seed = (h[1] >> 4) | (uint32_t{h[2]} << 4) | (uint32_t{h[3]} << 12);
  return out;
}

// Chunk lengths from SplitMix64 seeded by the header.
class ChunkPlan {
 public:
  explicit ChunkPlan(const Header& h)
      : state_(h.seed), max_(h.max_chunk), allow_empty_(h.allow_empty) {}

  size_t Next() {
    const uint64_t r = Mix();
    if (allow_empty_ && empty_run_ < 8) {
      const size_t n = r % (max_ + 1);
      empty_run_ = n == 0 ? empty_run_ + 1 : 0;
      return n;
    }
    empty_run_ = 0;  // at most 8 empty chunks in a row
    return 1 + r % max_;
  }

 private:
  uint64_t Mix() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }

  uint64_t state_;
  uint32_t max_;
  bool allow_empty_;
  int empty_run_ = 0;
};

[[noreturn]] void Mismatch(const char* what, size_t base,
                           const DescriptorDecoder& chunked,
                           const OneShot& one_shot) {
  std::fprintf(stderr,
               "chunked/one-shot mismatch (%s) for the descriptor at stream "
               "offset %zu:\n  chunked:  %s\n  one-shot: %s (Feed consumed "
               "%zu)\n",
               what, base, Describe(chunked).c_str(),
               Describe(*one_shot.decoder).c_str(), one_shot.consumed);
  std::abort();
}

// Feeds [at, at + length) of `stream` from a heap block of exactly that size.
// An empty chunk comes from `new uint8_t[0]`, a non-null pointer: Feed() of
// an empty span whose data() is null is undefined behaviour in the decoder
// today (fuzz/known_bugs/README.md) and would mask everything else.
FeedResult FeedCopy(DescriptorDecoder& decoder, const uint8_t* stream,
                    size_t at, size_t length) {
  std::unique_ptr<uint8_t[]> chunk(new uint8_t[length]);
  if (length != 0) std::memcpy(chunk.get(), stream + at, length);
  const FeedResult r = decoder.Feed(absl::MakeConstSpan(chunk.get(), length));
  HURRAY_FUZZ_CHECK(r.consumed <= length);
  HURRAY_FUZZ_CHECK(r.state == decoder.state());
  return r;
}

void Run(const uint8_t* data, size_t size) {
  const Header header = ParseHeader(data, size);
  const size_t skip = std::min(size, kHeaderSize);
  const uint8_t* const stream = data + skip;
  const size_t n = size - skip;

  ChunkPlan plan(header);
  auto chunked = std::make_unique<DescriptorDecoder>(header.options);
  size_t pos = 0;        // first stream byte not given to the chunked decoder
  size_t chunk_end = 0;  // end of the current chunk
  size_t base = 0;       // first byte of the current descriptor

  for (int k = 0; k < kMaxDescriptors; ++k) {
    const OneShot one_shot = DecodeOneShot(
        absl::MakeConstSpan(stream + base, n - base), header.options);

    // The chunked decoder: the rest of the current chunk, then new chunks,
    // until the descriptor is finished or the input ends.
    size_t fed = 0;
    DecodeState state = chunked->state();
    HURRAY_FUZZ_CHECK(state == DecodeState::kNeedMore);
    HURRAY_FUZZ_CHECK(!chunked->in_progress());
    while (state == DecodeState::kNeedMore) {
      if (pos == chunk_end) {
        if (pos == n) break;  // input exhausted
        chunk_end = std::min(n, pos + plan.Next());
      }
      const size_t length = chunk_end - pos;
      const FeedResult r = FeedCopy(*chunked, stream, pos, length);
      pos += r.consumed;
      fed += r.consumed;
      state = r.state;
      // A decoder that wants more bytes has taken all it was given.
      if (state == DecodeState::kNeedMore && r.consumed != length) {
        Mismatch("need-more without consuming the whole chunk", base, *chunked,
                 one_shot);
      }
      HURRAY_FUZZ_CHECK(chunked->consumed() == fed);
    }
    if (state == DecodeState::kNeedMore) state = chunked->Finish();
    HURRAY_FUZZ_CHECK(state == chunked->state());
    HURRAY_FUZZ_CHECK(state != DecodeState::kNeedMore);

    // Chunked == one-shot.
    if (state != one_shot.state) Mismatch("state", base, *chunked, one_shot);
    if (fed != one_shot.consumed || chunked->consumed() != fed) {
      Mismatch("bytes consumed", base, *chunked, one_shot);
    }
    if (state == DecodeState::kDone) {
      const TensorDescriptor& d = chunked->descriptor();
      if (!(d == one_shot.descriptor()) || !(one_shot.descriptor() == d)) {
        Mismatch("descriptor", base, *chunked, one_shot);
      }
      HURRAY_FUZZ_CHECK(d.descriptor_length == fed);
      HURRAY_FUZZ_CHECK(chunked->rejection().ok());
    } else if (!(chunked->rejection() == one_shot.rejection())) {
      Mismatch("rejection", base, *chunked, one_shot);
    }

    // A finished decoder ignores further input until Reset(), also when
    // the input ended in the middle of a field group it was gathering.
    const Rejection rejection = chunked->rejection();
    if (pos < chunk_end) {
      const FeedResult again = FeedCopy(*chunked, stream, pos, chunk_end - pos);
      HURRAY_FUZZ_CHECK(again.consumed == 0 && again.state == state);
    }
    for (const size_t length : {size_t{1}, size_t{3}}) {
      if (length > n) break;
      const FeedResult again = FeedCopy(*chunked, stream, 0, length);
      HURRAY_FUZZ_CHECK(again.consumed == 0 && again.state == state);
    }
    HURRAY_FUZZ_CHECK(chunked->Finish() == state);
    HURRAY_FUZZ_CHECK(chunked->rejection() == rejection);
    HURRAY_FUZZ_CHECK(chunked->consumed() == fed);

    HURRAY_FUZZ_CHECK(pos == base + fed);
    if (pos == n) break;  // the stream ends here
    base = pos;
    chunked->Reset();
    HURRAY_FUZZ_CHECK(chunked->state() == DecodeState::kNeedMore);
    HURRAY_FUZZ_CHECK(chunked->consumed() == 0);
    HURRAY_FUZZ_CHECK(chunked->rejection().ok());
  }
}

}  // namespace
}  // namespace hurray::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  hurray::fuzz::Run(data, size);
  return 0;
}
