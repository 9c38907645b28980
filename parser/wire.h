// Little-endian field access and overflow-checked size arithmetic.
//
// Every multi-byte field of the Hurray wire format is little-endian
// (metadata.md § Overall Descriptor Structure). Size arithmetic on values
// read from the wire is always checked: an overflow is a rejection, never a
// wrap-around (REJECT-RULES.md §5).
#ifndef HURRAY_PARSER_WIRE_H_
#define HURRAY_PARSER_WIRE_H_

#include <cstdint>
#include <cstring>

namespace hurray::wire {

inline uint16_t LoadU16(const uint8_t* p) {
  return static_cast<uint16_t>(p[0] | (p[1] << 8));
}
inline uint32_t LoadU32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  v = __builtin_bswap32(v);
#endif
  return v;
}
inline uint64_t LoadU64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  v = __builtin_bswap64(v);
#endif
  return v;
}
inline int32_t LoadI32(const uint8_t* p) {
  return static_cast<int32_t>(LoadU32(p));
}
inline int64_t LoadI64(const uint8_t* p) {
  return static_cast<int64_t>(LoadU64(p));
}
inline float LoadF32(const uint8_t* p) {
  uint32_t bits = LoadU32(p);
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}
inline double LoadF64(const uint8_t* p) {
  uint64_t bits = LoadU64(p);
  double d;
  std::memcpy(&d, &bits, 8);
  return d;
}

inline void StoreU16(uint8_t* p, uint16_t v) {
  p[0] = static_cast<uint8_t>(v);
  p[1] = static_cast<uint8_t>(v >> 8);
}
inline void StoreU32(uint8_t* p, uint32_t v) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  v = __builtin_bswap32(v);
#endif
  std::memcpy(p, &v, 4);
}
inline void StoreU64(uint8_t* p, uint64_t v) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  v = __builtin_bswap64(v);
#endif
  std::memcpy(p, &v, 8);
}
inline void StoreF32(uint8_t* p, float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  StoreU32(p, bits);
}
inline void StoreF64(uint8_t* p, double d) {
  uint64_t bits;
  std::memcpy(&bits, &d, 8);
  StoreU64(p, bits);
}

// Checked arithmetic: returns false (and leaves *out unspecified) on overflow.
inline bool CheckedAdd(uint64_t a, uint64_t b, uint64_t* out) {
  return !__builtin_add_overflow(a, b, out);
}
inline bool CheckedMul(uint64_t a, uint64_t b, uint64_t* out) {
  return !__builtin_mul_overflow(a, b, out);
}

// The product of factors in exact arithmetic: a zero factor makes it 0 even
// when the other factors' product would not fit 64 bits (a shape
// [2^40, 2^40, 0] holds no element; an overflow is a rejection only when the
// exact value overflows, REJECT-RULES.md § 3 "overflow-checked").
class CheckedProduct {
 public:
  void Mul(uint64_t factor) {
    if (factor == 0) {
      zero_ = true;
    } else if (!overflow_) {
      overflow_ = !CheckedMul(value_, factor, &value_);
    }
  }
  // False when the exact product does not fit 64 bits.
  bool Get(uint64_t* out) const {
    if (zero_) {
      *out = 0;
      return true;
    }
    if (overflow_) return false;
    *out = value_;
    return true;
  }

 private:
  uint64_t value_ = 1;
  bool zero_ = false;
  bool overflow_ = false;
};

inline bool IsPowerOfTwo(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

// Index of the first non-zero byte among bytes[0, n), or -1 (reserved-byte
// checks report the exact offending byte).
inline int FirstNonZero(const uint8_t* bytes, int n) {
  for (int i = 0; i < n; ++i) {
    if (bytes[i] != 0) return i;
  }
  return -1;
}

}  // namespace hurray::wire

#endif  // HURRAY_PARSER_WIRE_H_
