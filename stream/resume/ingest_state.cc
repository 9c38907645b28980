#include "stream/resume/ingest_state.h"

#include <cerrno>
#include <cstring>
#include <set>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "parser/descriptor.h"
#include "stream/container/file_format.h"
#include "stream/container/safe_file_name.h"
#include "stream/container/safe_output_dir.h"

namespace hurray::stream::resume {
namespace {

// Version 4 adds the "server" line (the tcp:// server's identity, issue
// 13); version 3 (issue 16) the "part" and "more" lines of a sparse tensor
// kept as its arrays. Versions 2 and 3 are still read as they are.
constexpr absl::string_view kMagic = "hurray-ingest-state 4";
constexpr absl::string_view kMagicV3 = "hurray-ingest-state 3";
constexpr absl::string_view kMagicV2 = "hurray-ingest-state 2";
// The main output of a kept sparse tensor: "<name>.values<suffix>".
constexpr absl::string_view kValuesPart = ".values";
// A line holds at most one string field (2 hex digits a byte) or a record
// (8 strings).
constexpr size_t kMaxLineBytes = 16 * kMaxStateString + 256;

std::string Hex(absl::string_view s) {
  return s.empty() ? "-" : absl::BytesToHexString(s);
}

bool Unhex(absl::string_view h, std::string* out) {
  if (h == "-") {
    out->clear();
    return true;
  }
  if (h.empty() || h.size() % 2 != 0 || h.size() / 2 > kMaxStateString) {
    return false;
  }
  for (char c : h) {
    if (!absl::ascii_isxdigit(static_cast<unsigned char>(c))) return false;
  }
  *out = absl::HexStringToBytes(h);
  return true;
}

// Decimal, no sign, no leading zeros (so a state has one spelling).
bool ParseU64(absl::string_view s, uint64_t* v) {
  if (s.empty() || s.size() > 20 || (s.size() > 1 && s[0] == '0')) {
    return false;
  }
  for (char c : s) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) return false;
  }
  return absl::SimpleAtoi(s, v);
}

bool ParseI64(absl::string_view s, int64_t* v) {
  const bool negative = !s.empty() && s[0] == '-';
  uint64_t u = 0;
  if (!ParseU64(negative ? s.substr(1) : s, &u)) return false;
  if (negative) {
    if (u == 0 || u > uint64_t{1} << 63) return false;
    *v = static_cast<int64_t>(0 - u);
  } else {
    if (u > static_cast<uint64_t>(INT64_MAX)) return false;
    *v = static_cast<int64_t>(u);
  }
  return true;
}

absl::string_view AsText(const std::vector<uint8_t>& b) {
  return absl::string_view(reinterpret_cast<const char*>(b.data()), b.size());
}

absl::Status Bad(absl::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrCat("the resume state file is invalid: ", why));
}

// The part of a kept sparse tensor's index array name (sinks.cc
// KeptArrays): ".indices", ".indptr", ".pos_<L>" or ".crd_<L>" with L a
// level below kMaxRank, in decimal without leading zeros.
bool IsIndexPart(absl::string_view part) {
  if (part == ".indices" || part == ".indptr") return true;
  absl::string_view level;
  if (absl::StartsWith(part, ".pos_")) {
    level = part.substr(5);
  } else if (absl::StartsWith(part, ".crd_")) {
    level = part.substr(5);
  } else {
    return false;
  }
  uint64_t l = 0;
  return ParseU64(level, &l) && l < kMaxRank;
}

// The output names DequantSink gives record `i` (stream/ingest/sinks.h): the
// base "tensor_<i>" or SafeFileName(name, i), then the record's part (""
// or ".values"), then ".f32" or ".npy"; a kept sparse tensor's index
// arrays the same base, their part, and ".u64" (with .f32) or ".npy".
bool IsOwnOutputName(const TensorRecord& r, uint64_t i) {
  std::vector<std::string> bases = {absl::StrCat("tensor_", i)};
  if (!r.name.empty()) bases.push_back(container::SafeFileName(r.name, i));
  const std::pair<const char*, const char*> suffixes[] = {{".f32", ".u64"},
                                                          {".npy", ".npy"}};
  for (const std::string& base : bases) {
    for (const auto& [main, index] : suffixes) {
      if (r.output != absl::StrCat(base, r.part, main)) continue;
      bool all = true;
      for (const TensorRecord::MoreOutput& m : r.more) {
        if (!m.output.empty() &&
            m.output != absl::StrCat(base, m.part, index)) {
          all = false;
        }
      }
      if (all) return true;
    }
  }
  return false;
}

