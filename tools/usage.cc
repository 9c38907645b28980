#include "tools/usage.h"

#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "hurray_version.h"

namespace hurray::tools {
namespace {

// What --permissive and --agree mean, for the commands that take them.
constexpr char kModeOptions[] =
    R"(  --permissive   decode in permissive mode (strict-only rules relaxed)
  --agree KIND=VALUE
                 accept a private value agreed with the producer, in strict
                 mode too: KIND is type, device, memory-class or scheme with
                 a tag 0xF0-0xFE, or layout-id with an extension layout id
                 (repeatable)
)";

// What `dequant -o` and `ingest --dequant` write (docs/outputs.md says more).
constexpr char kOutputs[] = R"(
Outputs:
  --format npy   (default) a NumPy .npy file per tensor (numpy.load reads it
                 as it is), in the tensor's own type where numpy has it
                 (float16/32/64, int8..uint64, bool, complex64/128); float128
                 as float64; bfloat16, float8/6/4, e8m0, the sub-byte
                 integers and every quantized tensor as float32.
  --format safetensors
                 one safetensors file (ingest: OUT_DIR/model.safetensors,
                 the .hrry KV section as __metadata__; not with --resume),
                 keeping bfloat16 and float8 e4m3/e5m2 too.
  --format f32   raw little-endian float32 <name>.f32 files, no header.
  --dtype float32|float16|bfloat16
                 write every tensor as that type (round to nearest even from
                 the exact value; npy has no bfloat16).
  Every dense layout is written in logical row-major order, in bounded
  memory; sparse tensors are written dense up to --max-dense-bytes N
  (default 1 GiB), else (and with --sparse keep) as their value and index
  arrays; block-paged tensors as [tokens, heads, head_dim]. See
  docs/outputs.md.
)";

constexpr char kExitStatus[] = R"(
Exit status: 0 if every descriptor is valid, 1 if any was rejected (the rule
id and byte offset are printed), 2 on a usage error or when a file cannot be
read or written.
)";

struct Page {
  const char* name;
  // Synopsis lines, each starting with the command's name; a line starting
  // with a space continues the one above.
  const char* synopsis;
  const char* summary;  // one line, for the overview
  const char* details;  // what it does and its own options
  bool mode_options;    // takes --permissive and --agree
  bool outputs;         // writes dequantized outputs
};

constexpr Page kPages[] = {
    {"inspect",
     "inspect [--json] [--permissive] [--agree KIND=VALUE]... FILE...",
     "print the fields of descriptors, or the tensors of a .hrry file",
     R"(Decode the tensor descriptor at the start of each FILE and print its fields:
a readable summary, or with --json one JSON object per line. A FILE starting
with "HRRYFILE" is a whole .hrry file: header, tensors, KV section, index and
trailer are checked and its tensors listed (the file is mapped, not read).
Any other FILE holds one encoded descriptor; bytes after it (its data
buffers) are not read, so pipes and devices work too.

Options:
  --json         one JSON object per file, one per line
)",
     true, false},
    {"validate", "validate [--permissive] [--agree KIND=VALUE]... FILE...",
     "check descriptors or .hrry files: OK, or the rule broken and where",
     R"(Print one line per FILE: "FILE: OK" or "FILE: <RULE-ID> at byte <offset>:
<message>". FILE is read as `inspect` reads it.

Options:
)",
     true, false},
    {"dequant",
     "dequant [--json] [--permissive] [--agree KIND=VALUE]... FILE -o OUT\n"
     "        [--format npy|safetensors|f32] [--dtype T]",
     "dequantize one tensor in the streaming format to .npy / safetensors",
     R"(FILE holds one quantized tensor in the streaming format (its descriptor,
then its buffers back to back); write it dequantized to OUT in logical
row-major order (safetensors: one tensor named after FILE's stem). A layout
other than row-major is read back in that order from its data buffer, held
in memory up to 24 MiB, else copied to a hidden temp beside OUT.

Options:
  -o OUT         the output file
  --json         print the result as one JSON object
)",
     true, true},
    {"pack",
     "pack -o OUT.hrry [--unsorted] [--no-crc] [--kv KEY=VALUE]... "
     "NAME=STREAM...\n"
     "pack -o OUT.hrry --sample",
     "write a .hrry file from tensor streams, or the built-in sample model",
     R"(Write a .hrry file from tensors in the streaming format (one tensor per
STREAM is named NAME; several are NAME.0, NAME.1, ...), or with --sample the
built-in sample model (one tensor per quantization scheme).

