// TensorWalker: the incremental core shared by the bare stream reader and the
// forward pass over a .hrry tensor region. It frames tensors (descriptor, then
// its buffers), hands buffer bytes to a TensorSink as views into the chunks it
// is fed, and enforces the container rules framing can decide: limits
// (LIMIT-BUFFER-BYTES, LIMIT-TOTAL-BYTES), composite heads and their
// members through the composite validator (CMP-MEM-*, CMP-CLS-*, torn
// composites at the end, LIMIT-MEMBERS) and, in a file, zero padding and
// buffer placement (FILE-REG-01, FILE-REG-02, FILE-REG-04).
//
// Bare stream (interchange.md § Scope; RESOLUTIONS.md 14): buffers follow the
// descriptor back to back; the input ends cleanly only between tensors; a
// truncated descriptor is DESC-HDR-01, a truncated buffer STREAM-EOF-BUFFER.
//
// File region (file-format.md § Tensor Region, § Sequential Reader;
// RESOLUTIONS.md 12): descriptors at 8-byte boundaries; padding to
// data_buffer_alignment before the first buffer and between buffers; padding
// to 8 after the last. The region ends at the first tensor boundary that does
// not start with the descriptor magic "HRRY": the KV or index section follows.
// The walker never inspects buffer contents to find that boundary, and it
// accepts data_buffer_alignment padding after a buffer-less tensor (the
// reference writer pads after composite heads, REJECT-RULES.md §4 item 4)
// unless told to reject it (FILE-REG-04).
//
// Offsets are absolute (from the stream's or file's first byte). Nothing is
// allocated per byte; with record_extents, one TensorExtent per tensor seen.
#ifndef HURRAY_STREAM_CONTAINER_TENSOR_WALKER_H_
#define HURRAY_STREAM_CONTAINER_TENSOR_WALKER_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "parser/decoder.h"
#include "parser/options.h"
#include "parser/rules.h"
#include "stream/container/composite_binder.h"
#include "stream/container/limits.h"
#include "stream/container/tensor_sink.h"

namespace hurray::stream::container {

struct Framing {
  // 0: bare stream. Otherwise the file's data_buffer_alignment: the region
  // is padded as file-format.md § Tensor Region describes.
  uint32_t data_alignment = 0;
  // FILE-REG-04 (strict-only, off by default): refuse data_buffer_alignment
  // padding after a buffer-less tensor.
  bool reject_padding_after_head = false;
  // Keep one TensorExtent per tensor (the file readers check the index
  // against them).
  bool record_extents = false;
};

// Where one tensor sits (file-format.md § Index Encoding terms).
struct TensorExtent {
  uint64_t descriptor_offset = 0;
  uint32_t descriptor_length = 0;
  uint32_t buffer_count = 0;
  // First buffer; the descriptor's end when the tensor has no buffer.
  uint64_t data_offset = 0;
  // Buffers plus the padding between them (no trailing padding).
  uint64_t data_length = 0;
  bool composite_head = false;
  uint32_t member_count = 0;
};

// Computes the extent of a tensor whose descriptor starts at
// `descriptor_offset`, buffers placed as Framing `data_alignment` says.
// Returns the index of the first buffer whose end overflows 64 bits or passes
// `max_end`, or -1 when all fit.
int ComputeExtent(const TensorDescriptor& d, uint64_t descriptor_offset,
                  uint32_t data_alignment, uint64_t max_end,
                  TensorExtent* extent);

// kDone: the input ended cleanly, or (in a file) the tensor region did.
using WalkState = Progress;

// [[nodiscard]]: see Progress (parser/rules.h).
struct [[nodiscard]] WalkResult {
  size_t consumed;
  WalkState state;
};

class TensorWalker {
 public:
  // Reading starts at absolute offset `start`. `sink` may be null.
  TensorWalker(const ParseOptions& parse, const ContainerLimits& limits,
               const Framing& framing, uint64_t start, TensorSink* sink);
  ~TensorWalker();
  TensorWalker(const TensorWalker&) = delete;
  TensorWalker& operator=(const TensorWalker&) = delete;

