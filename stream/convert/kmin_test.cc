// GGUF Q4_K, Q5_K and Q2_K converted near-losslessly (issue 48,
// ggml_kmin.h): the converted tensor, dequantized by our scalar reference,
// is within the documented bound of ggml's values, the report's error is
// the error measured here, the exact special cases are bit for bit, and
// what cannot be kept within uint8 is refused naming the tensor. ggml's
// values are computed here by ggml's own formulas (dequantize_row_q4_K /
// q5_K / q2_K from the block layouts of ggml-common.h), written by us:
// float32, ggml's operation order, (d1·q) − m1 with two roundings (this file
// is built with -ffp-contract=off so that no fused multiply-add merges them).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "dequant/params.h"
#include "dequant/scalar.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "parser/descriptor.h"
#include "parser/element_type.h"
#include "parser/quantization.h"
#include "stream/container/hrry_mmap.h"
#include "stream/convert/convert.h"
#include "stream/convert/testing/ggml_reference.h"
#include "stream/convert/testing/source_builders.h"

namespace hurray::stream::convert {
namespace {

using testing::GgufBuilder;
using ::testing::HasSubstr;

using testing::HalfAt;

size_t BlockBytes(uint32_t type) {
  return type == ggml_type::kQ4_K ? 144 : type == ggml_type::kQ5_K ? 176 : 84;
}
int SourceBits(uint32_t type) {
  return type == ggml_type::kQ4_K ? 4 : type == ggml_type::kQ5_K ? 5 : 2;
}
uint32_t SubBlock(uint32_t type) { return type == ggml_type::kQ2_K ? 16 : 32; }

// ggml's get_scale_min_k4.
void GetScaleMinK4(int j, const uint8_t* q, uint8_t* d, uint8_t* m) {
  if (j < 4) {
    *d = q[j] & 63;
    *m = q[j + 4] & 63;
  } else {
    *d = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
    *m = (q[j + 4] >> 4) | ((q[j - 0] >> 6) << 4);
  }
}

// ggml's dequantize_row_q4_K / q5_K / q2_K; also d1 per element (for the
// bound).
void Ggml(uint32_t type, const std::vector<uint8_t>& raw, std::vector<float>* y,
          std::vector<float>* d1s) {
  const size_t bs = BlockBytes(type);
  for (size_t i = 0; i < raw.size() / bs; ++i) {
    const uint8_t* x = &raw[i * bs];
    if (type == ggml_type::kQ2_K) {
      const float d = HalfAt(x + 80);
      const float min = HalfAt(x + 82);
      const uint8_t* q = x + 16;
      int is = 0;
      float dl, ml;
      for (int n = 0; n < 256; n += 128) {
        int shift = 0;
        for (int j = 0; j < 4; ++j) {
          uint8_t sc = x[is++];
          dl = d * (sc & 0xF);
          ml = min * (sc >> 4);
          for (int l = 0; l < 16; ++l) {
            y->push_back(dl * static_cast<int8_t>((q[l] >> shift) & 3) - ml);
            d1s->push_back(dl);
          }
          sc = x[is++];
          dl = d * (sc & 0xF);
          ml = min * (sc >> 4);
          for (int l = 0; l < 16; ++l) {
            y->push_back(dl * static_cast<int8_t>((q[l + 16] >> shift) & 3) -
                         ml);
            d1s->push_back(dl);
          }
          shift += 2;
        }
        q += 32;
      }
      continue;
    }
    const bool five = type == ggml_type::kQ5_K;
    const float d = HalfAt(x);
    const float min = HalfAt(x + 2);
    const uint8_t* scales = x + 4;
    const uint8_t* qh = x + 16;
    const uint8_t* ql = x + (five ? 48 : 16);
    int is = 0;
    uint8_t sc, m;
    uint8_t u1 = 1, u2 = 2;
    for (int j = 0; j < 256; j += 64) {
      GetScaleMinK4(is + 0, scales, &sc, &m);
      const float d1 = d * sc;
      const float m1 = min * m;
      GetScaleMinK4(is + 1, scales, &sc, &m);
      const float d2 = d * sc;
      const float m2 = min * m;
      for (int l = 0; l < 32; ++l) {
        y->push_back(five ? d1 * ((ql[l] & 0xF) + (qh[l] & u1 ? 16 : 0)) - m1
                          : d1 * (ql[l] & 0xF) - m1);
        d1s->push_back(d1);
      }
      for (int l = 0; l < 32; ++l) {
        y->push_back(five ? d2 * ((ql[l] >> 4) + (qh[l] & u2 ? 16 : 0)) - m2
                          : d2 * (ql[l] >> 4) - m2);
        d1s->push_back(d2);
      }
      ql += 32;
      is += 2;
      u1 = static_cast<uint8_t>(u1 << 2);
      u2 = static_cast<uint8_t>(u2 << 2);
    }
  }
}

// A block from its logical contents: per sub-block sc and m (6-bit for
// Q4_K / Q5_K, 4-bit for Q2_K), codes q, float16 d and dmin.
std::vector<uint8_t> Pack(uint32_t type, const int* sc, const int* m,
                          const int* q, uint16_t d, uint16_t dmin) {
  std::vector<uint8_t> b(BlockBytes(type), 0);
  if (type == ggml_type::kQ2_K) {
    for (int j = 0; j < 16; ++j) {
      b[j] = static_cast<uint8_t>(sc[j] | m[j] << 4);
      const int h = j / 8, p = (j % 8) / 2, half = j % 2;
      for (int l = 0; l < 16; ++l)
        b[16 + 32 * h + 16 * half + l] |=
            static_cast<uint8_t>(q[16 * j + l] << (2 * p));
    }
    b[80] = static_cast<uint8_t>(d), b[81] = static_cast<uint8_t>(d >> 8);
    b[82] = static_cast<uint8_t>(dmin), b[83] = static_cast<uint8_t>(dmin >> 8);
    return b;
  }
  b[0] = static_cast<uint8_t>(d), b[1] = static_cast<uint8_t>(d >> 8);
  b[2] = static_cast<uint8_t>(dmin), b[3] = static_cast<uint8_t>(dmin >> 8);
  uint8_t* s = &b[4];
  for (int j = 0; j < 8; ++j) {
    if (j < 4) {
      s[j] |= static_cast<uint8_t>(sc[j]);
      s[j + 4] |= static_cast<uint8_t>(m[j]);
    } else {
      s[j + 4] = static_cast<uint8_t>((sc[j] & 0xF) | (m[j] & 0xF) << 4);
      s[j - 4] |= static_cast<uint8_t>((sc[j] >> 4) << 6);
      s[j] |= static_cast<uint8_t>((m[j] >> 4) << 6);
    }
  }
  const bool five = type == ggml_type::kQ5_K;
  uint8_t* qh = &b[16];
  uint8_t* ql = &b[five ? 48 : 16];
  for (int j = 0; j < 8; ++j) {
    for (int l = 0; l < 32; ++l) {
      const int v = q[32 * j + l];
      ql[32 * (j / 2) + l] |= static_cast<uint8_t>((v & 0xF) << (4 * (j % 2)));
      if (five) qh[l] |= static_cast<uint8_t>(((v >> 4) & 1) << j);
    }
  }
  return b;
}

uint32_t Next(uint32_t* x) {
  *x ^= *x << 13, *x ^= *x >> 17, *x ^= *x << 5;
  return *x;
}

// Blocks as ggml's quantizer writes them: dmin = d / 16 (|m1 / d1| < 4),
// d of either sign (some subnormal), dmin of either sign (codes of the
// other sign take m below 15).
std::vector<uint8_t> Blocks(uint32_t type, size_t count, uint32_t seed) {
  const int bits = SourceBits(type);
  const int subs = 256 / static_cast<int>(SubBlock(type));
  const int wide = type == ggml_type::kQ2_K ? 15 : 63;
  uint32_t x = seed;
  std::vector<uint8_t> raw;
  for (size_t b = 0; b < count; ++b) {
    const uint32_t r = Next(&x);
    const uint16_t exp = static_cast<uint16_t>(b % 9 == 0 ? 5 : 6 + b % 20);
    const uint16_t mant = static_cast<uint16_t>(r & 0x3FF);
    const uint16_t d = static_cast<uint16_t>((r & 0x8000) | exp << 10 | mant);
    const uint16_t dmin =
        static_cast<uint16_t>(((r >> 1) & 0x8000) | (exp - 4) << 10 | mant);
    const bool opposite = ((d ^ dmin) & 0x8000) != 0;
    int sc[16], m[16], q[256];
    for (int j = 0; j < subs; ++j) {
      sc[j] = 1 + static_cast<int>(Next(&x) % wide);
      m[j] = static_cast<int>(Next(&x) % (opposite ? 15 : wide + 1));
    }
    for (int e = 0; e < 256; ++e)
      q[e] = static_cast<int>(Next(&x) % (1 << bits));
    const std::vector<uint8_t> blk = Pack(type, sc, m, q, d, dmin);
    raw.insert(raw.end(), blk.begin(), blk.end());
  }
  return raw;
}

struct Result {
  std::vector<float> values;
  ConvertReport report;
  absl::Status status;
};

// The default form; the compact one (ConvertOptions::kquant_compact); or
// --requantize SCHEME.
struct Mode {
  bool compact = false;
  std::optional<QuantizeSpec> requantize;
  uint64_t row = 256;  // ne[0]
};

Result ConvertK(uint32_t type, const std::vector<uint8_t>& raw,
                size_t chunk = 4096, uint64_t spool = uint64_t{32} << 20,
                std::vector<uint8_t>* file = nullptr, const Mode& mode = {}) {
  Result res;
  GgufBuilder g;
  g.Tensor("w", {mode.row, raw.size() / BlockBytes(type) * 256 / mode.row},
           type, raw);
  const std::vector<uint8_t> gguf = g.Build();
  MemorySource src(gguf);
  ConvertOptions o;
  o.chunk_bytes = chunk;
  o.scale_spool_bytes = spool;
  o.kquant_compact = mode.compact;
  o.requantize = mode.requantize;
  std::vector<uint8_t> out;
  absl::StatusOr<ConvertReport> r =
      Convert(src, o, [&out](absl::Span<const uint8_t> b) {
        out.insert(out.end(), b.begin(), b.end());
        return absl::OkStatus();
      });
  res.status = r.status();
  if (!r.ok()) return res;
  res.report = *r;
  if (file != nullptr) *file = out;
  absl::StatusOr<std::unique_ptr<stream::container::HrryFile>> f =
      stream::container::HrryFile::CopyOf(out);
  EXPECT_TRUE(f.ok()) << f.status();
  if (!f.ok()) return res;
  const stream::container::IndexEntry* e = (*f)->Find("w");
  auto d = std::make_unique<TensorDescriptor>();
  EXPECT_TRUE((*f)->ReadDescriptor(*e, d.get()).ok());
  if (!mode.requantize.has_value()) {
    const bool narrow = mode.compact && type != ggml_type::kQ5_K;
    EXPECT_EQ(d->type_tag, !narrow                    ? type_tag::kUInt8
                           : type == ggml_type::kQ4_K ? type_tag::kUInt4
                                                      : type_tag::kUInt2);
    EXPECT_EQ(d->quantization.scheme_tag, scheme_tag::kPerBlockAffine);
    EXPECT_EQ(d->quantization.block_size, SubBlock(type));
    EXPECT_EQ(d->quantization.scale_type_tag, type_tag::kFloat32);
    EXPECT_FALSE(d->quantization.symmetric());
  }
  std::vector<std::vector<uint8_t>> keep;
  std::vector<absl::Span<const uint8_t>> bufs;
  for (uint32_t i = 0; i < d->buffer_count; ++i) {
    absl::StatusOr<absl::Span<const uint8_t>> b = (*f)->Buffer(*e, *d, i);
    EXPECT_TRUE(b.ok()) << b.status();
    if (!b.ok()) return res;
    keep.emplace_back(b->begin(), b->end());
  }
  for (const auto& k : keep) bufs.push_back(k);
  // Strict: every zero point within uint8 (QNT-PBA-13).
  absl::StatusOr<dequant::ParameterBytes> params =
      dequant::ParametersFromBuffers(*d, bufs);
  EXPECT_TRUE(params.ok()) << params.status();
  if (!params.ok()) return res;
  EXPECT_TRUE(
      dequant::ReferenceDequantize(*d, keep[0], *params, &res.values).ok());
  return res;
}

uint32_t Bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

// ours against ggml's values, element by element: |ours − ggml| ≤
// |d1| / 2^(k+1) (k = 8 − b for the default form, 0 for the compact one: the
// zero point's rounding) + the roundings of ggml's two operations and of
// ours. Fails the test on each element past it (the first five named).
struct ErrorStats {
  double max_abs = 0, sum_sq = 0;
  double max_step_share = 0;  // the largest error over |d1|
  size_t inexact = 0;
};
ErrorStats CheckWithinBound(uint32_t type, int k, const std::vector<float>& got,
                            const std::vector<float>& want,
                            const std::vector<float>& d1) {
  ErrorStats st;
  size_t over = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    const double e = std::fabs(static_cast<double>(got[i]) - want[i]);
    const double bound =
        std::ldexp(std::fabs(d1[i]), -(k + 1)) +
        std::ldexp(std::fabs(want[i]) + std::fabs(got[i]) +
                       std::fabs(d1[i]) * ((1 << SourceBits(type)) - 1),
                   -23);
    if (e > bound && over++ < 5)
      ADD_FAILURE() << "element " << i << ": got " << got[i] << " want "
                    << want[i] << " (d1 " << d1[i] << ")";
    st.max_abs = std::max(st.max_abs, e);
    st.sum_sq += e * e;
    st.inexact += e != 0;
    if (d1[i] != 0)
      st.max_step_share = std::max(st.max_step_share, e / std::fabs(d1[i]));
  }
  EXPECT_EQ(over, 0u);
  return st;
}

// The one tensor's report states the error measured, and that it is not
// exact. The vector rewrite (ggml_kmin_avx2.h) measures each error as a
// float32 difference and sums its squares in float32 over at most 32
// elements: the maximum within a float32 rounding (2^-24 relative) of the
// float64 one here, the RMS within a few of them.
void ExpectReported(const ConvertReport& report, const ErrorStats& st,
                    size_t n) {
  ASSERT_EQ(report.tensors.size(), 1u);
  const ConvertedTensor& t = report.tensors[0];
  EXPECT_FALSE(t.exact);
  EXPECT_NEAR(t.max_abs_error, st.max_abs, std::ldexp(st.max_abs, -23));
  EXPECT_NEAR(t.rms_error, std::sqrt(st.sum_sq / n), 1e-6 * (1 + t.rms_error));
  EXPECT_EQ(t.note, "");
}

class KMin : public ::testing::TestWithParam<uint32_t> {};

TEST_P(KMin, WithinTheBoundOfGgmlsValuesAndReportsTheError) {
  const uint32_t type = GetParam();
  const std::vector<uint8_t> raw = Blocks(type, 200, 7 + type);
  Result r = ConvertK(type, raw);
  ASSERT_TRUE(r.status.ok()) << r.status;
  std::vector<float> want, d1;
  Ggml(type, raw, &want, &d1);
  ASSERT_EQ(r.values.size(), want.size());
  const ErrorStats st =
      CheckWithinBound(type, 8 - SourceBits(type), r.values, want, d1);
  EXPECT_GT(st.inexact, 0u);  // near-lossless, not exact
  ExpectReported(r.report, st, want.size());

  // Scales and zero points kept in memory or read again: the same file.
  std::vector<uint8_t> a, b;
  ASSERT_TRUE(ConvertK(type, raw, 4096, uint64_t{32} << 20, &a).status.ok());
  ASSERT_TRUE(ConvertK(type, raw, 4096, 0, &b).status.ok());
  EXPECT_EQ(a, b);
}

// The compact form: codes at the source's width, within half of ggml's step
// (|d1| / 2) plus the roundings; Q5_K, with no 5-bit type, keeps the
// default form and its bound.
TEST_P(KMin, CompactFormWithinHalfAStep) {
  const uint32_t type = GetParam();
  // d and dmin ≥ 0, as ggml's quantizer writes them (m1 ≥ 0): a negative
  // zero point moves into the codes, past uint4 when q reaches 15.
  std::vector<uint8_t> raw = Blocks(type, 200, 11 + type);
  const size_t d_at = type == ggml_type::kQ2_K ? 80 : 0;
  for (size_t b = 0; b < raw.size(); b += BlockBytes(type))
    raw[b + d_at + 1] &= 0x7F, raw[b + d_at + 3] &= 0x7F;
  Mode compact;
  compact.compact = true;
  Result r = ConvertK(type, raw, 4096, uint64_t{32} << 20, nullptr, compact);
  ASSERT_TRUE(r.status.ok()) << r.status;
  std::vector<float> want, d1;
  Ggml(type, raw, &want, &d1);
  ASSERT_EQ(r.values.size(), want.size());
  const int k = type == ggml_type::kQ5_K ? 8 - SourceBits(type) : 0;
  const ErrorStats st = CheckWithinBound(type, k, r.values, want, d1);
  // The compact form uses its half step (Q5_K: its 1/16).
  EXPECT_GT(st.max_step_share, type == ggml_type::kQ5_K ? 0.03 : 0.3);
  ExpectReported(r.report, st, want.size());
  std::vector<uint8_t> a, b;
  ASSERT_TRUE(
      ConvertK(type, raw, 4096, uint64_t{32} << 20, &a, compact).status.ok());
  ASSERT_TRUE(ConvertK(type, raw, 4096, 0, &b, compact).status.ok());
  EXPECT_EQ(a, b);
}

// A zero point past the compact form's range (m1 / d1 = 63 or 15 with
// dmin = d) is refused, naming the tensor and the form.
TEST_P(KMin, CompactFormRefusesWideZeroPoints) {
  const uint32_t type = GetParam();
  if (type == ggml_type::kQ5_K) GTEST_SKIP() << "keeps the default form";
  const int subs = 256 / static_cast<int>(SubBlock(type));
  const int wide = type == ggml_type::kQ2_K ? 15 : 63;
  int sc[16], m[16], q[256];
  for (int e = 0; e < 256; ++e) q[e] = e % 2;
  for (int j = 0; j < subs; ++j) sc[j] = 1, m[j] = j == 3 ? wide : 0;
  Mode compact;
  compact.compact = true;
  Result r = ConvertK(type, Pack(type, sc, m, q, 0x3C00, 0x3C00), 4096,
                      uint64_t{32} << 20, nullptr, compact);
  ASSERT_FALSE(r.status.ok());
  EXPECT_THAT(std::string(r.status.message()), HasSubstr("tensor 'w': "));
  EXPECT_THAT(std::string(r.status.message()),
              HasSubstr("block 0: sub-block 3: m1 / d1"));
  EXPECT_THAT(std::string(r.status.message()), HasSubstr("(the compact form)"));
}

// --requantize SCHEME: ggml's values quantized with SCHEME, the error
// reported against them. Rows of 1536, longer than a chunk of 5000 bytes
// (1250 floats), are read in pieces of 1248 (39 blocks of 32), which cut
// ggml's blocks of 256.
TEST_P(KMin, RequantizeMeasuresTheErrorAgainstGgmlsValues) {
  const uint32_t type = GetParam();
  const std::vector<uint8_t> raw = Blocks(type, 48, 3 + type);
  Mode mode;
  mode.row = 1536;
  absl::StatusOr<QuantizeSpec> spec = ParseQuantizeSpec("per_block:int8:32");
  ASSERT_TRUE(spec.ok());
  mode.requantize = *spec;
  Result r = ConvertK(type, raw, 5000, uint64_t{32} << 20, nullptr, mode);
  ASSERT_TRUE(r.status.ok()) << r.status;
  std::vector<float> want, d1;
  Ggml(type, raw, &want, &d1);
  ASSERT_EQ(r.values.size(), want.size());
  double max_abs = 0;
  for (size_t i = 0; i < want.size(); ++i)
    max_abs = std::max(max_abs,
                       std::fabs(static_cast<double>(r.values[i]) - want[i]));
  ASSERT_EQ(r.report.tensors.size(), 1u);
  const ConvertedTensor& t = r.report.tensors[0];
  EXPECT_TRUE(t.quantized);
  EXPECT_FALSE(t.exact);
  EXPECT_EQ(t.hurray_type, "int8");
  EXPECT_GT(max_abs, 0);
  EXPECT_NEAR(t.max_abs_error, max_abs, 1e-6 * max_abs);
}

// d1 = 0 (sc = 0) with m1 ≠ 0: every value −m1, kept exactly; d = −0 with
// dmin = +0: every value −0 (−0·q − (+0)); d = +0, dmin = −0: +0.
TEST_P(KMin, ZeroSubBlockScalesAreExact) {
  const uint32_t type = GetParam();
  const int subs = 256 / static_cast<int>(SubBlock(type));
  std::vector<uint8_t> raw;
  int sc[16], m[16], q[256];
  uint32_t x = 99;
  for (int e = 0; e < 256; ++e)
    q[e] = static_cast<int>(Next(&x) % (1 << SourceBits(type)));
  for (int zero_at = 0; zero_at < subs; ++zero_at) {
    for (int j = 0; j < subs; ++j) {
      sc[j] = j == zero_at ? 0 : 3 + j % 5;
      m[j] = j == zero_at ? 1 + zero_at % 9 : j % 4;
    }
    const std::vector<uint8_t> b =
        Pack(type, sc, m, q, zero_at % 2 ? 0xB555 : 0x3555, 0x2C01);
    raw.insert(raw.end(), b.begin(), b.end());
  }
  for (uint16_t d : {uint16_t{0x8000}, uint16_t{0x0000}}) {
    for (int j = 0; j < subs; ++j) sc[j] = j % 3, m[j] = j % 2;
    const std::vector<uint8_t> b =
        Pack(type, sc, m, q, d, d == 0 ? 0x8000 : 0x0000);
    raw.insert(raw.end(), b.begin(), b.end());
  }
  Result r = ConvertK(type, raw);
  ASSERT_TRUE(r.status.ok()) << r.status;
  std::vector<float> want, d1;
  Ggml(type, raw, &want, &d1);
  ASSERT_EQ(r.values.size(), want.size());
  size_t checked = 0, negative_zeros = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    if (d1[i] != 0.0f) continue;
    ++checked;
    negative_zeros += want[i] == 0.0f && std::signbit(want[i]);
    EXPECT_EQ(Bits(r.values[i]), Bits(want[i]))
        << "element " << i << ": got " << r.values[i] << " want " << want[i];
  }
  EXPECT_GE(checked, 2u * 256);
  EXPECT_GE(negative_zeros, 64u);
}

