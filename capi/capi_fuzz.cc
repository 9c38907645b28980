// Fuzz target: the C interface (capi/hurray.h) under arbitrary chunking,
// against the C++ reader it wraps.
//
// Input format (bytes missing at the end read as 0); the header is laid out
// like descriptor_chunked_fuzz's, so that corpus seeds this one too:
//   byte 0   bit 0 HURRAY_PERMISSIVE, bit 1 HURRAY_NO_VALIDATE (decoder),
//            bit 4 a stream callback cancels at the event numbered by byte 2
//            bit 5 file mode: the rest is a .hrry image (below)
//   byte 1   chunking: bits 0-2 maximum chunk length, one of
//            1, 2, 3, 5, 8, 16, 64, 4096; bit 3 chunks may be empty;
//            bits 4-7 seed, low bits
//   byte 2-3 seed, high bits (of the chunk-length generator)
//   rest     descriptors back to back, or a bare stream
//
// Decoder: one hurray_decoder reads the rest in chunks, descriptor after
// descriptor (reset after each done or rejected one; the next starts right
// after the bytes it consumed), and hurray_decoder_finish at the end. Each
// result must match a one-shot C++ decode from the same position: the same
// state and bytes consumed, the same rule id and offset, and accessors that
// return the C++ descriptor's fields. A quantized dense descriptor of at
// most 64 Ki elements and 1 MiB of buffers is also dequantized through
// hurray_dequantize, from buffers cut out of the input.
//
// Stream reader: the same bytes through hurray_stream_feed/finish with every
// callback set: events in order (descriptor, pieces of each buffer in order
// and without gaps, tensor end), and the same outcome, rule and offset as
// the C++ one-shot ReadStream.
//
// File mode: hurray_file_open_memory on the rest must give the outcome, rule
// and offset of the C++ HrryFile::FromBytes; when it opens, every index
// entry is looked up by name, its fields and buffers checked against the C++
// reader (buffers are views inside the image), and small quantized tensors
// dequantized through hurray_tensor_dequantize.
//
// Every chunk is copied into a heap block of exactly its length, freed after
// the call, so ASan sees a read past a chunk or a view kept after a call.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/types/span.h"
#include "capi/hurray.h"
#include "fuzz/fuzz_util.h"
#include "parser/decoder.h"
#include "parser/descriptor.h"
#include "parser/options.h"
#include "parser/rules.h"
#include "stream/container/file_format.h"
#include "stream/container/hrry_mmap.h"
#include "stream/container/stream_reader.h"

namespace {

constexpr size_t kHeaderSize = 4;
constexpr int kMaxDescriptors = 16;
constexpr uint32_t kMaxChunk[8] = {1, 2, 3, 5, 8, 16, 64, 4096};
// Bounds of the dequantization pass (its allocations follow declared sizes).
constexpr uint64_t kMaxDequantElements = 1 << 16;
constexpr uint64_t kMaxDequantBytes = 1 << 20;

struct Header {
  uint32_t flags = 0;
  bool cancel = false;
  uint32_t cancel_at = 0;
  bool file = false;
  uint32_t max_chunk = 1;
  bool allow_empty = false;
  uint64_t seed = 0;
};

Header ParseHeader(const uint8_t* data, size_t size) {
  uint8_t h[kHeaderSize] = {};
  std::memcpy(h, data, std::min(size, kHeaderSize));
  Header out;
  if (h[0] & 1) out.flags |= HURRAY_PERMISSIVE;
  if (h[0] & 2) out.flags |= HURRAY_NO_VALIDATE;
  out.cancel = (h[0] & 16) != 0;
  out.cancel_at = h[2];
  out.file = (h[0] & 32) != 0;
  out.max_chunk = kMaxChunk[h[1] & 7];
  out.allow_empty = (h[1] & 8) != 0;
  out.seed = (h[1] >> 4) | (uint64_t{h[2]} << 4) | (uint64_t{h[3]} << 12);
  return out;
}

// Chunk lengths: a SplitMix64 sequence, at most 8 empty chunks in a row.
class Chunks {
 public:
  explicit Chunks(const Header& h)
      : state_(h.seed), max_(h.max_chunk), allow_empty_(h.allow_empty) {}
  size_t Next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    if (allow_empty_ && empties_ < 8) {
      const size_t n = z % (max_ + 1);
      empties_ = n == 0 ? empties_ + 1 : 0;
      return n;
    }
    empties_ = 0;
    return 1 + z % max_;
  }

