// `hurray ingest SOURCE [--dequant OUT_DIR] [--format npy|safetensors|f32]
//                [--dtype auto|float32|float16|bfloat16] [--resume STATE]
//                [--permissive] [--agree KIND=VALUE]... [--json]
//                [--chunk-size N] [--idle-timeout S] [--connect-timeout S]
//                [--total-timeout S] [--connections N] [--ca-file PEM]
//                [--header 'N: v']...
//                [--insecure] [--tensors a,b,...] [--max-open-streams N]
//                [--max-spool-bytes N] [--max-dense-bytes N]
//                [--sparse dense|keep]`
//
// Argument parsing (tools/arg_parser.h), one call of the library's
// Ingest() (stream/ingest/ingest.h, which says what each source, option and
// deadline does) and printing (tools/ingest_report.h).
//
// SOURCE: a path (a .hrry file or a bare tensor stream, told apart by the
// first 8 bytes), `-` (standard input), `tcp://HOST:PORT[/name1,name2...]`
// (a `hurray serve` peer) or `https://HOST[:PORT]/PATH` (`http://` only
// when the URL says so). With --dequant, every tensor is also written to
// OUT_DIR: <name>.npy by default, <name>.f32 (raw float32) or one
// model.safetensors (--format). --resume keeps a state file that a rerun
// continues from; --tensors reads only the named tensors.
//
// Output: a progress line on stderr when stderr is a terminal; on stdout a
// table (name, shape, type, scheme, bytes, verdict) and a last line
// "SOURCE: OK ..." or "SOURCE: <RULE-ID> at byte <offset>: <message>", or
// with --json one JSON object. Exit 0 when the input is valid, 1 with the
// rule id when it is rejected, 2 on usage, I/O or sink errors (STREAM-IO,
// the source failing, is printed with its rule id but exits 2). An error
// before the first byte ("cannot open: No such file or directory") prints
// no table, as the other commands.
#ifndef HURRAY_TOOLS_INGEST_COMMAND_H_
#define HURRAY_TOOLS_INGEST_COMMAND_H_

#include <optional>
#include <ostream>
#include <string>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "stream/ingest/ingest.h"

namespace hurray::tools {

inline constexpr double kNetIdleTimeoutSeconds =
    stream::ingest::kDefaultNetIdleTimeoutSeconds;
inline constexpr double kConnectTimeoutSeconds =
    stream::ingest::kDefaultConnectTimeoutSeconds;

// The idle timeout of a run: `flag` when --idle-timeout was given, else
// kNetIdleTimeoutSeconds for tcp:// and http(s):// sources and none (0) for
// the others (stream::IdleTimeoutFor).
double IdleTimeoutFor(absl::string_view source, std::optional<double> flag);

int RunIngest(absl::Span<const std::string> args, std::ostream& out,
              std::ostream& err);

}  // namespace hurray::tools

#endif  // HURRAY_TOOLS_INGEST_COMMAND_H_
