#include "stream/ingest_state.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"

namespace hurray::stream {
namespace {

constexpr absl::string_view kMagic = "hurray-ingest-state 1";
constexpr uint64_t kMaxStateBytes = uint64_t{256} << 20;

std::string Hex(absl::string_view s) {
  return s.empty() ? "-" : absl::BytesToHexString(s);
}

bool Unhex(absl::string_view h, std::string* out) {
  if (h == "-") {
    out->clear();
    return true;
  }
  if (h.size() % 2 != 0) return false;
  for (char c : h) {
    if (!absl::ascii_isxdigit(static_cast<unsigned char>(c))) return false;
  }
  *out = absl::HexStringToBytes(h);
  return true;
}

absl::string_view AsText(const std::vector<uint8_t>& b) {
  return absl::string_view(reinterpret_cast<const char*>(b.data()), b.size());
}

absl::Status Bad(absl::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrCat("the resume state file is invalid: ", why));
}

}  // namespace

absl::Status SaveState(const std::string& path, const IngestState& st) {
  std::string text = absl::StrCat(kMagic, "\n");
  const Checkpoint& c = st.checkpoint;
  absl::StrAppend(&text, "source ", Hex(st.source), "\n");
  absl::StrAppend(&text, "out_dir ", Hex(st.out_dir), "\n");
  absl::StrAppend(&text, "format ", static_cast<int>(c.format), "\n");
  absl::StrAppend(&text, "offset ", c.offset, "\n");
  absl::StrAppend(&text, "tensors ", c.tensors, "\n");
  absl::StrAppend(&text, "header ", Hex(AsText(c.header)), "\n");
  absl::StrAppend(&text, "last ", Hex(AsText(c.last)), "\n");
  for (const TensorExtent& e : c.extents) {
    absl::StrAppend(&text, "extent ", e.descriptor_offset, " ",
                    e.descriptor_length, " ", e.buffer_count, " ",
                    e.data_offset, " ", e.data_length, " ",
                    e.composite_head ? 1 : 0, " ", e.member_count, "\n");
  }
  for (const std::string& n : st.remaining_names) {
    absl::StrAppend(&text, "remaining ", Hex(n), "\n");
  }
  for (const TensorRecord& r : st.records) {
    absl::StrAppend(&text, "record ", Hex(r.name), " ", Hex(r.shape), " ",
                    Hex(r.type), " ", Hex(r.scheme), " ", r.bytes, " ",
                    r.complete ? 1 : 0, " ", Hex(r.verdict), " ", Hex(r.output),
                    " ", Hex(r.pending_output), " ", r.output_crc32c, "\n");
  }
  text += "end\n";

  const std::string tmp = path + ".tmp";
  const int fd =
      ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    return absl::DataLossError(
        absl::StrCat("cannot write ", tmp, ": ", std::strerror(errno)));
  }
  const char* p = text.data();
  size_t left = text.size();
  while (left > 0) {
    const ssize_t w = ::write(fd, p, left);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      ::close(fd);
      return absl::DataLossError(
          absl::StrCat("cannot write ", tmp, ": ", std::strerror(errno)));
    }
    p += w;
    left -= static_cast<size_t>(w);
  }
  // Durable before it replaces the old state.
  if (::fsync(fd) != 0 || ::close(fd) != 0 ||
      ::rename(tmp.c_str(), path.c_str()) != 0) {
    return absl::DataLossError(
        absl::StrCat("cannot replace ", path, ": ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

absl::StatusOr<IngestState> LoadState(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("no state file ", path));
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  if (size < 0 || static_cast<uint64_t>(size) > kMaxStateBytes) {
    return Bad("too large");
  }
  in.seekg(0);
  std::string line;
  if (!std::getline(in, line) || line != kMagic) return Bad("no header line");
  IngestState st;
  Checkpoint& c = st.checkpoint;
  bool ended = false;
  while (std::getline(in, line)) {
    const std::vector<absl::string_view> f = absl::StrSplit(line, ' ');
    const absl::string_view key = f[0];
    auto num = [&f](size_t i, uint64_t* v) {
      return i < f.size() && absl::SimpleAtoi(f[i], v);
    };
    std::string s;
    uint64_t v[8] = {};
    if (key == "end" && f.size() == 1) {
      ended = true;
      break;
    } else if (key == "source" && f.size() == 2 && Unhex(f[1], &s)) {
      st.source = s;
    } else if (key == "out_dir" && f.size() == 2 && Unhex(f[1], &s)) {
      st.out_dir = s;
    } else if (key == "format" && f.size() == 2 && num(1, &v[0]) &&
               v[0] <= static_cast<uint64_t>(SourceFormat::kHrry)) {
      c.format = static_cast<SourceFormat>(v[0]);
    } else if (key == "offset" && f.size() == 2 && num(1, &c.offset)) {
    } else if (key == "tensors" && f.size() == 2 && num(1, &c.tensors)) {
    } else if ((key == "header" || key == "last") && f.size() == 2 &&
               Unhex(f[1], &s)) {
      (key == "header" ? c.header : c.last).assign(s.begin(), s.end());
    } else if (key == "extent" && f.size() == 8 && num(1, &v[0]) &&
               num(2, &v[1]) && num(3, &v[2]) && num(4, &v[3]) &&
               num(5, &v[4]) && num(6, &v[5]) && num(7, &v[6]) &&
               v[1] <= UINT32_MAX && v[2] <= UINT32_MAX && v[5] <= 1 &&
               v[6] <= UINT32_MAX) {
      TensorExtent e;
      e.descriptor_offset = v[0];
      e.descriptor_length = static_cast<uint32_t>(v[1]);
      e.buffer_count = static_cast<uint32_t>(v[2]);
      e.data_offset = v[3];
      e.data_length = v[4];
      e.composite_head = v[5] == 1;
      e.member_count = static_cast<uint32_t>(v[6]);
      c.extents.push_back(e);
    } else if (key == "remaining" && f.size() == 2 && Unhex(f[1], &s)) {
      st.remaining_names.push_back(s);
    } else if (key == "record" && f.size() == 11) {
      TensorRecord r;
      r.index = st.records.size();
      uint64_t complete = 0, crc = 0;
      if (!Unhex(f[1], &r.name) || !Unhex(f[2], &r.shape) ||
          !Unhex(f[3], &r.type) || !Unhex(f[4], &r.scheme) ||
          !num(5, &r.bytes) || !num(6, &complete) || complete > 1 ||
          !Unhex(f[7], &r.verdict) || !Unhex(f[8], &r.output) ||
          !Unhex(f[9], &r.pending_output) || !num(10, &crc) ||
          crc > UINT32_MAX) {
        return Bad(absl::StrCat("bad record line"));
      }
      r.complete = complete == 1;
      r.output_crc32c = static_cast<uint32_t>(crc);
      st.records.push_back(std::move(r));
    } else {
      return Bad(absl::StrCat("bad line '", line.substr(0, 40), "'"));
    }
  }
  if (!ended) return Bad("truncated");
  if (c.format == SourceFormat::kHrry &&
      (c.header.size() != kFileHeaderSize || c.last.size() != kTrailerSize ||
       c.extents.size() != c.tensors)) {
    return Bad("incomplete file checkpoint");
  }
  if (st.records.size() != c.tensors) return Bad("record count");
  return st;
}

}  // namespace hurray::stream
