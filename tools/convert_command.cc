#include "tools/convert_command.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "stream/convert/convert.h"
#include "stream/convert/convert_file.h"
#include "tools/arg_parser.h"
#include "tools/command_util.h"
#include "tools/display_text.h"
#include "tools/json_writer.h"

namespace hurray::tools {
namespace {

struct ConvertArgs {
  std::string input;
  std::string output;
  stream::convert::ConvertOptions options;
  bool json = false;
  bool help = false;
};

absl::StatusOr<ConvertArgs> ParseConvertArgs(
    absl::Span<const std::string> args) {
  ConvertArgs p;
  stream::convert::ConvertOptions& o = p.options;
  auto scheme = [](absl::string_view name,
                   std::optional<stream::convert::QuantizeSpec>* to) {
    return OptionSpec{
        .name = name, .takes_value = true, .set = [to](absl::string_view v) {
          absl::StatusOr<stream::convert::QuantizeSpec> q =
              stream::convert::ParseQuantizeSpec(v);
          if (q.ok()) *to = *q;
          return q.status();
        }};
  };
  OptionSpec output = TextOption("-o", &p.output);
  output.alias = "--output";
  const OptionSpec options[] = {
      output,
      KvOption(&o.kv),
      scheme("--quantize", &o.quantize),
      scheme("--requantize", &o.requantize),
      {.name = "--skip",
       .takes_value = true,
       .set =
           [&o](absl::string_view v) {
             o.skip.emplace_back(v);
             return absl::OkStatus();
           }},
      FlagOption("--compact-kquants", &o.kquant_compact),
      {.name = "--data-alignment",
       .takes_value = true,
       .set =
           [&o](absl::string_view v) {
             uint64_t n = 0;
             absl::Status s = ParseUint(
                 v, 0, UINT64_MAX,
                 "--data-alignment needs a power of two of bytes from 4096 "
                 "to 2097152",
                 &n);
             if (s.ok() && !stream::convert::IsValidDataAlignment(n))
               s = absl::InvalidArgumentError(
                   "--data-alignment needs a power of two of bytes from "
                   "4096 to 2097152");
             if (s.ok()) o.data_buffer_alignment = static_cast<uint32_t>(n);
             return s;
           }},
      JsonOption(&p.json),
      HelpOption(&p.help),
  };
  std::vector<std::string> sources;
  HURRAY_RETURN_IF_ERROR(ParseArgTable(args, options, &sources));
  if (p.help) return p;
  if (sources.empty()) return absl::InvalidArgumentError("needs SRC");
  if (sources.size() > 1) return absl::InvalidArgumentError("takes one SRC");
  p.input = sources[0];
  if (p.output.empty()) return absl::InvalidArgumentError("needs -o OUT.hrry");
  return p;
}

}  // namespace

int RunConvert(absl::Span<const std::string> args, std::ostream& out,
               std::ostream& err) {
  absl::StatusOr<ConvertArgs> parsed = ParseConvertArgs(args);
  if (!parsed.ok())
    return UsageError("convert", parsed.status().message(), err);
  if (parsed->help) {
    PrintCommandHelp("convert", out);
    return kExitOk;
  }
  // tensor, shape, source type -> Hurray type and scheme, exact (the
  // source's values bit for bit) or approx, and for quantized tensors the max
  // abs and RMS error against the source values: a line per tensor as it is
  // written (none kept in memory).
  // --json: one JSON object, its "tensors" array written a tensor at a time
  // (source type, Hurray type and scheme, exact or not, the errors).
  const bool json = parsed->json;
  bool first_tensor = true;
  if (json) {
    std::string head = "{\"input\":";
    AppendJsonString(parsed->input, &head);
    head += ",\"output\":";
    AppendJsonString(parsed->output, &head);
    out << head << ",\"tensors\":[";
  }
  parsed->options.on_tensor = [&](const stream::convert::ConvertedTensor& t) {
    if (json) {
      std::string line = first_tensor ? "" : ",";
      first_tensor = false;
      JsonWriter w(&line);
      w.BeginObject();
      w.Key("name").String(t.name);
      w.Key("shape").BeginArray();
      for (uint64_t d : t.shape) w.Uint(d);
      w.EndArray();
      w.Key("source_type").String(t.source_type);
      w.Key("type").String(t.hurray_type);
      w.Key("scheme").String(t.scheme);
      w.Key("exact").Bool(t.exact);
      w.Key("quantized").Bool(t.quantized);
      if (!t.exact) {
        w.Key("max_abs_error").Double(t.max_abs_error);
        w.Key("rms_error").Double(t.rms_error);
      }
      if (!t.note.empty()) w.Key("note").String(t.note);
      w.EndObject();
      out << line;
      return;
    }
    out << PadRight(TerminalSafe(t.name, 48), 48) << "  "
        << PadRight(absl::StrCat("[", absl::StrJoin(t.shape, ", "), "]"), 16)
        << "  "
        << PadRight(absl::StrCat(t.source_type, " -> ", t.hurray_type,
                                 t.scheme.empty() ? "" : " " + t.scheme),
                    36);
    out << (t.exact ? "  exact " : "  approx");
    if (t.quantized || !t.exact) {
      out << absl::StrFormat("  max_abs_err %.3g  rms_err %.3g",
                             t.max_abs_error, t.rms_error);
    }
    if (!t.note.empty()) out << "  (" << t.note << ")";
    out << "\n";
  };
  // The input opened as the library opens it (a shard index or a directory
  // holding one, the first part of a split GGUF, or one file) and the
  // output written through SafeOutputFile with kernel copies of unchanged
  // spans: stream/convert/convert_file.h, as the C ABI and Python do.
  std::vector<std::string> warnings;
  absl::StatusOr<stream::convert::ConvertReport> report =
      stream::convert::ConvertFile(parsed->input, parsed->output,
                                   std::move(parsed->options), &warnings);
  for (const std::string& w : warnings)
    err << "hurray convert: warning: " << TerminalSafe(w) << "\n";
  const absl::Status& s = report.status();
  if (json) {
    std::string tail = "]";
    if (s.ok()) {
      tail += ",\"format\":";
      AppendJsonString(report->format, &tail);
      absl::StrAppend(&tail, ",\"tensor_count\":", report->tensor_count,
                      ",\"kv_entries\":", report->kv_entries,
                      ",\"bytes_written\":", report->bytes_written,
                      ",\"padding_bytes\":", report->padding_bytes);
    } else {
      tail += ",\"error\":";
      AppendJsonString(s.message(), &tail);
    }
    out << tail << "}\n";
    if (s.ok()) return kExitOk;
  }
  if (!s.ok()) {
    // Names in messages come from the input: escaped.
    err << "hurray convert: " << TerminalSafe(parsed->input) << ": "
        << TerminalSafe(s.message()) << "\n";
    // ConvertFile: a refusal of the input is kInvalidArgument (or
    // kUnimplemented, a type no conversion takes); anything else is I/O.
    const bool rejected =
        absl::IsInvalidArgument(s) || absl::IsUnimplemented(s);
    return rejected ? kExitRejected : kExitError;
  }
  out << "wrote " << TerminalSafe(parsed->output) << " (" << report->format
      << ", " << report->tensor_count << " tensors, " << report->kv_entries
      << " KV entries, " << report->bytes_written << " bytes)\n";
  // Many small tensors: each buffer starts on a 4096-byte boundary (or
  // --data-alignment's), as the format requires (file-format.md,
  // data_buffer_alignment), so the file can be much larger than its
  // source. Said when it passes 10 %.
  if (report->padding_bytes * 10 > report->bytes_written) {
    out << absl::StrFormat(
        "note: %d of the %d bytes (%.1f %%) are zero padding: the .hrry "
        "format starts every data buffer on a %d-byte boundary "
        "(data_buffer_alignment, file-format.md)\n",
        report->padding_bytes, report->bytes_written,
        100.0 * static_cast<double>(report->padding_bytes) /
            static_cast<double>(report->bytes_written),
        parsed->options.data_buffer_alignment);
  }
  return kExitOk;
}

}  // namespace hurray::tools
