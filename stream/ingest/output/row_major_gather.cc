#include "stream/ingest/output/row_major_gather.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "parser/addressing.h"
#include "stream/ingest/output/file_block_cache.h"

namespace hurray::stream::ingest {
namespace {

// Buffer 0 in memory.
class SpanSource {
 public:
  explicit SpanSource(absl::Span<const uint8_t> bytes) : bytes_(bytes) {}
  const uint8_t* Read(uint64_t at, size_t) const { return bytes_.data() + at; }
  absl::Status status() const { return absl::OkStatus(); }

 private:
  absl::Span<const uint8_t> bytes_;
};

// Buffer 0 in a file, through the cache.
class CacheSource {
 public:
  explicit CacheSource(FileBlockCache& cache) : cache_(cache) {}
  const uint8_t* Read(uint64_t at, size_t n) { return cache_.Read(at, n); }
  absl::Status status() const { return cache_.status(); }

 private:
  FileBlockCache& cache_;
};

absl::StatusOr<ElementAddresser> AddresserFor(const TensorDescriptor& d,
                                              uint64_t buffer0_size) {
  if (d.buffer_count == 0 || buffer0_size != d.buffers[0].byte_size) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the data buffer holds ", buffer0_size, " bytes, its descriptor says ",
        d.buffer_count == 0 ? 0 : d.buffers[0].byte_size));
  }
  return ElementAddresser::Create(d);
}

// One element of n bytes, the common widths as fixed-size copies.
inline void CopyElement(uint8_t* o, const uint8_t* p, size_t n) {
  switch (n) {
    case 1:
      *o = *p;
      return;
    case 2:
      std::memcpy(o, p, 2);
      return;
    case 4:
      std::memcpy(o, p, 4);
      return;
    case 8:
      std::memcpy(o, p, 8);
      return;
    default:
      std::memcpy(o, p, n);
  }
}

template <typename Source>
absl::Status Gather(const ElementAddresser& a, uint64_t size, Source& src,
                    size_t chunk_bytes, GatherEmit emit) {
  if (a.empty()) return absl::OkStatus();
  const uint32_t bits = a.element_bits();
  // Whole elements per chunk, a multiple of 8 so that every chunk but the
  // last ends on a byte boundary for any width.
  const size_t per_chunk = std::max<size_t>(
      8, chunk_bytes * 8 / std::max<uint32_t>(bits, 1) / 8 * 8);
  std::vector<uint8_t> out;
  out.reserve(per_chunk * bits / 8 + 1);
  RowMajorWalker w(a);
  if (bits % 8 == 0) {
    const size_t n = bits / 8;
    while (!w.done()) {
      out.resize(per_chunk * n);
      uint8_t* o = out.data();
      size_t k = 0;
      for (; k < per_chunk && !w.done(); ++k, w.Next(), o += n) {
        const uint8_t* p = src.Read(a.BitOffsetOf(w.offset()) / 8, n);
        if (p == nullptr) return src.status();
        CopyElement(o, p, n);
      }
      out.resize(k * n);
      absl::Status s = emit(out);
      if (!s.ok()) return s;
    }
    return absl::OkStatus();
  }
  const uint32_t mask = (1u << bits) - 1;
  while (!w.done()) {
    out.assign(per_chunk * bits / 8, 0);
    uint64_t obit = 0;
    for (size_t k = 0; k < per_chunk && !w.done(); ++k, w.Next()) {
      const uint64_t bit = a.BitOffsetOf(w.offset());
      const uint64_t byte = bit / 8;
      // A code of up to 8 bits may straddle two bytes.
      const bool two = byte + 1 < size;
      const uint8_t* p = src.Read(byte, two ? 2 : 1);
      if (p == nullptr) return src.status();
      uint32_t word = p[0];
      if (two) word |= uint32_t{p[1]} << 8;
      const uint32_t code = (word >> (bit % 8)) & mask;
      const uint32_t packed = code << (obit % 8);
      out[obit / 8] |= static_cast<uint8_t>(packed);
      if ((packed >> 8) != 0)
        out[obit / 8 + 1] |= static_cast<uint8_t>(packed >> 8);
      obit += bits;
    }
    out.resize((obit + 7) / 8);
    absl::Status s = emit(out);
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

// The cache's block size for this walk: the largest (64 KiB down to 256
// bytes) for which the cache holds four times the distinct blocks the first
// kSample elements of the walk touch (a column-major matrix: about one per
// column; the margin keeps the hash from overfilling a set, where a cyclic
// walk would miss every time).
size_t BlockBytesFor(const ElementAddresser& a, size_t budget) {
  constexpr size_t kSample = size_t{1} << 16;
  std::vector<uint64_t> at;
  at.reserve(kSample);
  RowMajorWalker w(a);
  for (size_t k = 0; k < kSample && !w.done(); ++k, w.Next()) {
    at.push_back(a.BitOffsetOf(w.offset()) / 8);
  }
  std::sort(at.begin(), at.end());
  size_t block = size_t{64} << 10;
  for (; block > 256; block /= 2) {
    const uint32_t shift = static_cast<uint32_t>(std::countr_zero(block));
    size_t distinct = 0;
    for (size_t i = 0; i < at.size(); ++i) {
      distinct += i == 0 || (at[i] >> shift) != (at[i - 1] >> shift);
    }
    if (FileBlockCache::SlotsFor(budget, block) >= 4 * distinct) break;
  }
  return block;
}

}  // namespace

absl::Status GatherRowMajor(const TensorDescriptor& d,
                            absl::Span<const uint8_t> buffer0,
                            size_t chunk_bytes, GatherEmit emit) {
  absl::StatusOr<ElementAddresser> a = AddresserFor(d, buffer0.size());
  if (!a.ok()) return a.status();
  SpanSource src(buffer0);
  return Gather(*a, buffer0.size(), src, chunk_bytes, emit);
}

absl::Status GatherRowMajorFromFile(const TensorDescriptor& d,
                                    const GatherFile& file, size_t chunk_bytes,
                                    GatherEmit emit, uint64_t* block_reads) {
  absl::StatusOr<ElementAddresser> a = AddresserFor(d, file.size);
  if (!a.ok()) return a.status();
  if (a->empty()) return absl::OkStatus();
  FileBlockCache::Options options;
  options.budget_bytes = file.cache_bytes;
  options.block_bytes = BlockBytesFor(*a, file.cache_bytes);
  absl::StatusOr<FileBlockCache> cache =
      FileBlockCache::Create(file.fd, file.base, file.size, options, file.name);
  if (!cache.ok()) return cache.status();
  CacheSource src(*cache);
  absl::Status s = Gather(*a, file.size, src, chunk_bytes, emit);
  if (block_reads != nullptr) *block_reads = cache->block_reads();
  return s;
}

}  // namespace hurray::stream::ingest