 private:
  uint64_t state_;
  uint32_t max_;
  bool allow_empty_;
  int empties_ = 0;
};

// A chunk in a heap block of exactly its length (nullptr when empty, as a
// C caller may pass).
struct Chunk {
  explicit Chunk(absl::Span<const uint8_t> bytes) : size(bytes.size()) {
    if (size > 0) {
      block.reset(new uint8_t[size]);
      std::memcpy(block.get(), bytes.data(), size);
    }
  }
  std::unique_ptr<uint8_t[]> block;
  size_t size;
};

hurray::ParseOptions ParseOptionsFor(uint32_t flags) {
  hurray::ParseOptions o;
  if (flags & HURRAY_PERMISSIVE) o.mode = hurray::Mode::kPermissive;
  if (flags & HURRAY_NO_VALIDATE) o.validate = false;
  return o;
}

bool SameString(const char* a, absl::string_view b) {
  return a != nullptr && absl::string_view(a) == b;
}

// The accessors give back the C++ descriptor's fields.
void CheckFields(const hurray_descriptor* d,
                 const hurray::TensorDescriptor& t) {
  HURRAY_FUZZ_CHECK(d != nullptr);
  HURRAY_FUZZ_CHECK(hurray_descriptor_rank(d) == t.rank);
  uint64_t shape[hurray::kMaxRank];
  uint32_t rank = 0;
  HURRAY_FUZZ_CHECK(
      hurray_descriptor_shape(d, shape, hurray::kMaxRank, &rank) == HURRAY_OK);
  HURRAY_FUZZ_CHECK(rank == t.rank);
  for (uint32_t k = 0; k < rank; ++k) HURRAY_FUZZ_CHECK(shape[k] == t.shape[k]);
  if (rank > 0) {
    HURRAY_FUZZ_CHECK(hurray_descriptor_shape(d, shape, rank - 1, &rank) ==
                      HURRAY_BUFFER_TOO_SMALL);
  }
  HURRAY_FUZZ_CHECK(hurray_descriptor_type_tag(d) == t.type_tag);
  HURRAY_FUZZ_CHECK(hurray_type_name(t.type_tag) != nullptr);
  HURRAY_FUZZ_CHECK(hurray_descriptor_layout_tag(d) == t.layout_tag);
  HURRAY_FUZZ_CHECK(hurray_layout_name(t.layout_tag) != nullptr);
  HURRAY_FUZZ_CHECK(hurray_descriptor_flags(d) == t.flags);
  HURRAY_FUZZ_CHECK(hurray_descriptor_byte_offset(d) == t.byte_offset);
  HURRAY_FUZZ_CHECK(hurray_descriptor_length(d) == t.descriptor_length);
  HURRAY_FUZZ_CHECK(hurray_descriptor_buffer_count(d) == t.buffer_count);
  for (uint32_t i = 0; i <= t.buffer_count; ++i) {
    uint64_t size = 0;
    const hurray_status s = hurray_descriptor_buffer_size(d, i, &size);
    if (i < t.buffer_count) {
      HURRAY_FUZZ_CHECK(s == HURRAY_OK && size == t.buffers[i].byte_size);
    } else {
      HURRAY_FUZZ_CHECK(s == HURRAY_INVALID_ARGUMENT);
    }
  }
  uint64_t count = 0;
  uint64_t want = 0;
  const bool counted = t.ElementCount(&want);
  HURRAY_FUZZ_CHECK((hurray_descriptor_element_count(d, &count) == HURRAY_OK) ==
                    counted);
  if (counted) HURRAY_FUZZ_CHECK(count == want);
  hurray_quantization q;
  const bool quantized = t.has(hurray::flag::kHasQuantization);
  HURRAY_FUZZ_CHECK((hurray_descriptor_quantization(d, &q) == HURRAY_OK) ==
                    quantized);
  if (quantized) {
    HURRAY_FUZZ_CHECK(q.scheme == t.quantization.scheme_tag);
    HURRAY_FUZZ_CHECK(hurray_descriptor_quantization_scheme(d) ==
                      t.quantization.scheme_tag);
  } else {
    HURRAY_FUZZ_CHECK(hurray_descriptor_quantization_scheme(d) ==
                      HURRAY_SCHEME_NONE);
  }
}

