// DequantOutput: where Dequantizer::Feed (dequant/dequantizer.h) writes the
// floats a piece of the data buffer completes. The dequantizer picks its
// path from the tensor's layout and asks the output for memory accordingly:
//
//   - row-major storage: elements complete in logical row-major order, and
//     Feed asks for a Window of the next `count` floats, writes a prefix of
//     it and Commits what it wrote: the output can be a small reused buffer
//     flushed to a file at every Commit (bounded memory, any tensor size);
//   - other dense layouts (column-major, strided, tiled, Morton, Hilbert):
//     elements complete out of order, and Feed asks for the whole Tensor
//     (logical row-major, every float) before each piece. An output that
//     cannot hold it returns an empty span, and Feed fails with
//     ResourceExhausted before consuming anything.
//
// Two ready outputs: TensorOutput (the caller's whole-tensor memory; both
// paths) and WindowOutput (a reused window handed to a callback; row-major
// storage only, bounded memory).
#ifndef HURRAY_DEQUANT_OUTPUT_H_
#define HURRAY_DEQUANT_OUTPUT_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"

namespace hurray::dequant {

class DequantOutput {
 public:
  virtual ~DequantOutput() = default;

  // Memory for logical elements [first, first + count), in order; at least
  // `count` floats, or an empty span when the output cannot take them.
  virtual absl::Span<float> Window(uint64_t first, size_t count) = 0;
  // `count` floats of the last Window, from its start, are written. An
  // error stops the Feed that called it and is returned by it.
  [[nodiscard]] virtual absl::Status Commit(uint64_t first, size_t count) = 0;
  // The whole tensor, `count` floats in logical row-major order, the same
  // memory on every call for one tensor; empty when the output cannot hold
  // it.
  virtual absl::Span<float> Tensor(uint64_t count) = 0;
};

// The caller's memory for the whole tensor (plan().logical_elements floats).
class TensorOutput final : public DequantOutput {
 public:
  explicit TensorOutput(absl::Span<float> tensor) : tensor_(tensor) {}

  absl::Span<float> Window(uint64_t first, size_t count) override {
    if (first > tensor_.size() || count > tensor_.size() - first) return {};
    return tensor_.subspan(static_cast<size_t>(first), count);
  }
  [[nodiscard]] absl::Status Commit(uint64_t, size_t) override {
    return absl::OkStatus();
  }
  absl::Span<float> Tensor(uint64_t count) override {
    return count <= tensor_.size() ? tensor_ : absl::Span<float>();
  }

 private:
  absl::Span<float> tensor_;
};

// A window reused for every piece, handed to `flush` as elements complete
// (in logical row-major order). Holds at most one piece's floats: with
// pieces of B bytes, about B · 8 / bits floats. Row-major storage only: the
// whole tensor is never held (Tensor returns an empty span).
class WindowOutput final : public DequantOutput {
 public:
  using Flush = std::function<absl::Status(uint64_t first,
                                           absl::Span<const float> floats)>;
  explicit WindowOutput(Flush flush) : flush_(std::move(flush)) {}

  absl::Span<float> Window(uint64_t, size_t count) override {
    if (window_.size() < count) window_.resize(count);
    return absl::MakeSpan(window_.data(), count);
  }
  [[nodiscard]] absl::Status Commit(uint64_t first, size_t count) override {
    return flush_(first, absl::MakeConstSpan(window_.data(), count));
  }
  absl::Span<float> Tensor(uint64_t) override { return {}; }

 private:
  Flush flush_;
  std::vector<float> window_;
};

}  // namespace hurray::dequant

#endif  // HURRAY_DEQUANT_OUTPUT_H_
