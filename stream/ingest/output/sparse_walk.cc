#include "stream/ingest/output/sparse_walk.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "parser/wire.h"

namespace hurray::stream::ingest {
namespace {

// A uint64 array of one buffer.
struct U64s {
  absl::Span<const uint8_t> bytes;
  uint64_t size() const { return bytes.size() / 8; }
  uint64_t operator[](uint64_t i) const {
    return wire::LoadU64(bytes.data() + 8 * i);
  }
};

absl::Status OutOfRange(absl::string_view what) {
  return absl::InvalidArgumentError(
      absl::StrCat("sparse tensor: ", what, " out of range"));
}

}  // namespace

absl::Status ForEachSparseElement(
    const TensorDescriptor& d,
    absl::Span<const absl::Span<const uint8_t>> buffers,
    absl::FunctionRef<void(uint64_t value, uint64_t position)> place) {
  const uint32_t rank = d.rank;
  const uint64_t nnz = d.layout.nnz;
  // Row-major strides of the logical shape (the dense size was checked by
  // the caller, so they do not overflow).
  std::vector<uint64_t> stride(rank, 1);
  for (uint32_t k = rank; k-- > 1;) stride[k - 1] = stride[k] * d.shape[k];
  auto buffer = [&](uint32_t i) {
    return U64s{i < buffers.size() ? buffers[i] : absl::Span<const uint8_t>()};
  };
  switch (d.layout_tag) {
    case layout_tag::kCoo: {
      const U64s idx = buffer(1);
      if (rank == 0 || idx.size() / rank < nnz) return OutOfRange("indices");
      for (uint64_t i = 0; i < nnz; ++i) {
        uint64_t pos = 0;
        for (uint32_t k = 0; k < rank; ++k) {
          const uint64_t c = idx[i * rank + k];
          if (c >= d.shape[k]) return OutOfRange("a coordinate");
          pos += c * stride[k];
        }
        place(i, pos);
      }
      return absl::OkStatus();
    }
    case layout_tag::kCsr:
    case layout_tag::kCsc: {
      // CSR: rows compressed, column indices; CSC: the transpose.
      if (rank != 2) return OutOfRange("rank");
      const bool csr = d.layout_tag == layout_tag::kCsr;
      const uint64_t outer = d.shape[csr ? 0 : 1];
      const uint64_t inner = d.shape[csr ? 1 : 0];
      const U64s idx = buffer(1), ptr = buffer(2);
      if (ptr.size() < outer + 1 || idx.size() < nnz) {
        return OutOfRange("a pointer array");
      }
      for (uint64_t o = 0; o < outer; ++o) {
        const uint64_t begin = ptr[o], end = ptr[o + 1];
        if (begin > end || end > nnz) return OutOfRange("a pointer");
        for (uint64_t j = begin; j < end; ++j) {
          const uint64_t c = idx[j];
          if (c >= inner) return OutOfRange("an index");
          place(j, csr ? o * d.shape[1] + c : c * d.shape[1] + o);
        }
      }
      return absl::OkStatus();
    }
    case layout_tag::kCsf: {
      if (rank < 1) return OutOfRange("rank");
      std::vector<uint64_t> coord(rank, 0);
      // Depth-first over the levels: an explicit stack of (next, end).
      std::vector<uint64_t> next(rank), end(rank);
      const U64s pos0 = buffer(1);
      if (pos0.size() < 2) return OutOfRange("pos_0");
      next[0] = pos0[0];
      end[0] = pos0[1];
      // Each stored node is visited at most once (the ranges of one level
      // are consecutive pairs of a pos array, checked non-decreasing); the
      // budget is a second guard.
      uint64_t budget = 0;
      for (uint32_t l = 0; l < rank; ++l) budget += buffer(2 * l + 2).size();
      uint32_t level = 0;
      for (;;) {
        if (next[level] >= end[level]) {
          if (level == 0) break;
          --level;
          continue;
        }
        if (budget-- == 0) return OutOfRange("overlapping pos ranges:");
        const uint64_t i = next[level]++;
        const U64s crd = buffer(2 * level + 2);
        if (i >= crd.size()) return OutOfRange("a crd index");
        const uint32_t dim = d.layout.mode_order[level];
        if (dim >= rank || crd[i] >= d.shape[dim]) {
          return OutOfRange("a coordinate");
        }
        coord[dim] = crd[i];
        if (level + 1 == rank) {
          if (i >= nnz) return OutOfRange("a leaf");
          uint64_t p = 0;
          for (uint32_t k = 0; k < rank; ++k) p += coord[k] * stride[k];
          place(i, p);
          continue;
        }
        const U64s pos = buffer(2 * level + 3);
        if (i + 1 >= pos.size() || pos[i] > pos[i + 1]) {
          return OutOfRange("a pos pointer");
        }
        ++level;
        next[level] = pos[i];
        end[level] = pos[i + 1];
      }
      return absl::OkStatus();
    }
    default:
      return absl::InvalidArgumentError("not a sparse layout");
  }
}

}  // namespace hurray::stream::ingest
