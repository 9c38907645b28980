// A TensorSink for the stream and .hrry fuzz targets: it records every
// tensor (descriptor, reassembled buffers, whether OnTensorEnd came) and
// aborts as soon as an event breaks the TensorSink contract
// (stream/container/tensor_sink.h):
//   * events come in order: OnDescriptor, pieces, OnTensorEnd; nothing
//     after OnEndOfStream, which comes at most once and not mid-tensor;
//   * pieces are non-empty, buffers arrive in table order, each piece
//     continues its buffer where the previous one ended and stays within
//     byte_size, and lies inside the chunk being fed (a view, not a copy);
//   * OnTensorEnd only once every byte of every buffer arrived;
//   * bare streams (set_bare): each piece sits exactly where the format puts
//     it — after the descriptor, buffers back to back.
#ifndef HURRAY_FUZZ_CHECKING_SINK_H_
#define HURRAY_FUZZ_CHECKING_SINK_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/types/span.h"
#include "fuzz/fuzz_util.h"
#include "parser/descriptor.h"
#include "stream/container/tensor_sink.h"

namespace hurray::fuzz {

class CheckingSink : public stream::container::TensorSink {
 public:
  struct Tensor {
    std::unique_ptr<TensorDescriptor> descriptor;
    std::vector<std::vector<uint8_t>> buffers;
    uint64_t start = 0;  // absolute offset of the descriptor (bare streams)
    bool complete = false;
  };

  // Bare stream: check each piece's absolute position.
  void set_bare(bool bare) { bare_ = bare; }
  // The chunk the reader is being fed, and its absolute offset.
  void SetChunk(absl::Span<const uint8_t> chunk, uint64_t at) {
    chunk_ = chunk;
    chunk_at_ = at;
  }

  [[nodiscard]] absl::Status OnDescriptor(const TensorDescriptor& d) override {
    HURRAY_FUZZ_CHECK(!ended_);
    HURRAY_FUZZ_CHECK(tensors_.empty() || tensors_.back().complete);
    Tensor t;
    t.descriptor = std::make_unique<TensorDescriptor>(d);
    t.buffers.resize(d.buffer_count);
    t.start = next_start_;
    next_start_ += d.descriptor_length;
    for (uint32_t i = 0; i < d.buffer_count; ++i) {
      next_start_ += d.buffers[i].byte_size;
    }
    tensors_.push_back(std::move(t));
    return absl::OkStatus();
  }

  [[nodiscard]] absl::Status OnBufferPiece(
      uint32_t index, uint64_t offset,
      absl::Span<const uint8_t> piece) override {
    HURRAY_FUZZ_CHECK(!ended_);
    HURRAY_FUZZ_CHECK(!tensors_.empty() && !tensors_.back().complete);
    Tensor& t = tensors_.back();
    const TensorDescriptor& d = *t.descriptor;
    HURRAY_FUZZ_CHECK(index < d.buffer_count);
    HURRAY_FUZZ_CHECK(!piece.empty());
    for (uint32_t j = 0; j < d.buffer_count; ++j) {
      const uint64_t got = t.buffers[j].size();
      if (j < index) HURRAY_FUZZ_CHECK(got == d.buffers[j].byte_size);
      if (j > index) HURRAY_FUZZ_CHECK(got == 0);
    }
    HURRAY_FUZZ_CHECK(offset == t.buffers[index].size());
    HURRAY_FUZZ_CHECK(piece.size() <= d.buffers[index].byte_size - offset);
    // A view into the chunk being fed.
    HURRAY_FUZZ_CHECK(piece.data() >= chunk_.data() &&
                      piece.data() + piece.size() <=
                          chunk_.data() + chunk_.size());
    if (bare_) {
      uint64_t want = t.start + d.descriptor_length + offset;
      for (uint32_t j = 0; j < index; ++j) want += d.buffers[j].byte_size;
      HURRAY_FUZZ_CHECK(chunk_at_ + (piece.data() - chunk_.data()) == want);
    }
    t.buffers[index].insert(t.buffers[index].end(), piece.begin(), piece.end());
    ++pieces_;
    return absl::OkStatus();
  }

  [[nodiscard]] absl::Status OnTensorEnd() override {
    HURRAY_FUZZ_CHECK(!ended_);
    HURRAY_FUZZ_CHECK(!tensors_.empty() && !tensors_.back().complete);
    Tensor& t = tensors_.back();
    for (uint32_t j = 0; j < t.descriptor->buffer_count; ++j) {
      HURRAY_FUZZ_CHECK(t.buffers[j].size() ==
                        t.descriptor->buffers[j].byte_size);
    }
    t.complete = true;
    ++completed_;
    return absl::OkStatus();
  }

  [[nodiscard]] absl::Status OnEndOfStream() override {
    HURRAY_FUZZ_CHECK(!ended_);
    HURRAY_FUZZ_CHECK(tensors_.empty() || tensors_.back().complete);
    ended_ = true;
    return absl::OkStatus();
  }

  const std::vector<Tensor>& tensors() const { return tensors_; }
  uint64_t completed() const { return completed_; }
  bool ended() const { return ended_; }
  size_t pieces() const { return pieces_; }

  // The same tensors (descriptors, bytes, completeness) and end; piece
  // boundaries may differ.
  friend bool SameEvents(const CheckingSink& a, const CheckingSink& b) {
    return a.ended_ == b.ended_ && SameTensors(a, b);
  }
  // The same, without OnEndOfStream.
  friend bool SameTensors(const CheckingSink& a, const CheckingSink& b) {
    if (a.tensors_.size() != b.tensors_.size()) return false;
    for (size_t i = 0; i < a.tensors_.size(); ++i) {
      const Tensor& x = a.tensors_[i];
      const Tensor& y = b.tensors_[i];
      if (!(*x.descriptor == *y.descriptor) || x.buffers != y.buffers ||
          x.complete != y.complete) {
        return false;
      }
    }
    return true;
  }

 private:
  bool bare_ = false;
  absl::Span<const uint8_t> chunk_;
  uint64_t chunk_at_ = 0;
  uint64_t next_start_ = 0;
  std::vector<Tensor> tensors_;
  uint64_t completed_ = 0;
  size_t pieces_ = 0;
  bool ended_ = false;
};

}  // namespace hurray::fuzz

#endif  // HURRAY_FUZZ_CHECKING_SINK_H_
