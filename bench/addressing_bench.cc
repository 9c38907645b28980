// Element addressing cost (parser/addressing.h), ns per element, over a
// float32 [256, 256] tensor in each dense layout:
//   row_major, column_major
//   strided       strides [1, −256] (a transposed, column-reversed view)
//   tiled         16×16 tiles, row-major outer and inner
//   tiled_nested  32×32 tiles of 8×8 sub-tiles, column-major sub-grid
//   morton        morton_bits [8, 8]
//   hilbert       hilbert_order 8
// Each layout is walked in logical row-major order, three ways, every
// offset written to a 256-entry row buffer (what a dequantizer consumes):
//   BM_Fill/<layout>    RowMajorWalker::Fill, one row per call
//   BM_Next/<layout>    RowMajorWalker::offset() + Next() per element
//   BM_Offset/<layout>  ElementAddresser::Offset({i, j}) per element
// and a baseline:
//   BM_Baseline         the plain `i * cols + j` loop
// The `per_elem` counter is the time per element. Nothing allocates in
// the timed loops.
//
//   bazel build -c opt //bench:addressing_bench
//   bazel-bin/bench/addressing_bench --benchmark_min_time=0.2
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "benchmark/benchmark.h"
#include "parser/addressing.h"
#include "parser/descriptor.h"
#include "parser/element_type.h"
#include "tests/vectors.h"

namespace hurray {
namespace {

constexpr uint64_t kN = 256;
constexpr double kElements = kN * kN;

struct Layout {
  const char* name;
  std::unique_ptr<TensorDescriptor> d;
};

std::unique_ptr<TensorDescriptor> Make(uint8_t tag) {
  auto d = vectors::Dense(type_tag::kFloat32, {kN, kN}, tag);
  d->buffers[0].byte_size = kN * kN * 4;
  return d;
}

std::vector<Layout>* Layouts() {
  static auto* const v = [] {
    auto* v = new std::vector<Layout>;
    v->push_back({"row_major", Make(layout_tag::kRowMajor)});
    v->push_back({"column_major", Make(layout_tag::kColumnMajor)});
    auto strided = Make(layout_tag::kStrided);
    strided->layout.strides[0] = 1;
    strided->layout.strides[1] = -static_cast<int64_t>(kN);
    strided->byte_offset = (kN - 1) * kN * 4;
    v->push_back({"strided", std::move(strided)});
    auto tiled = Make(layout_tag::kTiled);
    tiled->layout.tiled_depth = 1;
    TiledLevel& t = tiled->layout.tiled[0];
    t.tile_shape[0] = t.tile_shape[1] = 16;
    t.outer_layout = t.inner_layout = layout_tag::kRowMajor;
    v->push_back({"tiled", std::move(tiled)});
    auto nested = Make(layout_tag::kTiled);
    nested->layout.tiled_depth = 2;
    TiledLevel& n0 = nested->layout.tiled[0];
    n0.tile_shape[0] = n0.tile_shape[1] = 32;
    n0.outer_layout = layout_tag::kRowMajor;
    n0.inner_layout = layout_tag::kTiled;
    TiledLevel& n1 = nested->layout.tiled[1];
    n1.tile_shape[0] = n1.tile_shape[1] = 8;
    n1.outer_layout = layout_tag::kColumnMajor;
    n1.inner_layout = layout_tag::kRowMajor;
    v->push_back({"tiled_nested", std::move(nested)});
    auto morton = Make(layout_tag::kMorton);
    morton->layout.morton_bits[0] = morton->layout.morton_bits[1] = 8;
    v->push_back({"morton", std::move(morton)});
    auto hilbert = Make(layout_tag::kHilbert);
    hilbert->layout.hilbert_order = 8;
    hilbert->layout.hilbert_rank = 2;
    v->push_back({"hilbert", std::move(hilbert)});
    return v;
  }();
  return v;
}

void PerElement(benchmark::State& state) {
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * kElements));
  state.counters["per_elem"] = benchmark::Counter(
      kElements, benchmark::Counter::kIsIterationInvariantRate |
                     benchmark::Counter::kInvert);
}

void BM_Fill(benchmark::State& state, const TensorDescriptor* d) {
  const absl::StatusOr<ElementAddresser> a = ElementAddresser::Create(*d);
  if (!a.ok()) {
    state.SkipWithError("descriptor not addressable");
    return;
  }
  std::vector<int64_t> row(kN);
  for (auto _ : state) {
    RowMajorWalker w(*a);
    while (w.Fill(absl::MakeSpan(row)) != 0) {
      benchmark::DoNotOptimize(row.data());
      benchmark::ClobberMemory();
    }
  }
  PerElement(state);
}

void BM_Next(benchmark::State& state, const TensorDescriptor* d) {
  const absl::StatusOr<ElementAddresser> a = ElementAddresser::Create(*d);
  if (!a.ok()) {
    state.SkipWithError("descriptor not addressable");
    return;
  }
  std::vector<int64_t> row(kN);
  for (auto _ : state) {
    RowMajorWalker w(*a);
    for (uint64_t i = 0; i < kN; ++i) {
      for (uint64_t j = 0; j < kN; ++j, w.Next()) row[j] = w.offset();
      benchmark::DoNotOptimize(row.data());
      benchmark::ClobberMemory();
    }
  }
  PerElement(state);
}

void BM_Offset(benchmark::State& state, const TensorDescriptor* d) {
  const absl::StatusOr<ElementAddresser> a = ElementAddresser::Create(*d);
  if (!a.ok()) {
    state.SkipWithError("descriptor not addressable");
    return;
  }
  std::vector<int64_t> row(kN);
  for (auto _ : state) {
    for (uint64_t i = 0; i < kN; ++i) {
      for (uint64_t j = 0; j < kN; ++j) {
        const uint64_t index[2] = {i, j};
        row[j] = a->Offset(index);
      }
      benchmark::DoNotOptimize(row.data());
      benchmark::ClobberMemory();
    }
  }
  PerElement(state);
}

void BM_Baseline(benchmark::State& state) {
  std::vector<int64_t> row(kN);
  for (auto _ : state) {
    for (uint64_t i = 0; i < kN; ++i) {
      for (uint64_t j = 0; j < kN; ++j) {
        row[j] = static_cast<int64_t>(i * kN + j);
      }
      benchmark::DoNotOptimize(row.data());
      benchmark::ClobberMemory();
    }
  }
  PerElement(state);
}

[[maybe_unused]] const bool kRegistered = [] {
  benchmark::RegisterBenchmark("BM_Baseline", BM_Baseline)
      ->Unit(benchmark::kMicrosecond);
  using Fn = void (*)(benchmark::State&, const TensorDescriptor*);
  const struct {
    const char* prefix;
    Fn fn;
  } ways[] = {
      {"BM_Fill/", BM_Fill}, {"BM_Next/", BM_Next}, {"BM_Offset/", BM_Offset}};
  for (const Layout& l : *Layouts()) {
    for (const auto& way : ways) {
      benchmark::RegisterBenchmark((std::string(way.prefix) + l.name).c_str(),
                                   way.fn, l.d.get())
          ->Unit(benchmark::kMicrosecond);
    }
  }
  return true;
}();

}  // namespace
}  // namespace hurray
