#include "stream/ingest/output/element_convert.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>

#include "absl/strings/str_cat.h"
#include "dequant/minifloat.h"
#include "parser/element_type.h"
#include "parser/wire.h"

namespace hurray::stream::ingest {
namespace {

using u128 = unsigned __int128;

// Rounds sign · m · 2^(e - src_man) (m with its leading bit at src_man) to
// a binary format of exp_bits / man_bits, nearest, ties to even.
uint64_t RoundToBinary(bool sign, int64_t e, u128 m, int src_man, int exp_bits,
                       int man_bits) {
  const int64_t bias = (int64_t{1} << (exp_bits - 1)) - 1;
  const uint64_t inf = ((uint64_t{1} << exp_bits) - 1) << man_bits;
  const uint64_t sign_bit = sign ? uint64_t{1} << (exp_bits + man_bits) : 0;
  const int64_t min_e = 1 - bias;
  const int64_t shift =
      src_man - man_bits + (e < min_e ? min_e - e : int64_t{0});
  u128 q;
  if (shift >= 127) {
    q = 0;
  } else if (shift <= 0) {
    q = m << -shift;
  } else {
    q = m >> shift;
    const u128 rem = m & ((u128{1} << shift) - 1);
    const u128 half = u128{1} << (shift - 1);
    if (rem > half || (rem == half && (q & 1) != 0)) ++q;
  }
  uint64_t bits;
  if (e < min_e) {
    bits = static_cast<uint64_t>(q);  // subnormal (or the smallest normal)
  } else {
    if (e + bias >= (int64_t{1} << exp_bits)) return sign_bit | inf;
    bits = (static_cast<uint64_t>(e + bias - 1) << man_bits) +
           static_cast<uint64_t>(q);
  }
  if (bits >= inf) bits = inf;
  return sign_bit | bits;
}

uint64_t DoubleToBits(double x, int exp_bits, int man_bits) {
  uint64_t b;
  std::memcpy(&b, &x, 8);
  const bool sign = (b >> 63) != 0;
  const uint64_t sign_bit = sign ? uint64_t{1} << (exp_bits + man_bits) : 0;
  const uint64_t exp = (b >> 52) & 0x7FF;
  const uint64_t frac = b & ((uint64_t{1} << 52) - 1);
  const uint64_t inf = ((uint64_t{1} << exp_bits) - 1) << man_bits;
  if (exp == 0x7FF) {
    return sign_bit | inf | (frac != 0 ? uint64_t{1} << (man_bits - 1) : 0);
  }
  // Double subnormals are far below the targets' smallest subnormal.
  if (exp == 0) return sign_bit;
  return RoundToBinary(sign, static_cast<int64_t>(exp) - 1023,
                       u128{frac | uint64_t{1} << 52}, 52, exp_bits, man_bits);
}

uint32_t BitsOf(uint8_t tag) {
  const ElementTypeInfo* t = FindElementType(tag);
  return t == nullptr ? 0 : t->bits;
}

bool IsComplex(uint8_t tag) {
  return tag == type_tag::kComplex64 || tag == type_tag::kComplex128;
}

// The value of element `code` (sub-byte types) or of the bytes at p.
double Decode(uint8_t tag, const uint8_t* p, uint32_t code) {
  switch (tag) {
    case type_tag::kFloat16:
      return dequant::F16ToF32(wire::LoadU16(p));
    case type_tag::kBFloat16:
      return dequant::Bf16ToF32(wire::LoadU16(p));
    case type_tag::kFloat32:
    case type_tag::kComplex64:
      return wire::LoadF32(p);
    case type_tag::kFloat64:
    case type_tag::kComplex128:
      return wire::LoadF64(p);
    case type_tag::kFloat128:
      return Float128ToDouble(p);
    case type_tag::kInt8:
      return static_cast<int8_t>(p[0]);
    case type_tag::kUInt8:
      return p[0];
    case type_tag::kInt16:
      return static_cast<int16_t>(wire::LoadU16(p));
    case type_tag::kUInt16:
      return wire::LoadU16(p);
    case type_tag::kInt32:
      return wire::LoadI32(p);
    case type_tag::kUInt32:
      return wire::LoadU32(p);
    case type_tag::kInt64:
      return static_cast<double>(wire::LoadI64(p));
    case type_tag::kUInt64:
      return static_cast<double>(wire::LoadU64(p));
    case type_tag::kBool:
    case type_tag::kUInt4:
    case type_tag::kUInt2:
      return code;
    case type_tag::kInt4:
      return static_cast<int>(code ^ 8u) - 8;
    case type_tag::kInt2:
      return static_cast<int>(code ^ 2u) - 2;
    case type_tag::kFloat8E8M0: {
      const std::optional<float> v = dequant::Float8E8M0ToF32(p[0]);
      return v.has_value() ? *v : std::numeric_limits<double>::quiet_NaN();
    }
    case type_tag::kFloat8E4M3:
    case type_tag::kFloat8E5M2:
      return dequant::MinifloatDecoderFor(tag)(p[0]);
    case type_tag::kFloat4E2M1:
    case type_tag::kFloat6E2M3:
    case type_tag::kFloat6E3M2:
      return dequant::MinifloatDecoderFor(tag)(static_cast<uint8_t>(code));
    default:
      return std::numeric_limits<double>::quiet_NaN();
  }
}

// The output bits of a source value a double does not always hold (int64 /
// uint64 beyond 2^53, float128), rounded once from the exact value to a
// binary format of exp_bits / man_bits: going through a double would round
// twice (2^60 + 2^36 + 1 to float32 would give 2^60, not 2^60 + 2^37).
// nullopt for every other source type (exact in a double).
std::optional<uint64_t> WideToBits(uint8_t tag, const uint8_t* p, int exp_bits,
                                   int man_bits) {
  bool sign = false;
  uint64_t magnitude = 0;
  switch (tag) {
    case type_tag::kInt64: {
      const int64_t v = wire::LoadI64(p);
      sign = v < 0;
      magnitude = sign ? uint64_t{0} - static_cast<uint64_t>(v)
                       : static_cast<uint64_t>(v);
      break;
    }
    case type_tag::kUInt64:
      magnitude = wire::LoadU64(p);
      break;
    case type_tag::kFloat128: {
      const uint64_t lo = wire::LoadU64(p);
      const uint64_t hi = wire::LoadU64(p + 8);
      sign = (hi >> 63) != 0;
      const uint64_t sign_bit = sign ? uint64_t{1} << (exp_bits + man_bits) : 0;
      const uint64_t inf = ((uint64_t{1} << exp_bits) - 1) << man_bits;
      const uint64_t exp = (hi >> 48) & 0x7FFF;
      const u128 frac = (u128{hi & ((uint64_t{1} << 48) - 1)} << 64) | lo;
      if (exp == 0x7FFF) {
        return sign_bit | inf | (frac != 0 ? uint64_t{1} << (man_bits - 1) : 0);
      }
      // float128 subnormals are far below the targets' smallest subnormal.
      if (exp == 0) return sign_bit;
      return RoundToBinary(sign, static_cast<int64_t>(exp) - 16383,
                           frac | (u128{1} << 112), 112, exp_bits, man_bits);
    }
    default:
      return std::nullopt;
  }
  if (magnitude == 0) return uint64_t{0};
  const int top = 63 - __builtin_clzll(magnitude);  // the leading bit
  return RoundToBinary(sign, top, u128{magnitude}, top, exp_bits, man_bits);
}

// Writes the element of `src` at p as `tag` with one rounding, when the
// source is one WideToBits knows and the output a float narrower than
// float64; false otherwise (then Decode is exact and Encode rounds once).
bool EncodeWide(uint8_t src, const uint8_t* p, uint8_t tag, uint8_t* out) {
  std::optional<uint64_t> bits;
  switch (tag) {
    case type_tag::kFloat16:
      bits = WideToBits(src, p, 5, 10);
      if (bits.has_value()) wire::StoreU16(out, static_cast<uint16_t>(*bits));
      break;
    case type_tag::kBFloat16:
      bits = WideToBits(src, p, 8, 7);
      if (bits.has_value()) wire::StoreU16(out, static_cast<uint16_t>(*bits));
      break;
    case type_tag::kFloat32:
      bits = WideToBits(src, p, 8, 23);
      if (bits.has_value()) wire::StoreU32(out, static_cast<uint32_t>(*bits));
      break;
    default:
      break;
  }
  return bits.has_value();
}

void Encode(uint8_t tag, double v, uint8_t* out) {
  switch (tag) {
    case type_tag::kFloat16:
      wire::StoreU16(out, DoubleToF16Bits(v));
      return;
    case type_tag::kBFloat16:
      wire::StoreU16(out, DoubleToBf16Bits(v));
      return;
    case type_tag::kFloat64:
      wire::StoreF64(out, v);
      return;
    default:
      wire::StoreF32(out, static_cast<float>(v));
      return;
  }
}

}  // namespace

uint16_t DoubleToF16Bits(double x) {
  return static_cast<uint16_t>(DoubleToBits(x, 5, 10));
}

uint16_t DoubleToBf16Bits(double x) {
  return static_cast<uint16_t>(DoubleToBits(x, 8, 7));
}

// Nearest, ties to even, as DoubleToBits: NaN keeps its sign and becomes the
// quiet NaN, overflow gives infinity.
uint16_t F32BitsToF16Bits(uint32_t b) {
  const uint16_t sign = static_cast<uint16_t>((b >> 16) & 0x8000);
  const uint32_t abs = b & 0x7FFFFFFF;
  if (abs > 0x7F800000) return sign | 0x7E00;
  if (abs >= 0x477FF000) return sign | 0x7C00;  // 65520 and up: infinity
  if (abs >= 0x38800000) {  // a normal float16: rebias, round on bit 13
    return sign | static_cast<uint16_t>(
                      (abs - 0x38000000 + 0xFFF + ((abs >> 13) & 1)) >> 13);
  }
  // A float16 subnormal (units of 2^-24), or zero.
  const uint32_t e = abs >> 23;
  if (e == 0) return sign;  // float32 subnormals are below 2^-25
  const uint32_t shift = 126 - e;
  if (shift >= 32) return sign;
  const uint32_t m = (abs & 0x7FFFFF) | 0x800000;
  uint32_t q = m >> shift;
  const uint32_t rem = m & ((1u << shift) - 1);
  const uint32_t half = 1u << (shift - 1);
  if (rem > half || (rem == half && (q & 1) != 0)) ++q;
  return sign | static_cast<uint16_t>(q);
}

uint16_t F32BitsToBf16Bits(uint32_t b) {
  if ((b & 0x7FFFFFFF) > 0x7F800000) {
    return static_cast<uint16_t>(((b >> 16) & 0x8000) | 0x7FC0);
  }
  // bfloat16 has float32's exponent range: rounding the bits is enough
  // (a carry moves into the exponent, the largest finite values to infinity).
  return static_cast<uint16_t>((b + 0x7FFF + ((b >> 16) & 1)) >> 16);
}

double Float128ToDouble(const uint8_t* p) {
  const uint64_t lo = wire::LoadU64(p);
  const uint64_t hi = wire::LoadU64(p + 8);
  const bool sign = (hi >> 63) != 0;
  const uint64_t exp = (hi >> 48) & 0x7FFF;
  const u128 frac = (u128{hi & ((uint64_t{1} << 48) - 1)} << 64) | lo;
  uint64_t bits;
  if (exp == 0x7FFF) {
    bits = (uint64_t{0x7FF} << 52) | (frac != 0 ? uint64_t{1} << 51 : 0);
    if (sign) bits |= uint64_t{1} << 63;
  } else if (exp == 0) {
    bits = sign ? uint64_t{1} << 63 : 0;  // below any double subnormal
  } else {
    bits = RoundToBinary(sign, static_cast<int64_t>(exp) - 16383,
                         frac | (u128{1} << 112), 112, 11, 52);
  }
  double d;
  std::memcpy(&d, &bits, 8);
  return d;
}

absl::StatusOr<OutputFormat> ParseOutputFormat(absl::string_view s) {
  if (s == "npy") return OutputFormat::kNpy;
  if (s == "safetensors") return OutputFormat::kSafetensors;
  if (s == "f32") return OutputFormat::kF32;
  return absl::InvalidArgumentError(
      absl::StrCat("--format: '", s, "' is not npy, safetensors or f32"));
}

absl::StatusOr<OutputDtype> ParseOutputDtype(absl::string_view s) {
  if (s == "float32") return OutputDtype::kFloat32;
  if (s == "float16") return OutputDtype::kFloat16;
  if (s == "bfloat16") return OutputDtype::kBFloat16;
  return absl::InvalidArgumentError(
      absl::StrCat("--dtype: '", s, "' is not float32, float16 or bfloat16"));
}

absl::string_view OutputFormatName(OutputFormat f) {
  switch (f) {
    case OutputFormat::kNpy:
      return "npy";
    case OutputFormat::kSafetensors:
      return "safetensors";
    case OutputFormat::kF32:
      return "f32";
  }
  return "";
}

absl::string_view OutputDtypeName(OutputDtype d) {
  switch (d) {
    case OutputDtype::kAuto:
      return "auto";
    case OutputDtype::kFloat32:
      return "float32";
    case OutputDtype::kFloat16:
      return "float16";
    case OutputDtype::kBFloat16:
      return "bfloat16";
  }
  return "";
}

absl::Status CheckFormatAndDtype(OutputFormat f, OutputDtype d) {
  if (f == OutputFormat::kNpy && d == OutputDtype::kBFloat16) {
    return absl::InvalidArgumentError(
        "--format npy has no bfloat16 (numpy has no such dtype): use "
        "--format safetensors, or --dtype float32");
  }
  if (f == OutputFormat::kF32 && d != OutputDtype::kAuto &&
      d != OutputDtype::kFloat32) {
    return absl::InvalidArgumentError("--format f32 writes float32 only");
  }
  return absl::OkStatus();
}

absl::string_view OutputSuffix(OutputFormat f) {
  switch (f) {
    case OutputFormat::kNpy:
      return ".npy";
    case OutputFormat::kF32:
      return ".f32";
    case OutputFormat::kSafetensors:
      return "";
  }
  return "";
}

uint32_t OutputType::bytes() const {
  switch (tag) {
    case type_tag::kBool:
    case type_tag::kInt8:
    case type_tag::kUInt8:
    case type_tag::kFloat8E4M3:
    case type_tag::kFloat8E5M2:
      return 1;
    case type_tag::kFloat16:
    case type_tag::kBFloat16:
    case type_tag::kInt16:
    case type_tag::kUInt16:
      return 2;
    case type_tag::kFloat64:
    case type_tag::kInt64:
    case type_tag::kUInt64:
    case type_tag::kComplex64:
      return 8;
    case type_tag::kComplex128:
      return 16;
    default:
      return 4;
  }
}

absl::string_view OutputType::npy_descr() const {
  switch (tag) {
    case type_tag::kFloat16:
      return "<f2";
    case type_tag::kFloat32:
      return "<f4";
    case type_tag::kFloat64:
      return "<f8";
    case type_tag::kInt8:
      return "|i1";
    case type_tag::kUInt8:
      return "|u1";
    case type_tag::kInt16:
      return "<i2";
    case type_tag::kUInt16:
      return "<u2";
    case type_tag::kInt32:
      return "<i4";
    case type_tag::kUInt32:
      return "<u4";
    case type_tag::kInt64:
      return "<i8";
    case type_tag::kUInt64:
      return "<u8";
    case type_tag::kBool:
      return "|b1";
    case type_tag::kComplex64:
      return "<c8";
    case type_tag::kComplex128:
      return "<c16";
    default:
      return "";
  }
}

absl::string_view OutputType::safetensors_dtype() const {
  switch (tag) {
    case type_tag::kFloat16:
      return "F16";
    case type_tag::kBFloat16:
      return "BF16";
    case type_tag::kFloat32:
      return "F32";
    case type_tag::kFloat64:
      return "F64";
    case type_tag::kInt8:
      return "I8";
    case type_tag::kUInt8:
      return "U8";
    case type_tag::kInt16:
      return "I16";
    case type_tag::kUInt16:
      return "U16";
    case type_tag::kInt32:
      return "I32";
    case type_tag::kUInt32:
      return "U32";
    case type_tag::kInt64:
      return "I64";
    case type_tag::kUInt64:
      return "U64";
    case type_tag::kBool:
      return "BOOL";
    case type_tag::kFloat8E4M3:
      return "F8_E4M3";
    case type_tag::kFloat8E5M2:
      return "F8_E5M2";
    default:
      return "";
  }
}

absl::StatusOr<OutputType> ChooseOutput(uint8_t source_tag, bool quantized,
                                        OutputFormat format,
                                        OutputDtype dtype) {
  if (FindElementType(source_tag) == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("element type ", ElementTypeName(source_tag),
                     " has no numeric value to write"));
  }
  OutputType t;
  t.pairs = IsComplex(source_tag);
  if (quantized || format == OutputFormat::kF32) {
    t.tag = type_tag::kFloat32;
    if (dtype == OutputDtype::kFloat16) t.tag = type_tag::kFloat16;
    if (dtype == OutputDtype::kBFloat16) t.tag = type_tag::kBFloat16;
    return t;
  }
  switch (dtype) {
    case OutputDtype::kFloat32:
      t.tag = type_tag::kFloat32;
      return t;
    case OutputDtype::kFloat16:
      t.tag = type_tag::kFloat16;
      return t;
    case OutputDtype::kBFloat16:
      t.tag = type_tag::kBFloat16;
      return t;
    case OutputDtype::kAuto:
      break;
  }
  if (source_tag == type_tag::kFloat128) {
    t.tag = type_tag::kFloat64;
    return t;
  }
  if (t.pairs) {
    if (format == OutputFormat::kNpy) {
      t.pairs = false;
      t.tag = source_tag;
    } else {
      t.tag = source_tag == type_tag::kComplex64 ? type_tag::kFloat32
                                                 : type_tag::kFloat64;
    }
    return t;
  }
  OutputType same;
  same.tag = source_tag;
  const bool has = format == OutputFormat::kNpy
                       ? !same.npy_descr().empty()
                       : !same.safetensors_dtype().empty();
  t.tag = has ? source_tag : type_tag::kFloat32;
  return t;
}

