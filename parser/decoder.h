// DescriptorDecoder: an incremental, allocation-free push decoder for one
// tensor descriptor at a time (metadata.md).
//
// Feed() takes bytes in chunks of any size, from 1 byte to a whole file, and
// returns how many it consumed and whether the descriptor needs more bytes,
// is done, or was rejected. It resumes exactly where it stopped. Fields are
// read and checked by field group: the magic; the other 16 bytes of the
// fixed header; runs of shape entries or buffer handles (up to 72 bytes);
// byte_offset with the buffer count when the layout has no fields between;
// quantization_length with the 4-byte scheme header; each layout or section
// block. A group is parsed straight out of the caller's chunk when it is all
// there; one that straddles two chunks is gathered in a small fixed staging
// area (at most 72 bytes). A field is checked once its whole group is in, so
// input cut short inside a group is DESC-HDR-01 even when a field already
// given is wrong (a bad version in the first 10 bytes of a 20-byte header),
// and a rejection consumes the whole group of the offending field (20 bytes
// for a bad version), whatever the chunking. Opaque parts (extension-layout
// data, uninterpreted quantization payloads, trailing bytes of a newer minor
// version) are skipped, never copied; their position is recorded.
//
// A chunk that holds a whole descriptor of a common shape (row- or
// column-major, rank ≤ 8, one to three buffers, at most a quantization
// section) goes through a fast path instead (parser/fast_path.h): fields read
// at fixed offsets and validated in straight-line code. Any other descriptor
// wholly in the chunk is read front to back without the state machine's
// per-stage dispatch (parser/whole_decode.h) and validated as usual. Any
// doubt, and any rejection, is sent back to the state machine, so results,
// rule ids and offsets are those of the general path (tests/fast_path_test.cc
// and fuzz/fast_path_fuzz.cc check it; ParseOptions::fast_path turns both
// off). A small chunk that only continues a field group is copied inline
// without resuming the state machine.
//
// The decoder enforces what locating the fields needs (magic, versions,
// lengths, flag bits, layout tags, tiled structure, limits: the "framing"
// rules). When the descriptor is complete it runs the validator
// (parser/validator.h) unless ParseOptions::validate is off. Rejections are
// reported as a Rejection (rule id, byte offset from the descriptor's first
// byte); nothing allocates, even on rejection, until status() is called.
//
// Modeled on Boost.Beast's basic_parser::put and Wuffs' suspendable decoders.
// sizeof(DescriptorDecoder) = sizeof(TensorDescriptor) + 336 bytes on x86-64
// (19 648 bytes; tests/decoder_test.cc prints both).
#ifndef HURRAY_PARSER_DECODER_H_
#define HURRAY_PARSER_DECODER_H_

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "parser/descriptor.h"
#include "parser/options.h"
#include "parser/rules.h"

namespace hurray {

using DecodeState = Progress;

// [[nodiscard]]: see Progress (parser/rules.h).
struct [[nodiscard]] FeedResult {
  size_t consumed;
  DecodeState state;
};

class DescriptorDecoder {
 public:
  explicit DescriptorDecoder(const ParseOptions& options = ParseOptions());
  DescriptorDecoder(const DescriptorDecoder&) = delete;
  DescriptorDecoder& operator=(const DescriptorDecoder&) = delete;

  // Consumes bytes of the current descriptor from `chunk`. Never consumes a
  // byte past the end of the descriptor: after kDone, the rest of the chunk
  // (buffers, the next descriptor) belongs to the caller. After kDone or
  // kRejected, Feed consumes nothing until Reset().
  FeedResult Feed(absl::Span<const uint8_t> chunk) {
    // Inline: a small chunk that continues the field group being gathered
    // without completing it is only copied (what the state machine would do
    // with it), without resuming the state machine. The byte-by-byte feed
    // spends most calls here.
    // (Fields are read into locals before the byte store, which may alias
    // them as far as the compiler knows.)
    // (want_ - staged_ is 0 once the decoder is done or rejected, so the
    // test needs no look at state_.)
    const size_t size = chunk.size();
    const uint32_t staged = staged_;
    if (size < want_ - staged) {
      staged_ = staged + static_cast<uint32_t>(size);
      if (size == 1) {
        staging_[staged] = chunk[0];
      } else if (size > 1) {
        std::memcpy(staging_ + staged, chunk.data(), size);
      }
      return {size, DecodeState::kNeedMore};
    }
    return FeedSlow(chunk);
  }

  // Declares the end of the input. A descriptor in progress is rejected with
  // DESC-HDR-01 at the offset where the bytes ran out.
  DecodeState Finish();

  // Prepares for the next descriptor; keeps the options.
  void Reset();

  DecodeState state() const { return state_; }
  // True once a byte of the current descriptor has been consumed.
  bool in_progress() const { return consumed() > 0; }
  // Bytes of the current descriptor consumed so far.
  uint64_t consumed() const { return pos_ + staged_; }

