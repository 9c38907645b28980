// Reader configuration: strict or permissive mode, resource limits, and the
// private tag values agreed out of band (REJECT-RULES.md §4 item 20).
#ifndef HURRAY_PARSER_OPTIONS_H_
#define HURRAY_PARSER_OPTIONS_H_

#include <array>
#include <bitset>
#include <cstdint>

#include "parser/rules.h"

namespace hurray {

// Every limit is a rejection when exceeded, never an allocation.
struct Limits {
  uint32_t max_descriptor_bytes = 16u << 20;  // LIMIT-DESC-BYTES
  uint32_t max_rank = 64;                  // ≤ 64 (DESC-SHP-01 / LIMIT-RANK)
  uint32_t max_tiled_depth = 8;            // ≤ 8 (LAY-TIL-05)
  uint32_t max_quantization_bytes = 4096;  // LIMIT-QNT-BYTES
  uint32_t max_extension_data_bytes = 16384;  // LIMIT-EXT-DATA
};

// Private values (0xF0–0xFE) this reader has agreed on with the producer.
// Strict mode rejects any other private value; permissive mode accepts it but
// never interprets the data it governs.
struct PrivateAgreements {
  uint16_t type_tags = 0;                // bit i: tag 0xF0 + i (TYPE-06)
  uint16_t device_tags = 0;              // bit i: device 0xF0 + i (BUF-08)
  uint16_t memory_classes = 0;           // bit i: class 0xF0 + i (BUF-13)
  uint16_t scheme_tags = 0;              // bit i: scheme 0xF0 + i (QNT-HDR-06)
  std::array<uint64_t, 8> layout_ids{};  // extension layout ids (LAY-TAG-04)
  uint8_t layout_id_count = 0;

  static bool Has(uint16_t set, uint8_t value) {
    return value >= 0xF0 && value <= 0xFE && ((set >> (value - 0xF0)) & 1);
  }
  bool HasLayoutId(uint64_t id) const {
    for (uint8_t i = 0; i < layout_id_count && i < layout_ids.size(); ++i) {
      if (layout_ids[i] == id) return true;
    }
    return false;
  }
};

struct ParseOptions {
  Mode mode = Mode::kStrict;
  Limits limits;
  PrivateAgreements agreed;
  // Run the validator when a descriptor is complete; a descriptor that fails
  // it is reported as rejected. Off: structure only (framing rules).
  bool validate = true;
  // Assigned layouts this reader is configured without (bit t: layout tag
  // t), e.g. a deployment without composite heads or without the Tier-2
  // Hilbert layout (memory-layout.md § Named Layout Tags). Strict mode
  // rejects them with LAY-TAG-03; permissive mode reads them as usual.
  // Empty by default: every assigned layout is implemented.
  std::bitset<256> disabled_layouts;
  // Decode and validate the common shapes (row- or column-major, rank ≤ 8,
  // one to three buffers, at most a quantization section) in one
  // straight-line pass when a whole descriptor is in one chunk
  // (parser/fast_path.h), and read any other descriptor wholly in one chunk
  // front to back (parser/whole_decode.h). Results, rule ids and offsets are
  // the same either way; off forces the general state machine and
  // validator, for differential tests and benchmarks.
  bool fast_path = true;
};

}  // namespace hurray

#endif  // HURRAY_PARSER_OPTIONS_H_
