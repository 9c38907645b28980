#include "tools/dequant_command.h"

#include <memory>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "parser/descriptor.h"
#include "parser/element_type.h"
#include "parser/quantization.h"
#include "parser/rules.h"
#include "stream/ingest/output/element_convert.h"
#include "tools/arg_parser.h"
#include "tools/command_util.h"
#include "tools/dequant_file.h"
#include "tools/display_text.h"
#include "tools/json_writer.h"

namespace hurray::tools {

int RunDequant(absl::Span<const std::string> args, std::ostream& out,
               std::ostream& err, const DequantLimits& limits) {
  std::string output;
  stream::ingest::OutputFormat format = stream::ingest::OutputFormat::kNpy;
  stream::ingest::OutputDtype dtype = stream::ingest::OutputDtype::kAuto;
  OptionSpec output_row = TextOption("-o", &output);
  output_row.alias = "--output";
  const OptionSpec options[] = {
      output_row,
      {.name = "--format",
       .takes_value = true,
       .set =
           [&format](absl::string_view v) {
             absl::StatusOr<stream::ingest::OutputFormat> f =
                 stream::ingest::ParseOutputFormat(v);
             if (f.ok()) format = *f;
             return f.status();
           }},
      {.name = "--dtype",
       .takes_value = true,
       .set =
           [&dtype](absl::string_view v) {
             absl::StatusOr<stream::ingest::OutputDtype> d =
                 stream::ingest::ParseOutputDtype(v);
             if (d.ok()) dtype = *d;
             return d.status();
           }},
  };
  absl::StatusOr<CommandArgs> parsed =
      ParseCommandArgs(args, /*allow_json=*/true, options);
  if (!parsed.ok()) {
    return UsageError("dequant", parsed.status().message(), err);
  }
  if (parsed->help) {
    PrintCommandHelp("dequant", out);
    return kExitOk;
  }
  if (output.empty() || parsed->files.size() != 1) {
    return UsageError("dequant", "needs one FILE and -o OUT", err);
  }
  absl::Status fd = stream::ingest::CheckFormatAndDtype(format, dtype);
  if (!fd.ok()) return UsageError("dequant", fd.message(), err);
  const std::string& file = parsed->files[0];
  auto desc = std::make_unique<TensorDescriptor>();
  int exit_code = kExitError;
  absl::StatusOr<DequantWritten> elements =
      DequantizeFile(file, output, parsed->options, format, dtype, limits,
                     desc.get(), &exit_code);

  const std::optional<absl::string_view> rule =
      elements.ok() ? std::nullopt : RuleIdOf(elements.status());
  if (parsed->json) {
    std::string line;
    JsonWriter w(&line);
    w.BeginObject();
    w.Key("file").String(file);
    // "valid" only when the input was judged (not on I/O or usage errors).
    if (elements.ok() || rule.has_value()) w.Key("valid").Bool(elements.ok());
    if (elements.ok()) {
      w.Key("output").String(output);
      w.Key("elements").Uint(elements->elements);
      w.Key("scheme").String(SchemeName(desc->quantization.scheme_tag));
      w.Key("storage").String(ElementTypeName(desc->type_tag));
      w.Key("spooled_bytes").Uint(elements->spooled_bytes);
    } else if (rule.has_value()) {
      w.Key("rule").String(*rule);
      w.Key("offset").Uint(OffsetOf(elements.status()).value_or(0));
      if (OffsetUnitOf(elements.status()) != OffsetUnit::kByte) {
        w.Key("offset_unit")
            .String(OffsetUnitName(OffsetUnitOf(elements.status())));
      }
      w.Key("error").String(elements.status().message());
    } else {
      w.Key("error").String(elements.status().message());
    }
    w.EndObject();
    out << line << "\n";
  } else if (elements.ok()) {
    const char* type = dtype == stream::ingest::OutputDtype::kAuto
                           ? "float32"
                           : stream::ingest::OutputDtypeName(dtype).data();
    out << TerminalSafe(file) << ": " << elements->elements << " " << type
        << " values (" << SchemeName(desc->quantization.scheme_tag) << ", "
        << ElementTypeName(desc->type_tag) << ") written to "
        << TerminalSafe(output) << "\n";
  } else if (rule.has_value()) {
    out << TerminalSafe(file) << ": "
        << TerminalSafe(elements.status().message()) << "\n";
  }
  if (!elements.ok() && !rule.has_value()) {
    err << "hurray dequant: " << TerminalSafe(file) << ": "
        << TerminalSafe(elements.status().message()) << "\n";
  }
  out.flush();
  return exit_code;
}

}  // namespace hurray::tools
