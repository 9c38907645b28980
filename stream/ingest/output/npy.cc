#include "stream/ingest/output/npy.h"

#include "absl/strings/str_cat.h"

namespace hurray::stream::ingest {

std::string NpyShapeTuple(absl::Span<const uint64_t> shape) {
  if (shape.empty()) return "()";
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    absl::StrAppend(&s, i == 0 ? "" : ", ", shape[i]);
  }
  return s + (shape.size() == 1 ? ",)" : ")");
}

std::string NpyHeader(absl::string_view descr,
                      absl::Span<const uint64_t> shape) {
  std::string dict = absl::StrCat(
      "{'descr': '", descr,
      "', 'fortran_order': False, 'shape': ", NpyShapeTuple(shape), ", }");
  // As numpy.lib.format: room for the first dimension to grow to 21 digits,
  // then spaces up to the 64-byte boundary (a whole 64 when already there).
  if (!shape.empty()) {
    const size_t digits = absl::StrCat(shape[0]).size();
    if (digits < 21) dict.append(21 - digits, ' ');
  }
  // Version 1.0: 10-byte preamble (6 magic, 2 version, 2 length); 2.0: 12.
  for (const uint32_t preamble : {10u, 12u}) {
    const size_t hlen = dict.size() + 1;  // + '\n'
    const size_t pad = 64 - (preamble + hlen) % 64;
    const size_t header_len = hlen + pad;
    if (preamble == 10 && header_len > 0xFFFF) continue;
    std::string out("\x93NUMPY", 6);
    out.push_back(preamble == 10 ? 1 : 2);
    out.push_back(0);
    for (uint32_t i = 0; i < preamble - 8; ++i) {
      out.push_back(static_cast<char>((header_len >> (8 * i)) & 0xFF));
    }
    out += dict;
    out.append(pad, ' ');
    out.push_back('\n');
    return out;
  }
  return "";  // unreachable: version 2.0 holds 4 GiB
}

}  // namespace hurray::stream::ingest
