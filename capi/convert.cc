// hurray_convert (hurray.h) over stream::convert::ConvertFile
// (stream/convert/convert_file.h), the call `hurray convert` makes. Kept
// apart from hurray.cc: it links the importers.
#include "stream/convert/convert.h"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "capi/error_fill.h"
#include "capi/hurray.h"
#include "parser/rules.h"
#include "stream/convert/convert_file.h"
#include "stream/convert/quantizer.h"

namespace {

using hurray::capi::CopyString;
using hurray::capi::Guarded;
using hurray::capi::SetError;
using hurray::capi::SetErrorOf;

namespace convert = hurray::stream::convert;

// The options struct as hurray.h 1.2 defines it: the smallest size taken.
constexpr size_t kOptionsSize12 = sizeof(hurray_convert_options);
constexpr size_t kReportSize12 = sizeof(hurray_convert_report);
// A caller's struct above this is refused without reading its tail.
constexpr size_t kMaxOptionsSize = 4096;

// ConvertFile's failure codes (convert_file.h) as hurray.h says.
hurray_status SetStatus(hurray_error* e, const absl::Status& s) {
  hurray_status code = HURRAY_INTERNAL;
  switch (s.code()) {
    case absl::StatusCode::kOk:
      code = HURRAY_OK;
      break;
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kOutOfRange:
    case absl::StatusCode::kFailedPrecondition:
      code = HURRAY_REJECTED;
      break;
    case absl::StatusCode::kUnimplemented:
      code = HURRAY_UNSUPPORTED;
      break;
    case absl::StatusCode::kCancelled:
      code = HURRAY_CANCELLED;
      break;
    case absl::StatusCode::kNotFound:
    case absl::StatusCode::kPermissionDenied:
    case absl::StatusCode::kDataLoss:
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kAlreadyExists:
      code = HURRAY_IO_ERROR;
      break;
    case absl::StatusCode::kResourceExhausted:
      code = HURRAY_NO_MEMORY;
      break;
    default:
      code = HURRAY_INTERNAL;
      break;
  }
  return SetErrorOf(e, code, s);
}

// The caller's options, whatever the size of their struct (hurray.h).
absl::StatusOr<hurray_convert_options> OptionsOf(
    const hurray_convert_options* given) {
  hurray_convert_options o;
  hurray_convert_options_init(&o);
  if (given == nullptr) return o;
  if (given->size < kOptionsSize12) {
    return absl::InvalidArgumentError(
        absl::StrCat("options.size ", given->size, " is below ", kOptionsSize12,
                     ": call hurray_convert_options_init"));
  }
  if (given->size > kMaxOptionsSize) {
    return absl::InvalidArgumentError(absl::StrCat("options.size ", given->size,
                                                   " is not a size of "
                                                   "hurray_convert_options"));
  }
  const auto* bytes = reinterpret_cast<const unsigned char*>(given);
  for (size_t i = kOptionsSize12; i < given->size; ++i) {
    if (bytes[i] != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("options set a field at byte ", i,
                       " that this library (interface 1.2) does not know"));
    }
  }
  std::memcpy(&o, given, kOptionsSize12);
  o.size = kOptionsSize12;
  return o;
}

absl::StatusOr<std::optional<convert::QuantizeSpec>> SchemeOf(
    const char* text, absl::string_view what) {
  if (text == nullptr) return std::nullopt;
  absl::StatusOr<convert::QuantizeSpec> q = convert::ParseQuantizeSpec(text);
  if (!q.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": ", q.status().message()));
  }
  return *std::move(q);
}