Options:
  -o OUT.hrry    the output file
  --unsorted     keep the index in input order (default: sorted by name)
  --no-crc       write no CRC-32C of the tensors
  --kv KEY=VALUE add a KV metadata entry (repeatable)
  --permissive   read the streams in permissive mode
)",
     false, false},
    {"convert",
     "convert SRC -o OUT.hrry [--kv KEY=VALUE]... [--quantize SCHEME]\n"
     "        [--skip PATTERN]... [--requantize SCHEME] [--compact-kquants] "
     "[--json]\n"
     "        [--data-alignment BYTES]",
     "convert a safetensors or GGUF file to .hrry",
     R"(Convert a safetensors or GGUF file (told apart by its magic) to .hrry,
losslessly: every tensor keeps its element type and values (GGUF Q8_0, Q4_0,
MXFP4, Q6_K and Q3_K become per-block affine and MXFP tensors that
dequantize to ggml's values; Q4_K, Q5_K and Q2_K are kept within a stated
bound, marked approx; other GGUF types are refused); metadata goes to the KV
section. SRC may also be a model.safetensors.index.json (or a directory
holding one), or the first part of a split GGUF (m-00001-of-0000N.gguf):
its shards or parts become one file. Prints a table of the tensors
(exact or approx; max abs and RMS error when approximate).

Options:
  -o OUT.hrry    the output file
  --kv KEY=VALUE add or replace a KV entry (repeatable)
  --quantize SCHEME
                 quantize float tensors of rank >= 2, round to nearest
  --skip PATTERN keep tensors whose name matches this glob as they are
  --requantize SCHEME
                 re-quantize GGUF Q4_1/Q5_0/Q5_1/Q8_1 tensors (no exact
                 form) and Q4_K/Q5_K/Q2_K (instead of their uint8 form)
                 from ggml's values; the table gives the error against them
  --compact-kquants
                 GGUF Q4_K / Q2_K as uint4 / uint2 codes (the source's
                 width): within half of ggml's step, not 1/32 (Q4_K)
  --data-alignment BYTES
                 start every data buffer at a multiple of BYTES, a power
                 of two from 4096 (the default) to 2097152: up to
                 BYTES - 1 zero bytes of padding per buffer; on ext4,
                 2097152 makes the kernel's copy of a tensor whose source
                 bytes start on a 4096-byte boundary cheaper (about 0.7x
                 the system time), nothing else
  --json         one JSON object: each tensor's source type, Hurray type,
                 scheme, exact or not and its errors, then the totals
  SCHEME: per_tensor:int8|uint8, per_channel:int8|uint8,
  per_block:int8|uint8|int4|uint4[:BLOCK], nf4[:BLOCK],
  mxfp:e2m1|e4m3|e5m2[:BLOCK]. See stream/convert/README.md.
)",
     false, false},
    {"serve",
     "serve FILE.hrry [--port P] [--bind ADDR] [--permissive] "
     "[--idle-timeout S]\n"
     "      [--max-message-size N] [--hello-timeout S] [--message-timeout "
     "S]\n"
     "      [--max-connections N] [--max-connections-per-peer N]",
     "serve a .hrry file's tensors over the Hurray network protocol",
     R"(Serve the tensors of FILE.hrry over the Hurray network protocol, to many
clients at once. Prints "listening on ADDR:PORT" once ready; SIGINT and
SIGTERM stop it.

Options (defaults):
  --bind ADDR    127.0.0.1
  --port P       7420 (0 picks a free port)
  --idle-timeout S              30
  --max-message-size N          1048576
  --hello-timeout S             5
  --message-timeout S           5 (a client message must arrive whole that
                                long after its first byte)
  --max-connections N           the descriptor limit less a reserve
  --max-connections-per-peer N  256
  --permissive                  read the file and the clients' messages in
                                permissive mode (strict-only rules relaxed)
  When full, a new connection displaces one still waiting for input, else
  gets ERROR and is closed (docs/network.md).
)",
     false, false},
    {"ingest",
     "ingest SOURCE [--dequant OUT_DIR [--format npy|safetensors|f32]\n"
     "       [--dtype T] [--max-dense-bytes N] [--sparse dense|keep]]\n"
     "       [--resume STATE_FILE] [--permissive] [--agree KIND=VALUE]...\n"
     "       [--json] [--chunk-size N] [--idle-timeout S] "
     "[--connect-timeout S]\n"
     "       [--total-timeout S] [--connections N] [--ca-file PEM]\n"
     "       [--header 'Name: value']...\n"
     "       [--insecure] [--tensors a,b,...] [--max-open-streams N]\n"
     "       [--max-spool-bytes N]",
     "validate (and dequantize) each tensor of a file, stream or URL",
     R"(Read SOURCE validating as bytes arrive, and print a summary table (name,
shape, type, scheme, bytes, verdict). SOURCE is a .hrry file or a bare
stream, - for stdin, tcp://HOST:PORT[/name1,name2,...] (the network
protocol), or https://HOST[:PORT]/PATH (and http:// when the URL says so).

