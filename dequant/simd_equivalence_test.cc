// The SIMD Dequantizer against the scalar reference, bit for bit, on every
// Highway target this CPU supports: every scheme × storage type, every axis,
// partial blocks, odd sizes, byte offsets, extreme parameters, all byte
// values, and data cut into pieces at every offset.
#include <algorithm>
#include <cfenv>
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/types/span.h"
#include "dequant/codec.h"
#include "dequant/dequantizer.h"
#include "dequant/kernels.h"
#include "dequant/minifloat.h"
#include "dequant/scalar.h"
#include "dequant/testing/test_tensor.h"
#include "gtest/gtest.h"
#include "hwy/targets.h"
#include "parser/element_type.h"
#include "parser/quantization.h"

#if defined(__x86_64__)
#include <xmmintrin.h>
#endif

#include <sys/mman.h>
#include <unistd.h>

namespace hurray::dequant {
namespace {

using namespace type_tag;  // NOLINT
using testing::FirstBitDifference;
using testing::MakeTensor;
using testing::TensorSpec;
using testing::TestTensor;

// For failure messages.
const char* CodecName(Codec c) {
  switch (c) {
    case Codec::kInt8:
      return "int8";
    case Codec::kUInt8:
      return "uint8";
    case Codec::kInt16:
      return "int16";
    case Codec::kUInt16:
      return "uint16";
    case Codec::kInt32:
      return "int32";
    case Codec::kUInt32:
      return "uint32";
    case Codec::kInt4:
      return "int4";
    case Codec::kUInt4:
      return "uint4";
    case Codec::kInt2:
      return "int2";
    case Codec::kUInt2:
      return "uint2";
    case Codec::kNf4:
      return "nf4";
    case Codec::kFloat8E4M3:
      return "float8_e4m3";
    case Codec::kFloat8E5M2:
      return "float8_e5m2";
    case Codec::kFloat4E2M1:
      return "float4_e2m1";
    case Codec::kFloat6E2M3:
      return "float6_e2m3";
    case Codec::kFloat6E3M2:
      return "float6_e3m2";
  }
  return "?";
}

struct Shape {
  std::vector<uint64_t> dims;
  uint32_t axis;
  uint32_t block_size;  // 0 for per-tensor / per-channel
};

// Shapes per scheme: odd sizes, every axis, partial and exact blocks.
std::vector<Shape> ShapesFor(Scheme scheme) {
  switch (scheme) {
    case Scheme::kPerTensorAffine:
      return {{{}, 0, 0},      {{1}, 0, 0},         {{37}, 0, 0},
              {{5, 67}, 0, 0}, {{3, 4, 129}, 0, 0}, {{0, 7}, 0, 0}};
    case Scheme::kPerChannelAffine:
      return {{{37}, 0, 0},       {{5, 67}, 0, 0},    {{5, 67}, 1, 0},
              {{3, 4, 33}, 0, 0}, {{3, 4, 33}, 1, 0}, {{3, 4, 33}, 2, 0},
              {{2, 1, 2}, 1, 0},  {{0, 3}, 1, 0}};
    case Scheme::kPerBlockAffine:
      return {{{37}, 0, 4},       {{5, 67}, 1, 16},   {{5, 67}, 0, 2},
              {{5, 64}, 1, 32},   {{3, 4, 33}, 2, 8}, {{3, 4, 33}, 1, 4},
              {{3, 4, 33}, 0, 2}, {{7, 3}, 1, 2},     {{2, 0, 3}, 1, 4}};
    case Scheme::kNf4:
      return {{{64}, 0, 8},
              {{5, 67}, 1, 64},
              {{9, 67}, 0, 8},
              {{3, 4, 33}, 2, 16},
              {{2, 130}, 1, 128}};
    case Scheme::kMxfp:
      return {{{64}, 0, 16},       {{5, 64}, 1, 32},    {{32, 7}, 0, 16},
              {{3, 32, 5}, 1, 16}, {{1, 2, 64}, 2, 64}, {{3, 2048}, 1, 2048},
              {{0, 32}, 1, 32}};
  }
  return {};
}

// Every spec of the sweep, parameters varied by position.
std::vector<TensorSpec> AllSpecs() {
  std::vector<TensorSpec> specs;
  int n = 0;
  for (Scheme scheme : {Scheme::kPerTensorAffine, Scheme::kPerChannelAffine,
                        Scheme::kPerBlockAffine, Scheme::kNf4, Scheme::kMxfp}) {
    for (uint8_t type : testing::StorageTypes(scheme)) {
      for (const Shape& shape : ShapesFor(scheme)) {
        ++n;
        TensorSpec s;
        s.scheme = scheme;
        s.storage_type = type;
        s.shape = shape.dims;
        s.axis = shape.axis;
        s.block_size = shape.block_size;
        s.symmetric = n % 3 == 0;
        s.shared_buffer = !s.symmetric && n % 4 == 1;
        s.byte_offset = n % 5 == 0 ? n % 7 + 1 : 0;
        if (scheme == Scheme::kPerBlockAffine) {
          const uint8_t scale_types[] = {kFloat32, kFloat16, kBFloat16};
          s.scale_type = scale_types[n % 3];
        }
        if (scheme == Scheme::kPerBlockAffine || scheme == Scheme::kNf4) {
          s.zero_padding = n % 2 == 0;
        }
        specs.push_back(s);
      }
    }
  }
  // Zero points anywhere in int32 (permissive: QNT-PBA-13 is strict-only):
  // the kernels' 64-bit path on narrow codecs.
  for (uint8_t type : testing::StorageTypes(Scheme::kPerBlockAffine)) {
    TensorSpec s;
    s.scheme = Scheme::kPerBlockAffine;
    s.storage_type = type;
    s.shape = {6, 37};
    s.axis = 1;
    s.block_size = 8;
    s.wild_zero_points = true;
    specs.push_back(s);
    s.shape = {37, 6};
    s.axis = 0;
    specs.push_back(s);
  }
  return specs;
}

// A tensor of `scheme` (per-block affine or MXFP) and `type`, blocks of 32
// along rows of `row` (for MXFP a multiple of 32: its rows are whole blocks,
// QNT-MX-04).
TensorSpec Blocks32(Scheme scheme, uint8_t type, uint64_t rows, uint64_t row) {
  TensorSpec spec;
  spec.scheme = scheme;
  spec.storage_type = type;
  spec.shape = {rows, row};
  spec.axis = 1;
  spec.block_size = 32;
  return spec;
}

TensorSpec PerBlock32(uint8_t type, uint64_t rows, uint64_t row) {
  return Blocks32(Scheme::kPerBlockAffine, type, rows, row);
}

TensorSpec Mxfp32(uint8_t type, uint64_t rows, uint64_t row) {
  return Blocks32(Scheme::kMxfp, type, rows, row);
}

// The largest |zero point| a float32 holds exactly (kernels.h
// Run::zero_points_f).
constexpr int32_t kExactEdge = int32_t{1} << 24;

DequantOptions OptionsFor(const TensorSpec& spec) {
  DequantOptions o;
  if (spec.wild_zero_points) o.mode = Mode::kPermissive;
  return o;
}

// Feeds `data` in pieces ending at each of `cuts` (then the rest).
absl::Status Chunked(const TestTensor& t, const DequantOptions& options,
                     const std::vector<size_t>& cuts, std::vector<float>* out) {
  absl::StatusOr<Dequantizer> dq =
      Dequantizer::Create(*t.descriptor, t.params(), options);
  if (!dq.ok()) return dq.status();
  out->clear();
  const absl::Span<const uint8_t> data = t.data();
  size_t begin = 0;
  std::vector<size_t> ends = cuts;
  ends.push_back(data.size());
  for (size_t end : ends) {
    const absl::Span<const uint8_t> piece = data.subspan(begin, end - begin);
    const size_t at = out->size();
    out->resize(at + dq->OutputCountFor(piece.size()));
    size_t written = 0;
    absl::Status s =
        dq->Consume(piece, absl::MakeSpan(*out).subspan(at), &written);
    if (!s.ok()) return s;
    if (at + written != out->size()) {
      return absl::InternalError("Consume wrote other than OutputCountFor");
    }
    begin = end;
  }
  return dq->Finish();
}

class SimdEquivalenceTest : public ::testing::TestWithParam<int64_t> {
 protected:
  void SetUp() override {
    hwy::SetSupportedTargetsForTest(GetParam());
    // Every target's own kernels (not the AVX2 ones Intel AVX-512 hosts take
    // for some codecs: Avx2KernelsForSomeCodecsOnAvx512 below).
    SetAvx2PreferenceForTest(2);
    if (std::string(KernelTargetName()) != hwy::TargetName(GetParam())) {
      GTEST_SKIP() << "kernels not compiled for "
                   << hwy::TargetName(GetParam());
    }
  }
  void TearDown() override {
    hwy::SetSupportedTargetsForTest(0);
    SetAvx2PreferenceForTest(0);
  }

