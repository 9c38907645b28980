// The fixed-size optional sections' fields from their bytes
// (metadata.md § Statistics, § Extension Type, § Composite Member), and
// the block-paged layout's (layouts/block-paged.md): one reading for the
// decoder's state machine and its whole-descriptor pass
// (decoder.cc, whole_decode.cc). The caller has checked that the section's
// bytes are there; whether the values are allowed is the validator's call.
#ifndef HURRAY_PARSER_SECTION_FIELDS_H_
#define HURRAY_PARSER_SECTION_FIELDS_H_

#include <cstdint>
#include <cstring>

#include "parser/descriptor.h"
#include "parser/wire.h"

namespace hurray::section_fields {

// kStatisticsSize bytes at p.
inline void LoadStatistics(const uint8_t* p, Statistics* s) {
  s->computed_mask = wire::LoadU32(p);
  s->reserved = wire::LoadU32(p + 4);
  s->nnz = wire::LoadU64(p + 8);
  s->sparsity_ratio = wire::LoadF64(p + 16);
  s->value_min = wire::LoadF64(p + 24);
  s->value_max = wire::LoadF64(p + 32);
  s->value_abs_max = wire::LoadF64(p + 40);
  s->value_mean = wire::LoadF64(p + 48);
  s->value_stddev = wire::LoadF64(p + 56);
  s->nm_n = p[64];
  s->nm_m = p[65];
  s->has_nan = p[66];
  s->has_inf = p[67];
  std::memcpy(s->reserved2.data(), p + 68, 4);
}

// kExtensionTypeSize bytes at p.
inline void LoadExtensionType(const uint8_t* p, ExtensionType* e) {
  e->bit_width = wire::LoadU32(p);
  e->packing_factor = p[4];
  e->is_float = p[5];
  e->is_signed = p[6];
  e->sign_bits = p[7];
  e->exponent_bits = p[8];
  e->mantissa_bits = p[9];
  e->reserved = {p[10], p[11]};
  e->exponent_bias = wire::LoadU32(p + 12);
  e->has_nan = p[16];
  e->has_inf = p[17];
  e->reserved2 = {p[18], p[19]};
}

// kCompositeMemberSize bytes at p.
inline void LoadCompositeMember(const uint8_t* p, CompositeMember* c) {
  c->member_role = p[0];
  std::memcpy(c->reserved.data(), p + 1, 15);
}

// The block-paged layout's 32 bytes at p (unaligned fields).
inline void LoadBlockPagedFields(const uint8_t* p, LayoutFields* lay) {
  lay->page_size = wire::LoadU32(p);
  lay->num_pages = wire::LoadU64(p + 4);
  lay->paged_axis = wire::LoadU32(p + 12);
  lay->num_seqs = wire::LoadU32(p + 16);
  lay->kv_role = p[20];
  lay->layer_index = wire::LoadU32(p + 21);
  lay->block_table_index_type = p[25];
  std::memcpy(lay->paged_reserved.data(), p + 26, 6);
}

}  // namespace hurray::section_fields

#endif  // HURRAY_PARSER_SECTION_FIELDS_H_
