// HrryWriter::AddStreamed: buffers given in pieces make the same file as
// Add with whole buffers; a buffer writer that gives the wrong byte count
// or fails leaves the writer failed.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "gtest/gtest.h"
#include "parser/descriptor.h"
#include "parser/element_type.h"
#include "stream/container/hrry_mmap.h"
#include "stream/container/hrry_writer.h"

namespace hurray::stream::container {
namespace {

TensorDescriptor Floats(uint64_t n) {
  TensorDescriptor d;
  d.type_tag = type_tag::kFloat32;
  d.layout_tag = layout_tag::kRowMajor;
  d.rank = 1;
  d.shape[0] = n;
  d.buffer_count = 1;
  d.buffers[0].byte_size = 4 * n;
  return d;
}

std::vector<uint8_t> Write(bool streamed, const std::vector<uint8_t>& data) {
  std::vector<uint8_t> out;
  auto sink = [&out](absl::Span<const uint8_t> b) {
    out.insert(out.end(), b.begin(), b.end());
    return absl::OkStatus();
  };
  HrryWriter w;
  EXPECT_TRUE(w.Begin(sink).ok());
  const auto d = std::make_unique<TensorDescriptor>(Floats(data.size() / 4));
  if (streamed) {
    EXPECT_TRUE(w.AddStreamed(
                     "t", *d,
                     [&data](uint32_t i, ByteSink s) {
                       EXPECT_EQ(i, 0u);
                       for (size_t at = 0; at < data.size(); at += 7) {
                         const size_t n = std::min<size_t>(7, data.size() - at);
                         absl::Status st = s(absl::MakeConstSpan(&data[at], n));
                         if (!st.ok()) return st;
                       }
                       return absl::OkStatus();
                     },
                     sink)
                    .ok());
  } else {
    const absl::Span<const uint8_t> b[] = {data};
    EXPECT_TRUE(w.Add("t", *d, b, sink).ok());
  }
  EXPECT_TRUE(w.Finish(sink).ok());
  return out;
}

TEST(AddStreamed, PiecesGiveTheSameFileAsWholeBuffers) {
  std::vector<uint8_t> data(400);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i);
  const std::vector<uint8_t> a = Write(true, data);
  EXPECT_EQ(a, Write(false, data));
  EXPECT_TRUE(HrryFile::CopyOf(a).ok());
}

TEST(AddStreamed, WrongCountOrFailureFailsTheWriter) {
  auto sink = [](absl::Span<const uint8_t>) { return absl::OkStatus(); };
  for (int mode = 0; mode < 3; ++mode) {
    HrryWriter w;
    ASSERT_TRUE(w.Begin(sink).ok());
    const auto d = std::make_unique<TensorDescriptor>(Floats(4));
    const uint8_t bytes[20] = {};
    absl::Status s = w.AddStreamed(
        "t", *d,
        [&](uint32_t, ByteSink out) {
          if (mode == 2) return absl::DataLossError("source read failed");
          return out(absl::MakeConstSpan(bytes, mode == 0 ? 15 : 20));
        },
        sink);
    EXPECT_FALSE(s.ok()) << mode;
    if (mode == 2) {
      EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
    }
    EXPECT_FALSE(w.Finish(sink).ok()) << mode;
  }
}

// Bytes the caller put on the destination itself (convert's
// copy_file_range) count toward the buffer inside a BufferWriter only.
TEST(AddStreamed, CountWrittenCountsBytesPutOutsideTheSink) {
  std::vector<uint8_t> out;
  auto sink = [&out](absl::Span<const uint8_t> b) {
    out.insert(out.end(), b.begin(), b.end());
    return absl::OkStatus();
  };
  std::vector<uint8_t> data(400);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i);
  HrryWriter w;
  ASSERT_TRUE(w.Begin(sink).ok());
  EXPECT_EQ(w.CountWritten(1).code(), absl::StatusCode::kFailedPrecondition);
  const auto d = std::make_unique<TensorDescriptor>(Floats(data.size() / 4));
  ASSERT_TRUE(w.AddStreamed(
                   "t", *d,
                   [&](uint32_t, ByteSink s) {
                     absl::Status st = s(absl::MakeConstSpan(data).first(100));
                     if (!st.ok()) return st;
                     // The rest "written directly" to the same destination.
                     out.insert(out.end(), data.begin() + 100, data.end());
                     return w.CountWritten(300);
                   },
                   sink)
                  .ok());
  EXPECT_EQ(w.CountWritten(1).code(), absl::StatusCode::kFailedPrecondition);
  ASSERT_TRUE(w.Finish(sink).ok());
  EXPECT_EQ(out, Write(false, data));
}

}  // namespace
}  // namespace hurray::stream::container
