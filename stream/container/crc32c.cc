#include "stream/container/crc32c.h"

#include <array>
#include <boost/crc.hpp>
#include <cstring>

namespace hurray::stream::container {
namespace {

// Reflected polynomial 0x1EDC6F41 (RFC 3720 § B.4).
constexpr uint32_t kReflectedPoly = 0x82F63B78;

constexpr std::array<uint32_t, 256> MakeTable() {
  std::array<uint32_t, 256> t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k)
      c = (c & 1) ? (c >> 1) ^ kReflectedPoly : c >> 1;
    t[i] = c;
  }
  return t;
}

constexpr std::array<uint32_t, 256> kTable = MakeTable();

// `r` is the raw register (not inverted).
uint32_t TableUpdate(uint32_t r, const uint8_t* p, size_t n) {
  for (size_t i = 0; i < n; ++i) r = kTable[(r ^ p[i]) & 0xFF] ^ (r >> 8);
  return r;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
// One chain of crc32 instructions: 8 bytes per instruction latency (3
// cycles).
__attribute__((target("sse4.2"))) uint32_t HardwareChain(uint32_t r,
                                                         const uint8_t* p,
                                                         size_t n) {
  uint64_t r64 = r;
  while (n >= 8) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    r64 = __builtin_ia32_crc32di(r64, v);
    p += 8;
    n -= 8;
  }
  r = static_cast<uint32_t>(r64);
  while (n > 0) {
    r = __builtin_ia32_crc32qi(r, *p++);
    --n;
  }
  return r;
}

// Bytes of each of the three chains HardwareUpdate runs at once.
constexpr size_t kStripe = 4096;

// The raw register after kStripe zero bytes, a linear map of the register
// before, as one table per byte of it.
struct StripeShift {
  uint32_t t[4][256];
  StripeShift() {
    static const uint8_t kZeros[kStripe] = {};
    uint32_t bit[32];
    for (int k = 0; k < 32; ++k) {
      bit[k] = HardwareChain(uint32_t{1} << k, kZeros, kStripe);
    }
    for (int i = 0; i < 4; ++i) {
      for (uint32_t v = 0; v < 256; ++v) {
        uint32_t x = 0;
        for (int j = 0; j < 8; ++j) {
          if ((v >> j) & 1) x ^= bit[8 * i + j];
        }
        t[i][v] = x;
      }
    }
  }
  uint32_t operator()(uint32_t r) const {
    return t[0][r & 0xFF] ^ t[1][(r >> 8) & 0xFF] ^ t[2][(r >> 16) & 0xFF] ^
           t[3][r >> 24];
  }
};

// Three independent chains over three stripes (the instruction's latency
// hidden), joined by the register being linear: crc(r, A B C) =
// Z(Z(crc(r, A)) ^ crc(0, B)) ^ crc(0, C), Z = kStripe zero bytes.
__attribute__((target("sse4.2"))) uint32_t HardwareUpdate(uint32_t r,
                                                          const uint8_t* p,
                                                          size_t n) {
  if (n >= 3 * kStripe) {
    static const StripeShift shift;
    while (n >= 3 * kStripe) {
      uint64_t a = r, b = 0, c = 0;
      for (size_t i = 0; i < kStripe; i += 8) {
        uint64_t va, vb, vc;
        std::memcpy(&va, p + i, 8);
        std::memcpy(&vb, p + kStripe + i, 8);
        std::memcpy(&vc, p + 2 * kStripe + i, 8);
        a = __builtin_ia32_crc32di(a, va);
        b = __builtin_ia32_crc32di(b, vb);
        c = __builtin_ia32_crc32di(c, vc);
      }
      r = shift(shift(static_cast<uint32_t>(a)) ^ static_cast<uint32_t>(b)) ^
          static_cast<uint32_t>(c);
      p += 3 * kStripe;
      n -= 3 * kStripe;
    }
  }
  return HardwareChain(r, p, n);
}

bool HasSse42() {
  static const bool has = __builtin_cpu_supports("sse4.2");
  return has;
}
#endif

}  // namespace

uint32_t Crc32c(absl::Span<const uint8_t> bytes) {
  // Polynomial 0x1EDC6F41, reflected in and out, initial and final XOR
  // all ones (RFC 3720 § B.4).
  boost::crc_optimal<32, 0x1EDC6F41, 0xFFFFFFFF, 0xFFFFFFFF, true, true> crc;
  crc.process_bytes(bytes.data(), bytes.size());
  return crc.checksum();
}

uint32_t Crc32cExtend(uint32_t crc, absl::Span<const uint8_t> bytes) {
  const uint32_t r = ~crc;
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  if (HasSse42()) return ~HardwareUpdate(r, bytes.data(), bytes.size());
#endif
  return ~TableUpdate(r, bytes.data(), bytes.size());
}

}  // namespace hurray::stream::container

namespace hurray::stream::container {

uint32_t Crc32cExtendPortable(uint32_t crc, absl::Span<const uint8_t> bytes) {
  return ~TableUpdate(~crc, bytes.data(), bytes.size());
}

}  // namespace hurray::stream::container
