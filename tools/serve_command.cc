#include "tools/serve_command.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "parser/rules.h"
#include "stream/container/hrry_mmap.h"
#include "stream/net/server.h"
#include "tools/arg_parser.h"
#include "tools/command_util.h"
#include "tools/display_text.h"

namespace hurray::tools {
namespace {

struct ServeArgs {
  stream::net::NetServerConfig config;
  stream::container::FileOptions file_options;
  std::string path;
  bool help = false;
};

// A row setting *to to an integer from `min` to `max` times `scale`, else
// `message`.
OptionSpec CountOption(absl::string_view name, uint32_t min, uint32_t max,
                       absl::string_view message, uint32_t* to,
                       uint32_t scale = 1) {
  return {.name = name, .takes_value = true, .set = [=](absl::string_view v) {
            uint64_t n = 0;
            absl::Status s = ParseUint(v, min, max, message, &n);
            if (s.ok()) *to = static_cast<uint32_t>(n) * scale;
            return s;
          }};
}

// A row setting *ms to seconds (fractions allowed) 0.001..86400 as
// milliseconds.
OptionSpec MillisOption(absl::string_view name, uint32_t* ms) {
  return {.name = name,
          .takes_value = true,
          .set = [name, ms](absl::string_view v) {
            double seconds = 0;
            if (!absl::SimpleAtod(v, &seconds) || !(seconds >= 0.001) ||
                seconds > 86400) {
              return absl::InvalidArgumentError(
                  absl::StrCat(name, " needs seconds 0.001..86400"));
            }
            *ms = static_cast<uint32_t>(seconds * 1000);
            return absl::OkStatus();
          }};
}

absl::StatusOr<ServeArgs> ParseServeArgs(absl::Span<const std::string> args) {
  ServeArgs a;
  stream::net::NetServerConfig& c = a.config;
  uint32_t port = c.port;
  const OptionSpec options[] = {
      HelpOption(&a.help),
      PermissiveOption(&a.file_options.parse.mode),
      CountOption("--port", 0, 65535, "--port needs a number 0..65535", &port),
      TextOption("--bind", &c.bind_address),
      CountOption("--idle-timeout", 1, 86400,
                  "--idle-timeout needs seconds 1..86400", &c.idle_timeout_ms,
                  /*scale=*/1000),
      MillisOption("--hello-timeout", &c.hello_timeout_ms),
      MillisOption("--message-timeout", &c.message_timeout_ms),
      CountOption("--max-connections", 1, 1000000,
                  "--max-connections needs a count 1..1000000",
                  &c.max_connections),
      CountOption("--max-connections-per-peer", 1, 1000000,
                  "--max-connections-per-peer needs a count 1..1000000",
                  &c.max_connections_per_peer),
      CountOption("--max-message-size", 64, UINT32_MAX,
                  "--max-message-size needs bytes >= 64",
                  &c.session.max_message_size),
  };
  std::vector<std::string> paths;
  HURRAY_RETURN_IF_ERROR(ParseArgTable(args, options, &paths));
  if (a.help) return a;
  if (paths.empty()) return absl::InvalidArgumentError("no file to serve");
  if (paths.size() > 1) {
    return absl::InvalidArgumentError("serve takes one file");
  }
  a.path = paths[0];
  c.port = static_cast<uint16_t>(port);
  c.session.mode = a.file_options.parse.mode;
  return a;
}

}  // namespace

int RunServe(absl::Span<const std::string> args, std::ostream& out,
             std::ostream& err) {
  absl::StatusOr<ServeArgs> parsed = ParseServeArgs(args);
  if (!parsed.ok()) return UsageError("serve", parsed.status().message(), err);
  if (parsed->help) {
    PrintCommandHelp("serve", out);
    return kExitOk;
  }
  stream::net::NetServerConfig& config = parsed->config;
  const std::string& path = parsed->path;

  // The identity resumed clients compare (docs/network.md § Identity): the
  // file as it was before and after it was opened, else it was replaced
  // meanwhile.
  const absl::StatusOr<std::string> before = stream::net::StatIdentity(path);
  auto file = stream::container::HrryFile::Open(path, parsed->file_options);
  if (!file.ok()) {
    const auto rule = RuleIdOf(file.status());
    err << "hurray serve: " << TerminalSafe(path) << ": "
        << TerminalSafe(file.status().message()) << "\n";
    return rule.has_value() ? kExitRejected : kExitError;
  }
  const absl::StatusOr<std::string> after = stream::net::StatIdentity(path);
  if (!before.ok() || !after.ok() || *before != *after) {
    err << "hurray serve: " << TerminalSafe(path)
        << ": the file changed while it was opened\n";
    return kExitError;
  }
  config.session.identity = stream::net::ServedFileIdentity(*after, **file);
  if (config.max_connections > stream::net::DefaultMaxConnections()) {
    // Accepting fails (and is retried) when no descriptor is left.
    err << "hurray serve: warning: --max-connections " << config.max_connections
        << " is above what the descriptor limit allows ("
        << stream::net::DefaultMaxConnections() << "; see ulimit -n)\n";
  }
  stream::net::NetServer server(file->get(), config);
  const absl::Status listening = server.Listen();
  if (!listening.ok()) {
    err << "hurray serve: " << listening.message() << "\n";
    return kExitError;
  }
  server.StopOnSignals();
  out << "listening on " << config.bind_address << ":" << server.port()
      << std::endl;  // flushed: scripts wait for this line
  server.Run();
  err << "hurray serve: stopped after " << server.connections_accepted()
      << " connection(s)\n";
  return kExitOk;
}

}  // namespace hurray::tools
