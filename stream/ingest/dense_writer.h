// DenseWriter (stream/ingest/tensor_writer.h): a row-major tensor, plain or
// quantized without parameter buffers, converted (dequantized) to the output
// type as its data buffer arrives, in pieces of at most kSubPiece bytes.
// SpooledWriter (stream/ingest/spooled_writer.h) feeds it the other dense
// tensors at their end.
#ifndef HURRAY_STREAM_INGEST_DENSE_WRITER_H_
#define HURRAY_STREAM_INGEST_DENSE_WRITER_H_

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "dequant/dequantizer.h"
#include "dequant/output.h"
#include "parser/descriptor.h"
#include "stream/ingest/output/element_convert.h"
#include "stream/ingest/output_file.h"
#include "stream/ingest/tensor_writer.h"
#include "stream/ingest/values_buffer.h"

namespace hurray::stream::ingest {

class DenseWriter : public TensorWriter {
 public:
  // A tensor of `count` logical elements; `quantized`: its values come from
  // a Dequantizer (set_dequantizer) as float32, else they are `d`'s own
  // elements. `name`: the tensor's entry in model.safetensors.
  DenseWriter(const WriterContext& ctx, const TensorDescriptor& d,
              const std::string& base, const std::string& name,
              const OutputType& out_type, bool quantized, uint64_t count);

  // The dequantizer of a quantized tensor.
  void set_dequantizer(dequant::Dequantizer dq) { dq_.emplace(std::move(dq)); }
  // Bytes of the data buffer before the first element, skipped.
  void set_skip(uint64_t bytes) { skip_ = bytes; }
  // The output's temp (or model.safetensors entry) and .npy header.
  [[nodiscard]] absl::Status OpenOutput(const TensorDescriptor& d);

  [[nodiscard]] absl::Status Piece(uint32_t buffer,
                                   absl::Span<const uint8_t> piece) override;
  [[nodiscard]] absl::Status End(WriterResult* result) override;
  bool in_safetensors() const override { return out_.in_safetensors(); }

 protected:
  // Bytes of the data buffer in stored order (row-major), dequantized or
  // converted into the output.
  [[nodiscard]] absl::Status Dequantize(absl::Span<const uint8_t> piece);
  [[nodiscard]] absl::Status Convert(absl::Span<const uint8_t> piece);
  bool quantized() const { return quantized_; }

 private:
  [[nodiscard]] absl::Status WriteFloats(const float* f, size_t n);

  OutputFile out_;
  std::string name_;
  OutputType out_type_;
  const bool quantized_;
  ElementConverter conv_;
  std::optional<dequant::Dequantizer> dq_;
  uint64_t skip_ = 0;
  ValuesBuffer* values_;
  // The dequantizer writes straight into values_ (OpenOutput).
  bool direct_ = false;
  // Feed's output: the sink's window of at most one sub-piece's floats
  // (WriterContext::float_window, kept from one tensor to the next),
  // written out as they complete; or, when the output is the values buffer
  // as float32 (direct_), the buffer itself: the dequantizer writes each
  // float once, where the observer reads it.
  class Floats final : public dequant::DequantOutput {
   public:
    Floats(DenseWriter* w, std::vector<float>* window)
        : w_(w), window_(window) {}
    absl::Span<float> Window(uint64_t, size_t count) override {
      direct_ = {};
      if (w_->direct_) direct_ = w_->values_->Next(count * sizeof(float));
      if (!direct_.empty()) {
        return absl::MakeSpan(reinterpret_cast<float*>(direct_.data()), count);
      }
      if (window_->size() < count) window_->resize(count);
      return absl::MakeSpan(window_->data(), count);
    }
    [[nodiscard]] absl::Status Commit(uint64_t, size_t count) override {
      if (direct_.empty()) return w_->WriteFloats(window_->data(), count);
      const size_t n = std::min(direct_.size(), count * sizeof(float));
      w_->values_->Advance(n);
      w_->conv_.Discard(direct_.first(n));  // counted, already in place
      return absl::OkStatus();
    }
    absl::Span<float> Tensor(uint64_t) override { return {}; }

   private:
    DenseWriter* w_;
    std::vector<float>* window_;
    absl::Span<uint8_t> direct_;  // the last Window, in the values buffer
  };
  Floats floats_out_;
  std::vector<uint8_t> le_;
};

}  // namespace hurray::stream::ingest

#endif  // HURRAY_STREAM_INGEST_DENSE_WRITER_H_
