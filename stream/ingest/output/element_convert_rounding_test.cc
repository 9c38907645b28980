// ElementConverter rounds once, to nearest even, from the exact value (issue
// 46 item 13): the halfway cases of every source type, just below, at and
// just above each tie, against a reference computed here in integers.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "parser/element_type.h"
#include "parser/wire.h"
#include "stream/ingest/output/element_convert.h"

namespace hurray::stream::ingest {
namespace {

using u128 = unsigned __int128;

int TopBit(u128 m) {
  int t = -1;
  while (m != 0) {
    m >>= 1;
    ++t;
  }
  return t;
}

struct Binary {
  int exp_bits;
  int man_bits;
  int bias() const { return (1 << (exp_bits - 1)) - 1; }
  u128 sign_bit() const { return u128{1} << (exp_bits + man_bits); }
  u128 inf() const { return ((u128{1} << exp_bits) - 1) << man_bits; }
  // The bits of (-1)^neg · m · 2^e when the format holds it exactly.
  std::optional<u128> Exact(bool neg, u128 m, int e) const {
    const u128 sign = neg ? sign_bit() : 0;
    if (m == 0) return sign;
    const int lead = TopBit(m) + e;  // the value's binary exponent
    const int min_e = 1 - bias();
    if (lead > bias()) return std::nullopt;
    const int quantum = (lead < min_e ? min_e : lead) - man_bits;
    u128 mant;
    if (e >= quantum) {
      mant = m << (e - quantum);
    } else {
      if (quantum - e >= 128) return std::nullopt;
      if ((m & ((u128{1} << (quantum - e)) - 1)) != 0) return std::nullopt;
      mant = m >> (quantum - e);
    }
    if (lead < min_e) return sign | mant;  // subnormal
    return sign | (u128(lead + bias()) << man_bits) |
           (mant - (u128{1} << man_bits));
  }
};

struct Source {
  uint8_t tag;
  int bytes;
  bool is_signed = false;                    // integers
  std::optional<Binary> fmt = std::nullopt;  // floats
};

// The little-endian bytes of (-1)^neg · m · 2^e as `src`, when exact.
std::optional<std::vector<uint8_t>> Encode(const Source& src, bool neg, u128 m,
                                           int e) {
  u128 bits;
  if (src.fmt.has_value()) {
    const std::optional<u128> b = src.fmt->Exact(neg, m, e);
    if (!b.has_value()) return std::nullopt;
    bits = *b;
  } else {
    if (e < 0 || (neg && !src.is_signed) || TopBit(m) + e >= 8 * src.bytes) {
      return std::nullopt;
    }
    const u128 v = m << e;
    const int value_bits = 8 * src.bytes - (src.is_signed ? 1 : 0);
    if (v > (u128{1} << value_bits) - (neg ? 0 : 1)) return std::nullopt;
    bits = neg ? u128{0} - v : v;
  }
  std::vector<uint8_t> out(src.bytes);
  for (int i = 0; i < src.bytes; ++i)
    out[i] = static_cast<uint8_t>(bits >> 8 * i);
  return out;
}

struct Target {
  uint8_t tag;
  int bytes;
  Binary fmt;
};

struct Case {
  std::vector<uint8_t> in;
  u128 want;
  // The value: (-1)^neg · (m + 1/2 + delta · 2^-(k+1)) · 2^s.
  u128 m;
  int s;
  int k;
  int delta;
  bool neg;
  std::string What() const {
    return absl::StrCat(
        neg ? "-" : "", "(", static_cast<uint64_t>(m), " + 1/2",
        delta == 0 ? "" : absl::StrCat(delta > 0 ? " + " : " - ", "2^-", k + 1),
        ") * 2^", s);
  }
};

// The ties of `t` between consecutive values m·2^s and (m+1)·2^s in
// subnormal, smallest normal, middle and largest binades, each at several
// depths of the sticky bit below the tie (k), exactly at, one unit above
// and one unit below it, both signs, encoded as `src` where it holds them.
std::vector<Case> Ties(const Source& src, const Target& t) {
  const Binary& f = t.fmt;
  const int min_e = 1 - f.bias();
  const u128 one = u128{1} << f.man_bits;  // the hidden bit
  std::vector<int> binades = {min_e - 1, min_e, min_e + 1};
  for (int lead = -3; lead <= 66; ++lead) binades.push_back(lead);
  for (int lead = f.bias() - 2; lead <= f.bias(); ++lead) {
    binades.push_back(lead);
  }
  std::vector<Case> cases;
  for (int lead : binades) {
    if (lead < min_e - 1 || lead > f.bias()) continue;
    if (lead > 66 && lead < f.bias() - 2) continue;
    const bool sub = lead < min_e;
    const int s = (sub ? min_e : lead) - f.man_bits;  // the spacing
    std::vector<u128> ms;
    if (sub) {
      ms = {0, 1, 2, 3, one - 1};
    } else {
      ms = {one, one + 1, one + 2, one + 3, 2 * one - 2, 2 * one - 1};
    }
    for (u128 m : ms) {
      std::vector<int> depths;
      for (int k = 0; k <= 64; ++k) depths.push_back(k);
      for (int k : {80, 100, 112, 120}) depths.push_back(k);
      for (int k : depths) {
        for (int delta : {-1, 0, 1}) {
          if (k == 0 && delta != 0) continue;  // not between the two
          if (TopBit(2 * m + 1) + k > 126) continue;
          for (bool neg : {false, true}) {
            const u128 mm = ((2 * m + 1) << k) + delta;  // ·2^(s-1-k)
            const std::optional<std::vector<uint8_t>> in =
                Encode(src, neg, mm, s - 1 - k);
            if (!in.has_value()) continue;
            const u128 q =
                delta > 0 || (delta == 0 && (m & 1) != 0) ? m + 1 : m;
            std::optional<u128> want = f.Exact(neg, q, s);
            if (!want.has_value()) want = (neg ? f.sign_bit() : 0) | f.inf();
            cases.push_back({*in, *want, m, s, k, delta, neg});
          }
        }
      }
    }
  }
  return cases;
}

const Source kSources[] = {
    {type_tag::kInt8, 1, true},
    {type_tag::kUInt8, 1},
    {type_tag::kInt16, 2, true},
    {type_tag::kUInt16, 2},
    {type_tag::kInt32, 4, true},
    {type_tag::kUInt32, 4},
    {type_tag::kInt64, 8, true},
    {type_tag::kUInt64, 8},
    {type_tag::kFloat16, 2, false, Binary{5, 10}},
    {type_tag::kBFloat16, 2, false, Binary{8, 7}},
    {type_tag::kFloat32, 4, false, Binary{8, 23}},
    {type_tag::kFloat64, 8, false, Binary{11, 52}},
    {type_tag::kFloat128, 16, false, Binary{15, 112}},
};

const Target kTargets[] = {
    {type_tag::kFloat32, 4, Binary{8, 23}},
    {type_tag::kFloat16, 2, Binary{5, 10}},
    {type_tag::kBFloat16, 2, Binary{8, 7}},
    {type_tag::kFloat64, 8, Binary{11, 52}},
};

TEST(ElementConvertRounding, EveryTieOfEverySourceTypeRoundsOnce) {
  int pairs_with_ties = 0;
  for (const Source& src : kSources) {
    for (const Target& t : kTargets) {
      if (src.tag == t.tag) continue;  // a copy
      const std::vector<Case> cases = Ties(src, t);
      const bool narrower =
          (src.fmt.has_value()
               ? src.fmt->man_bits + 1
               : 8 * src.bytes - (src.is_signed ? 1 : 0)) > t.fmt.man_bits + 1;
      // Every source wider than the target's significand has ties to test
      // (others may too: bfloat16 values below float16's normals).
      EXPECT_TRUE(!narrower || !cases.empty())
          << ElementTypeName(src.tag) << " -> " << ElementTypeName(t.tag);
      if (cases.empty()) continue;
      ++pairs_with_ties;
      std::vector<uint8_t> in;
      for (const Case& c : cases) in.insert(in.end(), c.in.begin(), c.in.end());
      ElementConverter conv(src.tag, OutputType{t.tag, false}, cases.size());
      std::vector<uint8_t> out;
      conv.Feed(in, &out);
      ASSERT_EQ(out.size(), cases.size() * t.bytes);
      int wrong = 0;
      for (size_t i = 0; i < cases.size() && wrong < 5; ++i) {
        u128 got = 0;
        for (int b = 0; b < t.bytes; ++b) {
          got |= u128{out[i * t.bytes + b]} << 8 * b;
        }
        if (got == cases[i].want) continue;
        ++wrong;
        ADD_FAILURE() << ElementTypeName(src.tag) << " -> "
                      << ElementTypeName(t.tag) << ": " << cases[i].What()
                      << " gave bits " << std::hex << static_cast<uint64_t>(got)
                      << ", want " << static_cast<uint64_t>(cases[i].want);
      }
    }
  }
  EXPECT_GE(pairs_with_ties, 20);
}

// The example: through a double, 2^60 + 2^36 + 1 became 2^60.
TEST(ElementConvertRounding, Int64ToFloat32FromTheExactValue) {
  const int64_t v = (int64_t{1} << 60) + (int64_t{1} << 36) + 1;
  uint8_t in[16];
  wire::StoreU64(in, static_cast<uint64_t>(v));
  wire::StoreU64(in + 8, static_cast<uint64_t>(-v));
  ElementConverter conv(type_tag::kInt64, OutputType{type_tag::kFloat32, false},
                        2);
  std::vector<uint8_t> out;
  conv.Feed(in, &out);
  ASSERT_EQ(out.size(), 8u);
  EXPECT_EQ(wire::LoadF32(&out[0]), 0x1p60f + 0x1p37f);
  EXPECT_EQ(wire::LoadF32(&out[4]), -(0x1p60f + 0x1p37f));
}

}  // namespace
}  // namespace hurray::stream::ingest