  // Consumes bytes. Stops before the end of `chunk` only when rejected or,
  // in a file region, when the region ended (kDone): the bytes from
  // `consumed` on follow the region.
  WalkResult Feed(absl::Span<const uint8_t> chunk);
  // Declares the end of the input.
  [[nodiscard]] WalkState Finish();
  // Rejects with `r` (e.g. STREAM-IO when the byte source failed).
  WalkState Fail(Rejection r);
  // The input passed every check (a stream after Finish, a file once its
  // trailer, index and KV did): tells the sink (OnEndOfStream). A sink that
  // refuses rejects the walk as any other sink callback does, the rule its
  // status names at `offset` (the reader's position). The walker is the one
  // place that remembers a sink's failure: the readers ask it.
  [[nodiscard]] WalkState EndOfStream(uint64_t offset);
  // Resume (stream/resume/ingest_state.h): call right after construction with
  // `start` = the end of the last tensor an earlier walk completed, outside
  // any composite and with at least one buffer; `done` are that walk's
  // extents (empty for a bare stream). In a file the padding to the next
  // 8-byte boundary is then checked as after any tensor.
  void ResumeAfter(std::vector<TensorExtent> done, uint64_t completed);

  WalkState state() const { return state_; }
  // Why the walk was rejected. When the sink stopped it, the rule its status
  // names (STREAM-IO when none) at the position it stopped; status() has
  // the sink's own status.
  const Rejection& rejection() const { return rejection_; }
  // OK, the rejection as a status, or the status a sink stopped the walk
  // with.
  [[nodiscard]] absl::Status status() const;
  bool stopped_by_sink() const { return !sink_status_.ok(); }
  // Absolute offset of the next byte to consume.
  uint64_t position() const { return pos_; }
  // Where the region ended (kDone): the first byte after its last tensor.
  uint64_t region_end() const { return region_end_; }
  // Bytes at or after region_end() that earlier Feed calls consumed before
  // the end could be told; append them to what follows the region.
  void AppendOverrun(std::vector<uint8_t>* out) const;
  // Tensors whose bytes all arrived.
  uint64_t tensors_completed() const { return completed_; }
  absl::Span<const TensorExtent> extents() const { return extents_; }
  // The tensor in progress, once its descriptor is complete.
  const TensorExtent& current() const { return current_; }
  // True while a tensor's descriptor has started but not been completed.
  bool in_descriptor() const;
  uint32_t open_composites() const { return composites_.open(); }

 private:
  enum class Phase : uint8_t;

  size_t StepBoundary(absl::Span<const uint8_t> in);
  size_t StepHeadPad(absl::Span<const uint8_t> in);
  size_t StepDescriptor(absl::Span<const uint8_t> in);
  size_t StepPad(absl::Span<const uint8_t> in);
  size_t StepBuffer(absl::Span<const uint8_t> in);
  void DescriptorDone();
  void StartBuffer();
  void BufferDone();
  void TensorDone();
  void ToBoundary(uint64_t boundary);
  void EndRegion(uint64_t at);
  void Reject(Rule rule, uint64_t offset, const char* message);
  // A sink callback's result: false (and the walk stopped) when not OK.
  [[nodiscard]] bool SinkOk(absl::Status s);
  // Rejects the walk with the rule a sink's status names, at `offset`.
  void StopBySink(absl::Status s, uint64_t offset);
  bool File() const { return framing_.data_alignment != 0; }
  bool Strict(Rule rule) const { return Applies(rule, parse_.mode); }

  ParseOptions parse_;
  ContainerLimits limits_;
  Framing framing_;
  TensorSink* sink_;
  std::unique_ptr<DescriptorDecoder> decoder_;
  CompositeBinder composites_;

  Phase phase_;
  WalkState state_ = WalkState::kNeedMore;
  Rejection rejection_;
  absl::Status sink_status_;  // why the sink stopped the walk
  uint64_t pos_;
  uint64_t region_end_ = 0;

  // Boundary: the descriptor magic, gathered before the decoder sees it.
  uint8_t magic_[4] = {};
  uint32_t magic_n_ = 0;
  // Padding after a buffer-less tensor, not yet known to be padding.
  uint64_t head_pad_start_ = 0;
  bool after_head_padding_ = false;
  bool last_had_no_buffers_ = false;
  // Overrun kept for AppendOverrun.
  uint64_t overrun_zeros_ = 0;
  uint32_t overrun_magic_ = 0;

  // Current tensor.
  TensorExtent current_;
  uint32_t buffer_ = 0;         // buffer in progress
  uint64_t buffer_done_ = 0;    // its bytes delivered so far
  uint64_t pad_target_ = 0;     // padding runs up to here
  uint64_t first_nonzero_ = 0;  // first non-zero padding byte, if any
  bool nonzero_seen_ = false;
  bool pad_before_buffer_ = false;  // padding leads to buffer_, else boundary

  uint64_t completed_ = 0;
  std::vector<TensorExtent> extents_;
};

}  // namespace hurray::stream::container

#endif  // HURRAY_STREAM_CONTAINER_TENSOR_WALKER_H_
