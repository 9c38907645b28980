// Ingest(): the one library call that opens a source, validates (and
// dequantizes) every tensor as its bytes arrive, writes or hands over the
// results and resumes an interrupted run (issue 43 § 1). `hurray ingest`
// (tools/ingest_command.cc), the C ABI (capi/ingest.cc) and the Python
// module call it.
//
//   ingest::IngestRequest r;  // r.source = *ingest::ParseSource(text)
//   absl::StatusOr<ingest::IngestReport> report = ingest::Ingest(r, &obs);
//
// Two kinds of failure. Ingest() returns an error (no report) when the run
// could not start: a request that contradicts itself (InvalidArgument), a
// file that cannot be opened ("cannot open: No such file or directory"),
// a URL or server that cannot be reached, a resume state that belongs to
// something else. Once the first byte may have been read, it returns a
// report whose `status` is the verdict: OK, a rejection (rules.h RuleIdOf /
// OffsetOf: the rule id and byte offset), STREAM-IO (the source failed, was
// cancelled or timed out: no verdict on the input), or an error of the
// outputs or of the observer (no rule id).
//
// Threads and callbacks. Every IngestObserver callback runs on the thread
// that called Ingest(), one at a time, never concurrently. The loader
// (loader.h) runs its consumer on that thread while a reader thread (files)
// or an io_context thread (pipes, sockets, TCP, HTTP) fills its ring, so a
// callback that blocks holds up validation, not reading: the reader fills
// the ring (4 slots of chunk_size), then waits; a stream's ring first grows
// up to LoaderOptions::max_ring_bytes (16 MiB), then the reader stops
// reading the socket and the peer's sends stall (TCP flow control). No data
// is lost and the idle timeout does not run while the ring is full, but a
// server may give up on a stalled client, and total_timeout_seconds keeps
// running. Callbacks may block; they must not call Ingest() on the same
// observer, and they must not throw.
#ifndef HURRAY_STREAM_INGEST_INGEST_H_
#define HURRAY_STREAM_INGEST_INGEST_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "parser/options.h"
#include "stream/container/pull_reader.h"
#include "stream/http/http_url.h"
#include "stream/ingest/output/element_convert.h"
#include "stream/ingest/sinks.h"

namespace hurray::stream::ingest {

class Loader;  // loader.h

// Stops a run from any thread at once, even while it waits for a byte or
// for a connection to be accepted (the loader's Cancel, loader.h): the run
// ends with STREAM-IO "cancelled", as when IngestObserver::Cancelled()
// returns true, which is polled only between chunks and tensors. A read by
// ranges (a selection, index_first) and an HTTP request being opened stop
// at their next tensor or deadline. Thread-safe; sticky.
class IngestCanceller {
 public:
  void Cancel();
  [[nodiscard]] bool cancelled() const;
  // Ingest()'s own: the loader of the pass in progress, or null.
  void Attach(Loader* loader);

 private:
  mutable absl::Mutex mu_;
  Loader* loader_ = nullptr;
  bool cancelled_ = false;
};

// Deadlines of network sources when the request leaves them unset.
inline constexpr double kDefaultNetIdleTimeoutSeconds = 60;
inline constexpr double kDefaultConnectTimeoutSeconds = 10;
// The ranges of the network client's limits (a walker and a spool per open
// stream; spooled bytes are held in memory).
inline constexpr uint32_t kMaxOpenStreamsLimit = 1024;
inline constexpr uint64_t kMaxSpoolBytesLimit = uint64_t{16} << 30;
// The most a tensor's raw buffers may hold when the observer asks for them
// (IngestRequest::max_raw_tensor_bytes' default).
inline constexpr uint64_t kDefaultMaxRawTensorBytes = uint64_t{1} << 30;
// The most a tensor's float32 values may take in memory
// (IngestRequest::max_values_bytes' default).
inline constexpr uint64_t kDefaultMaxValuesBytes = uint64_t{1} << 30;

// Where the bytes come from.
struct IngestSource {
  enum class Kind : uint8_t { kFile, kStdin, kFd, kTcp, kHttp, kReader };
  Kind kind = Kind::kFile;
  // As given (the table, the resume state and messages name it). For kFd,
  // "fd:<n>" unless the caller names it.
  std::string text;
  std::string path;               // kFile
  int fd = -1;                    // kStdin (0), kFd: never closed by Ingest
  std::string host, port;         // kTcp (an IPv6 host without brackets)
  std::vector<std::string> keys;  // kTcp: names after the '/', if any
  http::Url url;                  // kHttp
  // kReader: bytes pulled from the caller's reader
  // (stream/container/pull_reader.h: an embedder's own byte source, e.g. a
  // Python file object), kept alive by the caller; read forward once, like a
  // descriptor, never resumed.
  container::PullReader* reader = nullptr;

