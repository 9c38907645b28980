#include "stream/ingest/dense_writer.h"

#include <algorithm>
#include <utility>

#include "absl/base/config.h"
#include "absl/strings/str_cat.h"
#include "parser/element_type.h"
#include "parser/rules.h"
#include "parser/wire.h"

namespace hurray::stream::ingest {

DenseWriter::DenseWriter(const WriterContext& ctx, const TensorDescriptor& d,
                         const std::string& base, const std::string& name,
                         const OutputType& out_type, bool quantized,
                         uint64_t count)
    : TensorWriter(absl::StrCat(base, OutputSuffix(ctx.options->format)), base),
      out_(ctx),
      name_(name),
      out_type_(out_type),
      quantized_(quantized),
      conv_(quantized ? type_tag::kFloat32 : d.type_tag, out_type, count),
      values_(ctx.values),
      floats_out_(this, ctx.float_window) {}

absl::Status DenseWriter::OpenOutput(const TensorDescriptor& d) {
  HURRAY_RETURN_IF_ERROR(
      out_.Open(name_, out_type_, OutputShape(d, out_type_)));
#if defined(ABSL_IS_LITTLE_ENDIAN)
  direct_ = out_.in_memory() && quantized_ &&
            out_type_.tag == type_tag::kFloat32 && !out_type_.pairs;
#endif
  return absl::OkStatus();
}

absl::Status DenseWriter::Piece(uint32_t buffer,
                                absl::Span<const uint8_t> piece) {
  if (buffer != 0) return absl::OkStatus();
  return quantized_ ? Dequantize(piece) : Convert(piece);
}

absl::Status DenseWriter::End(WriterResult* result) {
  if (quantized_) {
    absl::Status s = dq_->Finish();
    if (!s.ok()) return s;
  }
  if (conv_.done() < conv_.count()) {
    return absl::DataLossError("the data buffer is shorter than its shape");
  }
  result->verdict = absl::StrCat(quantized_ ? "dequantized (" : "converted (",
                                 conv_.done(), " values)");
  absl::Status s = out_.Close(result);
  dq_.reset();
  return s;
}

absl::Status DenseWriter::WriteFloats(const float* f, size_t n) {
#if defined(ABSL_IS_LITTLE_ENDIAN)
  return out_.Emit(
      conv_, absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(f), n * 4));
#else
  le_.resize(n * 4);
  for (size_t i = 0; i < n; ++i) wire::StoreF32(&le_[4 * i], f[i]);
  return out_.Emit(conv_, le_);
#endif
}

absl::Status DenseWriter::Dequantize(absl::Span<const uint8_t> piece) {
  while (!piece.empty()) {
    const absl::Span<const uint8_t> part =
        piece.first(std::min(piece.size(), kSubPiece));
    piece.remove_prefix(part.size());
    absl::Status s = dq_->Feed(part, floats_out_);
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status DenseWriter::Convert(absl::Span<const uint8_t> piece) {
  const size_t skip =
      static_cast<size_t>(std::min<uint64_t>(skip_, piece.size()));
  skip_ -= skip;
  piece.remove_prefix(skip);
  while (!piece.empty()) {
    const absl::Span<const uint8_t> part =
        piece.first(std::min(piece.size(), kSubPiece));
    piece.remove_prefix(part.size());
    absl::Status s = out_.Emit(conv_, part);
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace hurray::stream::ingest