  // One-shot and chunked Dequantizer output against the reference.
  void Check(const TensorSpec& spec, const TestTensor& t, bool every_cut) {
    const DequantOptions options = OptionsFor(spec);
    std::vector<float> want, got;
    DequantWarnings want_w, got_w;
    ASSERT_TRUE(ReferenceDequantize(*t.descriptor, t.data(), t.params(), &want,
                                    options, &want_w)
                    .ok())
        << spec.Name();
    const absl::Status s = DequantizeAll(*t.descriptor, t.data(), t.params(),
                                         &got, options, &got_w);
    ASSERT_TRUE(s.ok()) << spec.Name() << ": " << s;
    ASSERT_EQ(FirstBitDifference(want, got), -1) << spec.Name();
    EXPECT_EQ(want_w.nonzero_padding, got_w.nonzero_padding) << spec.Name();
    EXPECT_EQ(want_w.first_nonzero_padding, got_w.first_nonzero_padding)
        << spec.Name();

    const size_t size = t.data().size();
    if (every_cut) {
      for (size_t cut = 0; cut <= size; ++cut) {
        ASSERT_TRUE(Chunked(t, options, {cut}, &got).ok()) << spec.Name();
        ASSERT_EQ(FirstBitDifference(want, got), -1)
            << spec.Name() << " cut at " << cut;
      }
    }
    for (int round = 0; round < 3; ++round) {
      std::vector<size_t> cuts;
      std::uniform_int_distribution<size_t> step(0, round == 0 ? 4 : 41);
      for (size_t at = step(rng_); at < size; at += step(rng_)) {
        cuts.push_back(at);
      }
      ASSERT_TRUE(Chunked(t, options, cuts, &got).ok()) << spec.Name();
      ASSERT_EQ(FirstBitDifference(want, got), -1)
          << spec.Name() << " cuts " << absl::StrJoin(cuts, ",");
    }
  }

