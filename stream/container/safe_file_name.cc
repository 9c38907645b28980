#include "stream/container/safe_file_name.h"

#include "absl/strings/str_cat.h"
#include "stream/container/utf8.h"

namespace hurray::stream::container {

std::string SafeFileName(absl::string_view name, uint64_t index) {
  static const char kHex[] = "0123456789ABCDEF";
  std::string out;
  auto escape = [&out](unsigned char c) {
    out.push_back('%');
    out.push_back(kHex[c >> 4]);
    out.push_back(kHex[c & 15]);
  };
  for (size_t i = 0; i < name.size();) {
    const unsigned char c = static_cast<unsigned char>(name[i]);
    if (c < 0x80) {
      // Control bytes, '/', '%' and '~' (the escape and the cut marker),
      // and a leading '.' are escaped; other ASCII is kept.
      if (c < 0x20 || c == 0x7F || c == '/' || c == '%' || c == '~' ||
          (c == '.' && i == 0)) {
        escape(c);
      } else {
        out.push_back(static_cast<char>(c));
      }
      ++i;
      continue;
    }
    // A valid UTF-8 character is kept whole, unless it is a C1 control
    // (U+0080..U+009F, encoded C2 80..C2 9F); any other byte is escaped.
    const size_t n = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
    const absl::string_view ch = name.substr(i, n);
    const bool c1 = n == 2 && c == 0xC2 && ch.size() == 2 &&
                    static_cast<unsigned char>(ch[1]) < 0xA0;
    if (n > 1 && ch.size() == n && !c1 && container::IsValidUtf8(ch)) {
      out.append(ch.data(), ch.size());
      i += n;
    } else {
      for (size_t k = 0; k < (c1 ? 2 : 1); ++k) {
        escape(static_cast<unsigned char>(name[i + k]));
      }
      i += c1 ? 2 : 1;
    }
  }
  if (out.empty()) return absl::StrCat("tensor_", index);
  if (out.size() + 4 > 200) {
    // Cut at 180 bytes, never inside a %XX escape or a UTF-8 character;
    // '~' appears nowhere else, so cut names stay distinct from the rest.
    size_t cut = 180;
    while (cut > 0 && (static_cast<unsigned char>(out[cut]) & 0xC0) == 0x80) {
      --cut;
    }
    const size_t pct = out.rfind('%', cut == 0 ? 0 : cut - 1);
    if (pct != std::string::npos && pct + 3 > cut) cut = pct;
    out.resize(cut);
    absl::StrAppend(&out, "~", index);
  }
  return out;
}

}  // namespace hurray::stream::container
