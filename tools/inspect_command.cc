#include "tools/inspect_command.h"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <iterator>
#include <memory>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "parser/decoder.h"
#include "parser/descriptor.h"
#include "parser/element_type.h"
#include "parser/options.h"
#include "parser/quantization.h"
#include "parser/rules.h"
#include "tools/command_util.h"
#include "tools/descriptor_json.h"
#include "tools/display_text.h"
#include "tools/hrry_inspect.h"
#include "tools/input_file.h"
#include "tools/json_writer.h"

namespace hurray::tools {
namespace {

// --- JSON (--json). --------------------------------------------------------

std::string JsonLine(absl::string_view file, const Rejection& r,
                     const TensorDescriptor& d) {
  std::string line;
  JsonWriter w(&line);
  w.BeginObject();
  w.Key("file").String(file);
  w.Key("valid").Bool(r.ok());
  if (r.ok()) {
    WriteDescriptorMembers(d, &w);
  } else {
    WriteRejectionMembers(r, &w);
  }
  w.EndObject();
  line.push_back('\n');
  return line;
}

// --- Readable summary. -----------------------------------------------------

std::string Hex2(uint32_t v) { return absl::StrFormat("0x%02X", v); }

// Shortest text that reads back as the same value.
template <typename T>
std::string Shortest(T value) {
  char buffer[64];
  const std::to_chars_result r =
      std::to_chars(buffer, buffer + sizeof(buffer), value);
  return std::string(buffer, r.ptr);
}

// A dimension, "?" when dynamic (a StrJoin formatter).
void AppendDim(std::string* out, uint64_t dim) {
  if (dim == kDynamicDim) {
    out->push_back('?');
  } else {
    absl::StrAppend(out, dim);
  }
}

std::string ShapeText(absl::Span<const uint64_t> dims) {
  return absl::StrCat("[", absl::StrJoin(dims, ", ", AppendDim), "]");
}

std::string DeviceText(uint8_t tag) {
  static constexpr const char* kNames[] = {"cpu",     "cuda",       "rocm",
                                           "metal",   "vulkan",     "webgpu",
                                           "hexagon", "level_zero", "opencl"};
  const char* name = tag < std::size(kNames) ? kNames[tag] : "unknown";
  return absl::StrCat(name, " (", Hex2(tag), ")");
}

std::string MemoryClassText(uint8_t tag) {
  static constexpr const char* kNames[] = {"standard", "host_pinned", "unified",
                                           "peer"};
  const char* name = tag < std::size(kNames) ? kNames[tag] : "unknown";
  return absl::StrCat(name, " (", Hex2(tag), ")");
}

std::string QuantizationText(const QuantizationDescriptor& q) {
  std::string text = absl::StrCat(SchemeName(q.scheme_tag), " (",
                                  Hex2(q.scheme_tag), ") v", q.scheme_version);
  if (!q.interpreted()) {
    absl::StrAppend(&text, ", flags ", absl::StrFormat("0x%04X", q.flags),
                    ": payload not interpreted (", q.extra_length, " bytes)");
    return text;
  }
  const bool has_zero_points = !q.symmetric();
  const std::string scales =
      absl::StrCat("scales in buffer #", q.scale_buffer_index);
  switch (q.scheme_tag) {
    case scheme_tag::kPerTensorAffine:
      absl::StrAppend(&text, ": scale ", Shortest(q.scale), ", zero_point ",
                      q.zero_point);
      break;
    case scheme_tag::kPerChannelAffine:
    case scheme_tag::kPerBlockAffine:
      absl::StrAppend(&text, has_zero_points ? ", asymmetric" : ", symmetric",
                      ": axis ", q.axis);
      if (q.scheme_tag == scheme_tag::kPerBlockAffine) {
        absl::StrAppend(&text, ", block_size ", q.block_size);
      }
      absl::StrAppend(&text, ", ", scales, " (",
                      ElementTypeName(q.scale_type_tag), ")");
      if (has_zero_points) {
        absl::StrAppend(&text, ", zero points in buffer #",
                        q.zero_point_buffer_index);
      }
      break;
    default:  // NF4, MXFP
      absl::StrAppend(&text, ": axis ", q.axis, ", block_size ", q.block_size,
                      ", ", scales);
      break;
  }
  if (q.extra_length > 0) {
    absl::StrAppend(&text, " (+", q.extra_length, " padding bytes)");
  }
  return text;
}

std::string StatisticsText(const Statistics& s) {
  const uint32_t m = s.computed_mask;
  std::vector<std::string> parts;
  parts.push_back(absl::StrFormat("computed_mask 0x%02X", m));
  if (m & stat_bit::kNnz) parts.push_back(absl::StrCat("nnz ", s.nnz));
  if (m & stat_bit::kSparsity) {
    parts.push_back(
        absl::StrCat("sparsity_ratio ", Shortest(s.sparsity_ratio)));
  }
  if (m & stat_bit::kValueRange) {
    parts.push_back(absl::StrCat("min ", Shortest(s.value_min), ", max ",
                                 Shortest(s.value_max), ", abs_max ",
                                 Shortest(s.value_abs_max)));
  }
  if (m & stat_bit::kValueStats) {
    parts.push_back(absl::StrCat("mean ", Shortest(s.value_mean), ", stddev ",
                                 Shortest(s.value_stddev)));
  }
  if (m & stat_bit::kNmSparsity) {
    parts.push_back(absl::StrCat("n:m ", s.nm_n, ":", s.nm_m));
  }
  if (m & stat_bit::kNanInf) {
    parts.push_back(
        absl::StrCat("has_nan ", s.has_nan, ", has_inf ", s.has_inf));
  }
  return absl::StrJoin(parts, ", ");
}

std::string ExtensionTypeText(const ExtensionType& e) {
  std::string text =
      absl::StrCat(e.bit_width, " bits, packing_factor ", e.packing_factor);
  if (e.is_float == 1) {
    absl::StrAppend(&text, ", float: sign_bits ", e.sign_bits,
                    ", exponent_bits ", e.exponent_bits, ", mantissa_bits ",
                    e.mantissa_bits, ", exponent_bias ", e.exponent_bias,
                    ", has_nan ", e.has_nan, ", has_inf ", e.has_inf);
  } else if (e.is_float == 0) {
    absl::StrAppend(&text, ", ", e.is_signed ? "signed" : "unsigned",
                    " integer");
  } else {  // permissive mode accepts other byte values
    absl::StrAppend(&text, ", is_float ", e.is_float);
  }
  return text;
}

// One "  label:   value" line, values aligned.
void Field(std::string* out, absl::string_view label, absl::string_view value) {
  absl::StrAppend(
      out, absl::StrFormat("  %-17s %s\n", absl::StrCat(label, ":"), value));
}

std::string TextSummary(absl::string_view file,
                        std::optional<uint64_t> file_size, const Rejection& r,
                        const TensorDescriptor& d) {
  std::string out;
  if (!r.ok()) {
    const RuleInfo& info = GetRuleInfo(r.rule);
    absl::StrAppend(&out, TerminalSafe(file), ": REJECTED\n");
    Field(&out, "rule", absl::StrCat(info.id, " (", info.spec_ref, ")"));
    Field(&out, "offset", absl::StrCat(r.offset));
    Field(&out, "message", TerminalSafe(r.message));
    return out;
  }
  absl::StrAppend(&out, TerminalSafe(file), ": OK\n");

  std::string descriptor = absl::StrCat(
      d.descriptor_length, " bytes, version ", d.version_major, ".",
      d.version_minor, ", flags ", absl::StrFormat("0x%08X", d.flags));
  if (file_size.has_value() && *file_size > d.descriptor_length) {
    absl::StrAppend(&descriptor, " (", *file_size - d.descriptor_length,
                    " more bytes in the file)");
  }
  Field(&out, "descriptor", descriptor);
  Field(&out, "element type",
        absl::StrCat(ElementTypeName(d.type_tag), " (", Hex2(d.type_tag), ")"));
  std::string layout =
      absl::StrCat(LayoutName(d.layout_tag), " (", Hex2(d.layout_tag), ")");
  if (!d.layout_parsed) absl::StrAppend(&layout, ", fields not parsed");
  Field(&out, "layout", layout);
  Field(&out, "shape", ShapeText(d.dims()));
  Field(&out, "byte_offset", absl::StrCat(d.byte_offset));

  if (!d.layout_parsed) {
    // Permissive mode, unassigned layout tag: nothing after byte_offset was
    // read.
    Field(&out, "buffers", "not parsed (unknown layout)");
  } else {
    Field(&out, "buffers", absl::StrCat(d.buffer_count));
    for (uint32_t i = 0; i < d.buffer_count; ++i) {
      const BufferHandle& h = d.buffers[i];
      absl::StrAppend(&out, "    #", i, ": ", h.byte_size, " bytes, alignment ",
                      h.alignment, ", device ", DeviceText(h.device_tag),
                      ", sync_mode ", h.sync_mode, ", memory class ",
                      MemoryClassText(h.memory_class), "\n");
    }
  }

  if (!d.has(flag::kHasQuantization)) {
    Field(&out, "quantization", "none");
  } else if (!d.layout_parsed) {
    Field(&out, "quantization", "present, not parsed");
  } else {
    Field(&out, "quantization", QuantizationText(d.quantization));
  }

  std::vector<absl::string_view> sections;
  if (d.has(flag::kHasShard)) sections.push_back("shard");
  if (d.has(flag::kHasStatistics)) sections.push_back("statistics");
  if (d.has(flag::kHasExtensionType)) sections.push_back("extension_type");
  if (d.has(flag::kHasCompositeMember)) sections.push_back("composite_member");
  std::string listed =
      sections.empty() ? "none" : absl::StrJoin(sections, ", ");
  if (!sections.empty() && !d.layout_parsed) {
    absl::StrAppend(&listed, " (not parsed)");
  }
  Field(&out, "sections", listed);
  if (d.layout_parsed) {
    if (d.has(flag::kHasShard)) {
      Field(&out, "shard",
            absl::StrCat(
                "parent_shape ", ShapeText({d.shard.parent_shape, d.rank}),
                ", shard_offset ", ShapeText({d.shard.shard_offset, d.rank})));
    }
    if (d.has(flag::kHasStatistics)) {
      Field(&out, "statistics", StatisticsText(d.statistics));
    }
    if (d.has(flag::kHasExtensionType)) {
      Field(&out, "extension type", ExtensionTypeText(d.extension_type));
    }
    if (d.has(flag::kHasCompositeMember)) {
      const uint8_t role = d.composite_member.member_role;
      Field(&out, "composite member",
            absl::StrCat(role == 0x00   ? "correction"
                         : role == 0x01 ? "base"
                                        : "unknown",
                         " (", Hex2(role), ")"));
    }
  }
  return out;
}

}  // namespace

int RunInspect(absl::Span<const std::string> args, std::ostream& out,
               std::ostream& err) {
  absl::StatusOr<CommandArgs> parsed =
      ParseCommandArgs(args, /*allow_json=*/true);
  if (!parsed.ok()) {
    return UsageError("inspect", parsed.status().message(), err);
  }
  if (parsed->help) {
    PrintCommandHelp("inspect", out);
    return kExitOk;
  }

  const ParseOptions& options = parsed->options;
  // The decoder holds a whole TensorDescriptor (~19 KiB): keep it on the
  // heap, and reuse it for every file.
  auto decoder = std::make_unique<DescriptorDecoder>(options);

  int exit_code = kExitOk;
  bool first = true;
  for (const std::string& file : parsed->files) {
    // Opened once and read only as far as its descriptor needs (a .hrry
    // file is mapped instead).
    DescriptorRead read;
    absl::StatusOr<InputKind> kind = ReadInput(file, decoder.get(), &read);
    if (kind.ok() && *kind == InputKind::kHrry) {
      exit_code = std::max(exit_code,
                           InspectHrry(file, options, parsed->json, out, err));
      continue;
    }
    if (!kind.ok()) {
      out.flush();  // keep stdout and stderr in order on a terminal
      err << "hurray inspect: " << TerminalSafe(file) << ": "
          << TerminalSafe(kind.status().message()) << "\n";
      exit_code = std::max(exit_code, kExitError);
      continue;
    }
    // Only the first descriptor of the file is decoded; the rest (data
    // buffers, ...) is neither read nor looked at.
    const Rejection& r = read.rejection;
    if (!r.ok()) exit_code = std::max(exit_code, kExitRejected);
    if (parsed->json) {
      out << JsonLine(file, r, decoder->descriptor());
    } else {
      if (!first) out << "\n";
      out << TextSummary(file, read.file_size, r, decoder->descriptor());
    }
    first = false;
  }
  out.flush();
  return exit_code;
}

}  // namespace hurray::tools
