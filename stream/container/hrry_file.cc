#include "stream/container/hrry_file.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "stream/container/file_checks.h"

namespace hurray::stream::container {

HrryForwardReader::HrryForwardReader(const FileOptions& options,
                                     TensorSink* sink)
    : options_(options), sink_(sink) {}

HrryForwardReader::~HrryForwardReader() = default;

absl::Span<const TensorExtent> HrryForwardReader::tensors() const {
  if (walker_ == nullptr) return {};
  return walker_->extents();
}

void HrryForwardReader::Reject(const Rejection& r) {
  if (state_ != FileState::kNeedMore || r.ok()) return;
  rejection_ = r;
  state_ = FileState::kRejected;
  phase_ = Phase::kStopped;
}

Rejection HrryForwardReader::ResumeAt(absl::Span<const uint8_t> header,
                                      absl::Span<const uint8_t> last,
                                      uint64_t offset,
                                      std::vector<TensorExtent> done) {
  if (pos_ != 0 || header.size() != kFileHeaderSize ||
      last.size() != kTrailerSize) {
    Reject({Rule::kStreamIo, pos_, "cannot resume: bad checkpoint"});
    return rejection_;
  }
  std::memcpy(header_bytes_, header.data(), kFileHeaderSize);
  std::memcpy(last_, last.data(), kTrailerSize);
  feed_start_ = offset;
  const Rejection r = ParseFileHeader(header_bytes_, &geometry_.header);
  if (!r.ok()) {
    Reject(r);
    return rejection_;
  }
  if (offset < geometry_.header.first_descriptor_offset) {
    Reject({Rule::kStreamIo, offset, "cannot resume: bad checkpoint"});
    return rejection_;
  }
  pos_ = offset;
  StartRegion();
  const uint64_t completed = done.size();
  walker_->ResumeAfter(std::move(done), completed);
  return kAccepted;
}

FileState HrryForwardReader::FailSource() {
  Reject({Rule::kStreamIo, pos_, "the byte source failed"});
  return state_;
}

void HrryForwardReader::KeepLast(absl::Span<const uint8_t> in) {
  if (in.empty()) return;  // data() may be null: no memcpy from it
  if (in.size() >= kTrailerSize) {
    std::memcpy(last_, in.data() + in.size() - kTrailerSize, kTrailerSize);
    return;
  }
  std::memmove(last_, last_ + in.size(), kTrailerSize - in.size());
  std::memcpy(last_ + kTrailerSize - in.size(), in.data(), in.size());
}

void HrryForwardReader::LastBytesBefore(uint64_t end,
                                        std::vector<uint8_t>* out) const {
  const size_t at = static_cast<size_t>(end - feed_start_);
  const size_t from_chunk = std::min<size_t>(at, kTrailerSize);
  out->assign(last_ + from_chunk, last_ + kTrailerSize);
  if (from_chunk > 0) {
    out->insert(out->end(), feeding_.data() + at - from_chunk,
                feeding_.data() + at);
  }
}

FileState HrryForwardReader::Feed(absl::Span<const uint8_t> chunk) {
  if (state_ != FileState::kNeedMore) return state_;
  // LIMIT-TOTAL-BYTES: no byte at or past the limit is taken.
  const uint64_t limit = options_.limits.max_total_bytes;
  const uint64_t room = pos_ < limit ? limit - pos_ : 0;
  const absl::Span<const uint8_t> allowed =
      chunk.first(static_cast<size_t>(std::min<uint64_t>(chunk.size(), room)));
  // last_ stays the window before this chunk while its bytes are walked
  // (LastBytesBefore), and takes the chunk's end after.
  feeding_ = allowed;
  feed_start_ = pos_;
  size_t used = 0;
  while (state_ == FileState::kNeedMore && used < allowed.size()) {
    const absl::Span<const uint8_t> in = allowed.subspan(used);
    switch (phase_) {
      case Phase::kHeader:
        used += StepHeader(in);
        break;
      case Phase::kLeadPad:
        used += StepLeadPad(in);
        break;
      case Phase::kRegion:
        used += StepRegion(in);
        break;
      case Phase::kTail:
        used += StepTail(in);
        break;
      case Phase::kStopped:
        break;
    }
  }
  KeepLast(allowed);
  feeding_ = {};
  feed_start_ = pos_;
  if (state_ == FileState::kNeedMore && allowed.size() < chunk.size()) {
    Reject({Rule::kLimitTotalBytes, limit,
            "the file is longer than the total byte limit"});
  }
  return state_;
}

size_t HrryForwardReader::StepHeader(absl::Span<const uint8_t> in) {
  const size_t n = static_cast<size_t>(
      std::min<uint64_t>(in.size(), kFileHeaderSize - pos_));
  std::memcpy(header_bytes_ + pos_, in.data(), n);
  pos_ += n;
  if (pos_ < kFileHeaderSize) return n;
  const Rejection r = ParseFileHeader(header_bytes_, &geometry_.header);
  if (!r.ok()) {
    Reject(r);
  } else if (geometry_.header.first_descriptor_offset == kFileHeaderSize) {
    StartRegion();
  } else {
    phase_ = Phase::kLeadPad;
  }
  return n;
}

size_t HrryForwardReader::StepLeadPad(absl::Span<const uint8_t> in) {
  const uint64_t target = geometry_.header.first_descriptor_offset;
  const size_t n =
      static_cast<size_t>(std::min<uint64_t>(in.size(), target - pos_));
  for (size_t i = 0; i < n && !nonzero_pad_; ++i) {
    if (in[i] != 0) {
      nonzero_pad_ = true;
      first_nonzero_pad_ = pos_ + i;
    }
  }
  pos_ += n;
  if (pos_ < target) return n;
  // Judged once complete, like the region's padding (tensor_walker.h).
  if (nonzero_pad_ && Applies(Rule::kFileHdr10, options_.parse.mode)) {
    Reject({Rule::kFileHdr10, first_nonzero_pad_,
            "a padding byte before the first descriptor is not zero"});
  } else {
    StartRegion();
  }
  return n;
}

void HrryForwardReader::StartRegion() {
  Framing framing;
  framing.data_alignment = geometry_.header.data_buffer_alignment;
  framing.reject_padding_after_head = options_.reject_padding_after_head;
  framing.record_extents = true;
  walker_ = std::make_unique<TensorWalker>(options_.parse, options_.limits,
                                           framing, pos_, sink_);
  phase_ = Phase::kRegion;
}

size_t HrryForwardReader::StepRegion(absl::Span<const uint8_t> in) {
  const WalkResult r = walker_->Feed(in);
  pos_ += r.consumed;
  if (r.state == WalkState::kRejected) {
    Reject(walker_->rejection());
  } else if (r.state == WalkState::kDone) {
    // What follows the region is kept until the trailer says what it is.
    tail_start_ = walker_->region_end();
    walker_->AppendOverrun(&tail_);
    phase_ = Phase::kTail;
    if (tail_.size() > options_.max_metadata_bytes) {
      Reject({Rule::kLimitBufferBytes,
              tail_start_ + options_.max_metadata_bytes,
              "the KV and index sections pass the metadata byte limit"});
    }
  }
  return r.consumed;
}

size_t HrryForwardReader::StepTail(absl::Span<const uint8_t> in) {
  if (tail_.size() + in.size() > options_.max_metadata_bytes) {
    Reject({Rule::kLimitBufferBytes, tail_start_ + options_.max_metadata_bytes,
            "the KV and index sections pass the metadata byte limit"});
    return 0;
  }
  tail_.insert(tail_.end(), in.begin(), in.end());
  pos_ += in.size();
  return in.size();
}

Rejection HrryForwardReader::CutAt(uint64_t limit) const {
  // The tensor that contains `limit`: the last one starting at or before it.
  absl::Span<const TensorExtent> done = walker_->extents();
  const TensorExtent* x = nullptr;
  auto it = std::upper_bound(done.begin(), done.end(), limit,
                             [](uint64_t off, const TensorExtent& e) {
                               return off < e.descriptor_offset;
                             });
  if (it != done.begin()) x = &*(it - 1);
  const TensorExtent& current = walker_->current();
  const bool in_progress = walker_->state() == WalkState::kNeedMore &&
                           current.descriptor_offset <= limit;
  if (in_progress) x = &current;
  if (x == nullptr || x->descriptor_offset == limit) {
    // Tensors seem to continue where the KV or index section starts.
    return {Rule::kFileIdx15, limit,
            "the tensor region runs into the KV or index section"};
  }
  // As if the region ended at `limit` (what hrry_mmap.h sees): cut inside a
  // descriptor, or inside the buffers and padding of a tensor.
  const bool in_descriptor =
      (in_progress && walker_->in_descriptor()) ||
      limit < x->descriptor_offset + x->descriptor_length;
  if (in_descriptor) {
    return {Rule::kDescHdr01, limit,
            "the KV or index section starts inside a descriptor"};
  }
  return {Rule::kStreamEofBuffer, limit,
          "the KV or index section starts inside a tensor's buffers"};
}

FileState HrryForwardReader::Finish() {
  if (state_ != FileState::kNeedMore) return state_;
  if (phase_ == Phase::kHeader || pos_ < kMinFileSize) {
    Reject({Rule::kFileHdr01, pos_, "the file is shorter than 104 bytes"});
    return state_;
  }
  Rejection r = ParseTrailer(absl::MakeConstSpan(last_, kTrailerSize), pos_,
                             geometry_.header, options_, &geometry_);
  if (r.ok() && phase_ == Phase::kLeadPad) {
    // Unreachable with a valid trailer (the index lies past the padding).
    r = {Rule::kFileHdr08, header_at::kFirstDescriptor,
         "the file ends before first_descriptor_offset"};
  }
  if (r.ok() &&
      (phase_ == Phase::kRegion ||
       (phase_ == Phase::kTail && tail_start_ > geometry_.region_limit))) {
    r = CutAt(geometry_.region_limit);
  }
  if (r.ok()) r = CheckTail();
  if (!r.ok()) {
    Reject(r);
    return state_;
  }
  // The walker tells the sink and remembers its answer (status()).
  if (walker_ != nullptr &&
      walker_->EndOfStream(pos_) == WalkState::kRejected) {
    Reject(walker_->rejection());
    return state_;
  }
  state_ = FileState::kDone;
  phase_ = Phase::kStopped;
  return state_;
}

Rejection HrryForwardReader::CheckTail() {
  const FileGeometry& g = geometry_;
  const Mode mode = options_.parse.mode;
  // Both sections lie in [region_limit, file_size - 40), inside the tail.
  auto bytes = [this](uint64_t offset, uint64_t length) {
    return absl::MakeConstSpan(tail_).subspan(
        static_cast<size_t>(offset - tail_start_), static_cast<size_t>(length));
  };
  const absl::Span<const uint8_t> index =
      bytes(g.trailer.index_offset, g.trailer.index_length);
  Rejection r = CheckIndexCrc(index, g);
  if (r.ok()) {
    r = index_.Parse(index, g.trailer.index_offset,
                     g.header.has(file_flag::kSortedIndex), mode);
  }
  if (r.ok() && g.kv_present) {
    r = kv_.Parse(bytes(g.trailer.kv_offset, g.trailer.kv_length),
                  g.trailer.kv_offset, mode);
  }
  if (!r.ok()) return r;
  const absl::Span<const TensorExtent> walked = walker_->extents();
  std::vector<const TensorExtent*> extent_of_entry;
  r = CheckIndexEntries(
      index_, g, mode,
      [walked](const IndexEntry& e, const TensorExtent** out) {
        *out = FindExtent(walked, e.descriptor_offset);
        return kAccepted;
      },
      &extent_of_entry);
  if (r.ok()) r = CheckWalk(walked, tail_start_, extent_of_entry, g, mode);
  if (!r.ok()) return r;
  entry_of_tensor_.assign(walked.size(), nullptr);
  for (size_t i = 0; i < extent_of_entry.size(); ++i) {
    if (extent_of_entry[i] != nullptr) {
      entry_of_tensor_[static_cast<size_t>(
          extent_of_entry[i] - walked.data())] = &index_.entries()[i];
    }
  }
  return kAccepted;
}

Rejection ReadHrry(absl::Span<const uint8_t> bytes, const FileOptions& options,
                   TensorSink* sink) {
  HrryForwardReader reader(options, sink);
  FileState state = reader.Feed(bytes);
  if (state == FileState::kNeedMore) state = reader.Finish();
  return state == FileState::kRejected ? reader.rejection() : kAccepted;
}

}  // namespace hurray::stream::container
