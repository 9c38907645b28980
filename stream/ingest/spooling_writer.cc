#include "stream/ingest/spooling_writer.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace hurray::stream::ingest {

SpoolingWriter::SpoolingWriter(const WriterContext& ctx,
                               const TensorDescriptor& d,
                               const std::string& base, const std::string& name,
                               const OutputType& out_type)
    : TensorWriter(absl::StrCat(base, OutputSuffix(ctx.options->format)), base),
      ctx_(ctx),
      desc_(d),
      name_(name),
      out_type_(out_type),
      out_(ctx),
      spools_(ctx.dir) {}

absl::Status SpoolingWriter::End(WriterResult* result) {
  absl::Status s = Finish(result);
  result->late_entries = std::move(late_entries_);
  late_entries_.clear();
  return s;
}

absl::Status SpoolingWriter::CheckParameters(uint32_t first_parameter) {
  quantized_ = desc_.has(flag::kHasQuantization);
  uint64_t parameter_bytes = 0;
  for (uint32_t i = first_parameter; i < desc_.buffer_count && i < kMaxBuffers;
       ++i) {
    parameter_bytes += desc_.buffers[i].byte_size;
  }
  if (parameter_bytes > ctx_.options->max_parameter_bytes) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "the parameter buffers of a tensor take ", parameter_bytes,
        " bytes, more than the limit of ", ctx_.options->max_parameter_bytes));
  }
  return absl::OkStatus();
}

void SpoolingWriter::NoOutputAtEnd(std::string* verdict,
                                   absl::string_view why) {
  *verdict = absl::StrCat("no output: ", why);
  late_entries_.clear();
  out_.Abandon();
  no_output_ = true;
}

}  // namespace hurray::stream::ingest
