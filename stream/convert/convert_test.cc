// Conversions read back through the .hrry reader: safetensors tensors of
// every dtype keep their bytes (BOOL its values), GGUF Q8_0 / Q4_0 / MXFP4
// tensors dequantize to ggml's own formula bit for bit (computed here, not
// by our code), metadata lands in the KV section, and what cannot be
// converted exactly is refused naming the tensor.
#include "stream/convert/convert.h"

#include <algorithm>
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
#include "stream/container/hrry_mmap.h"
#include "stream/convert/testing/ggml_reference.h"
#include "stream/convert/testing/source_builders.h"

namespace hurray::stream::convert {
namespace {

using testing::GgufBuilder;
using ::testing::HasSubstr;

absl::StatusOr<std::vector<uint8_t>> ConvertBytes(
    const std::vector<uint8_t>& input, ConvertOptions options = {},
    ConvertReport* report = nullptr) {
  MemorySource src(input);
  std::vector<uint8_t> out;
  absl::StatusOr<ConvertReport> r =
      Convert(src, options, [&out](absl::Span<const uint8_t> b) {
        out.insert(out.end(), b.begin(), b.end());
        return absl::OkStatus();
      });
  if (!r.ok()) return r.status();
  if (report != nullptr) *report = *r;
  return out;
}

struct Read {
  std::unique_ptr<stream::container::HrryFile> file;
  std::unique_ptr<TensorDescriptor> d = std::make_unique<TensorDescriptor>();
  const stream::container::IndexEntry* e = nullptr;
};
Read Open(const std::vector<uint8_t>& hrry, const std::string& name) {
  Read r;
  absl::StatusOr<std::unique_ptr<stream::container::HrryFile>> f =
      stream::container::HrryFile::CopyOf(hrry);
  EXPECT_TRUE(f.ok()) << f.status();
  if (!f.ok()) return r;
  r.file = *std::move(f);
  r.e = r.file->Find(name);
  EXPECT_NE(r.e, nullptr) << name;
  if (r.e != nullptr) {
    EXPECT_TRUE(r.file->ReadDescriptor(*r.e, r.d.get()).ok());
  }
  return r;
}
std::vector<uint8_t> BufferOf(const Read& r, uint32_t i) {
  absl::StatusOr<absl::Span<const uint8_t>> b = r.file->Buffer(*r.e, *r.d, i);
  EXPECT_TRUE(b.ok()) << b.status();
  if (!b.ok()) return {};
  return std::vector<uint8_t>(b->begin(), b->end());
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

TEST(ConvertSafetensors, EveryDtypeKeepsItsBytes) {
  struct Case {
    const char* dtype;
    uint8_t tag;
    size_t bytes;
  };
  const Case cases[] = {
      {"F64", type_tag::kFloat64, 8},
      {"F32", type_tag::kFloat32, 4},
      {"F16", type_tag::kFloat16, 2},
      {"BF16", type_tag::kBFloat16, 2},
      {"I64", type_tag::kInt64, 8},
      {"I32", type_tag::kInt32, 4},
      {"I16", type_tag::kInt16, 2},
      {"I8", type_tag::kInt8, 1},
      {"U64", type_tag::kUInt64, 8},
      {"U32", type_tag::kUInt32, 4},
      {"U16", type_tag::kUInt16, 2},
      {"U8", type_tag::kUInt8, 1},
      {"F8_E4M3", type_tag::kFloat8E4M3, 1},
      {"F8_E5M2", type_tag::kFloat8E5M2, 1},
      {"C64", type_tag::kComplex64, 8},
  };
  std::vector<testing::StTensor> tensors;
  uint32_t seed = 1;
  for (const Case& c : cases) {
    tensors.push_back({std::string("t.") + c.dtype,
                       c.dtype,
                       {3, 5},
                       Pattern(15 * c.bytes, seed++)});
  }
  std::vector<uint8_t> e8m0 = Pattern(15, 99);
  for (uint8_t& b : e8m0) b = (b == 0 || b == 0xFF) ? 0x7F : b;
  tensors.push_back({"t.F8_E8M0", "F8_E8M0", {15}, e8m0});
  tensors.push_back({"scalar", "F32", {}, Pattern(4, 7)});
  tensors.push_back({"empty", "F16", {0, 4}, {}});
  absl::StatusOr<std::vector<uint8_t>> hrry =
      ConvertBytes(testing::BuildSafetensors(tensors));
  ASSERT_TRUE(hrry.ok()) << hrry.status();
  for (const testing::StTensor& t : tensors) {
    SCOPED_TRACE(t.name);
    Read r = Open(*hrry, t.name);
    ASSERT_NE(r.e, nullptr);
    EXPECT_EQ(r.d->layout_tag, layout_tag::kRowMajor);
    EXPECT_EQ(std::vector<uint64_t>(r.d->shape, r.d->shape + r.d->rank),
              t.shape);
    uint8_t tag = 0;
    uint32_t bytes = 0;
    ASSERT_TRUE(SafetensorsDtype(t.dtype, &tag, &bytes));
    EXPECT_EQ(r.d->type_tag, tag);
    EXPECT_EQ(BufferOf(r, 0), t.data);
  }
}

TEST(ConvertSafetensors, BoolIsBitPackedWithTheSameValues) {
  std::vector<uint8_t> values = Pattern(21, 5);
  for (uint8_t& b : values) b &= 1;
  absl::StatusOr<std::vector<uint8_t>> hrry = ConvertBytes(
      testing::BuildSafetensors({{"mask", "BOOL", {3, 7}, values}}));
  ASSERT_TRUE(hrry.ok()) << hrry.status();
  Read r = Open(*hrry, "mask");
  ASSERT_NE(r.e, nullptr);
  EXPECT_EQ(r.d->type_tag, type_tag::kBool);
  const std::vector<uint8_t> packed = BufferOf(r, 0);
  ASSERT_EQ(packed.size(), 3u);
  for (size_t i = 0; i < values.size(); ++i)
    EXPECT_EQ((packed[i / 8] >> (i % 8)) & 1, values[i]) << i;
  EXPECT_EQ(packed[2] >> 5, 0);  // unused bits zero (TYPE-PACK-01)
  EXPECT_TRUE(r.file->CheckElements(*r.e, *r.d).ok());
}

TEST(ConvertSafetensors, MetadataGoesToKvAndKvOptionReplaces) {
  ConvertOptions o;
  o.kv = {{"format", "hrry"}, {"note", "x"}};
  absl::StatusOr<std::vector<uint8_t>> hrry = ConvertBytes(
      testing::BuildSafetensors({{"w", "U8", {2}, {1, 2}}},
                                {{"format", "pt"}, {"author", "me"}}),
      o);
  ASSERT_TRUE(hrry.ok()) << hrry.status();
  Read r = Open(*hrry, "w");
  ASSERT_NE(r.file, nullptr);
  const stream::container::KvSection& kv = r.file->kv();
  ASSERT_EQ(kv.entries().size(), 3u);
  ASSERT_NE(kv.Find("format"), nullptr);
  EXPECT_EQ(kv.Find("format")->value.str(), "hrry");
  EXPECT_EQ(kv.Find("author")->value.str(), "me");
  EXPECT_EQ(kv.Find("note")->value.str(), "x");
}

TEST(ConvertSafetensors, RefusesBadDataNamingTheTensor) {
  absl::StatusOr<std::vector<uint8_t>> r = ConvertBytes(
      testing::BuildSafetensors({{"mask", "BOOL", {3}, {0, 2, 1}}}));
  EXPECT_THAT(r.status().message(),
              HasSubstr("tensor 'mask': BOOL element 1 is 2, not 0 or 1"));
  r = ConvertBytes(
      testing::BuildSafetensors({{"s", "F8_E8M0", {2}, {1, 0xFF}}}));
  EXPECT_THAT(r.status().message(),
              HasSubstr("tensor 's': F8_E8M0 element 1 is 0xFF"));
  r = ConvertBytes(std::vector<uint8_t>(16, 0));
  EXPECT_THAT(r.status().message(), HasSubstr("neither safetensors"));
}

// --- GGUF. ---------------------------------------------------------------

using testing::HalfAt;
// ggml_e8m0_to_fp32_half: 2^(e-128), e = 0 and 1 as subnormals.
float E8M0Half(uint8_t e) {
  uint32_t bits = e < 2 ? 0x00200000u << e : static_cast<uint32_t>(e - 1) << 23;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}
constexpr int8_t kKvaluesMxfp4[16] = {0, 1,  2,  3,  4,  6,  8,  12,
                                      0, -1, -2, -3, -4, -6, -8, -12};

// ggml's dequantize_row_q8_0 / q4_0 / mxfp4, one block at a time.
std::vector<float> GgmlDequant(uint32_t type, const std::vector<uint8_t>& raw) {
  std::vector<float> y;
  const size_t bs = type == ggml_type::kQ8_0   ? 34
                    : type == ggml_type::kQ4_0 ? 18
                                               : 17;
  for (size_t at = 0; at < raw.size(); at += bs) {
    const uint8_t* x = &raw[at];
    float out[32];
    if (type == ggml_type::kQ8_0) {
      const float d = HalfAt(x);
      for (int j = 0; j < 32; ++j) out[j] = static_cast<int8_t>(x[2 + j]) * d;
    } else if (type == ggml_type::kQ4_0) {
      const float d = HalfAt(x);
      for (int j = 0; j < 16; ++j) {
        const int x0 = (x[2 + j] & 0x0F) - 8;
        const int x1 = (x[2 + j] >> 4) - 8;
        out[j] = x0 * d;
        out[j + 16] = x1 * d;
      }
    } else {
      const float d = E8M0Half(x[0]);
      for (int j = 0; j < 16; ++j) {
        out[j] = kKvaluesMxfp4[x[1 + j] & 0x0F] * d;
        out[j + 16] = kKvaluesMxfp4[x[1 + j] >> 4] * d;
      }
    }
    y.insert(y.end(), out, out + 32);
  }
  return y;
}

uint32_t Bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

// Random blocks with finite non-zero scales, then the special blocks.
std::vector<uint8_t> Blocks(uint32_t type, size_t count) {
  const size_t bs = type == ggml_type::kQ8_0   ? 34
                    : type == ggml_type::kQ4_0 ? 18
                                               : 17;
  std::vector<uint8_t> raw = Pattern(count * bs, type);
  for (size_t b = 0; b < count; ++b) {
    uint8_t* x = &raw[b * bs];
    if (type == ggml_type::kMxfp4) {
      x[0] = static_cast<uint8_t>(100 + b % 50);  // 2^-27 .. 2^22
    } else {
      // A float16 scale with exponent field 1..30, either sign; some
      // subnormal.
      const uint16_t exp = static_cast<uint16_t>(b % 7 == 0 ? 0 : 5 + b % 20);
      const uint16_t h = static_cast<uint16_t>(
          (x[1] & 0x80) << 8 | (exp << 10) | ((x[0] | 1) & 0x3FF));
      x[0] = static_cast<uint8_t>(h), x[1] = static_cast<uint8_t>(h >> 8);
    }
  }
  // ggml's all-zero blocks: Q8_0 d = +0, codes 0; Q4_0 d = -0, nibbles 8;
  // MXFP4 e = 0, codes 0 and 8 (+0 in ggml).
  std::vector<uint8_t> zero(bs, 0);
  if (type == ggml_type::kQ4_0) {
    zero[1] = 0x80;
    std::fill(zero.begin() + 2, zero.end(), 0x88);
  } else if (type == ggml_type::kMxfp4) {
    for (size_t i = 1; i < bs; ++i) zero[i] = i % 2 ? 0x80 : 0x08;
  }
  raw.insert(raw.end(), zero.begin(), zero.end());
  if (type == ggml_type::kQ8_0) {
    // d = -0 with codes ≥ 0: all −0; d = +0 with codes all negative: all −0.
    std::vector<uint8_t> b(bs, 3);
    b[0] = 0, b[1] = 0x80;
    b[2] = 0;
    raw.insert(raw.end(), b.begin(), b.end());
    std::fill(b.begin() + 2, b.end(), 0xF0);
    b[1] = 0;
    raw.insert(raw.end(), b.begin(), b.end());
  }
  if (type == ggml_type::kMxfp4) {
    // e = 0 (2^-128) with halvable codes, and a nibble-8-heavy block.
    std::vector<uint8_t> b(bs, 0x42);  // 1.0 and 2.0 (×2 in kvalues)
    b[0] = 0;
    b[5] = 0xF7;
    raw.insert(raw.end(), b.begin(), b.end());
    std::fill(b.begin(), b.end(), 0x8E);
    b[0] = 127;
    raw.insert(raw.end(), b.begin(), b.end());
  }
  return raw;
}

TEST(ConvertGguf, QuantizedBlocksDequantizeToGgmlsFormula) {
  for (uint32_t type :
       {ggml_type::kQ8_0, ggml_type::kQ4_0, ggml_type::kMxfp4}) {
    SCOPED_TRACE(type);
    const size_t bs = type == ggml_type::kQ8_0   ? 34
                      : type == ggml_type::kQ4_0 ? 18
                                                 : 17;
    // Enough blocks for several 4 KiB chunks.
    std::vector<uint8_t> raw = Blocks(type, 600);
    const size_t blocks = raw.size() / bs;
    // Shape: ne = {64, blocks / 2} → logical [blocks / 2, 64]; pad to even.
    if (blocks % 2) raw.insert(raw.end(), raw.begin(), raw.begin() + bs);
    const uint64_t rows = raw.size() / bs / 2;
    GgufBuilder b;
    b.Tensor("q", {64, rows}, type, raw);
    ConvertOptions o;
    o.chunk_bytes = 4096;
    absl::StatusOr<std::vector<uint8_t>> hrry = ConvertBytes(b.Build(), o);
    ASSERT_TRUE(hrry.ok()) << hrry.status();
    Read r = Open(*hrry, "q");
    ASSERT_NE(r.e, nullptr);
    ASSERT_EQ(r.d->rank, 2u);
    EXPECT_EQ(r.d->shape[0], rows);
    EXPECT_EQ(r.d->shape[1], 64u);
    std::vector<absl::Span<const uint8_t>> bufs;
    std::vector<std::vector<uint8_t>> keep;
    for (uint32_t i = 0; i < r.d->buffer_count; ++i)
      keep.push_back(BufferOf(r, i));
    for (const auto& k : keep) bufs.push_back(k);
    absl::StatusOr<dequant::ParameterBytes> params =
        dequant::ParametersFromBuffers(*r.d, bufs);
    ASSERT_TRUE(params.ok()) << params.status();
    std::vector<float> got;
    ASSERT_TRUE(
        dequant::ReferenceDequantize(*r.d, keep[0], *params, &got).ok());
    const std::vector<float> want = GgmlDequant(type, raw);
    ASSERT_EQ(got.size(), want.size());
    size_t mismatches = 0;
    for (size_t i = 0; i < want.size(); ++i) {
      if (Bits(got[i]) != Bits(want[i]) && mismatches++ < 5)
        ADD_FAILURE() << "element " << i << ": got " << got[i] << " want "
                      << want[i];
    }
    EXPECT_EQ(mismatches, 0u);
  }
}

// The codes pass keeps the scales (scale_spool_bytes) so the source is read
// once; a tensor with more scales than that is read again for them. Both
// give the same file, and refuse the same block with the same message.
TEST(ConvertGguf, SpooledScalesMatchASecondPass) {
  for (uint32_t type :
       {ggml_type::kQ8_0, ggml_type::kQ4_0, ggml_type::kMxfp4}) {
    SCOPED_TRACE(type);
    const size_t bs = type == ggml_type::kQ8_0   ? 34
                      : type == ggml_type::kQ4_0 ? 18
                                                 : 17;
    std::vector<uint8_t> raw = Blocks(type, 600);
    if (raw.size() / bs % 2)
      raw.insert(raw.end(), raw.begin(), raw.begin() + bs);
    const uint64_t rows = raw.size() / bs / 2;
    GgufBuilder g;
    g.Tensor("a", {64, rows}, type, raw);
    g.Tensor("b", {64, rows}, type, raw);
    const std::vector<uint8_t> gguf = g.Build();
    ConvertOptions spooled, reread, small_spool;
    spooled.chunk_bytes = reread.chunk_bytes = small_spool.chunk_bytes = 4096;
    reread.scale_spool_bytes = 0;
    // One tensor's scales fit exactly: spooled; two tensors in a row reuse
    // the spool.
    small_spool.scale_spool_bytes = rows * 2 * (bs == 17 ? 1 : 2);
    absl::StatusOr<std::vector<uint8_t>> a = ConvertBytes(gguf, spooled);
    absl::StatusOr<std::vector<uint8_t>> b = ConvertBytes(gguf, reread);
    absl::StatusOr<std::vector<uint8_t>> c = ConvertBytes(gguf, small_spool);
    ASSERT_TRUE(a.ok()) << a.status();
    ASSERT_TRUE(b.ok()) << b.status();
    ASSERT_TRUE(c.ok()) << c.status();
    EXPECT_EQ(*a, *b);
    EXPECT_EQ(*a, *c);
    // A block ggml's values cannot be kept for, in the last chunk: the
    // codes pass refuses it whether or not it spools.
    std::vector<uint8_t> bad = raw;
    uint8_t* x = &bad[bad.size() - 3 * bs];
    if (type == ggml_type::kMxfp4) {
      x[0] = 0xFF;  // reserved e8m0 scale on a block that is not all zero
      x[1] = 0x11;
    } else {
      x[0] = 0x00, x[1] = 0x7C;  // +inf
    }
    GgufBuilder h;
    h.Tensor("a", {64, rows}, type, bad);
    const std::vector<uint8_t> broken = h.Build();
    absl::StatusOr<std::vector<uint8_t>> d = ConvertBytes(broken, spooled);
    absl::StatusOr<std::vector<uint8_t>> e = ConvertBytes(broken, reread);
    ASSERT_FALSE(d.ok());
    ASSERT_FALSE(e.ok());
    EXPECT_EQ(d.status(), e.status());
    EXPECT_THAT(std::string(d.status().message()),
                HasSubstr(absl::StrCat("block ", raw.size() / bs - 3)));
  }
}

TEST(ConvertGguf, FloatTensorsKeepBytesWithReversedShape) {
  GgufBuilder b;
  b.KvString("general.architecture", "llama");
  b.KvU32("general.alignment", 64);
  b.set_alignment(64);
  b.KvStringArray("tokenizer.ggml.tokens", {"<s>", "a", "b\xff"});
  b.KvI32Array("tokenizer.ggml.token_type", {1, 2, -3});
  b.KvF32("rope.freq", 0.5f);
  b.KvBool("flag", true);
  const std::vector<uint8_t> f32 = Pattern(2 * 3 * 4 * 4, 1);
  const std::vector<uint8_t> f16 = Pattern(5 * 2, 2);
  const std::vector<uint8_t> bf16 = Pattern(7 * 2 * 2, 3);
  b.Tensor("a", {4, 3, 2}, ggml_type::kF32, f32);
  b.Tensor("b", {5}, ggml_type::kF16, f16);
  b.Tensor("c", {7, 2}, ggml_type::kBF16, bf16);
  ConvertReport report;
  absl::StatusOr<std::vector<uint8_t>> hrry =
      ConvertBytes(b.Build(), {}, &report);
  ASSERT_TRUE(hrry.ok()) << hrry.status();
  EXPECT_EQ(report.format, "gguf");
  ASSERT_EQ(report.tensors.size(), 3u);
  struct Want {
    const char* name;
    uint8_t tag;
    std::vector<uint64_t> shape;
    const std::vector<uint8_t>* data;
  };
  for (const Want& w : {Want{"a", type_tag::kFloat32, {2, 3, 4}, &f32},
                        Want{"b", type_tag::kFloat16, {5}, &f16},
                        Want{"c", type_tag::kBFloat16, {2, 7}, &bf16}}) {
    Read r = Open(*hrry, w.name);
    ASSERT_NE(r.e, nullptr);
    EXPECT_EQ(r.d->type_tag, w.tag);
    EXPECT_EQ(std::vector<uint64_t>(r.d->shape, r.d->shape + r.d->rank),
              w.shape);
    EXPECT_EQ(BufferOf(r, 0), *w.data);
  }
  Read r = Open(*hrry, "a");
  const stream::container::KvSection& kv = r.file->kv();
  ASSERT_NE(kv.Find("general.architecture"), nullptr);
  EXPECT_EQ(kv.Find("general.architecture")->value.str(), "llama");
  EXPECT_EQ(kv.Find("general.alignment")->value.u64, 64u);
  // Not all UTF-8: kept as a bytes array.
  const stream::container::KvEntry* tokens = kv.Find("tokenizer.ggml.tokens");
  ASSERT_NE(tokens, nullptr);
  EXPECT_EQ(tokens->value.element_type, stream::container::KvType::kBytes);
  ASSERT_EQ(tokens->value.count, 3u);
  EXPECT_EQ(tokens->value.Elements()[2].str(), "b\xff");
  const stream::container::KvEntry* types =
      kv.Find("tokenizer.ggml.token_type");
  ASSERT_NE(types, nullptr);
  EXPECT_EQ(types->value.element_type, stream::container::KvType::kInt64);
  EXPECT_EQ(types->value.Elements()[2].i64, -3);
  EXPECT_EQ(kv.Find("rope.freq")->value.f64, 0.5);
  EXPECT_TRUE(kv.Find("flag")->value.boolean);
}

TEST(ConvertGguf, RefusesWhatHasNoExactForm) {
  {
    GgufBuilder b;
    // Q8_K (ggml type 15): no Hurray form.
    b.Tensor("blk.0.w", {256}, 15, std::vector<uint8_t>(292, 1));
    EXPECT_THAT(ConvertBytes(b.Build()).status().message(),
                HasSubstr("tensor 'blk.0.w': ggml type Q8_K has no exact"));
  }
  {
    // Q8_0 d = +0 with codes of both signs: +0 and -0 in one block.
    std::vector<uint8_t> blk(34, 1);
    blk[0] = blk[1] = 0;
    blk[5] = 0xFF;
    GgufBuilder b;
    b.Tensor("w", {32}, ggml_type::kQ8_0, blk);
    EXPECT_THAT(ConvertBytes(b.Build()).status().message(),
                HasSubstr("tensor 'w': Q8_0 block 0: the scale is 0"));
  }
  {
    std::vector<uint8_t> blk(34, 1);
    blk[0] = 0, blk[1] = 0x7C;  // +inf
    GgufBuilder b;
    b.Tensor("w", {32}, ggml_type::kQ8_0, blk);
    EXPECT_THAT(ConvertBytes(b.Build()).status().message(),
                HasSubstr("infinite or NaN"));
  }
  {
    std::vector<uint8_t> blk(17, 0x11);  // 0.5 codes: not halvable
    blk[0] = 0;
    GgufBuilder b;
    b.Tensor("m", {32}, ggml_type::kMxfp4, blk);
    EXPECT_THAT(ConvertBytes(b.Build()).status().message(),
                HasSubstr("tensor 'm': MXFP4 block 0: the e8m0 scale is 0x00"));
    blk[0] = 0xFF;
    GgufBuilder c;
    c.Tensor("m", {32}, ggml_type::kMxfp4, blk);
    EXPECT_THAT(ConvertBytes(c.Build()).status().message(),
                HasSubstr("the e8m0 scale is 0xFF"));
  }
}

// Dequantizes tensor `name` of a .hrry file with the scalar reference.
std::vector<float> Dequantized(const std::vector<uint8_t>& hrry,
                               const std::string& name) {
  Read r = Open(hrry, name);
  if (r.e == nullptr) return {};
  std::vector<std::vector<uint8_t>> keep;
  std::vector<absl::Span<const uint8_t>> bufs;
  for (uint32_t i = 0; i < r.d->buffer_count; ++i)
    keep.push_back(BufferOf(r, i));
  for (const auto& k : keep) bufs.push_back(k);
  absl::StatusOr<dequant::ParameterBytes> params =
      dequant::ParametersFromBuffers(*r.d, bufs);
  EXPECT_TRUE(params.ok()) << params.status();
  std::vector<float> got;
  if (!params.ok()) return got;
  absl::Status s = dequant::ReferenceDequantize(*r.d, keep[0], *params, &got);
  EXPECT_TRUE(s.ok()) << s;
  return got;
}

std::vector<float> Gaussianish(size_t n, uint32_t seed) {
  std::vector<uint8_t> b = Pattern(n * 4, seed);
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] =
        (static_cast<float>(b[4 * i]) + b[4 * i + 1] + b[4 * i + 2] - 382.5f) /
        100.0f;
  return v;
}
std::vector<uint8_t> F32Bytes(const std::vector<float>& v) {
  std::vector<uint8_t> b(v.size() * 4);
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

TEST(Quantize, EverySchemeReportsTheErrorAReaderSees) {
  const std::vector<float> w = Gaussianish(6 * 96, 3);
  const std::vector<uint8_t> src = testing::BuildSafetensors(
      {{"w", "F32", {6, 96}, F32Bytes(w)},
       {"norm", "F32", {96}, F32Bytes(Gaussianish(96, 4))},
       {"emb.weight", "F32", {2, 32}, F32Bytes(Gaussianish(64, 5))},
       {"ids", "I32", {2, 4}, Pattern(32, 6)}});
  for (const char* text :
       {"per_tensor:int8", "per_tensor:uint8", "per_channel:int8",
        "per_channel:uint8", "per_block:int8", "per_block:uint8:16",
        "per_block:int4:64", "per_block:uint4", "nf4", "nf4:32", "mxfp:e2m1",
        "mxfp:e4m3", "mxfp:e5m2:32"}) {
    SCOPED_TRACE(text);
    ConvertOptions o;
    absl::StatusOr<QuantizeSpec> spec = ParseQuantizeSpec(text);
    ASSERT_TRUE(spec.ok()) << spec.status();
    o.quantize = *spec;
    o.skip = {"emb.*"};
    ConvertReport report;
    absl::StatusOr<std::vector<uint8_t>> hrry = ConvertBytes(src, o, &report);
    ASSERT_TRUE(hrry.ok()) << hrry.status();
    ASSERT_EQ(report.tensors.size(), 4u);
    const ConvertedTensor* qt = nullptr;
    for (const ConvertedTensor& t : report.tensors) {
      if (t.name == "w") qt = &t;
      if (t.name == "norm") {
        EXPECT_EQ(t.note, "kept: 1-D");
      }
      if (t.name == "emb.weight") {
        EXPECT_EQ(t.note, "kept: --skip");
      }
      if (t.name != "w") {
        EXPECT_FALSE(t.quantized) << t.name;
      }
    }
    ASSERT_NE(qt, nullptr);
    EXPECT_TRUE(qt->quantized);
    const std::vector<float> got = Dequantized(*hrry, "w");
    ASSERT_EQ(got.size(), w.size());
    double max_err = 0, sum = 0;
    for (size_t i = 0; i < w.size(); ++i) {
      const double e = std::fabs(static_cast<double>(w[i]) - got[i]);
      max_err = std::max(max_err, e);
      sum += e * e;
    }
    EXPECT_EQ(qt->max_abs_error, max_err);
    EXPECT_NEAR(qt->rms_error, std::sqrt(sum / w.size()), 1e-12);
    EXPECT_GT(max_err, 0);
    // Far below the values' spread (about ±3.8).
    EXPECT_LT(max_err, 0.6);
    // Deterministic: the same bytes again.
    absl::StatusOr<std::vector<uint8_t>> again = ConvertBytes(src, o);
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(*again, *hrry);
  }
}

TEST(Quantize, RefusesNonFiniteValuesNamingTheTensor) {
  std::vector<float> w = Gaussianish(64, 7);
  w[5] = NAN;
  ConvertOptions o;
  o.quantize = *ParseQuantizeSpec("per_block:int8");
  EXPECT_THAT(
      ConvertBytes(
          testing::BuildSafetensors({{"w", "F32", {2, 32}, F32Bytes(w)}}), o)
          .status()
          .message(),
      HasSubstr("tensor 'w': element 5 is NaN or infinite"));
}

TEST(Quantize, ParsesSchemes) {
  EXPECT_FALSE(ParseQuantizeSpec("per_block:int16").ok());
  EXPECT_FALSE(ParseQuantizeSpec("per_block:int8:3").ok());
  EXPECT_FALSE(ParseQuantizeSpec("mxfp:e2m1:8").ok());
  EXPECT_FALSE(ParseQuantizeSpec("per_tensor:int8:32").ok());
  EXPECT_FALSE(ParseQuantizeSpec("gptq").ok());
  absl::StatusOr<QuantizeSpec> q = ParseQuantizeSpec("mxfp:e4m3:64");
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(q->block, 64u);
  EXPECT_EQ(q->storage, type_tag::kFloat8E4M3);
}

// ggml's dequantize_row_q4_1 / q5_0 / q5_1 / q8_1, written out here.
std::vector<float> GgmlDequantOther(uint32_t type,
                                    const std::vector<uint8_t>& raw) {
  const size_t bs = type == ggml_type::kQ4_1   ? 20
                    : type == ggml_type::kQ5_0 ? 22
                    : type == ggml_type::kQ5_1 ? 24
                                               : 36;
  std::vector<float> y;
  for (size_t at = 0; at < raw.size(); at += bs) {
    const uint8_t* x = &raw[at];
    const float d = HalfAt(x);
    const float m = HalfAt(x + 2);
    float out[32];
    if (type == ggml_type::kQ4_1) {
      for (int j = 0; j < 16; ++j) {
        out[j] = (x[4 + j] & 0x0F) * d + m;
        out[j + 16] = (x[4 + j] >> 4) * d + m;
      }
    } else if (type == ggml_type::kQ8_1) {
      for (int j = 0; j < 32; ++j) out[j] = static_cast<int8_t>(x[4 + j]) * d;
    } else {
      const bool one = type == ggml_type::kQ5_1;
      const uint8_t* h = x + (one ? 4 : 2);
      uint32_t qh;
      std::memcpy(&qh, h, 4);
      const uint8_t* qs = h + 4;
      for (int j = 0; j < 16; ++j) {
        const int x0 = (qs[j] & 0x0F) | (((qh >> j) << 4) & 0x10);
        const int x1 = (qs[j] >> 4) | ((qh >> (j + 12)) & 0x10);
        out[j] = one ? x0 * d + m : (x0 - 16) * d;
        out[j + 16] = one ? x1 * d + m : (x1 - 16) * d;
      }
    }
    y.insert(y.end(), out, out + 32);
  }
  return y;
}

TEST(Requantize, GgmlTypesWithoutAnExactFormGoThroughTheirFormula) {
  for (uint32_t type : {ggml_type::kQ4_1, ggml_type::kQ5_0, ggml_type::kQ5_1,
                        ggml_type::kQ8_1}) {
    SCOPED_TRACE(type);
    const size_t bs = type == ggml_type::kQ4_1   ? 20
                      : type == ggml_type::kQ5_0 ? 22
                      : type == ggml_type::kQ5_1 ? 24
                                                 : 36;
    std::vector<uint8_t> raw = Pattern(bs * 8, type + 10);
    for (size_t b = 0; b < 8; ++b) {  // modest finite scales
      raw[b * bs + 1] = 0x2C;         // d ≈ 0.0625
      raw[b * bs + 3] = 0xB0;         // m ≈ -0.125 (Q4_1/Q5_1), s for Q8_1
    }
    GgufBuilder b;
    b.Tensor("x", {64, 4}, type, raw);
    EXPECT_THAT(ConvertBytes(b.Build()).status().message(),
                HasSubstr("--requantize SCHEME re-quantizes it"));
    ConvertOptions o;
    o.requantize = *ParseQuantizeSpec("per_block:int8");
    ConvertReport report;
    absl::StatusOr<std::vector<uint8_t>> hrry =
        ConvertBytes(b.Build(), o, &report);
    ASSERT_TRUE(hrry.ok()) << hrry.status();
    const std::vector<float> want = GgmlDequantOther(type, raw);
    const std::vector<float> got = Dequantized(*hrry, "x");
    ASSERT_EQ(got.size(), want.size());
    double max_err = 0;
    for (size_t i = 0; i < want.size(); ++i)
      max_err = std::max(max_err, std::fabs(double{want[i]} - got[i]));
    ASSERT_EQ(report.tensors.size(), 1u);
    EXPECT_TRUE(report.tensors[0].quantized);
    EXPECT_EQ(report.tensors[0].max_abs_error, max_err);
    EXPECT_LT(max_err, 0.05);
  }
}

TEST(Quantize, LongRowsInPiecesGiveTheSameFile) {
  // Rows of 4096 float32 are longer than a 4 KiB chunk: read in pieces.
  const std::vector<uint8_t> st = testing::BuildSafetensors(
      {{"w", "F32", {3, 4096}, F32Bytes(Gaussianish(3 * 4096, 9))}});
  std::vector<uint8_t> q5 = Pattern(24 * 256, 11);
  for (size_t b = 0; b < 256; ++b) {  // finite d and m
    q5[b * 24 + 1] = 0x2C;
    q5[b * 24 + 3] = 0xB0;
  }
  GgufBuilder g;
  g.Tensor("x", {4096, 2}, ggml_type::kQ5_1, q5);
  const std::vector<uint8_t> gguf = g.Build();
  for (const char* text : {"per_tensor:int8", "per_channel:uint8",
                           "per_block:int4:16", "nf4", "mxfp:e4m3:64"}) {
    SCOPED_TRACE(text);
    for (const std::vector<uint8_t>* src : {&st, &gguf}) {
      ConvertOptions whole, pieces;
      whole.quantize = whole.requantize = *ParseQuantizeSpec(text);
      pieces.quantize = pieces.requantize = whole.quantize;
      pieces.chunk_bytes = 4096;
      absl::StatusOr<std::vector<uint8_t>> a = ConvertBytes(*src, whole);
      absl::StatusOr<std::vector<uint8_t>> b = ConvertBytes(*src, pieces);
      ASSERT_TRUE(a.ok()) << a.status();
      ASSERT_TRUE(b.ok()) << b.status();
      EXPECT_EQ(*a, *b);
    }
  }
}

}  // namespace
}  // namespace hurray::stream::convert
