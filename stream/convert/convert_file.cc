#include "stream/convert/convert_file.h"

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/cord.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "parser/rules.h"
#include "stream/container/safe_output_dir.h"
#include "stream/convert/gguf_split.h"
#include "stream/convert/shards.h"

namespace hurray::stream::convert {
namespace {

// Codes ConvertFile passes on as they are: I/O, a stop, an unsupported type.
bool KeepsItsCode(absl::StatusCode code) {
  switch (code) {
    case absl::StatusCode::kNotFound:
    case absl::StatusCode::kPermissionDenied:
    case absl::StatusCode::kDataLoss:
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kInternal:
    case absl::StatusCode::kCancelled:
    case absl::StatusCode::kUnimplemented:
      return true;
    default:
      return false;
  }
}

// A refusal of the input as kInvalidArgument, its payloads (rule id,
// offset) kept: the readers also refuse with kOutOfRange (a number past a
// limit) and kResourceExhausted (too many shards or parts).
absl::Status AsRefusal(const absl::Status& s) {
  if (s.ok() || KeepsItsCode(s.code()) ||
      s.code() == absl::StatusCode::kInvalidArgument) {
    return s;
  }
  absl::Status out(absl::StatusCode::kInvalidArgument, s.message());
  s.ForEachPayload([&out](absl::string_view url, const absl::Cord& payload) {
    out.SetPayload(url, payload);
  });
  return out;
}

}  // namespace

absl::StatusOr<ConvertInput> OpenConvertInput(const std::string& path,
                                              const ConvertOptions& options) {
  ConvertInput in;
  if (IsShardIndexPath(path)) {
    ShardLimits limits;
    limits.safetensors = options.safetensors;
    absl::StatusOr<ShardedModel> model = OpenShardedSafetensors(path, limits);
    if (!model.ok()) return AsRefusal(model.status());
    in.source = std::move(model->source);
    in.warnings = std::move(model->warnings);
    return in;
  }
  if (SplitGgufParts(path.substr(path.rfind('/') + 1)) > 0) {
    SplitLimits limits;
    limits.gguf = options.gguf;
    absl::StatusOr<SplitGguf> split = OpenSplitGgufFiles(path, limits);
    if (!split.ok()) return AsRefusal(split.status());
    in.source = std::move(split->source);
    return in;
  }
  absl::StatusOr<std::unique_ptr<FileSource>> file = FileSource::Open(path);
  if (!file.ok()) return AsRefusal(file.status());
  in.source = *std::move(file);
  return in;
}

absl::StatusOr<ConvertReport> ConvertFile(
    const std::string& input, const std::string& output, ConvertOptions options,
    std::vector<std::string>* warnings,
    const std::function<bool()>& cancelled) {
  absl::StatusOr<ConvertInput> in = OpenConvertInput(input, options);
  if (!in.ok()) return in.status();
  if (warnings != nullptr) {
    for (std::string& w : in->warnings) warnings->push_back(std::move(w));
  }
  absl::StatusOr<std::unique_ptr<container::SafeOutputFile>> file =
      container::SafeOutputFile::Create(output);
  if (!file.ok()) return file.status();
  // Set when a write of ours failed (or a stop was asked): that status is
  // passed on as it is, never taken for a refusal of the input.
  absl::Status stopped;
  auto check = [&](absl::Status s) {
    if (s.ok() && cancelled && cancelled()) {
      s = absl::CancelledError("the conversion was cancelled");
    }
    if (!s.ok() && stopped.ok()) stopped = s;
    return s;
  };
  container::SafeOutputFile& out = **file;
  auto sink = [&](absl::Span<const uint8_t> bytes) {
    return check(absl::OkStatus()).ok() ? check(out.Write(bytes)) : stopped;
  };
  options.direct_output.fd = out.fd();
  options.direct_output.flush = [&] {
    return check(absl::OkStatus()).ok() ? check(out.Flush()) : stopped;
  };
  absl::StatusOr<ConvertReport> report =
      Convert(*in->source, options, std::move(sink));
  if (!stopped.ok()) return stopped;
  if (!report.ok()) return AsRefusal(report.status());
  HURRAY_RETURN_IF_ERROR(check(absl::OkStatus()));
  HURRAY_RETURN_IF_ERROR(out.Commit());
  return report;
}

}  // namespace hurray::stream::convert