// Extents of a .hrry checkpoint lie in order after the header and end at
// the offset.
absl::Status CheckExtents(const container::Checkpoint& c) {
  uint64_t end = container::kFileHeaderSize;
  for (const container::TensorExtent& e : c.extents) {
    uint64_t descriptor_end = 0, data_end = 0;
    if (e.descriptor_offset < end ||
        __builtin_add_overflow(e.descriptor_offset, e.descriptor_length,
                               &descriptor_end) ||
        e.data_offset < descriptor_end ||
        __builtin_add_overflow(e.data_offset, e.data_length, &data_end) ||
        data_end > c.offset || e.buffer_count > kMaxBuffers ||
        (e.buffer_count == 0 && e.data_length != 0)) {
      return Bad("an extent out of order or past the offset");
    }
    end = data_end;
  }
  if (!c.extents.empty() && end != c.offset) {
    return Bad("the offset is not the end of the last tensor");
  }
  return absl::OkStatus();
}

// The index arrays of a kept sparse record: each is published or pending
// as its record's main output is, under a part name of its own.
absl::Status CheckMore(const TensorRecord& r, uint64_t i) {
  std::set<absl::string_view> parts;
  for (const TensorRecord::MoreOutput& m : r.more) {
    if (!IsIndexPart(m.part) || !parts.insert(m.part).second) {
      return Bad(absl::StrCat("record ", i, ": '", m.part.substr(0, 80),
                              "' is not an index array part"));
    }
    if (m.output.empty() != r.output.empty() ||
        m.pending.empty() != r.pending_output.empty()) {
      return Bad(absl::StrCat("record ", i,
                              ": an index array not published with its "
                              "values"));
    }
    if (!m.pending.empty() &&
        !container::SafeOutputDir::IsTempName(m.pending)) {
      return Bad(absl::StrCat("record ", i, ": '", m.pending.substr(0, 80),
                              "' is not a temporary output name"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckRecords(const IngestState& st) {
  std::set<absl::string_view> outputs;  // each file is one record's
  for (uint64_t i = 0; i < st.records.size(); ++i) {
    const TensorRecord& r = st.records[i];
    std::vector<const std::string*> names = {&r.output, &r.pending_output};
    for (const TensorRecord::MoreOutput& m : r.more) {
      names.push_back(&m.output);
      names.push_back(&m.pending);
    }
    for (const std::string* name : names) {
      if (!name->empty() && !outputs.insert(*name).second) {
        return Bad(absl::StrCat("record ", i, ": '", name->substr(0, 80),
                                "' is another record's output"));
      }
    }
    if (!r.more.empty() || !r.part.empty()) {
      if (r.part != kValuesPart || r.more.empty() ||
          (r.output.empty() && r.pending_output.empty())) {
        return Bad(
            absl::StrCat("record ", i, ": index arrays without their values"));
      }
      absl::Status s = CheckMore(r, i);
      if (!s.ok()) return s;
    }
    if (!r.complete) return Bad("a record of an incomplete tensor");
    if (!r.output.empty() && !r.pending_output.empty()) {
      return Bad("a record with two outputs");
    }
    // Only names our own mapping produces: a record can never point
    // outside OUT (no '/', no '..') or at a file that is not ours.
    if (!r.output.empty() && !IsOwnOutputName(r, i)) {
      return Bad(absl::StrCat("record ", i, ": '", r.output.substr(0, 80),
                              "' is not the output name of '",
                              r.name.substr(0, 80), "'"));
    }
    if (!r.pending_output.empty() &&
        !container::SafeOutputDir::IsTempName(r.pending_output)) {
      return Bad(absl::StrCat("record ", i, ": '",
                              r.pending_output.substr(0, 80),
                              "' is not a temporary output name"));
    }
    if (r.output.empty() && r.pending_output.empty() && r.output_crc32c != 0) {
      return Bad(absl::StrCat("record ", i, ": a CRC without an output"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

bool IsServerIdentity(absl::string_view id) {
  if (id.empty() || id.size() > kMaxServerIdentityBytes) return false;
  for (char ch : id) {
    const auto b = static_cast<unsigned char>(ch);
    if (b < 0x20 || b > 0x7e) return false;
  }
  return true;
}

std::string SerializeState(const IngestState& st) {
  std::string text = absl::StrCat(kMagic, "\n");
  const container::Checkpoint& c = st.checkpoint;
  absl::StrAppend(&text, "source ", Hex(st.source), "\n");
  absl::StrAppend(&text, "out_dir ", Hex(st.out_dir), "\n");
  if (!st.outputs.empty()) {
    absl::StrAppend(&text, "outputs ", Hex(st.outputs), "\n");
  }
  if (st.identity.has_value()) {
    const SourceIdentity& id = *st.identity;
    absl::StrAppend(&text, "identity ", id.device, " ", id.inode, " ", id.size,
                    " ", id.mtime_ns, "\n");
  }
  if (st.http.has_value()) {
    absl::StrAppend(&text, "http ", Hex(st.http->validator), " ", st.http->size,
                    "\n");
  }
  if (st.server.has_value()) {
    absl::StrAppend(&text, "server ", Hex(*st.server), "\n");
  }
  absl::StrAppend(&text, "format ", static_cast<int>(c.format), "\n");
  absl::StrAppend(&text, "offset ", c.offset, "\n");
  absl::StrAppend(&text, "tensors ", c.tensors, "\n");
  absl::StrAppend(&text, "crc ", c.crc32c, "\n");
  absl::StrAppend(&text, "header ", Hex(AsText(c.header)), "\n");
  absl::StrAppend(&text, "last ", Hex(AsText(c.last)), "\n");
  for (const container::TensorExtent& e : c.extents) {
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
                    " ", Hex(r.pending_output), " ", r.output_crc32c, " ",
                    r.data_crc32c, "\n");
    // A kept sparse tensor: its part, then one line per index array.
    if (!r.part.empty()) absl::StrAppend(&text, "part ", Hex(r.part), "\n");
    for (const TensorRecord::MoreOutput& m : r.more) {
      absl::StrAppend(&text, "more ", Hex(m.part), " ", Hex(m.output), " ",
                      Hex(m.pending), " ", m.crc32c, "\n");
    }
  }
  text += "end\n";
  return text;
}

absl::StatusOr<IngestState> ParseState(absl::string_view text) {
  if (text.size() > kMaxStateBytes) return Bad("too large");
  IngestState st;
  container::Checkpoint& c = st.checkpoint;
  std::set<std::string> seen;  // keys that may appear once
  bool first = true, ended = false, v2 = false, before_v4 = false;
  uint64_t more_lines = 0;
  while (!text.empty()) {
    if (ended) return Bad("bytes after 'end'");
    const size_t nl = text.find('\n');
    if (nl == absl::string_view::npos) return Bad("truncated");
    const absl::string_view line = text.substr(0, nl);
    text.remove_prefix(nl + 1);
    if (line.size() > kMaxLineBytes) return Bad("a line is too long");
    if (first) {
      if (line != kMagic && line != kMagicV3 && line != kMagicV2) {
        return Bad("no header line");
      }
      v2 = line == kMagicV2;
      before_v4 = line != kMagic;
      first = false;
      continue;
    }
    const std::vector<absl::string_view> f = absl::StrSplit(line, ' ');
    const absl::string_view key = f[0];
    auto num = [&f](size_t i, uint64_t* v) {
      return i < f.size() && ParseU64(f[i], v);
    };
    const bool once = key != "extent" && key != "remaining" &&
                      key != "record" && key != "part" && key != "more";
    if (once && !seen.insert(std::string(key)).second) {
      return Bad(absl::StrCat("'", key.substr(0, 20), "' twice"));
    }
    std::string s;
    uint64_t v[8] = {};
    if (key == "end" && f.size() == 1) {
      ended = true;
    } else if (key == "source" && f.size() == 2 && Unhex(f[1], &s)) {
      st.source = std::move(s);
    } else if (key == "out_dir" && f.size() == 2 && Unhex(f[1], &s)) {
      st.out_dir = std::move(s);
    } else if (key == "outputs" && f.size() == 2 && Unhex(f[1], &s) &&
               !s.empty()) {
      st.outputs = std::move(s);
    } else if (key == "identity" && f.size() == 5 && num(1, &v[0]) &&
               num(2, &v[1]) && num(3, &v[2])) {
      SourceIdentity id;
      id.device = v[0];
      id.inode = v[1];
      id.size = v[2];
      if (!ParseI64(f[4], &id.mtime_ns)) return Bad("bad identity line");
      st.identity = id;
    } else if (key == "http" && f.size() == 3 && Unhex(f[1], &s) &&
               num(2, &v[0])) {
      // It is sent as an If-Range header: printable ASCII, bounded.
      if (s.empty() || s.size() > kMaxValidatorBytes) {
        return Bad("bad http validator");
      }
      for (char ch : s) {
        const auto b = static_cast<unsigned char>(ch);
        if (b < 0x20 || b > 0x7e) return Bad("bad http validator");
      }
      st.http = HttpValidator{std::move(s), v[0]};
    } else if (key == "server" && f.size() == 2 && !before_v4 &&
               Unhex(f[1], &s)) {
      if (!IsServerIdentity(s)) return Bad("bad server identity");
      st.server = std::move(s);
    } else if (key == "format" && f.size() == 2 && num(1, &v[0]) &&
               (v[0] == static_cast<uint64_t>(
                            container::ContainerFormat::kStream) ||
                v[0] ==
                    static_cast<uint64_t>(container::ContainerFormat::kHrry))) {
      c.format = static_cast<container::ContainerFormat>(v[0]);
    } else if (key == "offset" && f.size() == 2 && num(1, &c.offset)) {
    } else if (key == "tensors" && f.size() == 2 && num(1, &c.tensors) &&
               c.tensors <= kMaxStateEntries) {
    } else if (key == "crc" && f.size() == 2 && num(1, &v[0]) &&
               v[0] <= UINT32_MAX) {
      c.crc32c = static_cast<uint32_t>(v[0]);
    } else if ((key == "header" || key == "last") && f.size() == 2 &&
               Unhex(f[1], &s)) {
      (key == "header" ? c.header : c.last).assign(s.begin(), s.end());
    } else if (key == "extent" && f.size() == 8 && num(1, &v[0]) &&
               num(2, &v[1]) && num(3, &v[2]) && num(4, &v[3]) &&
               num(5, &v[4]) && num(6, &v[5]) && num(7, &v[6]) &&
               v[1] <= UINT32_MAX && v[2] <= UINT32_MAX && v[5] <= 1 &&
               v[6] <= UINT32_MAX) {
      if (c.extents.size() >= kMaxStateEntries) return Bad("too many extents");
      container::TensorExtent e;
      e.descriptor_offset = v[0];
      e.descriptor_length = static_cast<uint32_t>(v[1]);
      e.buffer_count = static_cast<uint32_t>(v[2]);
      e.data_offset = v[3];
      e.data_length = v[4];
      e.composite_head = v[5] == 1;
      e.member_count = static_cast<uint32_t>(v[6]);
      c.extents.push_back(e);
    } else if (key == "remaining" && f.size() == 2 && Unhex(f[1], &s)) {
      if (st.remaining_names.size() >= kMaxStateEntries) {
        return Bad("too many names");
      }
      st.remaining_names.push_back(std::move(s));
    } else if (key == "record" && f.size() == 12) {
      if (st.records.size() >= kMaxStateEntries) return Bad("too many records");
      TensorRecord r;
      r.index = st.records.size();
      uint64_t complete = 0, crc = 0, data_crc = 0;
      if (!Unhex(f[1], &r.name) || !Unhex(f[2], &r.shape) ||
          !Unhex(f[3], &r.type) || !Unhex(f[4], &r.scheme) ||
          !num(5, &r.bytes) || !num(6, &complete) || complete > 1 ||
          !Unhex(f[7], &r.verdict) || !Unhex(f[8], &r.output) ||
          !Unhex(f[9], &r.pending_output) || !num(10, &crc) ||
          crc > UINT32_MAX || !num(11, &data_crc) || data_crc > UINT32_MAX) {
        return Bad(absl::StrCat("bad record line ", st.records.size()));
      }
      r.complete = complete == 1;
      r.output_crc32c = static_cast<uint32_t>(crc);
      r.data_crc32c = static_cast<uint32_t>(data_crc);
      st.records.push_back(std::move(r));
    } else if (key == "part" && !v2 && f.size() == 2 && Unhex(f[1], &s)) {
      // Right after its record, once (CheckRecords: ".values" only).
      if (st.records.empty() || !st.records.back().part.empty() ||
          !st.records.back().more.empty() || s.empty()) {
        return Bad("a 'part' line not right after its record");
      }
      st.records.back().part = std::move(s);
    } else if (key == "more" && !v2 && f.size() == 5) {
      // After its record's part line (CheckMore checks the names).
      if (st.records.empty() || st.records.back().part.empty()) {
        return Bad("a 'more' line not after its record's part");
      }
      if (st.records.back().more.size() >= 2 * kMaxRank ||
          ++more_lines > kMaxStateEntries) {
        return Bad("too many index arrays");
      }
      TensorRecord::MoreOutput m;
      uint64_t crc = 0;
      if (!Unhex(f[1], &m.part) || !Unhex(f[2], &m.output) ||
          !Unhex(f[3], &m.pending) || !num(4, &crc) || crc > UINT32_MAX) {
        return Bad(
            absl::StrCat("bad 'more' line of record ", st.records.size() - 1));
      }
      m.crc32c = static_cast<uint32_t>(crc);
      st.records.back().more.push_back(std::move(m));
    } else {
      return Bad(absl::StrCat("bad line '",
                              absl::CHexEscape(line.substr(0, 40)), "'"));
    }
  }
  if (!ended) return Bad("truncated");
  for (absl::string_view k : {"source", "out_dir", "format", "offset",
                              "tensors", "crc", "header", "last"}) {
    if (seen.count(std::string(k)) == 0) {
      return Bad(absl::StrCat("no '", k, "' line"));
    }
  }
  if (c.format == container::ContainerFormat::kHrry) {
    if (c.header.size() != container::kFileHeaderSize ||
        c.last.size() != container::kTrailerSize ||
        c.extents.size() != c.tensors ||
        c.offset < container::kFileHeaderSize) {
      return Bad("incomplete file checkpoint");
    }
    absl::Status s = CheckExtents(c);
    if (!s.ok()) return s;
  } else if (!c.header.empty() || !c.last.empty() || !c.extents.empty()) {
    return Bad("file checkpoint fields in a stream checkpoint");
  }
  if (st.records.size() != c.tensors) return Bad("record count");
  if (st.server.has_value() && !absl::StartsWith(st.source, "tcp://")) {
    return Bad("a server identity for a source other than tcp://");
  }
  absl::Status s = CheckRecords(st);
  if (!s.ok()) return s;
  return st;
}

absl::Status SaveState(const std::string& path, const IngestState& st) {
  const std::string text = SerializeState(st);
  return container::WriteFileSafely(
      path,
      [&](int fd) {
        return container::WriteAllFd(fd, text.data(), text.size(), path);
      },
      /*durable=*/true);
}

absl::StatusOr<IngestState> LoadState(const std::string& path) {
  // Never through a symlink, never more than the bound.
  absl::StatusOr<std::string> text =
      container::ReadFileNoFollow(path, kMaxStateBytes);
  if (!text.ok()) {
    if (text.status().code() == absl::StatusCode::kNotFound) {
      return absl::NotFoundError(absl::StrCat("no state file ", path));
    }
    if (text.status().code() == absl::StatusCode::kInvalidArgument) {
      return Bad(text.status().message());
    }
    return text.status();
  }
  return ParseState(*text);
}

}  // namespace hurray::stream::resume
