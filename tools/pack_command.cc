#include "tools/pack_command.h"

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "parser/descriptor.h"
#include "parser/rules.h"
#include "stream/container/byte_sink.h"
#include "stream/container/hrry_writer.h"
#include "stream/container/safe_output_dir.h"
#include "stream/container/stream_reader.h"
#include "tools/arg_parser.h"
#include "tools/command_util.h"
#include "tools/display_text.h"
#include "tools/sample_model.h"

namespace hurray::tools {
namespace {

// Input files are read whole: a pack input is at most this big.
constexpr size_t kMaxPackInputBytes = size_t{4} << 30;

// One tensor of an input stream, copied out of the reader's events.
struct Collected {
  std::unique_ptr<TensorDescriptor> descriptor;
  std::vector<std::vector<uint8_t>> buffers;
};

class CollectSink : public stream::container::TensorSink {
 public:
  absl::Status OnDescriptor(const TensorDescriptor& d) override {
    Collected c;
    c.descriptor = std::make_unique<TensorDescriptor>(d);
    c.buffers.resize(d.buffer_count);
    // The reader already refused sizes above its buffer limit.
    for (uint32_t i = 0; i < d.buffer_count; ++i)
      c.buffers[i].reserve(static_cast<size_t>(d.buffers[i].byte_size));
    tensors.push_back(std::move(c));
    return absl::OkStatus();
  }
  absl::Status OnBufferPiece(uint32_t i, uint64_t /*offset*/,
                             absl::Span<const uint8_t> piece) override {
    std::vector<uint8_t>& b = tensors.back().buffers[i];
    b.insert(b.end(), piece.begin(), piece.end());
    return absl::OkStatus();
  }
  std::vector<Collected> tensors;
};

struct PackArgs {
  std::string output;
  bool sample = false;
  bool help = false;
  stream::container::HrryWriterOptions writer;
  std::vector<std::pair<std::string, std::string>> kv;
  std::vector<std::pair<std::string, std::string>> inputs;  // name, path
};

absl::StatusOr<PackArgs> ParsePackArgs(absl::Span<const std::string> args) {
  PackArgs p;
  p.writer.sorted_index = true;
  auto clear = [](absl::string_view name, bool* to) {
    return OptionSpec{.name = name, .set = [to](absl::string_view) {
                        *to = false;
                        return absl::OkStatus();
                      }};
  };
  OptionSpec output = TextOption("-o", &p.output);
  output.alias = "--output";
  const OptionSpec options[] = {
      output,
      FlagOption("--sample", &p.sample),
      clear("--unsorted", &p.writer.sorted_index),
      clear("--no-crc", &p.writer.index_crc),
      PermissiveOption(&p.writer.parse.mode),
      KvOption(&p.kv),
      HelpOption(&p.help),
  };
  std::vector<std::string> inputs;
  HURRAY_RETURN_IF_ERROR(ParseArgTable(args, options, &inputs));
  if (p.help) return p;
  for (const std::string& a : inputs) {
    const size_t eq = a.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == a.size())
      return absl::InvalidArgumentError(
          absl::StrCat("expected NAME=STREAM, got '", a, "'"));
    p.inputs.emplace_back(a.substr(0, eq), a.substr(eq + 1));
  }
  if (p.output.empty()) return absl::InvalidArgumentError("needs -o OUT.hrry");
  if (p.sample == !p.inputs.empty())
    return absl::InvalidArgumentError("needs NAME=STREAM inputs or --sample");
  p.writer.with_kv = !p.kv.empty();
  return p;
}

// Reads and validates every input, then writes the file.
absl::Status Pack(const PackArgs& p, stream::container::ByteSink sink,
                  std::string* failed_input) {
  std::vector<std::pair<std::string, Collected>> tensors;
  for (const auto& [name, path] : p.inputs) {
    *failed_input = path;
    absl::StatusOr<std::vector<uint8_t>> bytes =
        ReadInputFile(path, kMaxPackInputBytes);
    if (!bytes.ok()) return bytes.status();
    stream::container::StreamOptions options;
    options.parse = p.writer.parse;
    CollectSink collect;
    const Rejection r =
        stream::container::ReadStream(*bytes, options, &collect);
    if (r.rule != Rule::kNone) return ToStatus(r);
    if (collect.tensors.empty())
      return absl::InvalidArgumentError("the stream holds no tensor");
    for (const Collected& c : collect.tensors) {
      // The opaque data of an extension layout lives in the descriptor
      // bytes, which the reader's events do not carry.
      if (c.descriptor->layout.extension_data_length != 0)
        return absl::UnimplementedError(
            "extension layouts with opaque data cannot be packed yet");
    }
    const bool one = collect.tensors.size() == 1;
    for (size_t i = 0; i < collect.tensors.size(); ++i) {
      tensors.emplace_back(one ? name : absl::StrCat(name, ".", i),
                           std::move(collect.tensors[i]));
    }
  }
  failed_input->clear();
  stream::container::HrryWriterOptions options = p.writer;
  options.tensor_count_hint = tensors.size();
  stream::container::HrryWriter writer(options);
  if (absl::Status s = writer.Begin(sink); !s.ok()) return s;
  for (const auto& [name, t] : tensors) {
    std::vector<absl::Span<const uint8_t>> views(t.buffers.begin(),
                                                 t.buffers.end());
    if (absl::Status s = writer.Add(name, *t.descriptor, views, sink);
        !s.ok()) {
      return absl::Status(s.code(), absl::StrCat(name, ": ", s.message()));
    }
  }
  for (const auto& [key, value] : p.kv) {
    if (absl::Status s = writer.kv().AddString(key, value); !s.ok()) return s;
  }
  return writer.Finish(sink);
}

}  // namespace

int RunPack(absl::Span<const std::string> args, std::ostream& out,
            std::ostream& err) {
  absl::StatusOr<PackArgs> parsed = ParsePackArgs(args);
  if (!parsed.ok()) return UsageError("pack", parsed.status().message(), err);
  if (parsed->help) {
    PrintCommandHelp("pack", out);
    return kExitOk;
  }

  // Written to a hidden temp of the output's directory, published under
  // its name only once complete (stream/container/safe_output_dir.h): a
  // rejected input or a failed write leaves the old file, and a symlink at OUT
  // is replaced, never written through.
  absl::StatusOr<std::unique_ptr<stream::container::SafeOutputFile>> file =
      stream::container::SafeOutputFile::Create(parsed->output);
  if (!file.ok()) {
    err << "hurray pack: " << TerminalSafe(file.status().message()) << "\n";
    return kExitError;
  }
  auto sink = [&file](absl::Span<const uint8_t> bytes) {
    return (*file)->Write(bytes);
  };
  std::string failed_input;
  absl::Status s = parsed->sample ? WriteSampleModel(sink)
                                  : Pack(*parsed, sink, &failed_input);
  if (s.ok()) s = (*file)->Commit();
  if (!s.ok()) {
    const std::optional<absl::string_view> rule = RuleIdOf(s);
    err << "hurray pack: "
        << TerminalSafe(failed_input.empty() ? "" : failed_input + ": ")
        << TerminalSafe(s.message()) << "\n";
    return rule.has_value() ? kExitRejected : kExitError;
  }
  out << "wrote " << TerminalSafe(parsed->output) << "\n";
  return kExitOk;
}

}  // namespace hurray::tools
