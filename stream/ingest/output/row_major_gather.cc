#include "stream/ingest/output/row_major_gather.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "parser/addressing.h"

namespace hurray::stream {

absl::Status GatherRowMajor(
    const TensorDescriptor& d, absl::Span<const uint8_t> buffer0,
    size_t chunk_bytes,
    absl::FunctionRef<absl::Status(absl::Span<const uint8_t>)> emit,
    absl::FunctionRef<void()> release, uint64_t release_every) {
  uint64_t until_release = release_every;
  auto count = [&] {
    if (release_every != 0 && --until_release == 0) {
      release();
      until_release = release_every;
    }
  };
  if (d.buffer_count == 0 || buffer0.size() != d.buffers[0].byte_size) {
    return absl::InvalidArgumentError(
        absl::StrCat("the data buffer holds ", buffer0.size(),
                     " bytes, its descriptor says ",
                     d.buffer_count == 0 ? 0 : d.buffers[0].byte_size));
  }
  absl::StatusOr<ElementAddresser> a = ElementAddresser::Create(d);
  if (!a.ok()) return a.status();
  if (a->empty()) return absl::OkStatus();
  const uint32_t bits = a->element_bits();
  // Whole elements per chunk, a multiple of 8 so that every chunk but the
  // last ends on a byte boundary for any width.
  const size_t per_chunk = std::max<size_t>(
      8, chunk_bytes * 8 / std::max<uint32_t>(bits, 1) / 8 * 8);
  std::vector<uint8_t> out;
  out.reserve(per_chunk * bits / 8 + 1);
  RowMajorWalker w(*a);
  const uint8_t* src = buffer0.data();
  if (bits % 8 == 0) {
    const size_t n = bits / 8;
    while (!w.done()) {
      out.clear();
      for (size_t k = 0; k < per_chunk && !w.done(); ++k, w.Next()) {
        const uint64_t at = a->BitOffsetOf(w.offset()) / 8;
        out.insert(out.end(), src + at, src + at + n);
        count();
      }
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
      const uint64_t bit = a->BitOffsetOf(w.offset());
      const uint64_t byte = bit / 8;
      uint32_t word = src[byte];
      if (byte + 1 < buffer0.size()) word |= uint32_t{src[byte + 1]} << 8;
      const uint32_t code = (word >> (bit % 8)) & mask;
      const uint32_t packed = code << (obit % 8);
      out[obit / 8] |= static_cast<uint8_t>(packed);
      if ((packed >> 8) != 0)
        out[obit / 8 + 1] |= static_cast<uint8_t>(packed >> 8);
      obit += bits;
      count();
    }
    out.resize((obit + 7) / 8);
    absl::Status s = emit(out);
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace hurray::stream
