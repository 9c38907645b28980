#include "stream/container/tensor_walker.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <utility>

#include "parser/wire.h"

namespace hurray::stream::container {
namespace {

// Rounds `x` up to a multiple of `a` (a power of two; 0 means no rounding).
bool AlignUp(uint64_t x, uint64_t a, uint64_t* out) {
  if (a <= 1) {
    *out = x;
    return true;
  }
  uint64_t sum;
  if (!wire::CheckedAdd(x, a - 1, &sum)) return false;
  *out = sum & ~(a - 1);
  return true;
}

}  // namespace

enum class TensorWalker::Phase : uint8_t {
  kBoundary,    // file: gathering the next descriptor's magic
  kHeadPad,     // file: zeros after a buffer-less tensor, maybe padding
  kDescriptor,  // feeding the decoder
  kPad,         // file: zero padding up to pad_target_
  kBuffer,      // delivering buffer_'s bytes
  kStopped,     // ended or rejected
};

int ComputeExtent(const TensorDescriptor& d, uint64_t descriptor_offset,
                  uint32_t data_alignment, uint64_t max_end,
                  TensorExtent* extent) {
  *extent = TensorExtent();
  extent->descriptor_offset = descriptor_offset;
  extent->descriptor_length = d.descriptor_length;
  extent->buffer_count = d.buffer_count;
  extent->composite_head = d.layout_tag == layout_tag::kComposite;
  extent->member_count = extent->composite_head ? d.layout.member_count : 0;
  uint64_t descriptor_end;
  if (!wire::CheckedAdd(descriptor_offset, d.descriptor_length,
                        &descriptor_end)) {
    return 0;
  }
  extent->data_offset = descriptor_end;
  uint64_t end = descriptor_end;
  for (uint32_t i = 0; i < d.buffer_count; ++i) {
    // file-format.md § Data Buffer Placement: every buffer, the first one
    // included, starts at a data_buffer_alignment boundary.
    uint64_t start;
    if (!AlignUp(end, data_alignment, &start)) return static_cast<int>(i);
    if (i == 0) extent->data_offset = start;
    if (!wire::CheckedAdd(start, d.buffers[i].byte_size, &end) ||
        end > max_end) {
      return static_cast<int>(i);
    }
  }
  extent->data_length = end - extent->data_offset;
  return -1;
}

TensorWalker::TensorWalker(const ParseOptions& parse,
                           const ContainerLimits& limits,
                           const Framing& framing, uint64_t start,
                           TensorSink* sink)
    : parse_(parse),
      limits_(limits),
      framing_(framing),
      sink_(sink),
      decoder_(std::make_unique<DescriptorDecoder>(parse)),
      composites_(parse.mode, limits),
      pos_(start) {
  ToBoundary(start);
}

TensorWalker::~TensorWalker() = default;

bool TensorWalker::in_descriptor() const {
  return phase_ == Phase::kDescriptor ||
         (phase_ == Phase::kBoundary && magic_n_ > 0);
}

void TensorWalker::Reject(Rule rule, uint64_t offset, const char* message) {
  if (state_ != WalkState::kNeedMore) return;
  rejection_ = Rejection{rule, offset, message};
  state_ = WalkState::kRejected;
  phase_ = Phase::kStopped;
}

bool TensorWalker::SinkOk(absl::Status s) {
  if (s.ok()) return true;
  StopBySink(std::move(s), pos_);
  return false;
}

void TensorWalker::StopBySink(absl::Status s, uint64_t offset) {
  const std::optional<absl::string_view> id = RuleIdOf(s);
  const std::optional<Rule> rule = id ? RuleFromId(*id) : std::nullopt;
  // Also after the walk ended (kDone): the sink may refuse the end itself.
  if (state_ == WalkState::kRejected) return;
  rejection_ = Rejection{rule ? *rule : Rule::kStreamIo, offset,
                         "the sink stopped the walk"};
  state_ = WalkState::kRejected;
  phase_ = Phase::kStopped;
  sink_status_ = std::move(s);
}

WalkState TensorWalker::EndOfStream(uint64_t offset) {
  if (sink_ == nullptr || state_ == WalkState::kRejected) return state_;
  absl::Status s = sink_->OnEndOfStream();
  if (!s.ok()) StopBySink(std::move(s), offset);
  return state_;
}

absl::Status TensorWalker::status() const {
  return sink_status_.ok() ? ToStatus(rejection_) : sink_status_;
}

WalkState TensorWalker::Fail(Rejection r) {
  Reject(r.rule, r.offset, r.message);
  return state_;
}

void TensorWalker::ResumeAfter(std::vector<TensorExtent> done,
                               uint64_t completed) {
  extents_ = std::move(done);
  completed_ = completed;
  if (!File()) return;
  pad_before_buffer_ = false;
  nonzero_seen_ = false;
  if (!AlignUp(pos_, 8, &pad_target_)) {
    return Reject(Rule::kLimitTotalBytes, pos_, "offsets overflow");
  }
  if (pos_ != pad_target_) phase_ = Phase::kPad;
}

void TensorWalker::EndRegion(uint64_t at) {
  region_end_ = at;
  // A head still waiting for members at the end: torn composite
  // (layouts/composite.md § Torn composite; CMP-CLS-03 is strict-only).
  const Rejection torn = composites_.Finish();
  if (!torn.ok()) return Reject(torn.rule, torn.offset, torn.message);
  phase_ = Phase::kStopped;
  state_ = WalkState::kDone;
}

void TensorWalker::AppendOverrun(std::vector<uint8_t>* out) const {
  out->insert(out->end(), overrun_zeros_, 0);
  out->insert(out->end(), magic_, magic_ + overrun_magic_);
}

void TensorWalker::ToBoundary(uint64_t boundary) {
  decoder_->Reset();
  magic_n_ = 0;
  current_ = TensorExtent();
  current_.descriptor_offset = boundary;
  if (!File()) {
    phase_ = Phase::kDescriptor;  // the decoder checks the magic itself
    return;
  }
  if (last_had_no_buffers_ && boundary % framing_.data_alignment != 0) {
    phase_ = Phase::kHeadPad;
    head_pad_start_ = boundary;
    pad_target_ = boundary + (framing_.data_alignment -
                              boundary % framing_.data_alignment);
    return;
  }
  phase_ = Phase::kBoundary;
}

WalkResult TensorWalker::Feed(absl::Span<const uint8_t> chunk) {
  if (state_ != WalkState::kNeedMore) return {0, state_};
  // LIMIT-TOTAL-BYTES: no byte at or past max_total_bytes is taken.
  size_t allowed = chunk.size();
  const uint64_t room =
      pos_ < limits_.max_total_bytes ? limits_.max_total_bytes - pos_ : 0;
  if (allowed > room) allowed = static_cast<size_t>(room);
  size_t used = 0;
  while (state_ == WalkState::kNeedMore && used < allowed) {
    const absl::Span<const uint8_t> in = chunk.subspan(used, allowed - used);
    switch (phase_) {
      case Phase::kBoundary:
        used += StepBoundary(in);
        break;
      case Phase::kHeadPad:
        used += StepHeadPad(in);
        break;
      case Phase::kDescriptor:
        used += StepDescriptor(in);
        break;
      case Phase::kPad:
        used += StepPad(in);
        break;
      case Phase::kBuffer:
        used += StepBuffer(in);
        break;
      case Phase::kStopped:
        break;
    }
  }
  if (state_ == WalkState::kNeedMore && allowed < chunk.size()) {
    Reject(Rule::kLimitTotalBytes, limits_.max_total_bytes,
           "the input is longer than the total byte limit");
  }
  return {used, state_};
}

size_t TensorWalker::StepBoundary(absl::Span<const uint8_t> in) {
  const uint32_t take =
      static_cast<uint32_t>(std::min<size_t>(4 - magic_n_, in.size()));
  std::memcpy(magic_ + magic_n_, in.data(), take);
  magic_n_ += take;
  pos_ += take;
  if (magic_n_ < 4) return take;
  const uint64_t boundary = pos_ - 4;
  if (std::memcmp(magic_, kDescriptorMagic.data(), 4) != 0) {
    // Not a descriptor: the tensor region ends here (file-format.md
    // § Sequential Reader 4). Give back this call's bytes.
    pos_ -= take;
    overrun_magic_ = magic_n_ - take;
    overrun_zeros_ = 0;
    EndRegion(boundary);
    return 0;
  }
  if (after_head_padding_ && framing_.reject_padding_after_head &&
      Strict(Rule::kFileReg04)) {
    Reject(Rule::kFileReg04, head_pad_start_,
           "data_buffer_alignment padding after a composite head");
    return take;
  }
  after_head_padding_ = false;
  phase_ = Phase::kDescriptor;
  current_.descriptor_offset = boundary;
  const FeedResult r = decoder_->Feed(absl::MakeConstSpan(magic_, 4));
  if (r.state == DecodeState::kRejected) {
    Reject(decoder_->rejection().rule, boundary + decoder_->rejection().offset,
           decoder_->rejection().message);
  }
  return take;
}

size_t TensorWalker::StepHeadPad(absl::Span<const uint8_t> in) {
  const uint64_t before = pos_;
  size_t i = 0;
  while (i < in.size() && pos_ < pad_target_ && in[i] == 0) {
    ++i;
    ++pos_;
  }
  if (pos_ == pad_target_) {
    // A whole data_buffer_alignment run of zeros: padding after the tensor.
    after_head_padding_ = true;
    last_had_no_buffers_ = false;
    const uint64_t pad_start = head_pad_start_;
    ToBoundary(pos_);
    head_pad_start_ = pad_start;
    return i;
  }
  if (i == in.size()) return i;  // more zeros may follow
  // A non-zero byte before the alignment boundary.
  if (pos_ == head_pad_start_) {
    phase_ = Phase::kBoundary;  // no padding: the next boundary is here
    return 0;
  }
  // Zeros, then something else: the region ended where the zeros began.
  pos_ = before;
  overrun_zeros_ = before - head_pad_start_;
  overrun_magic_ = 0;
  EndRegion(head_pad_start_);
  return 0;
}

size_t TensorWalker::StepDescriptor(absl::Span<const uint8_t> in) {
  const FeedResult r = decoder_->Feed(in);
  pos_ += r.consumed;
  if (r.state == DecodeState::kRejected) {
    Reject(decoder_->rejection().rule,
           current_.descriptor_offset + decoder_->rejection().offset,
           decoder_->rejection().message);
  } else if (r.state == DecodeState::kDone) {
    DescriptorDone();
  }
  return r.consumed;
}

void TensorWalker::DescriptorDone() {
  const TensorDescriptor& d = decoder_->descriptor();
  const uint64_t at = current_.descriptor_offset;
  // Limits first, from declared sizes, before any of those bytes is read.
  for (uint32_t i = 0; i < d.buffer_count; ++i) {
    if (d.buffers[i].byte_size > limits_.max_buffer_bytes) {
      return Reject(Rule::kLimitBufferBytes, at + d.offsets.handle(i),
                    "a buffer is larger than the buffer byte limit");
    }
  }
  const int over = ComputeExtent(d, at, framing_.data_alignment,
                                 limits_.max_total_bytes, &current_);
  if (over >= 0) {
    return Reject(Rule::kLimitTotalBytes,
                  at + d.offsets.handle(static_cast<uint32_t>(over)),
                  "the buffers would pass the total byte limit");
  }
  // Heads and members (layouts/composite.md § Validation), as they come.
  const Rejection bound = composites_.OnDescriptor(d, at);
  if (!bound.ok()) return Reject(bound.rule, bound.offset, bound.message);
  if (sink_ != nullptr && !SinkOk(sink_->OnDescriptor(d))) return;
  last_had_no_buffers_ = d.buffer_count == 0;
  buffer_ = 0;
  if (d.buffer_count == 0) return TensorDone();
  pad_before_buffer_ = true;
  pad_target_ = current_.data_offset;
  nonzero_seen_ = false;
  if (pos_ == pad_target_) return StartBuffer();
  phase_ = Phase::kPad;
}

size_t TensorWalker::StepPad(absl::Span<const uint8_t> in) {
  const size_t n =
      static_cast<size_t>(std::min<uint64_t>(in.size(), pad_target_ - pos_));
  if (!nonzero_seen_) {
    for (size_t i = 0; i < n; ++i) {
      if (in[i] != 0) {
        nonzero_seen_ = true;
        first_nonzero_ = pos_ + i;
        break;
      }
    }
  }
  pos_ += n;
  if (pos_ < pad_target_) return n;
  // A padding run is judged once it is complete, so that what ends the input
  // early (truncation, a bad trailer) is reported first.
  if (nonzero_seen_ && Strict(Rule::kFileReg01)) {
    Reject(Rule::kFileReg01, first_nonzero_, "a padding byte is not zero");
    return n;
  }
  if (pad_before_buffer_) {
    StartBuffer();
  } else {
    ToBoundary(pos_);
  }
  return n;
}

void TensorWalker::StartBuffer() {
  const BufferHandle& h = decoder_->descriptor().buffers[buffer_];
  // FILE-REG-02: in a file, a buffer also honours its own alignment.
  if (File() && h.byte_size > 0 && h.alignment != 0 &&
      pos_ % h.alignment != 0 && Strict(Rule::kFileReg02)) {
    return Reject(Rule::kFileReg02, pos_,
                  "a buffer's file offset is not a multiple of its alignment");
  }
  buffer_done_ = 0;
  if (h.byte_size == 0) return BufferDone();
  phase_ = Phase::kBuffer;
}

size_t TensorWalker::StepBuffer(absl::Span<const uint8_t> in) {
  const uint64_t size = decoder_->descriptor().buffers[buffer_].byte_size;
  const size_t n =
      static_cast<size_t>(std::min<uint64_t>(in.size(), size - buffer_done_));
  buffer_done_ += n;
  pos_ += n;
  if (sink_ != nullptr &&
      !SinkOk(sink_->OnBufferPiece(buffer_, buffer_done_ - n, in.first(n)))) {
    return n;
  }
  if (buffer_done_ == size) BufferDone();
  return n;
}

void TensorWalker::BufferDone() {
  if (++buffer_ == decoder_->descriptor().buffer_count) return TensorDone();
  pad_before_buffer_ = true;
  nonzero_seen_ = false;
  AlignUp(pos_, framing_.data_alignment, &pad_target_);  // fits: extent did
  if (pos_ == pad_target_) return StartBuffer();
  phase_ = Phase::kPad;
}

void TensorWalker::TensorDone() {
  ++completed_;
  if (framing_.record_extents) extents_.push_back(current_);
  if (sink_ != nullptr && !SinkOk(sink_->OnTensorEnd())) return;
  if (!File()) return ToBoundary(pos_);
  // Padding to the next 8-byte boundary (file-format.md § Descriptor
  // Placement).
  pad_before_buffer_ = false;
  nonzero_seen_ = false;
  if (!AlignUp(pos_, 8, &pad_target_)) {
    return Reject(Rule::kLimitTotalBytes, pos_, "offsets overflow");
  }
  if (pos_ == pad_target_) return ToBoundary(pos_);
  phase_ = Phase::kPad;
}

WalkState TensorWalker::Finish() {
  if (state_ != WalkState::kNeedMore) return state_;
  switch (phase_) {
    case Phase::kBoundary:
      // 0 to 3 bytes after the last tensor: not a descriptor.
      overrun_magic_ = magic_n_;
      overrun_zeros_ = 0;
      EndRegion(pos_ - magic_n_);
      break;
    case Phase::kHeadPad:
      overrun_zeros_ = pos_ - head_pad_start_;
      overrun_magic_ = 0;
      EndRegion(head_pad_start_);
      break;
    case Phase::kDescriptor:
      if (!decoder_->in_progress() && !File()) {
        EndRegion(pos_);  // a stream may end between tensors
      } else {
        // The input ended inside the descriptor: Finish() always rejects
        // here (DESC-HDR-01), and that rejection is read just below.
        (void)decoder_->Finish();
        Reject(decoder_->rejection().rule,
               current_.descriptor_offset + decoder_->rejection().offset,
               decoder_->rejection().message);
      }
      break;
    case Phase::kPad:
    case Phase::kBuffer:
      // RESOLUTIONS.md 14: the input ended inside a tensor's data.
      Reject(Rule::kStreamEofBuffer, pos_,
             "the input ended inside a tensor's buffers");
      break;
    case Phase::kStopped:
      break;
  }
  return state_;
}

}  // namespace hurray::stream::container
