#include "tools/serve_command.h"

#include <cstdint>
#include <memory>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "parser/rules.h"
#include "stream/container/hrry_mmap.h"
#include "stream/net/server.h"
#include "tools/command_util.h"
#include "tools/display_text.h"

namespace hurray::tools {
namespace {

// Seconds (fractions allowed) 0.001..86400 as milliseconds.
bool ParseSeconds(const std::string& text, uint32_t* ms) {
  double seconds = 0;
  if (!absl::SimpleAtod(text, &seconds) || !(seconds >= 0.001) ||
      seconds > 86400) {
    return false;
  }
  *ms = static_cast<uint32_t>(seconds * 1000);
  return true;
}

}  // namespace

int RunServe(absl::Span<const std::string> args, std::ostream& out,
             std::ostream& err) {
  stream::net::NetServerConfig config;
  stream::container::FileOptions file_options;
  std::string path;
  auto value = [&](size_t* i, const char* name) -> const std::string* {
    if (*i + 1 >= args.size()) return nullptr;
    (void)name;
    return &args[++*i];
  };
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    uint32_t n = 0;
    if (a == "-h" || a == "--help") {
      PrintCommandHelp("serve", out);
      return kExitOk;
    } else if (a == "--permissive") {
      file_options.parse.mode = Mode::kPermissive;
      config.session.mode = Mode::kPermissive;
    } else if (a == "--port") {
      const std::string* v = value(&i, "--port");
      if (v == nullptr || !absl::SimpleAtoi(*v, &n) || n > 65535) {
        return UsageError("serve", "--port needs a number 0..65535", err);
      }
      config.port = static_cast<uint16_t>(n);
    } else if (a == "--bind") {
      const std::string* v = value(&i, "--bind");
      if (v == nullptr)
        return UsageError("serve", "--bind needs an address", err);
      config.bind_address = *v;
    } else if (a == "--idle-timeout") {
      const std::string* v = value(&i, "--idle-timeout");
      if (v == nullptr || !absl::SimpleAtoi(*v, &n) || n == 0 || n > 86400) {
        return UsageError("serve", "--idle-timeout needs seconds 1..86400",
                          err);
      }
      config.idle_timeout_ms = n * 1000;
    } else if (a == "--hello-timeout" || a == "--message-timeout") {
      const std::string* v = value(&i, a.c_str());
      uint32_t* ms = a == "--hello-timeout" ? &config.hello_timeout_ms
                                            : &config.message_timeout_ms;
      if (v == nullptr || !ParseSeconds(*v, ms)) {
        return UsageError("serve",
                          absl::StrCat(a, " needs seconds 0.001..86400"), err);
      }
    } else if (a == "--max-connections" || a == "--max-connections-per-peer") {
      const std::string* v = value(&i, a.c_str());
      if (v == nullptr || !absl::SimpleAtoi(*v, &n) || n == 0 || n > 1000000) {
        return UsageError("serve", absl::StrCat(a, " needs a count 1..1000000"),
                          err);
      }
      (a == "--max-connections" ? config.max_connections
                                : config.max_connections_per_peer) = n;
    } else if (a == "--max-message-size") {
      const std::string* v = value(&i, "--max-message-size");
      if (v == nullptr || !absl::SimpleAtoi(*v, &n) || n < 64) {
        return UsageError("serve", "--max-message-size needs bytes >= 64", err);
      }
      config.session.max_message_size = n;
    } else if (!a.empty() && a[0] == '-') {
      return UsageError("serve", absl::StrCat("unknown option ", a), err);
    } else if (path.empty()) {
      path = a;
    } else {
      return UsageError("serve", "serve takes one file", err);
    }
  }
  if (path.empty()) return UsageError("serve", "no file to serve", err);

  // The identity resumed clients compare (docs/network.md § Identity): the
  // file as it was before and after it was opened, else it was replaced
  // meanwhile.
  const absl::StatusOr<std::string> before = stream::net::StatIdentity(path);
  auto file = stream::container::HrryFile::Open(path, file_options);
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
