// GGUF Q6_K and Q3_K tensors converted exactly (issue 48): the converted
// tensor, dequantized by our scalar reference, equals ggml's values bit for
// bit, signed zeros included. ggml's values are computed here by ggml's own
// formulas (dequantize_row_q6_K / dequantize_row_q3_K from the block layouts
// of ggml-common.h), written by us: float32, ggml's operation order
// ((d·sc)·q: two products, nothing that a fused multiply-add could merge).
#include <cmath>
#include <cstring>
#include <memory>
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

constexpr size_t kQ6Bytes = 210, kQ3Bytes = 110;

absl::StatusOr<std::vector<uint8_t>> ConvertBytes(
    const std::vector<uint8_t>& input, ConvertOptions options = {}) {
  MemorySource src(input);
  std::vector<uint8_t> out;
  absl::StatusOr<ConvertReport> r =
      Convert(src, options, [&out](absl::Span<const uint8_t> b) {
        out.insert(out.end(), b.begin(), b.end());
        return absl::OkStatus();
      });
  if (!r.ok()) return r.status();
  return out;
}

using testing::HalfAt;

// ggml's dequantize_row_q6_K, block_q6_K {ql[128], qh[64], scales[16], d}.
std::vector<float> GgmlQ6K(const std::vector<uint8_t>& raw) {
  std::vector<float> out(raw.size() / kQ6Bytes * 256);
  float* y = out.data();
  for (size_t i = 0; i < raw.size() / kQ6Bytes; ++i) {
    const uint8_t* x = &raw[i * kQ6Bytes];
    const float d = HalfAt(x + 208);
    const uint8_t* ql = x;
    const uint8_t* qh = x + 128;
    const int8_t* sc = reinterpret_cast<const int8_t*>(x + 192);
    for (int n = 0; n < 256; n += 128) {
      for (int l = 0; l < 32; ++l) {
        const int is = l / 16;
        const int8_t q1 = static_cast<int8_t>(
            ((ql[l + 0] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32);
        const int8_t q2 = static_cast<int8_t>(
            ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32);
        const int8_t q3 = static_cast<int8_t>(
            ((ql[l + 0] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32);
        const int8_t q4 = static_cast<int8_t>(
            ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32);
        y[l + 0] = d * sc[is + 0] * q1;
        y[l + 32] = d * sc[is + 2] * q2;
        y[l + 64] = d * sc[is + 4] * q3;
        y[l + 96] = d * sc[is + 6] * q4;
      }
      y += 128;
      ql += 64;
      qh += 32;
      sc += 8;
    }
  }
  return out;
}

// ggml's dequantize_row_q3_K, block_q3_K {hmask[32], qs[64], scales[12], d}
// (the 6-bit scales unpacked through uint32 words: little-endian host).
std::vector<float> GgmlQ3K(const std::vector<uint8_t>& raw) {
  std::vector<float> out(raw.size() / kQ3Bytes * 256);
  float* y = out.data();
  const uint32_t kmask1 = 0x03030303, kmask2 = 0x0f0f0f0f;
  uint32_t aux[4];
  const int8_t* scales = reinterpret_cast<const int8_t*>(aux);
  for (size_t i = 0; i < raw.size() / kQ3Bytes; ++i) {
    const uint8_t* x = &raw[i * kQ3Bytes];
    const float d_all = HalfAt(x + 108);
    const uint8_t* q = x + 32;
    const uint8_t* hm = x;
    uint8_t m = 1;
    std::memcpy(aux, x + 96, 12);
    const uint32_t tmp = aux[2];
    aux[2] = ((aux[0] >> 4) & kmask2) | (((tmp >> 4) & kmask1) << 4);
    aux[3] = ((aux[1] >> 4) & kmask2) | (((tmp >> 6) & kmask1) << 4);
    aux[0] = (aux[0] & kmask2) | (((tmp >> 0) & kmask1) << 4);
    aux[1] = (aux[1] & kmask2) | (((tmp >> 2) & kmask1) << 4);
    int is = 0;
    float dl;
    for (int n = 0; n < 256; n += 128) {
      int shift = 0;
      for (int j = 0; j < 4; ++j) {
        dl = d_all * (scales[is++] - 32);
        for (int l = 0; l < 16; ++l)
          *y++ = dl * (static_cast<int8_t>((q[l + 0] >> shift) & 3) -
                       ((hm[l + 0] & m) ? 0 : 4));
        dl = d_all * (scales[is++] - 32);
        for (int l = 0; l < 16; ++l)
          *y++ = dl * (static_cast<int8_t>((q[l + 16] >> shift) & 3) -
                       ((hm[l + 16] & m) ? 0 : 4));
        shift += 2;
        m = static_cast<uint8_t>(m << 1);
      }
      q += 32;
    }
  }
  return out;
}

// Block packers (the inverse of the layouts above), for the special blocks.
// q6[e] in [-32, 31]; sc int8.
std::vector<uint8_t> PackQ6K(const int q6[256], const int8_t sc[16],
                             uint16_t d) {
  std::vector<uint8_t> b(kQ6Bytes, 0);
  for (int e = 0; e < 256; ++e) {
    const int h = e / 128, k = (e % 128) / 32, l = e % 32;
    const int v = q6[e] + 32;
    uint8_t& lo = b[64 * h + l + (k & 1) * 32];
    lo = static_cast<uint8_t>(lo | (k < 2 ? (v & 0xF) : (v & 0xF) << 4));
    b[128 + 32 * h + l] |= static_cast<uint8_t>((v >> 4) << (2 * k));
  }
  std::memcpy(&b[192], sc, 16);
  b[208] = static_cast<uint8_t>(d), b[209] = static_cast<uint8_t>(d >> 8);
  return b;
}
// q3[e] in [-4, 3]; sc6[j] in [0, 63] (ggml's scale is sc6 − 32).
std::vector<uint8_t> PackQ3K(const int q3[256], const int sc6[16], uint16_t d) {
  std::vector<uint8_t> b(kQ3Bytes, 0);
  for (int e = 0; e < 256; ++e) {
    int v = q3[e] + 4;
    if (v > 3) {
      b[e % 32] |= static_cast<uint8_t>(1 << (e / 32));
      v -= 4;
    }
    b[32 + 32 * (e / 128) + e % 32] |=
        static_cast<uint8_t>(v << (2 * ((e % 128) / 32)));
  }
  for (int j = 0; j < 16; ++j) {
    const int v = sc6[j];
    b[96 + j % 8] |= static_cast<uint8_t>(j < 8 ? v & 0xF : (v & 0xF) << 4);
    b[96 + 8 + j % 4] |= static_cast<uint8_t>((v >> 4) << (2 * (j / 4)));
  }
  b[108] = static_cast<uint8_t>(d), b[109] = static_cast<uint8_t>(d >> 8);
  return b;
}

uint32_t Bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

uint32_t Next(uint32_t* x) {
  *x ^= *x << 13, *x ^= *x >> 17, *x ^= *x << 5;
  return *x;
}

// A finite float16 d of either sign, every 7th subnormal.
uint16_t RandomD(uint32_t* x, size_t b) {
  const uint32_t r = Next(x);
  const uint16_t exp = static_cast<uint16_t>(b % 7 == 0 ? 0 : 1 + b % 29);
  return static_cast<uint16_t>((r & 0x8000) | (exp << 10) | ((r | 1) & 0x3FF));
}

// Random blocks, then special ones: each sub-block position with a zero
// scale (codes of one sign), d = ±0 (every sub-block zero, codes of one
// sign per sub-block), the largest and smallest scales.
std::vector<uint8_t> Blocks(bool q6, size_t random) {
  const size_t bs = q6 ? kQ6Bytes : kQ3Bytes;
  uint32_t x = q6 ? 12345 : 54321;
  std::vector<uint8_t> raw(random * bs);
  for (size_t b = 0; b < random; ++b) {
    uint8_t* p = &raw[b * bs];
    for (size_t i = 0; i < bs; ++i) p[i] = static_cast<uint8_t>(Next(&x) >> 24);
    // Zero sub-block scales come in the special blocks below (random codes
    // there would have both signs).
    if (q6) {
      for (int j = 0; j < 16; ++j)
        if (p[192 + j] == 0) p[192 + j] = 1;
    } else {
      for (int j = 0; j < 16; ++j) {
        const uint8_t lo = p[96 + j % 8];
        const int v = (j < 8 ? lo & 0xF : lo >> 4) |
                      ((p[104 + j % 4] >> (2 * (j / 4))) & 3) << 4;
        if (v == 32) p[96 + j % 8] ^= j < 8 ? 0x01 : 0x10;
      }
    }
    const uint16_t d = RandomD(&x, b);
    p[bs - 2] = static_cast<uint8_t>(d),
           p[bs - 1] = static_cast<uint8_t>(d >> 8);
  }
  auto add = [&raw](const std::vector<uint8_t>& b) {
    raw.insert(raw.end(), b.begin(), b.end());
  };
  int q[256];
  for (int zero_at = 0; zero_at < 16; ++zero_at) {
    int8_t sc8[16];
    int sc6[16];
    for (int j = 0; j < 16; ++j) {
      sc8[j] =
          static_cast<int8_t>(j == zero_at ? 0 : (j % 2 ? -1 : 1) * (j + 3));
      sc6[j] = j == zero_at ? 32 : (j * 4 + 1) % 64;
      if (sc6[j] == 32) sc6[j] = 33;
    }
    for (int e = 0; e < 256; ++e) {
      const uint32_t r = Next(&x);
      // The zero sub-block's codes share a sign: ≥ 0 on even positions,
      // < 0 on odd ones.
      if (e / 16 == zero_at) {
        q[e] = zero_at % 2 ? -1 - static_cast<int>(r % (q6 ? 32 : 4))
                           : static_cast<int>(r % (q6 ? 32 : 4));
      } else {
        q[e] = q6 ? static_cast<int>(r % 64) - 32 : static_cast<int>(r % 8) - 4;
      }
    }
    // Negative d on odd positions: +0 and -0 sub-blocks both appear.
    const uint16_t d =
        static_cast<uint16_t>((zero_at % 3 ? 0 : 0x8000) | 0x3555);
    add(q6 ? PackQ6K(q, sc8, d) : PackQ3K(q, sc6, d));
  }
  for (uint16_t d : {uint16_t{0x0000}, uint16_t{0x8000}}) {
    int8_t sc8[16];
    int sc6[16];
    for (int j = 0; j < 16; ++j) {
      sc8[j] = static_cast<int8_t>(j % 3 ? -(j + 1) : j);
      sc6[j] = j * 4;
    }
    for (int e = 0; e < 256; ++e) {
      const uint32_t r = Next(&x);
      const bool negative = (e / 16) % 2 == 1;
      const int mag = static_cast<int>(r % (q6 ? 32 : 4));
      q[e] = negative ? -1 - mag : mag;
    }
    add(q6 ? PackQ6K(q, sc8, d) : PackQ3K(q, sc6, d));
  }
  {
    // Extremes: d the largest finite and the smallest subnormal float16,
    // scales -128 / 127 (Q6_K) and -32 / 31 (Q3_K).
    int8_t sc8[16];
    int sc6[16];
    for (int j = 0; j < 16; ++j) {
      sc8[j] = static_cast<int8_t>(j % 2 ? -128 : 127);
      sc6[j] = j % 2 ? 0 : 63;
    }
    for (int e = 0; e < 256; ++e)
      q[e] = q6 ? (e % 2 ? -32 : 31) : (e % 2 ? -4 : 3);
    add(q6 ? PackQ6K(q, sc8, 0x7BFF) : PackQ3K(q, sc6, 0x7BFF));
    add(q6 ? PackQ6K(q, sc8, 0x8001) : PackQ3K(q, sc6, 0x8001));
  }
  return raw;
}

struct Converted {
  std::unique_ptr<stream::container::HrryFile> file;
  std::unique_ptr<TensorDescriptor> d = std::make_unique<TensorDescriptor>();
  std::vector<float> values;
};

Converted ConvertAndDequantize(const std::vector<uint8_t>& hrry) {
  Converted c;
  absl::StatusOr<std::unique_ptr<stream::container::HrryFile>> f =
      stream::container::HrryFile::CopyOf(hrry);
  EXPECT_TRUE(f.ok()) << f.status();
  if (!f.ok()) return c;
  c.file = *std::move(f);
  const stream::container::IndexEntry* e = c.file->Find("k");
  EXPECT_NE(e, nullptr);
  if (e == nullptr) return c;
  EXPECT_TRUE(c.file->ReadDescriptor(*e, c.d.get()).ok());
  std::vector<std::vector<uint8_t>> keep;
  std::vector<absl::Span<const uint8_t>> bufs;
  for (uint32_t i = 0; i < c.d->buffer_count; ++i) {
    absl::StatusOr<absl::Span<const uint8_t>> b = c.file->Buffer(*e, *c.d, i);
    EXPECT_TRUE(b.ok()) << b.status();
    if (!b.ok()) return c;
    keep.emplace_back(b->begin(), b->end());
  }
  for (const auto& k : keep) bufs.push_back(k);
  absl::StatusOr<dequant::ParameterBytes> params =
      dequant::ParametersFromBuffers(*c.d, bufs);
  EXPECT_TRUE(params.ok()) << params.status();
  if (!params.ok()) return c;
  absl::Status s =
      dequant::ReferenceDequantize(*c.d, keep[0], *params, &c.values);
  EXPECT_TRUE(s.ok()) << s;
  return c;
}

class KQuant : public ::testing::TestWithParam<uint32_t> {
 protected:
  bool q6() const { return GetParam() == ggml_type::kQ6_K; }
  size_t bs() const { return q6() ? kQ6Bytes : kQ3Bytes; }
  std::vector<float> Ggml(const std::vector<uint8_t>& raw) const {
    return q6() ? GgmlQ6K(raw) : GgmlQ3K(raw);
  }
};

// The packers put the special blocks' values where they were meant (so the
// zero sub-blocks are at the positions the test names).
TEST_P(KQuant, PackersMatchGgmlsLayout) {
  int q[256];
  int8_t sc8[16];
  int sc6[16];
  for (int e = 0; e < 256; ++e) q[e] = q6() ? (e * 7) % 64 - 32 : e % 8 - 4;
  for (int j = 0; j < 16; ++j) {
    sc8[j] = static_cast<int8_t>(j - 5);
    sc6[j] = (j * 5) % 64;
  }
  const std::vector<uint8_t> b =
      q6() ? PackQ6K(q, sc8, 0x3C00) : PackQ3K(q, sc6, 0x3C00);
  const std::vector<float> y = Ggml(b);
  for (int e = 0; e < 256; ++e) {
    const int s = q6() ? sc8[e / 16] : sc6[e / 16] - 32;
    EXPECT_EQ(y[e], static_cast<float>(s * q[e])) << e;
  }
}

TEST_P(KQuant, DequantizesToGgmlsValuesBitForBit) {
  std::vector<uint8_t> raw = Blocks(q6(), 300);
  if (raw.size() / bs() % 2)
    raw.insert(raw.end(), raw.begin(), raw.begin() + bs());
  const uint64_t rows = raw.size() / bs() / 2;
  GgufBuilder g;
  g.Tensor("k", {512, rows}, GetParam(), raw);
  ConvertOptions o;
  o.chunk_bytes = 4096;  // many chunks, cut inside no block
  absl::StatusOr<std::vector<uint8_t>> hrry = ConvertBytes(g.Build(), o);
  ASSERT_TRUE(hrry.ok()) << hrry.status();
  Converted c = ConvertAndDequantize(*hrry);
  ASSERT_NE(c.file, nullptr);
  EXPECT_EQ(c.d->type_tag, q6() ? type_tag::kInt8 : type_tag::kInt4);
  ASSERT_EQ(c.d->rank, 2u);
  EXPECT_EQ(c.d->shape[0], rows);
  EXPECT_EQ(c.d->shape[1], 512u);
  const QuantizationDescriptor& qd = c.d->quantization;
  EXPECT_EQ(qd.scheme_tag, scheme_tag::kPerBlockAffine);
  EXPECT_EQ(qd.axis, 1u);
  EXPECT_EQ(qd.block_size, 16u);
  EXPECT_EQ(qd.scale_type_tag, type_tag::kFloat32);
  EXPECT_TRUE(qd.symmetric());
  const std::vector<float> want = Ggml(raw);
  ASSERT_EQ(c.values.size(), want.size());
  size_t mismatches = 0, zeros = 0, negative_zeros = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    if (want[i] == 0.0f) {
      ++zeros;
      negative_zeros += std::signbit(want[i]);
    }
    if (Bits(c.values[i]) != Bits(want[i]) && mismatches++ < 5)
      ADD_FAILURE() << "element " << i << " (block " << i / 256
                    << ", sub-block " << i % 256 / 16 << "): got "
                    << c.values[i] << " want " << want[i];
  }
  EXPECT_EQ(mismatches, 0u);
  // The special blocks did make signed zeros of both kinds.
  EXPECT_GT(negative_zeros, 16u);
  EXPECT_GT(zeros - negative_zeros, 16u);

  // Scales kept in memory or read in a second pass: the same file.
  o.scale_spool_bytes = 0;
  absl::StatusOr<std::vector<uint8_t>> reread = ConvertBytes(g.Build(), o);
  ASSERT_TRUE(reread.ok()) << reread.status();
  EXPECT_EQ(*reread, *hrry);
}

TEST_P(KQuant, RefusesNonFiniteDAndMixedSignZerosNamingTheTensor) {
  const std::string type = q6() ? "Q6_K" : "Q3_K";
  for (uint16_t d : {uint16_t{0x7E00}, uint16_t{0x7C00}, uint16_t{0xFC00}}) {
    std::vector<uint8_t> raw = Blocks(q6(), 4);
    uint8_t* x = &raw[2 * bs()];
    x[bs() - 2] = static_cast<uint8_t>(d),
             x[bs() - 1] = static_cast<uint8_t>(d >> 8);
    GgufBuilder g;
    g.Tensor("blk.3.ffn_down.weight", {256, raw.size() / bs()}, GetParam(),
             raw);
    absl::StatusOr<std::vector<uint8_t>> r = ConvertBytes(g.Build());
    ASSERT_FALSE(r.ok());
    EXPECT_THAT(std::string(r.status().message()),
                HasSubstr(absl::StrCat("tensor 'blk.3.ffn_down.weight': ", type,
                                       " block 2: the float16 super-block "
                                       "scale d is infinite or NaN")));
  }
  // Sub-block 5 with a zero scale and codes of both signs: ggml gives +0
  // and -0 there.
  int q[256];
  int8_t sc8[16];
  int sc6[16];
  for (int e = 0; e < 256; ++e) q[e] = e % 2 ? -1 : 1;
  for (int j = 0; j < 16; ++j) {
    sc8[j] = static_cast<int8_t>(j == 5 ? 0 : 1);
    sc6[j] = j == 5 ? 32 : 40;
  }
  GgufBuilder g;
  g.Tensor("w", {256}, GetParam(),
           q6() ? PackQ6K(q, sc8, 0x3C00) : PackQ3K(q, sc6, 0x3C00));
  absl::StatusOr<std::vector<uint8_t>> r = ConvertBytes(g.Build());
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(std::string(r.status().message()),
              HasSubstr(absl::StrCat("tensor 'w': ", type,
                                     " block 0: sub-block 5: the scale is 0 "
                                     "and the codes have both signs")));
}

TEST_P(KQuant, ReportSaysExact) {
  std::vector<uint8_t> raw = Blocks(q6(), 2);
  GgufBuilder g;
  g.Tensor("k", {256, raw.size() / bs()}, GetParam(), raw);
  const std::vector<uint8_t> gguf = g.Build();
  MemorySource src(gguf);
  ConvertOptions o;
  absl::StatusOr<ConvertReport> r = Convert(
      src, o, [](absl::Span<const uint8_t>) { return absl::OkStatus(); });
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->tensors.size(), 1u);
  EXPECT_EQ(r->tensors[0].source_type, q6() ? "Q6_K" : "Q3_K");
  EXPECT_EQ(r->tensors[0].hurray_type, q6() ? "int8" : "int4");
  EXPECT_EQ(r->tensors[0].scheme, "per_block_affine");
  EXPECT_TRUE(r->tensors[0].exact);
  EXPECT_FALSE(r->tensors[0].quantized);
}

INSTANTIATE_TEST_SUITE_P(Types, KQuant,
                         ::testing::Values(ggml_type::kQ6_K, ggml_type::kQ3_K),
                         [](const ::testing::TestParamInfo<uint32_t>& i) {
                           return i.param == ggml_type::kQ6_K
                                      ? std::string("Q6_K")
                                      : std::string("Q3_K");
                         });

}  // namespace
}  // namespace hurray::stream::convert
