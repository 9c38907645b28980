#include "stream/ingest/tensor_writer.h"

#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "dequant/plan.h"
#include "parser/element_type.h"
#include "parser/rules.h"
#include "stream/ingest/dense_writer.h"
#include "stream/ingest/output/sparse_walk.h"
#include "stream/ingest/paged_writer.h"
#include "stream/ingest/sparse_writer.h"
#include "stream/ingest/spooled_writer.h"

namespace hurray::stream::ingest {
namespace {

using WriterOr = absl::StatusOr<std::unique_ptr<TensorWriter>>;

// A failure that is a verdict on the input (a rule, or an argument the
// validator would have refused) fails the sink; any other only means no
// output for this tensor.
WriterOr NoneOrFail(const absl::Status& s, std::string* none) {
  if (RuleIdOf(s).has_value() ||
      s.code() == absl::StatusCode::kInvalidArgument) {
    return s;
  }
  *none = absl::StrCat("no output: ", s.message());
  return nullptr;
}

// A writer whose Begin succeeded, or null with *none set, or its error.
template <typename W>
WriterOr Begun(std::unique_ptr<W> w, absl::Status s, const std::string* none) {
  if (!s.ok()) return s;
  if (!none->empty()) return nullptr;
  return std::unique_ptr<TensorWriter>(std::move(w));
}

WriterOr MakeQuantized(const WriterContext& ctx, const TensorDescriptor& d,
                       const std::string& base, const std::string& name,
                       const OutputType& out, std::string* none) {
  absl::StatusOr<dequant::Plan> plan = dequant::MakePlan(d);
  if (!plan.ok()) {
    if (RuleIdOf(plan.status()).has_value()) return plan.status();
    *none = absl::StrCat("no output: ", plan.status().message());
    return nullptr;
  }
  const uint64_t count = plan->logical_elements;
  // Other dense layouts store elements out of logical order: the data
  // buffer is spooled and read back in row-major order at the end
  // (GatherRowMajor), whatever its size.
  const bool scattered = d.layout_tag != layout_tag::kRowMajor;
  if (d.buffer_count == 1 && !scattered) {
    dequant::DequantOptions options;
    options.mode = ctx.options->mode;
    absl::StatusOr<dequant::Dequantizer> dq = dequant::Dequantizer::Create(
        *std::move(plan), d, dequant::ParameterBytes(), options);
    if (!dq.ok()) return NoneOrFail(dq.status(), none);
    auto w = std::make_unique<DenseWriter>(ctx, d, base, name, out,
                                           /*quantized=*/true, count);
    w->set_dequantizer(*std::move(dq));
    absl::Status s = w->OpenOutput(d);
    return Begun(std::move(w), s, none);
  }
  uint64_t parameter_bytes = 0;
  for (uint32_t i = 1; i < d.buffer_count; ++i) {
    parameter_bytes += d.buffers[i].byte_size;
  }
  if (parameter_bytes > ctx.options->max_parameter_bytes) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "the parameter buffers of a tensor take ", parameter_bytes,
        " bytes, more than the limit of ", ctx.options->max_parameter_bytes));
  }
  auto w = std::make_unique<SpooledWriter>(ctx, d, base, name, out, count,
                                           *std::move(plan));
  absl::Status s = w->Begin();
  return Begun(std::move(w), s, none);
}

WriterOr MakePlain(const WriterContext& ctx, const TensorDescriptor& d,
                   const std::string& base, const std::string& name,
                   const OutputType& out, std::string* none) {
  uint64_t count = 0, bytes = 0;
  if (!d.ElementCount(&count) || !d.StorageBytesFor(count, &bytes)) {
    *none = "no output: the shape has no fixed element count";
    return nullptr;
  }
  const bool row_major = d.layout_tag == layout_tag::kRowMajor;
  if (count > 0 &&
      (d.buffer_count == 0 ||
       (row_major && (d.byte_offset > d.buffers[0].byte_size ||
                      bytes > d.buffers[0].byte_size - d.byte_offset)))) {
    *none = "no output: the data buffer does not hold the shape";
    return nullptr;
  }
  if (count == 0 || row_major) {
    auto w = std::make_unique<DenseWriter>(ctx, d, base, name, out,
                                           /*quantized=*/false, count);
    if (count > 0) w->set_skip(d.byte_offset);
    absl::Status s = w->OpenOutput(d);
    return Begun(std::move(w), s, none);
  }
  auto w = std::make_unique<SpooledWriter>(ctx, d, base, name, out, count,
                                           std::nullopt);
  absl::Status s = w->Begin();
  return Begun(std::move(w), s, none);
}

}  // namespace

absl::StatusOr<std::unique_ptr<TensorWriter>> MakeTensorWriter(
    const WriterContext& ctx, const TensorDescriptor& d,
    const std::string& base, const std::string& name, std::string* none) {
  if (d.layout_tag == layout_tag::kComposite) {
    *none = "composite head: its members are the outputs";
    return nullptr;
  }
  const bool sparse = IsSparseLayout(d.layout_tag);
  const bool paged = d.layout_tag == layout_tag::kBlockPaged;
  if (!sparse && !paged && !layout_tag::IsDense(d.layout_tag)) {
    *none = absl::StrCat("no output: layout ", LayoutName(d.layout_tag),
                         " is not converted yet");
    return nullptr;
  }
  const bool quantized = d.has(flag::kHasQuantization);
  absl::StatusOr<OutputType> out = ChooseOutput(
      d.type_tag, quantized, ctx.options->format, ctx.options->dtype);
  if (!out.ok()) {
    *none = absl::StrCat("no output: ", out.status().message());
    return nullptr;
  }
  if (sparse) {
    auto w = std::make_unique<SparseWriter>(ctx, d, base, name, *out);
    absl::Status s = w->Begin(none);
    return Begun(std::move(w), s, none);
  }
  if (paged) {
    auto w = std::make_unique<PagedWriter>(ctx, d, base, name, *out);
    absl::Status s = w->Begin(none);
    return Begun(std::move(w), s, none);
  }
  if (quantized) return MakeQuantized(ctx, d, base, name, *out, none);
  return MakePlain(ctx, d, base, name, *out, none);
}

}  // namespace hurray::stream::ingest
