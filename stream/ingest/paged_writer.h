// PagedWriter (stream/ingest/tensor_writer.h): a block-paged tensor
// (layouts/block-paged.md) written as its logical dense tensor
// [tokens, num_heads, head_dim], the sequences one after the other
// (stream/ingest/output/block_paged.h). Every buffer is spooled
// (SpoolingWriter); at the tensor's end the page pool is converted —
// dequantized, per-page-slot scales included — into a spool of output
// elements, and its pages copied out in block-table order.
#ifndef HURRAY_STREAM_INGEST_PAGED_WRITER_H_
#define HURRAY_STREAM_INGEST_PAGED_WRITER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "parser/descriptor.h"
#include "stream/ingest/buffer_spool.h"
#include "stream/ingest/output/element_convert.h"
#include "stream/ingest/spooling_writer.h"

namespace hurray::stream::ingest {

class PagedWriter final : public SpoolingWriter {
 public:
  PagedWriter(const WriterContext& ctx, const TensorDescriptor& d,
              const std::string& base, const std::string& name,
              const OutputType& out_type)
      : SpoolingWriter(ctx, d, base, name, out_type) {}

  // Opens the spools (the output opens at the end: its rows are known
  // then); *none when the tensor gets no output.
  [[nodiscard]] absl::Status Begin(std::string* none);

 private:
  [[nodiscard]] absl::Status Finish(WriterResult* result) override;
  [[nodiscard]] absl::Status Copy(std::string* verdict);
  [[nodiscard]] absl::Status ConvertPool(
      const std::vector<absl::Span<const uint8_t>>& views,
      const std::vector<std::unique_ptr<Mapping>>& maps, BufferSpool* pool,
      std::string* none);

  std::vector<uint8_t> le_;
};

}  // namespace hurray::stream::ingest

#endif  // HURRAY_STREAM_INGEST_PAGED_WRITER_H_
