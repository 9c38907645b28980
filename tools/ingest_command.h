// `hurray ingest SOURCE [--dequant OUT_DIR] [--resume STATE_FILE]
//                [--permissive] [--agree KIND=VALUE]... [--json]
//                [--chunk-size N] [--idle-timeout S] [--connect-timeout S]
//                [--total-timeout S] [--ca-file PEM] [--header 'N: v']...
//                [--insecure] [--tensors a,b,...] [--max-open-streams N]
//                [--max-spool-bytes N]`
//
// Reads SOURCE through the loader (stream/loader.h), validating as the bytes
// arrive: a .hrry file or a bare tensor stream (told apart by the first 8
// bytes), from a file path, `-` (standard input, a pipe) or
// `tcp://HOST:PORT[/name1,name2...]` (the network client session; see
// MakeNetConsumer) or `https://HOST[:PORT]/PATH` (`http://` only when the
// URL says so; stream/ingest/http_body.h: verified TLS, redirects, deadlines;
// the body goes through the loader's ring like a file's bytes, and --resume
// uses Range + If-Range so a changed object is refused, exit 2). With
// --dequant, every tensor is also written to OUT_DIR/<name>.f32 (stream/sinks.h
// DequantSink: names, spooling, bounded memory). With --resume, a state file is
// rewritten after each completed tensor and a rerun continues there
// (stream/ingest_state.h); a run that finishes removes it. `-` cannot be
// resumed.
//
// --tensors a,b: only these tensors of a .hrry (a named composite head
// brings its members; stream/ingest/partial_hrry.h): a file through the
// mmap reader, a URL with range requests (header, trailer, index and KV
// first, then the named tensors' ranges); one forward pass keeping only
// them (stream/ingest/selecting_sink.h) for stdin and for a server without
// range support, said on stderr. A name the index lacks: exit 2, and OUT is
// not created (in the forward pass: nothing published). For tcp:// the
// names are the keys requested. Not with --resume.
//
// Output: a progress line on stderr when stderr is a terminal; on stdout a
// table (name, shape, type, scheme, bytes, verdict) and a last line
// "SOURCE: OK ..." or "SOURCE: <RULE-ID> at byte <offset>: <message>", or
// with --json one JSON object. Exit 0 when the input is valid, 1 with the
// rule id when it is rejected, 2 on usage, I/O or sink errors (STREAM-IO,
// the source failing, is printed with its rule id but exits 2).
//
// Deadlines: --idle-timeout S applies to every source that can stall (a
// pipe, a FIFO given by path, stdin, a device, a socket): no byte for S
// seconds fails the run (STREAM-IO "idle timeout", exit 2). A tcp://
// source has one by default (kNetIdleTimeoutSeconds); other sources have
// none unless asked (a slow producer on a pipe is legitimate). Resolving
// and connecting fail after --connect-timeout S (kConnectTimeoutSeconds).
#ifndef HURRAY_TOOLS_INGEST_COMMAND_H_
#define HURRAY_TOOLS_INGEST_COMMAND_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "stream/container/byte_consumer.h"
#include "stream/ingest/sinks.h"
#include "stream/net/client_session.h"

namespace hurray::tools {

inline constexpr double kNetIdleTimeoutSeconds = 60;
inline constexpr double kConnectTimeoutSeconds = 10;

// The idle timeout of a run: `flag` when --idle-timeout was given, else
// kNetIdleTimeoutSeconds for tcp:// sources and none (0) for the others.
double IdleTimeoutFor(absl::string_view source, std::optional<double> flag);

int RunIngest(absl::Span<const std::string> args, std::ostream& out,
              std::ostream& err);

// What the network client may hold for multiplexed answers
// (docs/network.md § Streams): --max-open-streams (LIMIT-OPEN-STREAMS) and
// --max-spool-bytes (LIMIT-SPOOL-BYTES); unset: NetClientOptions' defaults.
struct NetLimits {
  std::optional<uint32_t> max_open_streams;
  std::optional<uint64_t> max_spooled_bytes;
};
// The flags' ranges: from 1 to these (a walker and a spool per open stream;
// spooled bytes are held in memory).
inline constexpr uint32_t kMaxOpenStreamsFlag = 1024;
inline constexpr uint64_t kMaxSpoolBytesFlag = uint64_t{16} << 30;

// The network part of `tcp://` sources: a NetClientSession
// (stream/net/client_session.h) requesting `names` and reporting to `sink`.
// Without names in SOURCE, RunIngest first fetches the server's listing
// (`hurray:list`) and requests every name in it.
absl::StatusOr<std::unique_ptr<stream::NetClientSession>> MakeNetConsumer(
    const std::vector<std::string>& names, const ParseOptions& options,
    stream::IngestSink* sink, const NetLimits& limits = NetLimits());

}  // namespace hurray::tools

#endif  // HURRAY_TOOLS_INGEST_COMMAND_H_