  bool is_network() const { return kind == Kind::kTcp || kind == Kind::kHttp; }
  // A file descriptor the caller keeps open (a pipe, a socket, a file).
  static IngestSource Fd(int fd, std::string label = "");
  // The caller's reader; "reader" unless the caller names it.
  static IngestSource Reader(container::PullReader* reader,
                             std::string label = "");
};

// `-` (standard input), `tcp://HOST:PORT[/name1,name2...]`
// (docs/network.md; `[::1]:7420` for IPv6), `http://` or `https://` URLs
// (http_url.h), anything else a path. InvalidArgument for a tcp:// without
// HOST:PORT or a malformed URL.
[[nodiscard]] absl::StatusOr<IngestSource> ParseSource(absl::string_view text);

// What the observer is handed for each tensor.
enum class TensorData : uint8_t {
  kNone,         // name, shape, type and verdict only
  kDequantized,  // and the float32 values, logical row-major order
  kRaw,          // and the tensor's buffers as they arrived
};

struct IngestRequest {
  IngestSource source;
  // Only these tensors (a .hrry file or URL: range reads where it can; a
  // tcp:// source: the keys requested). Not with resume_file.
  std::vector<std::string> tensors;
  // Without `tensors`: a .hrry file, or a URL whose server serves byte
  // ranges, is read as a selection of every tensor (its index first, then
  // the tensors by ranges in file order), so the observer gets each tensor
  // named as it ends, not all of them after the file's end (staged on disk
  // meanwhile with TensorData::kDequantized, unnamed with kRaw). A caller
  // that consumes tensors one by one (Python's hurray.ingest) asks for it.
  // Other sources are read forward as without it.
  bool index_first = false;
  // Not owned; may be null. See IngestCanceller.
  IngestCanceller* canceller = nullptr;
  // The resume state (ingest_state.h): rewritten after each completed
  // tensor, removed when the run ends with a verdict. Not for stdin/fds.
  std::string resume_file;

  // Outputs: OUT/<name>.npy, .f32 or OUT/model.safetensors (sinks.h
  // DequantSink) when out_dir is set; none otherwise.
  std::string out_dir;
  OutputFormat format = OutputFormat::kNpy;
  OutputDtype dtype = OutputDtype::kAuto;
  uint64_t max_dense_bytes = uint64_t{1} << 30;  // sparse tensors
  SparseOutput sparse = SparseOutput::kDense;
  // Dequantize (checking the data-level rules of the dequantizer) even when
  // nothing is written; false: validate only (then no out_dir and no
  // TensorData::kDequantized).
  bool dequantize = true;
  // What IngestObserver::OnTensor receives besides the record.
  TensorData data = TensorData::kNone;
  // kRaw: a tensor whose buffers hold more fails the run (ResourceExhausted).
  uint64_t max_raw_tensor_bytes = kDefaultMaxRawTensorBytes;
  // kDequantized without out_dir: the float32 values of each tensor are
  // written into one buffer in memory, sized from the tensor's validated
  // shape (its logical element count; a block-paged tensor's rows, a sparse
  // tensor's dense form) before its bytes arrive, kept from one tensor to
  // the next, and handed to OnTensor from there: no file. Memory holds at
  // most max_values_bytes of values (and the spools' budget, sinks.h). A
  // tensor whose values take more, and every tensor of a .hrry read forward
  // (its values wait for the index's names at the file's end, so the
  // buffer cannot be reused), are staged in a file of scratch_dir instead,
  // as is a spooled buffer over the spools' memory budget; when scratch_dir
  // is not usable, only such a tensor fails the run (ResourceExhausted, no
  // rule id: a limit of the run, not a verdict on the input).
  uint64_t max_values_bytes = kDefaultMaxValuesBytes;
  // Where values and spools are staged when they must be (above): a private
  // directory is created in it and removed at the end; "" is $TMPDIR, else
  // /tmp.
  std::string scratch_dir;

  // Strict or permissive, descriptor limits, private agreements.
  ParseOptions parse;

  // Limits and deadlines.
  size_t chunk_size = size_t{1} << 20;  // 1 to 1 GiB
  // No byte for this long from a source that can stall (a pipe, a socket):
  // STREAM-IO "idle timeout". Unset: kDefaultNetIdleTimeoutSeconds for
  // tcp:// and http(s)://, none for the others. 0: none.
  std::optional<double> idle_timeout_seconds;
  double connect_timeout_seconds = kDefaultConnectTimeoutSeconds;
  double total_timeout_seconds = 0;  // http(s):// only; 0: none
  // tcp://: LIMIT-OPEN-STREAMS and LIMIT-SPOOL-BYTES (docs/network.md
  // § Streams); unset: NetClientOptions' defaults.
  std::optional<uint32_t> max_open_streams;
  std::optional<uint64_t> max_spooled_bytes;

