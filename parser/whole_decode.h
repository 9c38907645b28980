// The decoder's whole-descriptor decode of every layout and section (issue
// 47 item 4): a descriptor that lies wholly in one chunk, read front to back
// in straight-line code instead of the state machine's stage by stage
// dispatch (parser/decoder.h).
//
// It answers only "decoded" or "not sure", as the fast path of the common
// shapes does (parser/fast_path.h): any framing rule that would reject, any
// limit, an unassigned layout tag (permissive mode's partial decode) or a
// field group past descriptor_length answers "not sure", and the decoder
// then runs the state machine from the first byte, so every rejection, rule
// id and byte offset comes from the general path. "Decoded" means the state
// machine fed the same bytes reaches its validation step with the same
// TensorDescriptor (every field it writes, the part offsets and
// trailing_length); tests/fast_path_test.cc and fuzz/fast_path_fuzz.cc
// compare the two on the corpus, every valid vector and their mutations.
#ifndef HURRAY_PARSER_WHOLE_DECODE_H_
#define HURRAY_PARSER_WHOLE_DECODE_H_

#include <cstddef>
#include <cstdint>

#include "parser/descriptor.h"
#include "parser/options.h"

namespace hurray {

// Decodes the descriptor at the start of `bytes[0, size)` into `d`, which
// must hold what ResetDescriptor() leaves (the fields of absent parts are
// not written). True when the whole descriptor lies inside the bytes and
// passes every framing rule of the state machine under `options` (whose
// max_rank and max_tiled_depth the decoder clamps to kMaxRank and
// kMaxTiledDepth, as this does); on false `d` may hold some fields and must
// be reset.
// Never reads past `size`, nor past descriptor_length. Does not validate.
bool DecodeWhole(const uint8_t* bytes, size_t size, const ParseOptions& options,
                 TensorDescriptor* d);

}  // namespace hurray

#endif  // HURRAY_PARSER_WHOLE_DECODE_H_
