#include "tools/command_util.h"

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace hurray::tools {
namespace {

absl::Status TooLarge(size_t max_bytes, absl::string_view size_text) {
  const std::string limit = max_bytes % (size_t{1} << 20) == 0
                                ? absl::StrCat(max_bytes >> 20, " MiB")
                                : absl::StrCat(max_bytes, " bytes");
  return absl::ResourceExhaustedError(absl::StrCat(
      "file is larger than ", limit, size_text, "; refusing to read it"));
}

}  // namespace

void PrintUsage(std::ostream& os) {
  os << R"(Usage: hurray <command> [options] FILE...

Commands:
  inspect [--json] [--permissive] [--agree KIND=VALUE]... FILE...
      Decode the tensor descriptor at the start of each FILE and print its
      fields: a readable summary, or with --json one JSON object per line.
  validate [--permissive] [--agree KIND=VALUE]... FILE...
      Print one line per FILE: "FILE: OK" or
      "FILE: <RULE-ID> at byte <offset>: <message>".
  dequant [--json] [--permissive] [--agree KIND=VALUE]... FILE -o OUT
          [--format npy|safetensors|f32] [--dtype T]
      FILE holds one quantized tensor in the streaming format (descriptor,
      then its buffers back to back); write it dequantized to OUT in logical
      row-major order (a .npy file by default; safetensors: one tensor named
      after FILE's stem; see "Outputs" below). A layout other than
      row-major is read back in that order from its data buffer, held in
      memory up to 24 MiB, else copied to a hidden temp beside OUT (removed
      at the end): any size in bounded memory.
  pack -o OUT.hrry [--unsorted] [--no-crc] [--kv KEY=VALUE]... NAME=STREAM...
  pack -o OUT.hrry --sample
      Write a .hrry file from tensors in the streaming format (one tensor
      per STREAM is named NAME; several are NAME.0, NAME.1, ...), or the
      built-in sample model (all five quantization schemes).
  convert SRC -o OUT.hrry [--kv KEY=VALUE]... [--quantize SCHEME]
          [--skip PATTERN]... [--requantize SCHEME]
      Convert a safetensors or GGUF file (told apart by its magic) to
      .hrry, losslessly: every tensor keeps its element type and values
      (GGUF Q8_0, Q4_0 and MXFP4 become per-block affine and MXFP tensors
      that dequantize to ggml's values; other GGUF types are refused);
      metadata goes to the KV section, --kv adds or replaces entries.
      --quantize SCHEME quantizes float tensors of rank >= 2 (not matching
      a --skip glob), round to nearest; --requantize SCHEME re-quantizes
      GGUF Q4_1/Q5_0/Q5_1/Q8_1. SCHEME: per_tensor:int8|uint8,
      per_channel:int8|uint8, per_block:int8|uint8|int4|uint4[:BLOCK],
      nf4[:BLOCK], mxfp:e2m1|e4m3|e5m2[:BLOCK]. Prints max abs/RMS errors.
  serve FILE.hrry [--port P] [--bind ADDR] [--permissive] [--idle-timeout S]
        [--max-message-size N] [--hello-timeout S] [--message-timeout S]
        [--max-connections N] [--max-connections-per-peer N]
      Serve the tensors of FILE.hrry over the Hurray network protocol, to
      many clients at once (127.0.0.1:7420 by default; --port 0 picks a free
      port). Prints "listening on ADDR:PORT"; SIGINT/SIGTERM stop it.
  ingest SOURCE [--dequant OUT_DIR [--format npy|safetensors|f32]
         [--dtype T] [--max-dense-bytes N] [--sparse dense|keep]]
         [--resume STATE_FILE] [--permissive]
         [--agree KIND=VALUE]... [--json] [--chunk-size N] [--idle-timeout S]
         [--connect-timeout S] [--total-timeout S] [--ca-file PEM]
         [--header 'Name: value']... [--insecure] [--tensors a,b,...]
         [--max-open-streams N] [--max-spool-bytes N]
      Read SOURCE (a .hrry file or bare stream, - for stdin,
      tcp://HOST:PORT[/name1,name2,...], or https://HOST[:PORT]/PATH and,
      only when the URL says so, http://) validating as bytes arrive; with
      --dequant write each tensor, in logical row-major order whatever its
      layout, to OUT_DIR/<name>.npy (see "Outputs" below); with --resume
      continue an interrupted run (over HTTP with Range and If-Range: an
      object that changed is refused). Prints a summary table.
      --idle-timeout S: fail when no byte arrives for S seconds (any source
      that can stall: pipes, FIFOs, devices, sockets; default 60 for tcp://
      and http(s)://, none for the others); --connect-timeout S (default
      10); --total-timeout S (http(s)://, default none). HTTPS verifies the
      server's certificate and name against the system store; --ca-file
      adds a trust anchor; --insecure turns verification off (warned).
      --tensors a,b: only these tensors of a .hrry (a named composite head
      brings its members): a file is read over mmap and a URL with range
      requests (the index first, then only their bytes); a server without
      ranges, or stdin, is read once whole (said on stderr). A name not in
      the index: exit 2, nothing written.
      tcp:// only: --max-open-streams N (default 16, at most 1024) answers
      in progress at once and --max-spool-bytes N (default 67108864, at
      most 17179869184) bytes held in memory over all of them, when a
      server multiplexes its answers (LIMIT-OPEN-STREAMS and
      LIMIT-SPOOL-BYTES, exit 1).
  help
      Print this help.

Options:
  --json         inspect: one JSON object per file, one per line
  --permissive   decode in permissive mode (strict-only rules relaxed)
  --agree KIND=VALUE
                 accept a private value agreed with the producer, in strict
                 mode too: KIND is type, device, memory-class or scheme with
                 a tag 0xF0-0xFE, or layout-id with an extension layout id
  --             treat every following argument as a FILE
  -h, --help     print this help

Outputs (ingest --dequant, dequant):
  --format npy   (default) a NumPy .npy file per tensor (format 1.0/2.0,
                 numpy.load reads it as it is), with the tensor's shape and
                 its own type where numpy has it (float16/32/64, int8..uint64,
                 bool, complex64/128); float128 as float64; bfloat16, float8,
                 float6, float4, e8m0, the sub-byte integers and every
                 quantized tensor as float32.
  --format safetensors
                 ingest only: every tensor in OUT_DIR/model.safetensors
                 (written at the end, through a temp: bounded memory), under
                 its name (tensor_<i> when it has none), its own type where
                 safetensors has it (as npy, plus bfloat16 and float8
                 e4m3/e5m2; complex as real pairs), the .hrry KV section as
                 __metadata__ (values as text, arrays as JSON). Not with
                 --resume.
  --format f32   raw little-endian float32 <name>.f32 files, no header.
  --dtype float32|float16|bfloat16
                 write every tensor as that type (rounded to nearest even);
                 npy has no bfloat16 (refused), f32 is float32 only. A
                 complex tensor written as a real type gets a trailing
                 dimension of 2 (real, imaginary).
  Every dense layout (row-major, column-major, strided, tiled, Morton,
  Hilbert) is written in logical row-major order; a layout other than
  row-major spools its data buffer (in OUT_DIR above 24 MiB) and reads it
  back in that order, in bounded memory. Quantized tensors are dequantized
  whatever their layout. Sparse tensors (COO, CSR, CSC, CSF) are written
  dense (zeros where nothing is stored) when the dense form takes at most
  --max-dense-bytes N bytes (default 1073741824). Larger ones, and every
  sparse tensor with --sparse keep, are written as their arrays instead:
  <name>.values (the stored values, converted or dequantized, in stored
  order) and the uint64 index arrays as stored: COO <name>.indices [nnz,
  rank]; CSR and CSC <name>.indices and <name>.indptr (scipy's names; CSC:
  row indices and column pointers); CSF <name>.pos_L and <name>.crd_L for
  each level L (.u64 raw files with --format f32; tensors of the same
  names in model.safetensors). The summary gives the dense shape. With
  --resume too: the state records each array and its CRC-32C.
  Block-paged tensors are written as their logical dense tensor [tokens,
  heads, head_dim], the sequences one after the other; the format does not
  carry each sequence's token count, so when the pages do not determine
  them (partial last pages of several sequences) every slot of every
  logical page is written, [pages x page_size, heads, head_dim], and the
  verdict says so. A composite head has no output of its own (its members
  have theirs). The summary's verdict says "no output: <why>" for a tensor
  without one (extension types and schemes).

For inspect and validate, a FILE starting with "HRRYFILE" is a whole .hrry
file: header, tensors, KV section, index and trailer are checked and its
tensors listed. Any other FILE holds one encoded descriptor; bytes after its
descriptor_length (e.g. data buffers) are ignored and not even read: a FILE
is read only as far as its descriptor needs (at most the decoder's limit,
16 MiB), so pipes and devices work too (.hrry files are mapped, not read).

Exit status: 0 if every descriptor is valid, 1 if any was rejected,
2 on a usage error or when a file cannot be read.
)";
}

// Applies one --agree KIND=VALUE to the private-value agreements.
absl::Status ParseAgreement(absl::string_view spec, PrivateAgreements* agreed) {
  const size_t eq = spec.find('=');
  const absl::string_view kind = spec.substr(0, eq);
  // VALUE is decimal, or hexadecimal with a 0x prefix.
  uint64_t value = 0;
  const absl::string_view text =
      eq == absl::string_view::npos ? "" : spec.substr(eq + 1);
  const bool hex = absl::StartsWithIgnoreCase(text, "0x");
  if (text.empty() || (hex ? !absl::SimpleHexAtoi(text.substr(2), &value)
                           : !absl::SimpleAtoi(text, &value))) {
    return absl::InvalidArgumentError(
        absl::StrCat("--agree needs KIND=VALUE, got '", spec, "'"));
  }
  if (kind == "layout-id") {
    if (agreed->layout_id_count >= agreed->layout_ids.size()) {
      return absl::InvalidArgumentError("too many --agree layout-id values");
    }
    agreed->layout_ids[agreed->layout_id_count++] = value;
    return absl::OkStatus();
  }
  uint16_t* set = kind == "type"           ? &agreed->type_tags
                  : kind == "device"       ? &agreed->device_tags
                  : kind == "memory-class" ? &agreed->memory_classes
                  : kind == "scheme"       ? &agreed->scheme_tags
                                           : nullptr;
  if (set == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown --agree kind '", kind, "'"));
  }
  if (value < 0xF0 || value > 0xFE) {
    return absl::InvalidArgumentError(
        absl::StrCat("--agree ", kind, " needs a private tag 0xF0-0xFE"));
  }
  *set |= static_cast<uint16_t>(1u << (value - 0xF0));
  return absl::OkStatus();
}

absl::StatusOr<CommandArgs> ParseCommandArgs(absl::Span<const std::string> args,
                                             bool allow_json) {
  CommandArgs parsed;
  bool options_done = false;
  bool expect_agreement = false;
  for (const std::string& arg : args) {
    if (expect_agreement) {
      absl::Status s = ParseAgreement(arg, &parsed.options.agreed);
      if (!s.ok()) return s;
      expect_agreement = false;
      continue;
    }
    if (options_done || arg.size() < 2 || arg[0] != '-') {
      if (!options_done && arg == "-") {
        return absl::InvalidArgumentError(
            "reading standard input ('-') is not supported; pass /dev/stdin");
      }
      parsed.files.push_back(arg);
    } else if (arg == "--") {
      options_done = true;
    } else if (arg == "--permissive") {
      parsed.options.mode = Mode::kPermissive;
    } else if (arg == "--agree") {
      expect_agreement = true;
    } else if (arg == "--json" && allow_json) {
      parsed.json = true;
    } else if (arg == "--help" || arg == "-h") {
      parsed.help = true;
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown option '", arg, "'"));
    }
  }
  if (expect_agreement) {
    return absl::InvalidArgumentError("--agree needs KIND=VALUE");
  }
  if (parsed.files.empty() && !parsed.help) {
    return absl::InvalidArgumentError("no input files");
  }
  return parsed;
}

void PrintCommandUsage(absl::string_view command, std::ostream& os) {
  std::ostringstream full;
  PrintUsage(full);
  // The command's entry of the "Commands:" list: its synopsis lines (two
  // spaces, then the command's name) and the indented lines under them.
  const std::string head = absl::StrCat("  ", command, " ");
  bool in_entry = false, any = false;
  for (absl::string_view line : absl::StrSplit(full.str(), '\n')) {
    if (absl::StartsWith(line, head)) {
      os << (any ? "       hurray " : "Usage: hurray ") << line.substr(2)
         << "\n";
      in_entry = any = true;
    } else if (in_entry && absl::StartsWith(line, "    ")) {
      os << line << "\n";
    } else {
      in_entry = false;
    }
  }
  if (!any) PrintUsage(os);
}

int UsageError(absl::string_view command, absl::string_view message,
               std::ostream& err) {
  err << "hurray " << command << ": " << message << "\n\n";
  PrintCommandUsage(command, err);
  err << "\n'hurray help' lists every command and option.\n";
  return kExitError;
}

absl::StatusOr<std::vector<uint8_t>> ReadInputFile(const std::string& path,
                                                   size_t max_bytes) {
  // Refuse directories and oversized regular files before reading anything.
  // Other file kinds (pipes, /dev/stdin) have no size up front; the read
  // loop below enforces the limit for them.
  std::error_code ec;
  const std::filesystem::file_status st = std::filesystem::status(path, ec);
  if (ec) {
    return absl::ErrnoToStatus(ec.value(), "cannot open");
  }
  if (std::filesystem::is_directory(st)) {
    return absl::ErrnoToStatus(EISDIR, "cannot read");
  }
  if (std::filesystem::is_regular_file(st)) {
    const uintmax_t size = std::filesystem::file_size(path, ec);
    if (!ec && size > max_bytes) {
      return TooLarge(max_bytes, absl::StrCat(" (", size, " bytes)"));
    }
  }

  errno = 0;
  std::ifstream in(path, std::ios::binary);
  if (!in.is_open()) {
    return absl::ErrnoToStatus(errno != 0 ? errno : EIO, "cannot open");
  }
  std::vector<uint8_t> bytes;
  char chunk[1 << 16];
  while (in) {
    in.read(chunk, sizeof(chunk));
    const size_t got = static_cast<size_t>(in.gcount());
    if (got > max_bytes - bytes.size()) {
      return TooLarge(max_bytes, "");
    }
    bytes.insert(bytes.end(), chunk, chunk + got);
  }
  if (in.bad()) {
    return absl::ErrnoToStatus(errno != 0 ? errno : EIO, "read error");
  }
  return bytes;
}

}  // namespace hurray::tools
