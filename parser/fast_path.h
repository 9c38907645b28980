// The decoder's whole-descriptor fast path (issue 18): the common shapes,
// read at fixed offsets from one contiguous chunk and validated in
// straight-line code.
//
// A "fast shape" is a row-major or column-major descriptor of rank ≤ 8 with
// one to three buffer handles, no optional section other than one
// quantization section of an interpreted scheme whose length is exactly the
// scheme's fixed size, and no trailing bytes (metadata.md § Overall
// Descriptor Structure). Both functions below only ever say "yes" or "not
// sure": a "not sure" sends the descriptor through the general state machine
// and validator (parser/decoder.h, parser/validator.h), so every rejection,
// rule id and byte offset comes from the general path. A "yes" must mean the
// general path accepts the same bytes with the same TensorDescriptor;
// fuzz/fast_path_fuzz.cc checks exactly that.
#ifndef HURRAY_PARSER_FAST_PATH_H_
#define HURRAY_PARSER_FAST_PATH_H_

#include <cstddef>
#include <cstdint>

#include "parser/descriptor.h"
#include "parser/options.h"

namespace hurray {

inline constexpr uint32_t kFastPathMaxRank = 8;
inline constexpr uint32_t kFastPathMaxBuffers = 3;

// Decodes the descriptor at the start of `bytes[0, size)` when it is a fast
// shape wholly inside the bytes and passes every framing rule the decoder
// applies (magic, versions, lengths, limits, flag bits). Fills `d` exactly as
// the general decoder would (fields and `offsets`) and returns true; on false
// `d` is left unchanged (the decoder then tries parser/whole_decode.h on it).
// Never reads past `size`. Does not validate.
bool FastDecodeFields(const uint8_t* bytes, size_t size,
                      const ParseOptions& options, TensorDescriptor* d);

// True only if ValidateDescriptor(d, options) accepts `d`, for a decoded
// descriptor of a fast shape (with every dimension static and every size
// product free of overflow). False means "not sure", never "invalid".
bool FastAccepts(const TensorDescriptor& d, const ParseOptions& options);

}  // namespace hurray

#endif  // HURRAY_PARSER_FAST_PATH_H_