// Dequantizes a small quantized tensor from buffers cut out of `fill`: the
// call must return, with a status from the documented set.
void TryDequantize(const hurray_descriptor* d, uint32_t flags,
                   absl::Span<const uint8_t> fill) {
  uint64_t count = 0;
  if (hurray_dequantized_count(d, &count) != HURRAY_OK) return;
  if (count > kMaxDequantElements) return;
  const uint32_t n = hurray_descriptor_buffer_count(d);
  uint64_t total = 0;
  std::vector<uint64_t> sizes(n);
  for (uint32_t i = 0; i < n; ++i) {
    HURRAY_FUZZ_CHECK(hurray_descriptor_buffer_size(d, i, &sizes[i]) ==
                      HURRAY_OK);
    if (sizes[i] > kMaxDequantBytes) return;
    total += sizes[i];
    if (total > kMaxDequantBytes) return;
  }
  std::vector<std::unique_ptr<uint8_t[]>> blocks(n);
  std::vector<const uint8_t*> buffers(n);
  size_t at = 0;
  for (uint32_t i = 0; i < n; ++i) {
    blocks[i].reset(new uint8_t[sizes[i] > 0 ? sizes[i] : 1]);
    for (uint64_t k = 0; k < sizes[i]; ++k) {
      blocks[i][k] = fill.empty() ? 0 : fill[at++ % fill.size()];
    }
    buffers[i] = blocks[i].get();
  }
  std::vector<float> out(count);
  hurray_error e;
  const hurray_status s = hurray_dequantize(d, buffers.data(), sizes.data(), n,
                                            out.data(), count, flags, &e);
  HURRAY_FUZZ_CHECK(s == e.status);
  HURRAY_FUZZ_CHECK(s == HURRAY_OK || s == HURRAY_REJECTED ||
                    s == HURRAY_UNSUPPORTED || s == HURRAY_INVALID_ARGUMENT);
  HURRAY_FUZZ_CHECK((s == HURRAY_REJECTED) == (e.rule_id[0] != '\0'));
  HURRAY_FUZZ_CHECK(std::memchr(e.message, '\0', sizeof e.message) != nullptr);
}

