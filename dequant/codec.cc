#include "dequant/codec.h"

namespace hurray::dequant {

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

}  // namespace hurray::dequant
