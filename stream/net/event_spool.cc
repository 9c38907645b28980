#include "stream/net/event_spool.h"

#include <utility>

namespace hurray::stream::net {

uint64_t EventSpool::DescriptorCost() { return sizeof(TensorDescriptor); }
uint64_t EventSpool::PieceCost(size_t piece_size) {
  return piece_size + sizeof(Event);
}

void EventSpool::RecordDescriptor(const TensorDescriptor& d) {
  descriptors_.push_back(std::make_unique<TensorDescriptor>(d));
  events_.push_back({Kind::kDescriptor, 0, 0, 0, 0});
  bytes_ += DescriptorCost();
}

void EventSpool::RecordPiece(uint32_t buffer_index, uint64_t offset,
                             absl::Span<const uint8_t> piece) {
  if (piece.empty()) return;
  bytes_ += PieceCost(piece.size());
  // A piece that continues the previous one extends it.
  if (!events_.empty()) {
    Event& last = events_.back();
    if (last.kind == Kind::kPiece && last.buffer_index == buffer_index &&
        last.offset + last.size == offset &&
        last.at + last.size == data_.size()) {
      data_.insert(data_.end(), piece.begin(), piece.end());
      last.size += piece.size();
      return;
    }
  }
  events_.push_back(
      {Kind::kPiece, buffer_index, offset, data_.size(), piece.size()});
  data_.insert(data_.end(), piece.begin(), piece.end());
}

void EventSpool::RecordTensorEnd() {
  events_.push_back({Kind::kTensorEnd, 0, 0, 0, 0});
}

absl::Status EventSpool::Replay(container::TensorSink* sink) {
  absl::Status s;
  size_t descriptor = 0;
  for (const Event& e : events_) {
    switch (e.kind) {
      case Kind::kDescriptor:
        s = sink->OnDescriptor(*descriptors_[descriptor++]);
        break;
      case Kind::kPiece:
        s = sink->OnBufferPiece(
            e.buffer_index, e.offset,
            absl::MakeConstSpan(data_).subspan(e.at, e.size));
        break;
      case Kind::kTensorEnd:
        s = sink->OnTensorEnd();
        break;
    }
    if (!s.ok()) break;
  }
  Clear();
  return s;
}

void EventSpool::Clear() {
  events_.clear();
  descriptors_.clear();
  data_.clear();
  data_.shrink_to_fit();
  bytes_ = 0;
}

}  // namespace hurray::stream::net
