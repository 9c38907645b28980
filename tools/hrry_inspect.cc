#include "tools/hrry_inspect.h"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <memory>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "parser/descriptor.h"
#include "parser/element_type.h"
#include "parser/quantization.h"
#include "parser/rules.h"
#include "stream/container/file_format.h"
#include "stream/container/hrry_mmap.h"
#include "tools/command_util.h"
#include "tools/descriptor_json.h"
#include "tools/display_text.h"
#include "tools/json_writer.h"

namespace hurray::tools {
namespace {

struct TensorRow {
  std::string name;
  std::unique_ptr<TensorDescriptor> descriptor;
  uint64_t bytes = 0;
};

std::string Shape(const TensorDescriptor& d) {
  std::string s = "[";
  for (uint32_t k = 0; k < d.rank; ++k)
    absl::StrAppend(&s, k ? ", " : "", d.shape[k]);
  return s + "]";
}

std::string Scheme(const TensorDescriptor& d) {
  if (!(d.flags & flag::kHasQuantization)) return "-";
  return SchemeName(d.quantization.scheme_tag);
}

std::string KvText(const stream::container::KvValue& v) {
  using stream::container::KvType;
  switch (v.type) {
    case KvType::kString:
      return absl::StrCat("\"", TerminalSafe(v.str(), 80), "\"");
    case KvType::kInt64:
      return absl::StrCat(v.i64);
    case KvType::kUInt64:
      return absl::StrCat(v.u64);
    case KvType::kFloat64:
      return absl::StrCat(v.f64);
    case KvType::kBool:
      return v.boolean ? "true" : "false";
    case KvType::kBytes:
      return absl::StrCat("<", v.bytes.size(), " bytes>");
    case KvType::kArray:
      return absl::StrCat("<array of ", v.count, ">");
  }
  return "?";
}

// Opens and checks the file, then reads every tensor's descriptor.
absl::StatusOr<std::unique_ptr<stream::container::HrryFile>> Open(
    const std::string& path, const ParseOptions& options,
    std::vector<TensorRow>* rows) {
  stream::container::FileOptions file_options;
  file_options.parse = options;
  absl::StatusOr<std::unique_ptr<stream::container::HrryFile>> file =
      stream::container::HrryFile::Open(path, file_options);
  if (!file.ok()) return file.status();
  for (const stream::container::IndexEntry* e : (*file)->InFileOrder()) {
    TensorRow row;
    row.name = std::string(e->name);
    row.descriptor = std::make_unique<TensorDescriptor>();
    if (absl::Status s = (*file)->ReadDescriptor(*e, row.descriptor.get());
        !s.ok())
      return s;
    for (uint32_t i = 0; i < row.descriptor->buffer_count; ++i)
      row.bytes += row.descriptor->buffers[i].byte_size;
    rows->push_back(std::move(row));
  }
  return file;
}

bool IsRejection(const absl::Status& s) { return RuleIdOf(s).has_value(); }

// The rejection's own message, without the "RULE at byte N: " prefix
// ToStatus puts in front.
absl::string_view Reason(const absl::Status& s) {
  absl::string_view m = s.message();
  const size_t colon = m.find(": ");
  return colon == absl::string_view::npos ? m : m.substr(colon + 2);
}

}  // namespace

int InspectHrry(const std::string& path, const ParseOptions& options, bool json,
                std::ostream& out, std::ostream& err) {
  std::vector<TensorRow> rows;
  absl::StatusOr<std::unique_ptr<stream::container::HrryFile>> file =
      Open(path, options, &rows);
  if (!file.ok() && !IsRejection(file.status())) {
    err << "hurray inspect: " << path << ": "
        << TerminalSafe(file.status().message()) << "\n";
    return kExitError;
  }
  if (json) {
    std::string line;
    JsonWriter w(&line);
    w.BeginObject().Key("file").String(path).Key("container").String("hrry");
    w.Key("valid").Bool(file.ok());
    if (!file.ok()) {
      w.Key("rule").String(*RuleIdOf(file.status()));
      w.Key("offset").Uint(OffsetOf(file.status()).value_or(0));
      w.Key("error").String(Reason(file.status()));
      w.EndObject();
      out << line << "\n";
      return kExitRejected;
    }
    const stream::container::FileHeader& h = (*file)->header();
    w.Key("version_major").Uint(h.version_major);
    w.Key("version_minor").Uint(h.version_minor);
    w.Key("flags").Uint(h.flags);
    w.Key("kv").BeginObject();
    for (const stream::container::KvEntry& e : (*file)->kv().entries()) {
      w.Key(e.key);
      if (e.value.type == stream::container::KvType::kString) {
        w.String(e.value.str());
      } else {
        w.String(KvText(e.value));
      }
    }
    w.EndObject();
    w.Key("tensors").BeginArray();
    for (const TensorRow& r : rows) {
      w.BeginObject()
          .Key("name")
          .String(r.name)
          .Key("data_bytes")
          .Uint(r.bytes);
      w.Key("descriptor").BeginObject();
      WriteDescriptorMembers(*r.descriptor, &w);
      w.EndObject().EndObject();
    }
    w.EndArray().EndObject();
    out << line << "\n";
    return kExitOk;
  }
  if (!file.ok()) {
    out << path << ": REJECTED\n  rule:    " << *RuleIdOf(file.status())
        << "\n  offset:  " << OffsetOf(file.status()).value_or(0)
        << "\n  message: " << TerminalSafe(Reason(file.status())) << "\n";
    return kExitRejected;
  }
  const stream::container::FileHeader& h = (*file)->header();
  out << path << ": .hrry file, container version "
      << static_cast<int>(h.version_major) << "."
      << static_cast<int>(h.version_minor) << ", " << rows.size()
      << " tensors, " << (*file)->bytes().size() << " bytes\n";
  for (const stream::container::KvEntry& e : (*file)->kv().entries()) {
    out << "  kv " << TerminalSafe(e.key, kNameColumnWidth) << " = "
        << KvText(e.value) << "\n";
  }
  std::vector<std::string> names;
  size_t width = 4;
  for (const TensorRow& r : rows) {
    names.push_back(TerminalSafe(r.name, kNameColumnWidth));
    width = std::max(width, DisplayWidth(names.back()));
  }
  out << "  " << PadRight("name", width)
      << absl::StrFormat("  %-14s  %-12s  %-12s  %-18s  %s\n", "shape", "type",
                         "layout", "scheme", "bytes");
  for (size_t i = 0; i < rows.size(); ++i) {
    const TensorDescriptor& d = *rows[i].descriptor;
    out << "  " << PadRight(names[i], width)
        << absl::StrFormat("  %-14s  %-12s  %-12s  %-18s  %d\n", Shape(d),
                           ElementTypeName(d.type_tag),
                           LayoutName(d.layout_tag), Scheme(d), rows[i].bytes);
  }
  return kExitOk;
}

int ValidateHrry(const std::string& path, const ParseOptions& options,
                 std::ostream& out, std::ostream& err) {
  std::vector<TensorRow> rows;
  absl::StatusOr<std::unique_ptr<stream::container::HrryFile>> file =
      Open(path, options, &rows);
  if (file.ok()) {
    out << path << ": OK (" << rows.size() << " tensors)\n";
    return kExitOk;
  }
  if (!IsRejection(file.status())) {
    err << "hurray validate: " << path << ": "
        << TerminalSafe(file.status().message()) << "\n";
    return kExitError;
  }
  out << path << ": " << TerminalSafe(file.status().message()) << "\n";
  return kExitRejected;
}

}  // namespace hurray::tools