  std::mt19937_64 rng_{2024};
};

TEST_P(SimdEquivalenceTest, EverySchemeStorageTypeAndShape) {
  int checked = 0;
  for (const TensorSpec& spec : AllSpecs()) {
    for (int rep = 0; rep < 2; ++rep) {
      const TestTensor t = MakeTensor(spec, rng_);
      Check(spec, t, /*every_cut=*/t.data().size() <= 160);
      if (HasFatalFailure()) return;
      ++checked;
    }
  }
  EXPECT_GT(checked, 400);
}

// Non-temporal stores (StoreMode::kNonTemporal) write the same values.
TEST_P(SimdEquivalenceTest, NonTemporalStores) {
  int n = 0;
  for (const TensorSpec& spec : AllSpecs()) {
    if (++n % 3 != 0) continue;
    const TestTensor t = MakeTensor(spec, rng_);
    DequantOptions options = OptionsFor(spec);
    std::vector<float> want;
    ASSERT_TRUE(
        ReferenceDequantize(*t.descriptor, t.data(), t.params(), &want, options)
            .ok());
    options.stores = StoreMode::kNonTemporal;
    std::vector<float> got(want.size() + 1);
    absl::StatusOr<Dequantizer> dq =
        Dequantizer::Create(*t.descriptor, t.params(), options);
    ASSERT_TRUE(dq.ok());
    size_t written = 0;
    // Start at an unaligned output address.
    ASSERT_TRUE(
        dq->Consume(t.data(), absl::MakeSpan(got).subspan(1), &written).ok());
    got.erase(got.begin());
    EXPECT_EQ(written, want.size());
    ASSERT_EQ(FirstBitDifference(want, got), -1) << spec.Name();
  }
}

// The streamed outputs' store rule: non-temporal for whole vectors in a
// line, ordinary for the first line of each 4 KiB page and for vectors off
// their alignment (kernels.h StoresNonTemporal).
TEST(StreamStores, FirstLineOfEachPageIsOrdinary) {
  alignas(4096) static float page[3 * 1024];
  for (const size_t vector_bytes : {size_t{16}, size_t{32}, size_t{64}}) {
    const size_t floats = vector_bytes / sizeof(float);
    for (size_t i = 0; i < 3 * 1024; ++i) {
      const size_t byte = i * sizeof(float);
      const bool aligned = byte % vector_bytes == 0;
      const bool first_line = byte % 4096 < 64;
      EXPECT_EQ(StoresNonTemporal(page + i, vector_bytes),
                aligned && !first_line)
          << "float " << i << " of vectors of " << floats;
    }
  }
}

// Data holding every byte value, for each codec.
TEST_P(SimdEquivalenceTest, AllByteValues) {
  for (Scheme scheme : {Scheme::kPerTensorAffine, Scheme::kPerChannelAffine,
                        Scheme::kPerBlockAffine, Scheme::kNf4, Scheme::kMxfp}) {
    for (uint8_t type : testing::StorageTypes(scheme)) {
      TensorSpec spec;
      spec.scheme = scheme;
      spec.storage_type = type;
      // 1024 elements, in rows of 32 along the last axis.
      spec.shape = {32, 32};
      spec.axis = 1;
      spec.block_size = scheme == Scheme::kPerTensorAffine ||
                                scheme == Scheme::kPerChannelAffine
                            ? 0
                            : 16;
      TestTensor t = MakeTensor(spec, rng_);
      std::vector<uint8_t>& data = t.buffers[0];
      for (size_t i = 0; i < data.size(); ++i) {
        data[i] = static_cast<uint8_t>(i * 167 + i / 256);  // a permutation
      }
      Check(spec, t, /*every_cut=*/false);
      if (HasFatalFailure()) return;
    }
  }
}

// Long runs: the vector bodies, not just heads and tails.
TEST_P(SimdEquivalenceTest, LongRuns) {
  for (Scheme scheme : {Scheme::kPerTensorAffine, Scheme::kPerChannelAffine,
                        Scheme::kPerBlockAffine, Scheme::kNf4, Scheme::kMxfp}) {
    for (uint8_t type : testing::StorageTypes(scheme)) {
      TensorSpec spec;
      spec.scheme = scheme;
      spec.storage_type = type;
      spec.shape = {3, 4096};
      spec.axis = 1;
      spec.block_size = scheme == Scheme::kPerTensorAffine ||
                                scheme == Scheme::kPerChannelAffine
                            ? 0
                            : 2048;
      Check(spec, MakeTensor(spec, rng_), /*every_cut=*/false);
      if (HasFatalFailure()) return;
      spec.shape = {4096, 3};
      spec.axis = 0;
      Check(spec, MakeTensor(spec, rng_), /*every_cut=*/false);
      if (HasFatalFailure()) return;
    }
  }
}

// The block paths of the fused kernels (AVX2 and AVX3_DL: whole blocks with
// compile-time trip counts for K = 32, 64, 128, a run-time count for 16,
// 256 and the 24 or 48 of a per-channel row; every other target runs the
// same checks): rows of four whole blocks and a partial one of 7, which the
// plan pads to whole blocks; per-channel rows of 67, whose parameter runs
// start inside a byte, and of 24 and 48 elements, which are whole blocks of
// a length that is not a power of two.
// Preference 2 (the fixture's): the AVX3_DL table kernels build each
// parameter's table in 512 bits, as on AMD; preference 1: in 256 bits or
// less, as on Intel (kernels.h SetAvx2PreferenceForTest). Both forms on
// every host.
TEST_P(SimdEquivalenceTest, FusedBlockPaths) {
  const std::pair<Scheme, std::vector<uint8_t>> cases[] = {
      {Scheme::kPerBlockAffine, {kInt4, kUInt4, kInt2, kUInt2}},
      {Scheme::kNf4, {kUInt4}},
      {Scheme::kMxfp,
       {kFloat8E4M3, kFloat4E2M1, kFloat6E2M3, kFloat6E3M2, kInt4}}};
  int checked = 0;
  for (const int preference : {2, 1}) {
    SCOPED_TRACE(preference);
    SetAvx2PreferenceForTest(preference);
    for (const auto& [scheme, types] : cases) {
      for (uint8_t type : types) {
        // 16 and 32 with enough blocks per row for the four- and two-block
        // steps and a remainder.
        for (uint32_t k : {32u, 64u, 128u, 16u, 256u}) {
          TensorSpec spec;
          spec.scheme = scheme;
          spec.storage_type = type;
          // MXFP rows are whole blocks (QNT-MX-04); cuts split them.
          spec.shape = {3, scheme == Scheme::kMxfp ? 5 * k
                           : k <= 32               ? 11 * k + 7
                                                   : 4 * k + 7};
          spec.axis = 1;
          spec.block_size = k;
          Check(spec, MakeTensor(spec, rng_), /*every_cut=*/false);
          if (HasFatalFailure()) return;
          ++checked;
        }
      }
    }
  }
  SetAvx2PreferenceForTest(2);
  EXPECT_EQ(checked, 2 * 5 * (4 + 1 + 5));
  for (uint8_t type : {kInt4, kUInt4, kInt2, kUInt2}) {
    for (uint64_t row : {67, 24, 48}) {
      TensorSpec spec;
      spec.scheme = Scheme::kPerChannelAffine;
      spec.storage_type = type;
      spec.shape = {5, row};
      spec.axis = 0;
      Check(spec, MakeTensor(spec, rng_), /*every_cut=*/false);
      if (HasFatalFailure()) return;
    }
  }
}

// DequantizeRun on runs of every codec that start inside a byte or a float6
// group (and float8 runs, whose fused steps of 16 codes end in masked
// tails), with parameter blocks of 5 (a start the Dequantizer never makes for
// float6, whose MXFP blocks are multiples of 16, but the kernels accept), of
// 48 (whole blocks once the run reaches a block start), of 1000 (long spans
// under one parameter from an unaligned start) and of 4096 (one parameter
// for the whole run), blocked and periodic (parameter i for element i, as
// along a per-channel row); affine runs with and without zero points (the
// 2- and 4-bit ones also with their exact floats, Run::zero_points_f); 2500
// codes not streamed, streamed into an output off a line (through the L1
// stage, several tiles) and streamed with the first block start on a line
// (straight from the registers where the vectors land on lines: blocks and
// rows of 48, blocks of 4096; a partial first block through the stage). The
// source holds exactly the run's bytes, so an over-read is an ASan finding, and
// a sentinel on each side of the output catches stores outside the run.
TEST_P(SimdEquivalenceTest, KernelRunsStartingInsideAGroup) {
  std::vector<uint8_t> src(4 * 2512);  // int32 codes up to element 2507
  for (uint8_t& b : src) b = static_cast<uint8_t>(rng_());
  std::vector<float> scales(1000);  // periodic: index < period
  std::vector<int32_t> zps(1000);
  std::vector<float> zpf(1000);
  for (size_t i = 0; i < scales.size(); ++i) {
    scales[i] = 0.5f + static_cast<float>(i % 64) * 0.37f;
    zps[i] = static_cast<int32_t>(i % 7) - 3;
    zpf[i] = static_cast<float>(zps[i]);
  }
  auto value = [](Codec c, uint32_t q) -> float {
    switch (c) {
      case Codec::kFloat6E2M3:
        return Float6E2M3ToF32(static_cast<uint8_t>(q));
      case Codec::kFloat6E3M2:
        return Float6E3M2ToF32(static_cast<uint8_t>(q));
      case Codec::kFloat4E2M1:
        return Float4E2M1ToF32(static_cast<uint8_t>(q));
      case Codec::kFloat8E4M3:
        return Float8E4M3ToF32(static_cast<uint8_t>(q));
      case Codec::kFloat8E5M2:
        return Float8E5M2ToF32(static_cast<uint8_t>(q));
      default:
        return kNf4Lut[q];
    }
  };
  constexpr float kSentinel = -1234.5f;
  // Targets whose float vectors are under 16 bytes never stream from the
  // registers: SCALAR's one lane, and the half vectors of the 64-bit affine
  // path (uint32, int32 with zero points) on the 128-bit targets.
  const bool vectors_under_16_bytes = GetParam() == HWY_SCALAR;
  const bool wide_path_under_16_bytes =
      vectors_under_16_bytes || GetParam() == HWY_SSE4 ||
      GetParam() == HWY_SSSE3 || GetParam() == HWY_EMU128;
  int runs = 0;
  int on_lines = 0;
  for (Codec c :
       {Codec::kFloat8E4M3, Codec::kFloat8E5M2, Codec::kFloat6E2M3,
        Codec::kFloat6E3M2, Codec::kFloat4E2M1, Codec::kNf4, Codec::kInt4,
        Codec::kUInt4, Codec::kInt2, Codec::kUInt2, Codec::kInt8, Codec::kUInt8,
        Codec::kInt16, Codec::kUInt16, Codec::kInt32, Codec::kUInt32}) {
    const bool affine = IsIntegerCodec(c);
    const bool is_signed = c == Codec::kInt2 || c == Codec::kInt4 ||
                           c == Codec::kInt8 || c == Codec::kInt16 ||
                           c == Codec::kInt32;
    const Packing pk = PackingOf(c);
    const bool table_codec = c == Codec::kInt4 || c == Codec::kUInt4 ||
                             c == Codec::kInt2 || c == Codec::kUInt2;
    // Zero points: 0 none, 1 int32 only, 2 int32 and their exact floats
    // (Run::zero_points_f, which the 2- and 4-bit table kernels use).
    for (int zp_mode : {2, 1, 0}) {
      const bool with_zp = zp_mode != 0;
      if (!affine && with_zp) continue;
      if (zp_mode == 2 && !table_codec) continue;
      for (const auto& [periodic, period] :
           std::vector<std::pair<bool, uint64_t>>{{false, 5},
                                                  {false, 48},
                                                  {false, 1000},
                                                  {false, 4096},
                                                  {true, 5},
                                                  {true, 48},
                                                  {true, 1000}}) {
        for (uint64_t phase : {0, 2}) {
          for (uint64_t first = 0; first < 8; ++first) {
            for (size_t count : {1, 5, 16, 21, 47, 130, 200, 2500}) {
              // Not streamed; streamed into an output whose blocks start
              // off a line (through the L1 stage); streamed with the first
              // whole block on a line (straight from the registers).
              for (int mode : {0, 1, 2}) {
                const bool stream = mode != 0;
                if (stream && count < 2500) continue;
                const uint64_t end = first + count;
                const size_t bytes =
                    static_cast<size_t>((end + pk.group_elements - 1) /
                                        pk.group_elements * pk.group_bytes);
                ASSERT_LE(bytes, src.size());
                const std::vector<uint8_t> exact(src.begin(),
                                                 src.begin() + bytes);
                std::vector<float> want(count), got(count + 32, kSentinel);
                for (size_t j = 0; j < count; ++j) {
                  const uint32_t q = ReadRawCode(exact.data(), first + j, c);
                  const size_t p =
                      periodic ? (phase + j) % period : (phase + j) / period;
                  const int32_t zp = with_zp ? zps[p] : 0;
                  if (affine) {
                    const int64_t bits = pk.bits;
                    const int64_t v =
                        is_signed
                            ? static_cast<int64_t>(q ^ (1u << (bits - 1))) -
                                  (int64_t{1} << (bits - 1))
                            : static_cast<int64_t>(q);
                    want[j] = static_cast<float>(v - zp) * scales[p];
                  } else {
                    want[j] = value(c, q) * scales[p];
                  }
                }
                dequant::Run r;
                r.codec = c;
                r.src = exact.data();
                r.first = first;
                r.count = count;
                r.periodic = periodic;
                r.phase = phase;
                r.period = period;
                // q - zp may leave int32 (kernels.h Run::wide).
                r.wide = with_zp && c == Codec::kInt32;
                r.scales = scales.data();
                r.zero_points = affine && with_zp ? zps.data() : nullptr;
                r.zero_points_f = zp_mode == 2 ? zpf.data() : nullptr;
                r.stream = stream;
                // An unaligned output, or (mode 2) the output placed so that
                // the first block start is on a 64-byte line.
                size_t at = 1;
                const uint64_t left = period - phase % period;
                const uint64_t to_block = left < count ? left % period : 0;
                if (mode == 2) {
                  while (
                      reinterpret_cast<uintptr_t>(got.data() + at + to_block) %
                          64 !=
                      0) {
                    ++at;
                  }
                }
                r.out = got.data() + at;
                const StreamedOutputs before = StreamedOutputsOfThisThread();
                DequantizeRun(r);
                const StreamedOutputs after = StreamedOutputsOfThisThread();
                const std::string what =
                    absl::StrCat(CodecName(c), " first ", first, " count ",
                                 count, " period ", period, " phase ", phase,
                                 " zp ", zp_mode, " mode ", mode);
                for (size_t j = 0; j < got.size(); ++j) {
                  if (j < at || j >= at + count) {
                    ASSERT_EQ(got[j], kSentinel) << what << " at " << j;
                  }
                }
                const std::vector<float> wrote(got.begin() + at,
                                               got.begin() + at + count);
                ASSERT_EQ(FirstBitDifference(want, wrote), -1) << what;
                // Which path each output took (kernels.h StreamedOutputs):
                // every output of a streamed run takes exactly one; with
                // every block start on a line (blocks and rows of 48, or one
                // block for the whole run) none takes the stage but those
                // of a partial first block (to_block), unless the op's
                // vectors are under 16 bytes.
                const uint64_t direct =
                    after.from_registers - before.from_registers;
                const uint64_t staged =
                    after.through_stage - before.through_stage;
                ASSERT_EQ(direct + staged, stream ? count : 0) << what;
                const bool one_block =
                    !periodic && period - phase % period >= count;
                const bool wide_op = r.wide || c == Codec::kUInt32;
                if (mode == 2 && (period % 16 == 0 || one_block) &&
                    !(wide_op ? wide_path_under_16_bytes
                              : vectors_under_16_bytes)) {
                  ASSERT_LE(staged, to_block) << what;
                  ++on_lines;
                }
                ++runs;
              }
            }
          }
        }
      }
    }
  }
  // 6 codecs without zero points, 10 affine with and without, the 4 table
  // codecs also with float zero points.
  EXPECT_EQ(runs, (6 + 10 * 2 + 4) * 7 * 2 * 8 * (8 + 2));
  if (!vectors_under_16_bytes) {
    EXPECT_GT(on_lines, 0);
  }
}

// On AVX3 and AVX3_DL, the 8- and 16-bit integer codecs and float8_e5m2
// can take the AVX2 kernels (on Intel CPUs by default, kernels.h
// KernelTargetNameFor): the same values as the reference that way too, and
// the other codecs keep the target's own kernels.
TEST_P(SimdEquivalenceTest, Avx2KernelsForSomeCodecsOnAvx512) {
  if (GetParam() != HWY_AVX3 && GetParam() != HWY_AVX3_DL) {
    GTEST_SKIP() << "only AVX3 and AVX3_DL hand codecs to AVX2";
  }
  const std::string own = hwy::TargetName(GetParam());
  SetAvx2PreferenceForTest(2);
  EXPECT_EQ(KernelTargetNameFor(Codec::kInt8, false), own);
  SetAvx2PreferenceForTest(1);
  for (Codec c : {Codec::kInt8, Codec::kUInt8, Codec::kInt16, Codec::kUInt16,
                  Codec::kFloat8E5M2}) {
    EXPECT_STREQ(KernelTargetNameFor(c, false), "AVX2") << CodecName(c);
    EXPECT_EQ(KernelTargetNameFor(c, true), own) << CodecName(c);
  }
  for (Codec c : {Codec::kInt4, Codec::kUInt2, Codec::kNf4, Codec::kInt32,
                  Codec::kFloat8E4M3, Codec::kFloat6E2M3}) {
    EXPECT_EQ(KernelTargetNameFor(c, false), own) << CodecName(c);
  }
  int checked = 0;
  for (const TensorSpec& spec : AllSpecs()) {
    const uint8_t t = spec.storage_type;
    if (t != kInt8 && t != kUInt8 && t != kInt16 && t != kUInt16 &&
        t != kFloat8E5M2) {
      continue;
    }
    Check(spec, MakeTensor(spec, rng_), /*every_cut=*/false);
    if (HasFatalFailure()) return;
    ++checked;
  }
  EXPECT_GT(checked, 20);
}

// The 2- and 4-bit table kernels subtract zero points as floats when every
// one converts exactly (|zp| <= 2^24, kernels.h Run::zero_points_f) and as
// int32 otherwise; both against the reference at the edge (permissive mode,
// where per-block zero points may leave the storage range).
TEST_P(SimdEquivalenceTest, TableZeroPointsAtFloatPrecision) {
  constexpr int32_t kEdge = kExactEdge;
  int checked = 0;
  for (const int preference : {2, 1}) {  // both table forms (FusedBlockPaths)
    SCOPED_TRACE(preference);
    SetAvx2PreferenceForTest(preference);
    for (uint8_t type : {kInt4, kUInt4, kInt2, kUInt2}) {
      TensorSpec spec = PerBlock32(type, 3, 4 * 32 + 7);
      spec.wild_zero_points = true;  // permissive (OptionsFor)
      TestTensor t = MakeTensor(spec, rng_);
      const uint64_t blocks =
          t.buffers[t.descriptor->quantization.zero_point_buffer_index].size() /
          4;
      ASSERT_GT(blocks, 4u);
      const int32_t exact[] = {kEdge, -kEdge, kEdge - 1, 1 - kEdge, 7, -3};
      for (uint64_t b = 0; b < blocks; ++b) SetZeroPoint(&t, b, exact[b % 6]);
      Check(spec, t, /*every_cut=*/false);  // float zero points
      if (HasFatalFailure()) return;
      SetZeroPoint(&t, blocks / 2, kEdge + 1);
      Check(spec, t, /*every_cut=*/false);  // int32 zero points
      if (HasFatalFailure()) return;
      checked += 2;
    }
  }
  SetAvx2PreferenceForTest(2);
  EXPECT_EQ(checked, 16);
}

// In the other rounding modes too: rounding toward -inf, float(q) - zp_f is
// -0 where the reference's float(q - zp) is +0, so the table kernels take
// the int32 form there (found by a review helper; per-block rows of 2- and
// 4-bit codes, where q == zp is frequent).
TEST_P(SimdEquivalenceTest, TableZeroPointsInEveryRoundingMode) {
  struct RestoreRounding {
    ~RestoreRounding() { std::fesetround(FE_TONEAREST); }
  } restore;
  int checked = 0;
  for (int mode : {FE_DOWNWARD, FE_UPWARD, FE_TOWARDZERO}) {
    ASSERT_EQ(std::fesetround(mode), 0);
    for (uint8_t type : {kInt4, kUInt4, kInt2, kUInt2}) {
      const TensorSpec spec = PerBlock32(type, 4, 256);
      Check(spec, MakeTensor(spec, rng_), /*every_cut=*/false);
      if (HasFatalFailure()) return;
      ++checked;
    }
  }
  EXPECT_EQ(checked, 12);
}

// float6 and float8_e4m3 under an MXFP scale 2^k with |k| <= 120 (float6)
// or 116 (e4m3) take the scale in the exponent of their bfloat16 values (an
// exact product while every finite nonzero value times 2^k is normal); the
// other scales multiply. Scales at both edges of that range, then two
// blocks holding the smallest and the largest magnitude under k just past
// it, and under the first k where the smallest times 2^k is subnormal or
// the largest overflows (e2m3: 2^-3 and 7.5, k = -124 and 126; e3m2: 2^-4
// and 28, -123 and 124; e4m3: 2^-9 and 448, -118 and 120), so that a range
// wider than the safe one fails here (found by a review helper: -121 and
// -117 did not). Three rows of 141 blocks: several chunks of 64 and odd
// counts; the data buffer exactly sized, for ASan; e4m3's random codes
// include NaN, zero and subnormal codes.
TEST_P(SimdEquivalenceTest, MinifloatScalesAtTheExponentEdges) {
  struct Edge {
    uint8_t type;
    int max_k, subnormal_k, overflow_k;
    uint32_t smallest, largest;  // magnitude codes
  };
  int checked = 0;
  for (const Edge& edge : {Edge{kFloat6E2M3, 120, -124, 126, 0x01, 0x1F},
                           Edge{kFloat6E3M2, 120, -123, 124, 0x01, 0x1F},
                           Edge{kFloat8E4M3, 116, -118, 120, 0x01, 0x7E}}) {
    TensorSpec spec;
    spec.scheme = Scheme::kMxfp;
    spec.storage_type = edge.type;
    spec.shape = {3, 141 * 32};
    spec.axis = 1;
    spec.block_size = 32;
    TestTensor t = MakeTensor(spec, rng_);
    t.buffers[0].shrink_to_fit();
    constexpr uint64_t kBlocks = 3 * 141;
    const int max_k = edge.max_k;
    const int exact[] = {-max_k, max_k, 0, -7, 1 - max_k, 73};
    for (uint64_t b = 0; b < kBlocks; ++b) {
      SetScaleByte(&t, b, static_cast<uint8_t>(127 + exact[b % 6]));
    }
    Check(spec, t, /*every_cut=*/false);
    if (HasFatalFailure()) return;
    for (const uint64_t b : {70, 141}) {
      SetCode(&t, 32 * b, edge.smallest);
      SetCode(&t, 32 * b + 1, edge.largest);
    }
    for (const int k : {-max_k - 1, max_k + 1, edge.subnormal_k,
                        edge.overflow_k, -126, 127}) {
      SetScaleByte(&t, 70, static_cast<uint8_t>(127 + k));
      SetScaleByte(&t, 141, static_cast<uint8_t>(127 + k));
      Check(spec, t, /*every_cut=*/false);
      if (HasFatalFailure()) return;
      ++checked;
    }
  }
  EXPECT_EQ(checked, 18);
}

// The reference's outputs for `t` under `options`; none if it refused.
std::optional<std::vector<float>> ReferenceOutputs(
    const TestTensor& t, const DequantOptions& options) {
  std::vector<float> want;
  if (!ReferenceDequantize(*t.descriptor, t.data(), t.params(), &want, options)
           .ok()) {
    return std::nullopt;
  }
  return want;
}

// `size` bytes that end where an inaccessible page begins: a load or a
// store past them faults (the test dies with SIGSEGV), a prefetch does not.
class BeforeGuardPage {
 public:
  explicit BeforeGuardPage(size_t size)
      : page_(static_cast<size_t>(sysconf(_SC_PAGESIZE))),
        span_((size + page_ - 1) / page_ * page_) {
    void* m = mmap(nullptr, span_ + page_, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) return;
    mapping_ = static_cast<uint8_t*>(m);
    if (mprotect(mapping_ + span_, page_, PROT_NONE) != 0) return;
    data_ = mapping_ + span_ - size;
  }
  ~BeforeGuardPage() {
    if (mapping_ != nullptr) munmap(mapping_, span_ + page_);
  }
  BeforeGuardPage(const BeforeGuardPage&) = delete;
  BeforeGuardPage& operator=(const BeforeGuardPage&) = delete;