ElementConverter::ElementConverter(uint8_t source_tag, OutputType out,
                                   uint64_t count)
    : src_(source_tag), out_(out), count_(count) {
  bits_ = BitsOf(source_tag);
  if (bits_ >= 8) {
    group_bytes_ = bits_ / 8;
    group_elements_ = 1;
  } else if (bits_ == 6) {
    group_bytes_ = 3;
    group_elements_ = 4;
  } else {
    group_bytes_ = 1;
    group_elements_ = bits_ == 0 ? 1 : 8 / bits_;
  }
  out_bytes_ = out.bytes() * (out.pairs ? 2 : 1);
  copy_ = bits_ >= 8 && out.tag == source_tag && !out.pairs;
  f32_to_16_ =
      source_tag == type_tag::kFloat32 && !out.pairs &&
      (out.tag == type_tag::kFloat16 || out.tag == type_tag::kBFloat16);
}

void ElementConverter::Group(const uint8_t* p, uint32_t elements,
                             std::vector<uint8_t>* out) {
  const size_t at = out->size();
  out->resize(at + size_t{elements} * out_bytes_);
  uint8_t* o = out->data() + at;
  if (copy_) {
    std::memcpy(o, p, size_t{elements} * out_bytes_);
    return;
  }
  uint32_t word = 0;
  if (bits_ < 8) {
    for (uint32_t i = 0; i < group_bytes_; ++i) word |= uint32_t{p[i]} << 8 * i;
  }
  const uint32_t half = bits_ / 16;  // complex: bytes of one component
  for (uint32_t i = 0; i < elements; ++i, o += out_bytes_) {
    const uint8_t* e = p + size_t{i} * (bits_ / 8);
    const uint32_t code =
        bits_ < 8 ? (word >> (i * bits_)) & ((1u << bits_) - 1) : 0;
    if (out_.tag == type_tag::kBool) {  // bool to bool only
      *o = code != 0 ? 1 : 0;
      continue;
    }
    if (EncodeWide(src_, e, out_.tag, o)) continue;
    Encode(out_.tag, Decode(src_, e, code), o);
    if (out_.pairs)
      Encode(out_.tag, Decode(src_, e + half, 0), o + out_.bytes());
  }
}