  // The decoded descriptor; complete only when state() == kDone.
  const TensorDescriptor& descriptor() const { return desc_; }
  const Rejection& rejection() const { return rejection_; }
  // OK, or the rejection as an absl::Status (allocates).
  [[nodiscard]] absl::Status status() const { return ToStatus(rejection_); }
  const ParseOptions& options() const { return options_; }
  // True when the current descriptor was decoded and accepted by the
  // whole-descriptor fast path (parser/fast_path.h or parser/whole_decode.h)
  // rather than the state machine. Same result either way; for tests and
  // benchmarks.
  bool fast_path_taken() const { return fast_path_taken_; }

 private:
  enum class Stage : uint8_t;
  enum class Step : uint8_t { kContinue, kStall, kStop };

  FeedResult FeedSlow(absl::Span<const uint8_t> chunk);
  // The state machine over `chunk`: Run() until it stalls or stops. Kept out
  // of FeedSlow() so that the whole-descriptor fast path stays lean.
  [[gnu::noinline]] FeedResult RunMachine(absl::Span<const uint8_t> chunk);
  Step Run();
  // The whole-descriptor fast paths over the start of `chunk`; false (and
  // nothing consumed, desc_ reset) when the general path must decide.
  bool TryFastPath(absl::Span<const uint8_t> chunk);
  // Makes the next `n` bytes available as one contiguous run: straight from
  // the input when the whole group is there (inline), else gathered in
  // staging_ (TakeSlow). Null when the input ran out first. (A returned
  // pointer rather than an out-parameter keeps Run()'s locals in registers.)
  const uint8_t* Take(uint32_t n) {
    if (staged_ == 0 && avail_ >= n) {
      const uint8_t* p = in_;
      in_ += n;
      avail_ -= n;
      pos_ += n;
      return p;
    }
    return TakeSlow(n);
  }
  const uint8_t* TakeSlow(uint32_t n);
  // How many of the `left` elements of `size` bytes still to read in an
  // array (shape, buffer handles) the next field group holds: as many as the
  // staging area holds and lie wholly inside descriptor_length. No rule looks
  // at an element before the next is read, so taking them together changes
  // no result, rule, offset or byte consumed, and a byte-by-byte feed stops
  // once per group rather than once per element. 0 when the next element
  // crosses descriptor_length (DESC-HDR-06 at pos_).
  uint32_t ArrayGroup(uint32_t left, uint32_t size) const;
  bool Skip();
  Step Reject(Rule rule, uint64_t offset, const char* message);
  // DESC-HDR-06 for the field group starting at pos_.
  Step FieldBeyondLength();
  Step BeginSkip(uint32_t n, Stage next);
  // The buffer count just read (its byte ends at pos_).
  Step BeginBufferTable(uint8_t count);
  // The quantization descriptor's 4-byte header at `p`, once its length
  // passed its checks.
  Step QuantizationHeader(const uint8_t* p);
  Step AfterBufferTable();
  Step AfterSection(uint32_t done_flag);
  Step Complete();
  Step StartLayout();
  Step StartTiledLevel();
  Step AfterTiledLevel();

  ParseOptions options_;
  DecodeState state_ = DecodeState::kNeedMore;
  bool fast_path_taken_ = false;
  Stage stage_;
  Rejection rejection_;

  // Input window of the current Feed call.
  const uint8_t* in_ = nullptr;
  size_t avail_ = 0;

  uint32_t pos_ = 0;     // offset of the current field group
  uint32_t staged_ = 0;  // bytes of the current group gathered so far
  // Size of the group the state machine stalled on (it resumes by taking
  // it). want_ - staged_ is the room Feed() may fill inline: staged_ < want_
  // while stalled, want_ == staged_ (no room) otherwise, in particular once
  // state_ is kDone or kRejected.
  uint32_t want_ = 0;
  uint32_t index_ = 0;  // element index inside an array stage
  uint32_t skip_left_ = 0;
  Stage after_skip_;
  uint32_t quant_length_ = 0;   // quantization_length being read
  uint32_t tile_enums_at_ = 0;  // offset of the current tiled level's enums
  // The quantization descriptor's fixed part (header, then the scheme's
  // fields), gathered across its two field groups. A member rather than a
  // local array: Run() then needs no stack canary.
  uint8_t quant_fixed_[kMaxSchemeFixedSize];
  // The largest field group: statistics, or that many bytes of an array.
  static constexpr uint32_t kStagingBytes = kStatisticsSize;
  uint8_t staging_[kStagingBytes];

  TensorDescriptor desc_;
};

// One-shot decode of the descriptor at the start of `bytes` (bytes after it
// are ignored): Feed(bytes) then Finish(). Same result, rule and offset as
// any chunked feed of the same bytes.
[[nodiscard]] absl::StatusOr<TensorDescriptor> Decode(
    absl::Span<const uint8_t> bytes,
    const ParseOptions& options = ParseOptions());

// The same without building a status: resets `decoder`, feeds `bytes`, calls
// Finish() and returns the rejection (ok() when decoder->descriptor() holds
// the result). Allocation-free.
Rejection DecodeWith(absl::Span<const uint8_t> bytes,
                     DescriptorDecoder* decoder);

}  // namespace hurray

#endif  // HURRAY_PARSER_DECODER_H_