void FuzzDecoder(const Header& h, absl::Span<const uint8_t> stream) {
  hurray_decoder* dec = hurray_decoder_new(h.flags);
  HURRAY_FUZZ_CHECK(dec != nullptr);
  const hurray::ParseOptions options = ParseOptionsFor(h.flags);
  Chunks chunks(h);
  size_t base = 0;  // stream offset of the current descriptor
  size_t pos = 0;   // next byte to feed
  for (int n = 0; n < kMaxDescriptors && base < stream.size(); ++n) {
    const hurray::fuzz::OneShot want =
        hurray::fuzz::DecodeOneShot(stream.subspan(base), options);
    hurray_status s = HURRAY_NEED_MORE;
    while (s == HURRAY_NEED_MORE && pos < stream.size()) {
      const Chunk c(stream.subspan(pos, chunks.Next()));
      size_t consumed = 12345;
      s = hurray_decoder_feed(dec, c.block.get(), c.size, &consumed);
      HURRAY_FUZZ_CHECK(s == HURRAY_NEED_MORE || s == HURRAY_OK ||
                        s == HURRAY_REJECTED);
      HURRAY_FUZZ_CHECK(consumed <= c.size);
      if (s == HURRAY_NEED_MORE) HURRAY_FUZZ_CHECK(consumed == c.size);
      HURRAY_FUZZ_CHECK(hurray_decoder_state(dec) == s);
      pos += consumed;
    }
    if (s == HURRAY_NEED_MORE) {
      const bool started = hurray_decoder_consumed(dec) > 0;
      s = hurray_decoder_finish(dec);
      // Only a fresh decoder ends cleanly; base < size, so one byte was fed.
      HURRAY_FUZZ_CHECK(started ? s == HURRAY_REJECTED : s == HURRAY_END);
      if (s == HURRAY_END) break;
    }
    HURRAY_FUZZ_CHECK(pos - base == hurray_decoder_consumed(dec));
    HURRAY_FUZZ_CHECK(pos - base == want.consumed);
    hurray_error e;
    HURRAY_FUZZ_CHECK(hurray_decoder_error(dec, &e) == s && e.status == s);
    if (want.done()) {
      HURRAY_FUZZ_CHECK(s == HURRAY_OK);
      HURRAY_FUZZ_CHECK(SameString(hurray_decoder_rule_id(dec), ""));
      HURRAY_FUZZ_CHECK(e.rule_id[0] == '\0');
      const hurray_descriptor* d = hurray_decoder_descriptor(dec);
      CheckFields(d, want.descriptor());
      HURRAY_FUZZ_CHECK(hurray_descriptor_length(d) == pos - base);
      TryDequantize(d, h.flags & HURRAY_PERMISSIVE, stream.subspan(pos));
      // Done is final: nothing more is consumed.
      size_t consumed = 1;
      const uint8_t byte = 0;
      HURRAY_FUZZ_CHECK(hurray_decoder_feed(dec, &byte, 1, &consumed) ==
                        HURRAY_OK);
      HURRAY_FUZZ_CHECK(consumed == 0);
    } else {
      HURRAY_FUZZ_CHECK(s == HURRAY_REJECTED);
      HURRAY_FUZZ_CHECK(hurray_decoder_descriptor(dec) == nullptr);
      const absl::string_view rule = hurray::RuleId(want.rejection().rule);
      HURRAY_FUZZ_CHECK(SameString(hurray_decoder_rule_id(dec), rule));
      HURRAY_FUZZ_CHECK(SameString(e.rule_id, rule));
      HURRAY_FUZZ_CHECK(hurray_decoder_offset(dec) == want.rejection().offset);
      HURRAY_FUZZ_CHECK(e.offset == want.rejection().offset);
      HURRAY_FUZZ_CHECK(hurray_decoder_message(dec) != nullptr);
    }
    hurray_decoder_reset(dec);
    HURRAY_FUZZ_CHECK(hurray_decoder_state(dec) == HURRAY_NEED_MORE);
    HURRAY_FUZZ_CHECK(hurray_decoder_consumed(dec) == 0);
    base = pos;
  }
  hurray_decoder_free(dec);
}

// Stream events, checked for order as they come.
struct Events {
  bool in_tensor = false;
  uint32_t buffer = 0;   // buffer of the last piece
  uint64_t next = 0;     // its next expected offset
  uint32_t buffers = 0;  // buffer_count of the current tensor
  uint64_t tensors = 0;  // OnTensorEnd calls
  uint32_t events = 0;
  bool cancel = false;
  uint32_t cancel_at = 0;
  bool ended = false;

  int Count() {
    ++events;
    return cancel && events > cancel_at ? 1 : 0;
  }
};

int OnDescriptor(void* user, const hurray_descriptor* d) {
  auto* ev = static_cast<Events*>(user);
  HURRAY_FUZZ_CHECK(!ev->in_tensor && !ev->ended && d != nullptr);
  ev->in_tensor = true;
  ev->buffer = 0;
  ev->next = 0;
  ev->buffers = hurray_descriptor_buffer_count(d);
  return ev->Count();
}

int OnPiece(void* user, uint32_t buffer, uint64_t offset, const uint8_t* piece,
            size_t size) {
  auto* ev = static_cast<Events*>(user);
  HURRAY_FUZZ_CHECK(ev->in_tensor && buffer < ev->buffers);
  HURRAY_FUZZ_CHECK(piece != nullptr && size > 0);
  if (buffer != ev->buffer) {
    HURRAY_FUZZ_CHECK(buffer > ev->buffer);
    ev->buffer = buffer;
    ev->next = 0;
  }
  HURRAY_FUZZ_CHECK(offset == ev->next);
  ev->next += size;
  // Touch the view: ASan checks it is inside the chunk being fed.
  volatile uint8_t sink = piece[0] ^ piece[size - 1];
  (void)sink;
  return ev->Count();
}

