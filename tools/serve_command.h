// `hurray serve FILE.hrry [--port P] [--bind ADDR] [--permissive]
//                         [--idle-timeout S] [--max-message-size N]`
//
// Serves the tensors of a .hrry file over the Hurray network protocol
// (interchange.md; stream/net/server.h): each connection its own session,
// every indexed tensor by name, the listing key `hurray:list`
// (docs/network.md). Defaults: 127.0.0.1, port 7420. With --port 0 a free
// port is chosen. Once listening it prints `listening on ADDR:PORT` on
// stdout (flushed) so scripts can parse it. SIGINT / SIGTERM stop it
// cleanly (exit 0). Exit 1 with the rule id when the file is invalid, 2 on
// usage or I/O errors (including a port that cannot be bound).
#ifndef HURRAY_TOOLS_SERVE_COMMAND_H_
#define HURRAY_TOOLS_SERVE_COMMAND_H_

#include <ostream>
#include <string>

#include "absl/types/span.h"

namespace hurray::tools {

int RunServe(absl::Span<const std::string> args, std::ostream& out,
             std::ostream& err);

}  // namespace hurray::tools

#endif  // HURRAY_TOOLS_SERVE_COMMAND_H_