// m1 / d1 too large for the finest step: a coarser one, said in the note;
// too large for ggml's own step: refused, naming the tensor.
TEST_P(KMin, LargeZeroPointsCoarsenThenRefuse) {
  const uint32_t type = GetParam();
  const int subs = 256 / static_cast<int>(SubBlock(type));
  const int wide = type == ggml_type::kQ2_K ? 15 : 63;
  int sc[16], m[16], q[256];
  for (int e = 0; e < 256; ++e) q[e] = e % 2;
  for (int j = 0; j < subs; ++j) sc[j] = 1, m[j] = j == 3 ? wide : 0;
  // m1 / d1 = wide · dmin / d: dmin = d → 63 (Q4_K: 16·63 > 255, 4·63 fits).
  {
    const std::vector<uint8_t> raw = Pack(type, sc, m, q, 0x3C00, 0x3C00);
    Result r = ConvertK(type, raw);
    ASSERT_TRUE(r.status.ok()) << r.status;
    ASSERT_EQ(r.report.tensors.size(), 1u);
    EXPECT_THAT(r.report.tensors[0].note, HasSubstr("coarser step"));
    std::vector<float> want, d1;
    Ggml(type, raw, &want, &d1);
    // Sub-block 3 at the coarser step: within d1 / 2 (k ≥ 0).
    for (size_t i = 0; i < want.size(); ++i)
      EXPECT_LE(std::fabs(r.values[i] - want[i]), 0.5 * std::fabs(d1[i]) + 1e-3)
          << i;
  }
  // dmin = 256·d: m1 / d1 = 256·wide > 255 at any step.
  {
    const std::vector<uint8_t> raw = Pack(type, sc, m, q, 0x3C00, 0x5C00);
    Result r = ConvertK(type, raw);
    ASSERT_FALSE(r.status.ok());
    EXPECT_THAT(std::string(r.status.message()),
                HasSubstr("tensor 'w': " +
                          std::string(type == ggml_type::kQ4_K   ? "Q4_K"
                                      : type == ggml_type::kQ5_K ? "Q5_K"
                                                                 : "Q2_K") +
                          " block 0: sub-block 3: m1 / d1"));
  }
}