int OnTensorEnd(void* user) {
  auto* ev = static_cast<Events*>(user);
  HURRAY_FUZZ_CHECK(ev->in_tensor);
  ev->in_tensor = false;
  ++ev->tensors;
  return ev->Count();
}

void OnEnd(void* user) {
  auto* ev = static_cast<Events*>(user);
  HURRAY_FUZZ_CHECK(!ev->in_tensor && !ev->ended);
  ev->ended = true;
}

void FuzzStream(const Header& h, absl::Span<const uint8_t> stream) {
  Events ev;
  ev.cancel = h.cancel;
  ev.cancel_at = h.cancel_at;
  const hurray_stream_callbacks cb = {&ev, OnDescriptor, OnPiece, OnTensorEnd,
                                      OnEnd};
  hurray_stream* s = hurray_stream_new(&cb, h.flags & HURRAY_PERMISSIVE);
  HURRAY_FUZZ_CHECK(s != nullptr);
  Chunks chunks(h);
  hurray_status st = HURRAY_NEED_MORE;
  size_t pos = 0;
  while (st == HURRAY_NEED_MORE && pos < stream.size()) {
    const Chunk c(stream.subspan(pos, chunks.Next()));
    st = hurray_stream_feed(s, c.block.get(), c.size);
    HURRAY_FUZZ_CHECK(st == HURRAY_NEED_MORE || st == HURRAY_REJECTED ||
                      st == HURRAY_CANCELLED);
    pos += c.size;
  }
  const bool finished = st == HURRAY_NEED_MORE;
  if (finished) st = hurray_stream_finish(s);
  if (st != HURRAY_CANCELLED) {
    // Call order (hurray.h): a rejection is final, and after finish the
    // stream takes nothing more.
    const uint8_t byte = 0;
    HURRAY_FUZZ_CHECK(hurray_stream_feed(s, &byte, 1) ==
                      (finished ? HURRAY_BAD_STATE : HURRAY_REJECTED));
  }
  if (st == HURRAY_CANCELLED) {
    HURRAY_FUZZ_CHECK(ev.cancel && ev.events == ev.cancel_at + 1);
    HURRAY_FUZZ_CHECK(hurray_stream_feed(s, nullptr, 0) == HURRAY_CANCELLED);
    hurray_stream_free(s);
    return;
  }
  hurray::stream::container::StreamOptions options;
  options.parse = ParseOptionsFor(h.flags & HURRAY_PERMISSIVE);
  const hurray::Rejection want =
      hurray::stream::container::ReadStream(stream, options, /*sink=*/nullptr);
  hurray_error e;
  HURRAY_FUZZ_CHECK(hurray_stream_error(s, &e) == st && e.status == st);
  if (want.ok()) {
    HURRAY_FUZZ_CHECK(st == HURRAY_OK);
    HURRAY_FUZZ_CHECK(ev.ended && !ev.in_tensor);
    HURRAY_FUZZ_CHECK(hurray_stream_position(s) == stream.size());
    HURRAY_FUZZ_CHECK(hurray_stream_tensors_completed(s) == ev.tensors);
  } else {
    HURRAY_FUZZ_CHECK(st == HURRAY_REJECTED);
    HURRAY_FUZZ_CHECK(SameString(e.rule_id, hurray::RuleId(want.rule)));
    HURRAY_FUZZ_CHECK(e.offset == want.offset);
    HURRAY_FUZZ_CHECK(!ev.ended);
  }
  hurray_stream_free(s);
}