void ElementConverter::Discard(absl::Span<const uint8_t> bytes) {
  if (bits_ == 0) return;
  const uint64_t pending = uint64_t{carry_n_} + bytes.size();
  const uint64_t groups = pending / group_bytes_;
  carry_n_ = static_cast<uint32_t>(pending % group_bytes_);
  done_ = std::min<uint64_t>(count_, done_ + groups * group_elements_);
}

void ElementConverter::Feed(absl::Span<const uint8_t> bytes,
                            std::vector<uint8_t>* out) {
  if (bits_ == 0) return;
  size_t i = 0;
  while (carry_n_ > 0 && i < bytes.size() && done_ < count_) {
    carry_[carry_n_++] = bytes[i++];
    if (carry_n_ == group_bytes_) {
      const uint32_t n = static_cast<uint32_t>(
          std::min<uint64_t>(group_elements_, count_ - done_));
      Group(carry_, n, out);
      done_ += n;
      carry_n_ = 0;
    }
  }
  if (copy_ && done_ < count_ && bytes.size() - i >= group_bytes_) {
    const uint64_t n =
        std::min<uint64_t>((bytes.size() - i) / group_bytes_, count_ - done_);
    // insert, not resize + memcpy: one pass over the bytes.
    const uint8_t* from = bytes.data() + i;
    out->insert(out->end(), from, from + static_cast<size_t>(n) * out_bytes_);
    i += static_cast<size_t>(n) * group_bytes_;
    done_ += n;
  }
  if (f32_to_16_ && done_ < count_ && bytes.size() - i >= 4) {
    const size_t n = static_cast<size_t>(
        std::min<uint64_t>((bytes.size() - i) / 4, count_ - done_));
    const size_t at = out->size();
    out->resize(at + n * 2);
    uint8_t* o = out->data() + at;
    const uint8_t* p = bytes.data() + i;
    if (out_.tag == type_tag::kFloat16) {
      for (size_t k = 0; k < n; ++k) {
        wire::StoreU16(o + 2 * k, F32BitsToF16Bits(wire::LoadU32(p + 4 * k)));
      }
    } else {
      for (size_t k = 0; k < n; ++k) {
        wire::StoreU16(o + 2 * k, F32BitsToBf16Bits(wire::LoadU32(p + 4 * k)));
      }
    }
    i += n * 4;
    done_ += n;
  }
  while (done_ < count_ && bytes.size() - i >= group_bytes_) {
    const uint32_t n = static_cast<uint32_t>(
        std::min<uint64_t>(group_elements_, count_ - done_));
    Group(bytes.data() + i, n, out);
    i += group_bytes_;
    done_ += n;
  }
  while (done_ < count_ && i < bytes.size()) carry_[carry_n_++] = bytes[i++];
}

}  // namespace hurray::stream::ingest