Options:
  --dequant OUT_DIR
                 write each tensor, in logical row-major order whatever its
                 layout, to OUT_DIR/<name>.npy (see Outputs)
  --resume STATE_FILE
                 continue an interrupted run (over HTTP with Range and
                 If-Range: an object that changed is refused)
  --json         the summary as JSON
  --chunk-size N bytes read at a time
  --tensors a,b  only these tensors of a .hrry (a named composite head
                 brings its members): a file is read over mmap, a URL with
                 range requests (the index first, then only their bytes); a
                 name not in the index: exit 2, nothing written
  --idle-timeout S
                 fail when no byte arrives for S seconds (default 60 for
                 tcp:// and http(s)://, none for the others)
  --connect-timeout S   (default 10)
  --total-timeout S     http(s):// only (default none)
  --connections N       http(s):// only: N range requests at once, each on
                 its own kept-alive connection, fed in order (default 1,
                 at most 32; memory at most 2 x N x 1 MiB)
  --ca-file PEM  add a trust anchor (HTTPS verifies the server's certificate
                 and name against the system store)
  --insecure     turn certificate verification off (warned)
  --header 'Name: value'
                 add a request header (repeatable); credentials are dropped
                 when a redirect leaves the origin
  --max-open-streams N  tcp:// only: answers in progress at once (default
                 16, at most 1024; LIMIT-OPEN-STREAMS)
  --max-spool-bytes N   tcp:// only: bytes held over all of them (default
                 67108864, at most 17179869184; LIMIT-SPOOL-BYTES)
  --max-dense-bytes N, --sparse dense|keep
                 how sparse tensors are written (see Outputs)
)",
     true, true},
};

const Page* FindPage(absl::string_view command) {
  for (const Page& page : kPages) {
    if (command == page.name) return &page;
  }
  return nullptr;
}

// "Usage: hurray CMD ..." and "       hurray CMD ..." for each form; a
// continuation line is indented under the form it continues.
void PrintSynopsis(const Page& page, std::ostream& os) {
  bool first = true;
  for (absl::string_view line : absl::StrSplit(page.synopsis, '\n')) {
    if (absl::StartsWith(line, " ")) {
      os << "             " << line << "\n";
    } else {
      os << (first ? "Usage: hurray " : "       hurray ") << line << "\n";
      first = false;
    }
  }
}

}  // namespace

void PrintVersion(std::ostream& os) {
  os << "hurray " << HURRAY_VERSION_STRING << "\n";
}

void PrintUsage(std::ostream& os) {
  os << "hurray " << HURRAY_VERSION_STRING
     << ": reads, checks and moves Hurray tensors\n\n"
        "Usage: hurray <command> [options] ARGS...\n"
        "       hurray <command> --help   (that command's page)\n"
        "       hurray --version\n\n"
        "Commands:\n";
  for (const Page& page : kPages) {
    for (absl::string_view line : absl::StrSplit(page.synopsis, '\n')) {
      os << "  " << line << "\n";
    }
    os << "      " << page.summary << "\n";
  }
  os << "  help [COMMAND]\n      this overview, or a command's page\n"
     << kExitStatus
     << "\nMore: docs/cli.md (every option), docs/outputs.md (what "
        "--dequant writes).\n";
}

bool PrintCommandHelp(absl::string_view command, std::ostream& os) {
  const Page* page = FindPage(command);
  if (page == nullptr) return false;
  PrintSynopsis(*page, os);
  os << "\n" << page->details;
  if (page->mode_options) os << kModeOptions;
  os << "  -h, --help     print this page\n";
  if (page->outputs) os << kOutputs;
  os << kExitStatus;
  return true;
}

void PrintCommandUsage(absl::string_view command, std::ostream& os) {
  const Page* page = FindPage(command);
  if (page == nullptr) {
    PrintUsage(os);
    return;
  }
  PrintSynopsis(*page, os);
}

}  // namespace hurray::tools
