// ConvertOptions::data_buffer_alignment (issue 47 item 3): a file written
// with 2 MiB alignment declares it in its header, starts every non-empty
// buffer at a multiple of it, holds the same buffers as the default file,
// and opens in the .hrry reader; a value FILE-HDR-07 forbids is refused
// before a byte is written.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "parser/descriptor.h"
#include "stream/container/hrry_mmap.h"
#include "stream/convert/convert.h"
#include "stream/convert/gguf.h"
#include "stream/convert/testing/source_builders.h"

namespace hurray::stream::convert {
namespace {

using ::testing::HasSubstr;

constexpr uint32_t k2MiB = uint32_t{2} << 20;

absl::StatusOr<std::vector<uint8_t>> ConvertBytes(
    const std::vector<uint8_t>& input, uint32_t alignment,
    uint64_t* padding = nullptr) {
  MemorySource src(input);
  ConvertOptions options;
  options.data_buffer_alignment = alignment;
  options.chunk_bytes = 4096;
  std::vector<uint8_t> out;
  absl::StatusOr<ConvertReport> r =
      Convert(src, options, [&out](absl::Span<const uint8_t> b) {
        out.insert(out.end(), b.begin(), b.end());
        return absl::OkStatus();
      });
  if (!r.ok()) return r.status();
  if (padding != nullptr) *padding = r->padding_bytes;
  return out;
}

std::vector<uint8_t> Pattern(size_t n, uint32_t seed) {
  std::vector<uint8_t> v(n);
  uint32_t x = seed * 2654435761u + 1;
  for (uint8_t& b : v) {
    x ^= x << 13, x ^= x >> 17, x ^= x << 5;
    b = static_cast<uint8_t>(x >> 24);
  }
  return v;
}

// Every tensor's buffers: their file offsets and bytes.
struct Buffers {
  std::vector<uint64_t> offsets;
  std::vector<std::vector<uint8_t>> bytes;
};
Buffers ReadAll(const std::vector<uint8_t>& hrry, uint32_t want_alignment) {
  Buffers out;
  absl::StatusOr<std::unique_ptr<stream::container::HrryFile>> f =
      stream::container::HrryFile::CopyOf(hrry);
  EXPECT_TRUE(f.ok()) << f.status();
  if (!f.ok()) return out;
  EXPECT_EQ((*f)->header().data_buffer_alignment, want_alignment);
  auto d = std::make_unique<TensorDescriptor>();
  for (const stream::container::IndexEntry* e : (*f)->InFileOrder()) {
    EXPECT_TRUE((*f)->ReadDescriptor(*e, d.get()).ok()) << e->name;
    for (uint32_t i = 0; i < d->buffer_count; ++i) {
      absl::StatusOr<absl::Span<const uint8_t>> b = (*f)->Buffer(*e, *d, i);
      EXPECT_TRUE(b.ok()) << b.status();
      if (!b.ok()) continue;
      out.offsets.push_back(b->data() - (*f)->bytes().data());
      out.bytes.emplace_back(b->begin(), b->end());
    }
  }
  return out;
}

TEST(DataAlignment, TwoMiBFileHoldsTheSameBuffersAtTwoMiBBoundaries) {
  // safetensors: tensors of odd sizes, one of several MiB, one empty.
  std::vector<testing::StTensor> st = {
      {"a", "U8", {3}, Pattern(3, 1)},
      {"b", "F32", {1000, 1031}, Pattern(4 * 1000 * 1031, 2)},
      {"c", "F16", {0, 4}, {}},
      {"d", "I16", {7, 5}, Pattern(70, 3)},
  };
  // GGUF Q8_0: two buffers per tensor (codes, scales).
  std::vector<uint8_t> q8 = Pattern(34 * 80, 4);
  for (size_t b = 0; b < q8.size(); b += 34) q8[b] = 0, q8[b + 1] = 0x3C;
  testing::GgufBuilder g;
  g.Tensor("q", {64, 40}, ggml_type::kQ8_0, q8);
  for (const std::vector<uint8_t>& input :
       {testing::BuildSafetensors(st), g.Build()}) {
    absl::StatusOr<std::vector<uint8_t>> base =
        ConvertBytes(input, stream::container::kMinDataAlignment);
    uint64_t padding = 0;
    absl::StatusOr<std::vector<uint8_t>> wide =
        ConvertBytes(input, k2MiB, &padding);
    ASSERT_TRUE(base.ok()) << base.status();
    ASSERT_TRUE(wide.ok()) << wide.status();
    const Buffers want = ReadAll(*base, stream::container::kMinDataAlignment);
    const Buffers got = ReadAll(*wide, k2MiB);
    ASSERT_FALSE(want.bytes.empty());
    EXPECT_EQ(got.bytes, want.bytes);
    size_t nonempty = 0;
    for (size_t i = 0; i < got.offsets.size(); ++i) {
      if (got.bytes[i].empty()) continue;
      ++nonempty;
      EXPECT_EQ(got.offsets[i] % k2MiB, 0u) << "buffer " << i;
    }
    // Each buffer (an empty one too, file-format.md § Empty Tensors) is
    // preceded by under 2 MiB of padding; each non-empty one but the first
    // by nearly that, its predecessor ending near a boundary's start.
    EXPECT_GT(padding, (nonempty - 1) * (k2MiB - 8192));
    EXPECT_LT(padding, got.offsets.size() * k2MiB);
  }
}

TEST(DataAlignment, RefusesWhatFileHdr07ForbidsBeforeWriting) {
  const std::vector<uint8_t> input =
      testing::BuildSafetensors({{"a", "U8", {3}, Pattern(3, 1)}});
  for (uint32_t a : {0u, 2048u, 4097u, 3u << 12, 4u << 20}) {
    SCOPED_TRACE(a);
    MemorySource src(input);
    ConvertOptions options;
    options.data_buffer_alignment = a;
    uint64_t written = 0;
    absl::StatusOr<ConvertReport> r =
        Convert(src, options, [&written](absl::Span<const uint8_t> b) {
          written += b.size();
          return absl::OkStatus();
        });
    ASSERT_FALSE(r.ok());
    EXPECT_TRUE(absl::IsInvalidArgument(r.status())) << r.status();
    EXPECT_THAT(r.status().message(), HasSubstr("FILE-HDR-07"));
    EXPECT_EQ(written, 0u);
  }
  for (uint64_t a = 4096; a <= k2MiB; a *= 2)
    EXPECT_TRUE(IsValidDataAlignment(a)) << a;
  EXPECT_FALSE(IsValidDataAlignment(uint64_t{1} << 32));
}

}  // namespace
}  // namespace hurray::stream::convert