TEST_P(KMin, RefusesNonFiniteDOrDminNamingTheTensor) {
  const uint32_t type = GetParam();
  const size_t d_at = type == ggml_type::kQ2_K ? 80 : 0;
  for (size_t at : {d_at, d_at + 2}) {
    std::vector<uint8_t> raw = Blocks(type, 3, 5);
    uint8_t* x = &raw[BlockBytes(type)];
    x[at] = 0x00, x[at + 1] = 0x7E;  // NaN
    Result r = ConvertK(type, raw);
    ASSERT_FALSE(r.status.ok());
    EXPECT_THAT(std::string(r.status.message()),
                HasSubstr(absl::StrCat("block 1: the float16 super-block ",
                                       at == d_at ? "d" : "dmin",
                                       " is infinite or NaN")));
    EXPECT_THAT(std::string(r.status.message()), HasSubstr("tensor 'w'"));
  }
}

INSTANTIATE_TEST_SUITE_P(Types, KMin,
                         ::testing::Values(ggml_type::kQ4_K, ggml_type::kQ5_K,
                                           ggml_type::kQ2_K),
                         [](const ::testing::TestParamInfo<uint32_t>& i) {
                           return i.param == ggml_type::kQ4_K   ? "Q4_K"
                                  : i.param == ggml_type::kQ5_K ? "Q5_K"
                                                                : "Q2_K";
                         });

}  // namespace
}  // namespace hurray::stream::convert