  uint8_t* data() const { return data_; }  // null if the mapping failed

 private:
  size_t page_;
  size_t span_;
  uint8_t* mapping_ = nullptr;
  uint8_t* data_ = nullptr;
};

// The data buffer and the output each end at an inaccessible page: every
// kernel, cached and streamed, on this target's own kernels and on the AVX2
// ones some codecs take on Intel AVX-512 hosts, reads no byte past the data
// and stores no float past the output, while the cached paths ask for lines
// up to kernels.h kWriteAheadBytes past it (PrefetchForWrite), which must
// not fault. Same values as the reference.
TEST_P(SimdEquivalenceTest, BuffersEndingAtGuardPages) {
  std::vector<TensorSpec> specs = AllSpecs();
  for (uint8_t type : {kInt8, kUInt8, kInt4, kUInt2}) {
    specs.push_back(PerBlock32(type, 3, 320));
  }
  for (uint8_t type :
       {kFloat8E4M3, kFloat8E5M2, kFloat4E2M1, kFloat6E2M3, kFloat6E3M2}) {
    specs.push_back(Mxfp32(type, 3, 320));
  }
  int checked = 0;
  for (const TensorSpec& spec : specs) {
    const TestTensor t = MakeTensor(spec, rng_);
    DequantOptions options = OptionsFor(spec);
    const std::optional<std::vector<float>> reference =
        ReferenceOutputs(t, options);
    ASSERT_TRUE(reference.has_value()) << spec.Name();
    const std::vector<float>& want = *reference;
    const BeforeGuardPage data(t.data().size());
    const BeforeGuardPage out(want.size() * sizeof(float));
    ASSERT_NE(data.data(), nullptr);
    ASSERT_NE(out.data(), nullptr);
    std::copy(t.data().begin(), t.data().end(), data.data());
    float* const out_floats = reinterpret_cast<float*>(out.data());
    for (const int preference : {2, 0}) {
      SetAvx2PreferenceForTest(preference);
      for (const StoreMode stores :
           {StoreMode::kAuto, StoreMode::kNonTemporal}) {
        options.stores = stores;
        absl::StatusOr<Dequantizer> dq =
            Dequantizer::Create(*t.descriptor, t.params(), options);
        ASSERT_TRUE(dq.ok()) << spec.Name();
        std::fill(out_floats, out_floats + want.size(), -1.0f);
        size_t written = 0;
        ASSERT_TRUE(
            dq->Consume(absl::MakeConstSpan(data.data(), t.data().size()),
                        absl::MakeSpan(out_floats, want.size()), &written)
                .ok())
            << spec.Name();
        ASSERT_EQ(written, want.size()) << spec.Name();
        const std::vector<float> got(out_floats, out_floats + want.size());
        ASSERT_EQ(FirstBitDifference(want, got), -1)
            << spec.Name() << " preference " << preference << " stores "
            << static_cast<int>(stores);
        ++checked;
      }
    }
  }
  EXPECT_EQ(checked, 4 * static_cast<int>(specs.size()));
}

// float8_e5m2 in both forms of the AVX3_DL kernels on every host:
// preference 2 (the fixture's, as on AMD) a byte permute into the high bytes
// of binary16 words (E5M2PermuteDecoder in dequant/simd_kernels.cc),
// preference 1 (as on Intel, whose cached runs take the AVX2 kernels and
// whose streamed ones this form) the F16C widening and shift. Every byte
// value (each 256 codes a permutation of them, NaNs, infinities and
// subnormals included), under random scales; cached (whole and in random
// cuts: heads and tails) and streamed.
TEST_P(SimdEquivalenceTest, Float8E5M2BothForms) {
  int checked = 0;
  for (const int preference : {2, 1}) {
    SCOPED_TRACE(preference);
    SetAvx2PreferenceForTest(preference);
    const TensorSpec spec = Mxfp32(kFloat8E5M2, 3, 32 * 33);
    TestTensor t = MakeTensor(spec, rng_);
    std::vector<uint8_t>& data = t.buffers[0];
    for (size_t i = 0; i < data.size(); ++i) {
      data[i] = static_cast<uint8_t>(i * 167 + i / 256);  // a permutation
    }
    Check(spec, t, /*every_cut=*/false);
    if (HasFatalFailure()) return;
    DequantOptions options = OptionsFor(spec);
    const std::optional<std::vector<float>> want = ReferenceOutputs(t, options);
    ASSERT_TRUE(want.has_value());
    options.stores = StoreMode::kNonTemporal;
    absl::StatusOr<Dequantizer> dq =
        Dequantizer::Create(*t.descriptor, t.params(), options);
    ASSERT_TRUE(dq.ok());
    std::vector<float> got(want->size());
    size_t written = 0;
    ASSERT_TRUE(dq->Consume(t.data(), absl::MakeSpan(got), &written).ok());
    ASSERT_EQ(written, want->size());
    ASSERT_EQ(FirstBitDifference(*want, got), -1) << "streamed";
    ++checked;
  }
  SetAvx2PreferenceForTest(2);
  EXPECT_EQ(checked, 2);
}

// The data buffer at 0, 16, 32 and 48 bytes past a 64-byte line, whole and
// cut after an odd number of 32-code blocks (the second part then starts
// half a line in), MXFP scales in the exponent range: the float8_e4m3 loop
// steps one block first when its codes start half a line in
// (E4M3Decoder::WordBlocks); every placement gives the reference's values,
// cached and streamed.
TEST_P(SimdEquivalenceTest, DataAtEveryPlacementInALine) {
  std::vector<TensorSpec> specs;
  for (uint8_t type : {kFloat8E4M3, kFloat6E2M3, kFloat4E2M1, kInt8}) {
    specs.push_back(Mxfp32(type, 3, 1024));
  }
  int checked = 0;
  for (const TensorSpec& spec : specs) {
    TestTensor t = MakeTensor(spec, rng_);
    // Scales 2^-5 .. 2^5: float8_e4m3 takes them in the exponent
    // (WordBlocks), where random E8M0 bytes would send most chunks of 64
    // blocks to the multiplying path.
    for (uint64_t b = 0; b < 3 * 1024 / 32; ++b) {
      SetScaleByte(&t, b, static_cast<uint8_t>(122 + b % 11));
    }
    DequantOptions options = OptionsFor(spec);
    const std::optional<std::vector<float>> reference =
        ReferenceOutputs(t, options);
    ASSERT_TRUE(reference.has_value()) << spec.Name();
    const std::vector<float>& want = *reference;
    const size_t size = t.data().size();
    std::vector<uint8_t> storage(size + 128);
    const uintptr_t base = reinterpret_cast<uintptr_t>(storage.data());
    for (const size_t offset : {0, 16, 32, 48}) {
      uint8_t* data = storage.data() + (64 - base % 64) % 64 + offset;
      std::copy(t.data().begin(), t.data().end(), data);
      for (const size_t cut : {size, size_t{32 * 7}}) {
        for (const StoreMode stores :
             {StoreMode::kAuto, StoreMode::kNonTemporal}) {
          options.stores = stores;
          absl::StatusOr<Dequantizer> dq =
              Dequantizer::Create(*t.descriptor, t.params(), options);
          ASSERT_TRUE(dq.ok()) << spec.Name();
          std::vector<float> got(want.size(), -1.0f);
          size_t written = 0, more = 0;
          ASSERT_TRUE(dq->Consume(absl::MakeConstSpan(data, cut),
                                  absl::MakeSpan(got), &written)
                          .ok());
          if (cut < size) {
            ASSERT_TRUE(dq->Consume(absl::MakeConstSpan(data + cut, size - cut),
                                    absl::MakeSpan(got).subspan(written), &more)
                            .ok());
          }
          ASSERT_EQ(written + more, want.size()) << spec.Name();
          ASSERT_EQ(FirstBitDifference(want, got), -1)
              << spec.Name() << " offset " << offset << " cut " << cut
              << " stores " << static_cast<int>(stores);
          ++checked;
        }
      }
    }
  }
  EXPECT_EQ(checked, 16 * static_cast<int>(specs.size()));
}

TEST(ExactFloatZeroPoints, OnlyTableCodecsAndOnlyWhenEveryOneIsExact) {
  constexpr int32_t kEdge = kExactEdge;
  EXPECT_EQ(ExactFloatZeroPoints(Codec::kInt4, {kEdge, -kEdge, 3}),
            (std::vector<float>{16777216.0f, -16777216.0f, 3.0f}));
  EXPECT_EQ(ExactFloatZeroPoints(Codec::kUInt2, {0, 1}),
            (std::vector<float>{0.0f, 1.0f}));
  EXPECT_TRUE(ExactFloatZeroPoints(Codec::kUInt4, {3, kEdge + 1}).empty());
  EXPECT_TRUE(ExactFloatZeroPoints(Codec::kInt2, {-kEdge - 1}).empty());
  EXPECT_TRUE(ExactFloatZeroPoints(Codec::kInt8, {1, 2}).empty());
  EXPECT_TRUE(ExactFloatZeroPoints(Codec::kInt4, {}).empty());
}

#if defined(__x86_64__)
// Minifloat subnormal codes are decoded without subnormal float32
// intermediates, so a caller running with DAZ (denormals are zero) gets the
// same results as the reference computed without it.
TEST_P(SimdEquivalenceTest, MinifloatsIgnoreDenormalsAreZero) {
  for (uint8_t type :
       {kFloat8E4M3, kFloat8E5M2, kFloat4E2M1, kFloat6E2M3, kFloat6E3M2}) {
    const TensorSpec spec = Mxfp32(type, 8, 64);
    const TestTensor t = MakeTensor(spec, rng_);
    std::vector<float> want, got;
    ASSERT_TRUE(
        ReferenceDequantize(*t.descriptor, t.data(), t.params(), &want).ok());
    const unsigned int csr = _mm_getcsr();
    _mm_setcsr(csr | 0x0040);  // DAZ
    const absl::Status s =
        DequantizeAll(*t.descriptor, t.data(), t.params(), &got);
    _mm_setcsr(csr);
    ASSERT_TRUE(s.ok()) << s;
    EXPECT_EQ(FirstBitDifference(want, got), -1) << ElementTypeName(type);
  }
}
#endif

std::vector<int64_t> CpuTargets() {
  std::vector<int64_t> targets;
  const int64_t supported = hwy::SupportedTargets();
  for (int64_t bits = supported; bits != 0; bits &= bits - 1) {
    targets.push_back(bits & -bits);
  }
  return targets;
}

INSTANTIATE_TEST_SUITE_P(Targets, SimdEquivalenceTest,
                         ::testing::ValuesIn(CpuTargets()),
                         [](const ::testing::TestParamInfo<int64_t>& info) {
                           return std::string(hwy::TargetName(info.param));
                         });

}  // namespace
}  // namespace hurray::dequant