void FuzzFile(const Header& h, absl::Span<const uint8_t> image) {
  // An exact-size copy: ASan catches a read past the image.
  const Chunk copy(image);
  const uint32_t flags = h.flags & HURRAY_PERMISSIVE;
  hurray_file* f = nullptr;
  hurray_error e;
  const hurray_status s =
      hurray_file_open_memory(copy.block.get(), copy.size, flags, &f, &e);
  hurray::stream::container::FileOptions options;
  options.parse = ParseOptionsFor(flags);
  auto want = hurray::stream::container::HrryFile::FromBytes(
      {copy.block.get(), copy.size}, options);
  HURRAY_FUZZ_CHECK(e.status == s);
  if (!want.ok()) {
    HURRAY_FUZZ_CHECK(f == nullptr && s != HURRAY_OK);
    const auto rule = hurray::RuleIdOf(want.status());
    HURRAY_FUZZ_CHECK((s == HURRAY_REJECTED) == rule.has_value());
    if (rule.has_value()) {
      HURRAY_FUZZ_CHECK(SameString(e.rule_id, *rule));
      HURRAY_FUZZ_CHECK(e.offset == hurray::OffsetOf(want.status()));
    }
    return;
  }
  HURRAY_FUZZ_CHECK(s == HURRAY_OK && f != nullptr);
  const hurray::stream::container::HrryFile& file = **want;
  const size_t n = hurray_file_tensor_count(f);
  HURRAY_FUZZ_CHECK(n == file.index().size());
  const uint8_t* lo = copy.block.get();
  const uint8_t* hi = lo + copy.size;
  for (size_t i = 0; i < n && i < 64; ++i) {
    const char* name = nullptr;
    size_t name_size = 0;
    HURRAY_FUZZ_CHECK(hurray_file_tensor_name(f, i, &name, &name_size) ==
                      HURRAY_OK);
    hurray_tensor* t = nullptr;
    const hurray_status found = hurray_file_lookup(f, name, name_size, &t, &e);
    const hurray::stream::container::IndexEntry* entry =
        file.Find(absl::string_view(name, name_size));
    HURRAY_FUZZ_CHECK(entry != nullptr);
    hurray::TensorDescriptor d;
    const absl::Status read = file.ReadDescriptor(*entry, &d);
    HURRAY_FUZZ_CHECK((found == HURRAY_OK) == read.ok());
    if (found != HURRAY_OK) continue;
    CheckFields(hurray_tensor_descriptor(t), d);
    for (uint32_t b = 0; b <= d.buffer_count; ++b) {
      const uint8_t* data = nullptr;
      uint64_t size = 0;
      const hurray_status got =
          hurray_tensor_buffer(t, b, &data, &size, nullptr);
      const auto view = file.Buffer(*entry, d, b);
      HURRAY_FUZZ_CHECK((got == HURRAY_OK) == view.ok());
      if (got != HURRAY_OK) continue;
      HURRAY_FUZZ_CHECK(size == view->size());
      if (size > 0) HURRAY_FUZZ_CHECK(data >= lo && data + size <= hi);
    }
    uint64_t count = 0;
    if (hurray_dequantized_count(hurray_tensor_descriptor(t), &count) ==
            HURRAY_OK &&
        count <= kMaxDequantElements) {
      std::vector<float> out(count);
      const hurray_status dq =
          hurray_tensor_dequantize(t, out.data(), count, flags, &e);
      HURRAY_FUZZ_CHECK(dq == e.status);
      HURRAY_FUZZ_CHECK((dq == HURRAY_REJECTED) == (e.rule_id[0] != '\0'));
    }
    hurray_tensor_free(t);
  }
  hurray_tensor* none = nullptr;
  const char missing[] = "\xff no such tensor \xff";
  if (file.Find(missing) == nullptr) {
    HURRAY_FUZZ_CHECK(hurray_file_lookup(f, missing, sizeof missing - 1, &none,
                                         &e) == HURRAY_NOT_FOUND);
    HURRAY_FUZZ_CHECK(none == nullptr);
  }
  hurray_file_close(f);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const Header h = ParseHeader(data, size);
  const absl::Span<const uint8_t> stream =
      size > kHeaderSize
          ? absl::MakeConstSpan(data + kHeaderSize, size - kHeaderSize)
          : absl::Span<const uint8_t>();
  if (h.file) {
    FuzzFile(h, stream);
    return 0;
  }
  FuzzDecoder(h, stream);
  FuzzStream(h, stream);
  return 0;
}