// The C++ options of the C ones; an error is INVALID_ARGUMENT.
absl::StatusOr<convert::ConvertOptions> ConvertOptionsOf(
    const hurray_convert_options* given) {
  absl::StatusOr<hurray_convert_options> c = OptionsOf(given);
  if (!c.ok()) return c.status();
  const hurray_convert_options& o = *c;
  convert::ConvertOptions r;
  absl::StatusOr<std::optional<convert::QuantizeSpec>> q =
      SchemeOf(o.quantize, "quantize");
  if (!q.ok()) return q.status();
  r.quantize = *std::move(q);
  q = SchemeOf(o.requantize, "requantize");
  if (!q.ok()) return q.status();
  r.requantize = *std::move(q);
  if (o.skip_count > 0 && o.skip == nullptr) {
    return absl::InvalidArgumentError("null skip with a skip_count");
  }
  for (size_t i = 0; i < o.skip_count; ++i) {
    if (o.skip[i] == nullptr) {
      return absl::InvalidArgumentError("a null skip pattern");
    }
    r.skip.emplace_back(o.skip[i]);
  }
  if (o.kv_count > 0 && (o.kv_keys == nullptr || o.kv_values == nullptr)) {
    return absl::InvalidArgumentError(
        "null kv_keys or kv_values with a "
        "kv_count");
  }
  for (size_t i = 0; i < o.kv_count; ++i) {
    if (o.kv_keys[i] == nullptr || o.kv_values[i] == nullptr ||
        o.kv_keys[i][0] == '\0') {
      return absl::InvalidArgumentError(
          "a null or empty kv key, or a null "
          "kv value");
    }
    r.kv.emplace_back(o.kv_keys[i], o.kv_values[i]);
  }
  r.kquant_compact = o.compact_kquants != 0;
  if (o.data_alignment != 0) {
    if (!convert::IsValidDataAlignment(o.data_alignment)) {
      return absl::InvalidArgumentError(
          "data_alignment needs a power of two of bytes from 4096 to "
          "2097152");
    }
    r.data_buffer_alignment = o.data_alignment;
  }
  if (o.chunk_size != 0) {
    if (o.chunk_size > (uint64_t{1} << 30)) {
      return absl::InvalidArgumentError("chunk_size over 1 GiB");
    }
    r.chunk_bytes = static_cast<size_t>(o.chunk_size);
  }
  if (o.scale_spool_bytes != 0) r.scale_spool_bytes = o.scale_spool_bytes;
  if (o.max_metadata_bytes != 0) {
    r.reader.max_metadata_bytes = o.max_metadata_bytes;
  }
  if (o.max_buffer_bytes != 0) {
    r.reader.limits.max_buffer_bytes = o.max_buffer_bytes;
  }
  if (o.max_safetensors_header_bytes != 0) {
    r.safetensors.max_header_bytes = o.max_safetensors_header_bytes;
  }
  if (o.max_gguf_metadata_bytes != 0) {
    r.gguf.max_metadata_bytes = o.max_gguf_metadata_bytes;
  }
  return r;
}

// A tensor as hurray.h shows it, its strings kept while the callback runs.
struct CTensor {
  hurray_convert_tensor t;

  void Set(uint64_t index, const convert::ConvertedTensor& in) {
    std::memset(&t, 0, sizeof t);
    t.size = sizeof t;
    t.index = index;
    t.name = in.name.c_str();
    t.name_size = in.name.size();
    t.shape = in.shape.data();
    t.rank = static_cast<uint32_t>(in.shape.size());
    t.source_type = in.source_type.c_str();
    t.type = in.hurray_type.c_str();
    t.scheme = in.scheme.c_str();
    t.exact = in.exact ? 1 : 0;
    t.quantized = in.quantized ? 1 : 0;
    t.max_abs_error = in.exact ? 0 : in.max_abs_error;
    t.rms_error = in.exact ? 0 : in.rms_error;
    t.note = in.note.c_str();
  }
};

}  // namespace

extern "C" {

void hurray_convert_options_init(hurray_convert_options* options) {
  if (options == nullptr) return;
  std::memset(options, 0, sizeof *options);
  options->size = sizeof *options;
}

hurray_status hurray_convert(const char* input, const char* output,
                             const hurray_convert_options* options,
                             const hurray_convert_callbacks* callbacks,
                             hurray_convert_report* report,
                             hurray_error* error) {
  return Guarded(error, [&]() -> hurray_status {
    if (input == nullptr || output == nullptr || input[0] == '\0' ||
        output[0] == '\0') {
      return SetError(error, HURRAY_INVALID_ARGUMENT,
                      "null or empty input or output path");
    }
    if (report != nullptr && report->size < kReportSize12) {
      return SetError(error, HURRAY_INVALID_ARGUMENT,
                      "report.size is below sizeof(hurray_convert_report)");
    }
    absl::StatusOr<convert::ConvertOptions> o = ConvertOptionsOf(options);
    if (!o.ok()) {
      return SetError(error, HURRAY_INVALID_ARGUMENT, o.status().message());
    }
    hurray_convert_callbacks cb = {};
    if (callbacks != nullptr) cb = *callbacks;
    bool stop = false;
    uint64_t index = 0;
    CTensor tensor;
    if (cb.on_tensor != nullptr) {
      o->on_tensor = [&](const convert::ConvertedTensor& t) {
        if (stop) return;
        tensor.Set(index++, t);
        if (cb.on_tensor(cb.user, &tensor.t) != 0) stop = true;
      };
    } else {
      o->on_tensor = [](const convert::ConvertedTensor&) {};  // none kept
    }
    auto cancelled = [&] {
      if (!stop && cb.cancelled != nullptr && cb.cancelled(cb.user) != 0) {
        stop = true;
      }
      return stop;
    };
    std::vector<std::string> warnings;
    absl::StatusOr<convert::ConvertReport> r = convert::ConvertFile(
        input, output, *std::move(o), &warnings, cancelled);
    if (cb.on_notice != nullptr) {
      for (const std::string& w : warnings) cb.on_notice(cb.user, w.c_str());
    }
    if (!r.ok()) return SetStatus(error, r.status());
    if (report != nullptr) {
      CopyString(r->format, report->format);
      report->tensor_count = r->tensor_count;
      report->kv_entries = r->kv_entries;
      report->bytes_written = r->bytes_written;
      report->kernel_copied_bytes = r->kernel_copied_bytes;
      report->padding_bytes = r->padding_bytes;
    }
    return SetError(error, HURRAY_OK, "");
  });
}

}  // extern "C"