  // http(s):// only: a PEM trust anchor, extra request headers
  // (http_fields.h ParseHeaderFlag), no verification at all.
  std::string ca_file;
  std::vector<std::pair<std::string, std::string>> headers;
  bool insecure = false;
  // http(s):// only: the object over this many range requests at once
  // (1 to http::kMaxConnections), fed to the decoder in order through a
  // window of at most 2 x connections x http::kParallelRangeBytes
  // (stream/http/http_parallel.h). 1: one GET, as without it. --tensors
  // and an index-first read take their ranges on one kept-alive
  // connection, and each range of 2 MiB or more over this many at once.
  int connections = 1;
};

struct IngestProgress {
  uint64_t bytes = 0;    // of the input, a resumed run's skipped ones included
  uint64_t skipped = 0;  // of those, the bytes a resumed run did not read
  uint64_t total = 0;    // the input's size when known (HTTP), else 0
  uint64_t tensors = 0;  // completed
  double elapsed_seconds = 0;
};

// One tensor whose verdict is final. Views are valid during the call only.
struct IngestedTensor {
  // Index, name, shape text, verdict (stream/resume/tensor_record.h).
  const resume::TensorRecord* record = nullptr;
  // The logical shape (the descriptor's dimensions; a block-paged tensor's
  // values are [tokens, heads, head_dim], sinks.h).
  absl::Span<const uint64_t> shape;
  uint8_t type_tag = 0;
  // TensorData::kDequantized: every logical element as float32, row-major.
  // Empty for a tensor that gets no output (a composite head, an extension
  // type; its verdict says why) and a sparse tensor kept as its arrays.
  absl::Span<const float> values;
  bool has_values = false;
  // TensorData::kRaw: buffer i as it arrived (its byte_size bytes), and the
  // descriptor they belong to (a binding rebuilds the tensor from both).
  absl::Span<const absl::Span<const uint8_t>> buffers;
  const TensorDescriptor* descriptor = nullptr;
};

// The state a resumable run saved (ingest_state.h).
struct IngestCheckpoint {
  uint64_t offset = 0;        // file and HTTP sources: the next byte to read
  uint64_t tensors = 0;       // tensors recorded as done
  size_t keys_remaining = 0;  // tcp://: keys still to fetch
};

// Every method has a default that does nothing: override what you need.
// All run on the thread that called Ingest() (see the top of this file).
class IngestObserver {
 public:
  virtual ~IngestObserver() = default;
  // After each chunk the loader fed (not during a selection read by
  // ranges); may block (the ring fills, then the source waits).
  virtual void OnProgress(const IngestProgress& /*progress*/) {}
  // Once per tensor whose verdict is final, in input order: for bare
  // streams and tcp:// at the tensor's end; for a .hrry read forward (a
  // path, stdin, an HTTP server without ranges) once its index named the
  // tensors, i.e. all of them after the last tensor's bytes; for a selection
  // read by ranges as each tensor ends. With TensorData::kRaw the call
  // comes at the tensor's end always (a .hrry read forward: no name yet;
  // a selection read forward: every tensor read, selected or not).
  // Anything but OK stops the run with that status.
  [[nodiscard]] virtual absl::Status OnTensor(
      const IngestedTensor& /*tensor*/) {
    return absl::OkStatus();
  }
  // Polled after each chunk and each tensor: true stops the run (STREAM-IO
  // "cancelled"; the resume state, if any, is kept).
  virtual bool Cancelled() { return false; }
  // After the resume state was saved: for file and HTTP sources after each
  // tensor at a resumable boundary, for tcp:// after each completed key.
  virtual void OnCheckpoint(const IngestCheckpoint& /*checkpoint*/) {}
  // Something the user should know that is not an error (e.g. --insecure,
  // a server without byte ranges). The text quotes the source raw: escape
  // it before printing it to a terminal.
  virtual void OnNotice(absl::string_view /*text*/) {}
};

struct IngestReport {
  std::string source;  // IngestSource::text
  // The verdict (see the top of this file).
  absl::Status status;
  uint64_t bytes = 0;  // of the input, a resumed run's skipped ones included
  std::vector<resume::TensorRecord> tensors;
  // The resume state could not be written (the run itself may be fine).
  absl::Status state_status;
  bool resume_state_removed = false;

  // The rule id and offset of a rejection (none for OK, STREAM-IO and
  // errors of the run).
  [[nodiscard]] bool rejected() const;
  [[nodiscard]] std::optional<std::string> rule_id() const;
  [[nodiscard]] uint64_t offset() const;
};

// The idle timeout of a run (see IngestRequest::idle_timeout_seconds).
[[nodiscard]] double IdleTimeoutFor(const IngestSource& source,
                                    std::optional<double> requested);

// Checks the request against itself (the CLI's usage errors).
[[nodiscard]] absl::Status CheckRequest(const IngestRequest& request);

// `observer` may be null.
[[nodiscard]] absl::StatusOr<IngestReport> Ingest(const IngestRequest& request,
                                                  IngestObserver* observer);

}  // namespace hurray::stream::ingest

#endif  // HURRAY_STREAM_INGEST_INGEST_H_
