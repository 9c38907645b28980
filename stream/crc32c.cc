#include "stream/crc32c.h"

#include <boost/crc.hpp>

namespace hurray::stream {

uint32_t Crc32c(absl::Span<const uint8_t> bytes) {
  // Polynomial 0x1EDC6F41, reflected in and out, initial and final XOR
  // all ones (RFC 3720 § B.4).
  boost::crc_optimal<32, 0x1EDC6F41, 0xFFFFFFFF, 0xFFFFFFFF, true, true> crc;
  crc.process_bytes(bytes.data(), bytes.size());
  return crc.checksum();
}

}  // namespace hurray::stream
