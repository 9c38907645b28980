// StreamReader: incremental reader of the bare streaming format — tensors
// back to back, each a descriptor (metadata.md) immediately followed by its
// buffers in buffer-table order, with no header, padding or names
// (interchange.md § Scope; REJECT-RULES.md §4 item 21; RESOLUTIONS.md 14).
//
// Push style: Feed() chunks of any size as they arrive, then Finish() at the
// end of the input (or FailSource() when the byte source failed). Events go
// to a TensorSink; buffer bytes are handed over as views into the chunks, so
// nothing is copied and nothing is allocated from declared sizes.
//
// Rejections carry a rule id and the absolute stream offset:
//   - an empty stream is valid; a stream that ends between tensors is valid;
//   - it ends inside a descriptor: DESC-HDR-01; inside a buffer:
//     STREAM-EOF-BUFFER; the source failed: STREAM-IO;
//   - every descriptor rule of the decoder and validator, at the offending
//     field's stream offset;
//   - LIMIT-BUFFER-BYTES (a declared byte_size above the limit),
//     LIMIT-TOTAL-BYTES (the stream would pass the total limit), both decided
//     from the descriptor before its buffers are read;
//   - CMP-MEM-10 (heads nested too deep) and CMP-CLS-03 (strict: the stream
//     ended before all members of a composite head).
#ifndef HURRAY_STREAM_CONTAINER_STREAM_READER_H_
#define HURRAY_STREAM_CONTAINER_STREAM_READER_H_

#include <cstddef>
#include <cstdint>
#include <istream>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "parser/options.h"
#include "parser/rules.h"
#include "stream/container/limits.h"
#include "stream/container/tensor_sink.h"
#include "stream/container/tensor_walker.h"

namespace hurray::stream::container {

struct StreamOptions {
  ParseOptions parse;  // strict by default; the descriptor limits
  ContainerLimits limits;
};

using StreamState = Progress;

class StreamReader {
 public:
  // `sink` may be null (validate only); it must outlive the reader.
  // `start`: the stream offset of the first byte fed (a resumed read,
  // stream/resume/ingest_state.h, starts at a tensor boundary); offsets and
  // limits count from the stream's first byte.
  explicit StreamReader(const StreamOptions& options = StreamOptions(),
                        TensorSink* sink = nullptr, uint64_t start = 0);

  // Consumes all of `chunk` unless the stream is rejected.
  StreamState Feed(absl::Span<const uint8_t> chunk);
  // End of the input. kDone (and OnEndOfStream) when it ended cleanly.
  StreamState Finish();
  // The byte source failed: STREAM-IO at the current offset.
  StreamState FailSource();

  StreamState state() const;
  const Rejection& rejection() const { return walker_.rejection(); }
  // OK, the rejection, or the status the sink stopped the stream with
  // (the walker remembers it).
  [[nodiscard]] absl::Status status() const { return walker_.status(); }
  // Bytes consumed so far.
  uint64_t position() const { return walker_.position(); }
  // Tensors whose every byte has arrived.
  uint64_t tensors_completed() const { return walker_.tensors_completed(); }
  // Composite heads still waiting for members.
  uint32_t open_composites() const { return walker_.open_composites(); }

 private:
  TensorWalker walker_;
};

// Reads a whole stream from `in` in chunks of `chunk_size` bytes (the last
// ones as they come). A read error is STREAM-IO.
Rejection ReadStream(std::istream& in, const StreamOptions& options,
                     TensorSink* sink, size_t chunk_size = 64 << 10);

// One shot over bytes in memory: Feed(bytes) then Finish().
Rejection ReadStream(absl::Span<const uint8_t> bytes,
                     const StreamOptions& options, TensorSink* sink);

}  // namespace hurray::stream::container

#endif  // HURRAY_STREAM_CONTAINER_STREAM_READER_H_
