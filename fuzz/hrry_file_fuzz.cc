// Fuzz target: the .hrry forward reader (stream/container/hrry_file.h) against
// the random-access reader (stream/container/hrry_mmap.h,
// HrryFile::CopyOf/FromBytes).
//
// Input format (bytes missing at the end read as 0):
//   byte 0   bit 0 permissive mode (else strict)
//            bit 1 vectors::AgreedOptions (private type 0xF3 and one
//                  extension layout id agreed)
//            bit 2 FileOptions::reject_kv_without_flag (FILE-TRL-09)
//            bit 3 FileOptions::reject_padding_after_head (FILE-REG-04)
//            bit 4 single-fault mode (below)
//            bit 5 the fault is a truncation (else a changed byte)
//            bit 6 also write the file to disk and HrryFile::Open it
//            bit 7 also feed the whole file, then FailSource()
//   byte 1-4 fault position (little-endian, modulo the file size)
//   byte 5   XOR mask of the changed byte (0 reads as 0x01)
//   byte 6-7 seed of the forward reader's chunk sizes
//   rest     the file.
//
// Every file (the input, and in single-fault mode the damaged copy) is read
// by the forward reader in one shot and in pseudo-random chunks (each a heap
// block of exactly its size, freed after Feed), and by the random-access
// reader with and without the region walk. Properties:
//   * the forward reader gives the same verdict, rule id, offset and events
//     in one shot and in chunks; its sink checks the TensorSink contract
//     (fuzz/checking_sink.h): OnTensorEnd only once all of a tensor's bytes
//     arrived, pieces in order, contiguous, within byte_size, inside the
//     chunk; OnEndOfStream only for an accepted file;
//   * both readers accept the same files (verify_region on: they check the
//     same rules, so a file one accepts and the other refuses is wrongly
//     judged by one of them); without the walk, HrryFile checks each
//     indexed tensor but not the region, so in strict mode (where the index
//     must name exactly the region's tensors, FILE-IDX-15) it accepts
//     whatever the forward reader accepts;
//   * on an accepted file they agree on its content: every tensor the
//     forward reader saw, through its index entry, has the same extent,
//     descriptor and buffer bytes in HrryFile; index and KV sizes agree;
//   * strict mode: HrryWriter writes an accepted file again from what the
//     forward reader reported (names, descriptors, buffers, extension data,
//     KV entries, header choices) without refusing anything, and both
//     readers accept the new file with the same content;
//   * HrryFile::Open over the file on disk gives FromBytes' verdict;
//   * FailSource() after the last byte is STREAM-IO at the file size,
//     unless the file was already rejected;
//   * single-fault mode, as stream/README.md documents the agreement: when
//     both readers accept the input, the copy with one fault (one byte
//     XORed, or the file cut short) gets the same verdict, and when
//     rejected the same rule id and the same offset from both. Inputs with
//     several faults only get the acceptance check above (the readers may
//     then name different faults: the random-access reader reads the
//     trailer first).
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "fuzz/checking_sink.h"
#include "fuzz/fuzz_util.h"
#include "parser/options.h"
#include "parser/rules.h"
#include "stream/container/file_format.h"
#include "stream/container/file_index.h"
#include "stream/container/hrry_file.h"
#include "stream/container/hrry_mmap.h"
#include "stream/container/hrry_writer.h"
#include "stream/container/kv_builder.h"
#include "tests/vectors.h"

namespace hurray::fuzz {
namespace {

constexpr size_t kHeaderSize = 8;
constexpr size_t kMaxChunk[4] = {1, 7, 64, 4096};

struct Forward {
  stream::container::FileState state;
  Rejection rejection;
  CheckingSink sink;
};

// Forward reader over `file` in chunks from `rng` (chunk 0: one shot).
std::unique_ptr<stream::container::HrryForwardReader> ReadForward(
    absl::Span<const uint8_t> file,
    const stream::container::FileOptions& options, size_t max_chunk,
    std::mt19937* rng, Forward* out) {
  auto reader = std::make_unique<stream::container::HrryForwardReader>(
      options, &out->sink);
  size_t at = 0;
  while (at < file.size() &&
         reader->state() == stream::container::FileState::kNeedMore) {
    const size_t len =
        max_chunk == 0 ? file.size()
                       : std::min(file.size() - at, 1 + (*rng)() % max_chunk);
    std::unique_ptr<uint8_t[]> block(new uint8_t[len]);
    std::memcpy(block.get(), file.data() + at, len);
    const absl::Span<const uint8_t> chunk(block.get(), len);
    out->sink.SetChunk(chunk, at);
    const stream::container::FileState s = reader->Feed(chunk);
    HURRAY_FUZZ_CHECK(s == reader->state());
    if (s == stream::container::FileState::kNeedMore) {
      HURRAY_FUZZ_CHECK(reader->position() == at + len);
    }
    at += len;
  }
  out->sink.SetChunk({}, file.size());
  out->state = reader->Finish();
  HURRAY_FUZZ_CHECK(out->state != stream::container::FileState::kNeedMore);
  HURRAY_FUZZ_CHECK((out->state == stream::container::FileState::kDone) ==
                    reader->rejection().ok());
  HURRAY_FUZZ_CHECK(out->sink.ended() ==
                    (out->state == stream::container::FileState::kDone));
  out->rejection = reader->rejection();
  HURRAY_FUZZ_CHECK(reader->Finish() == out->state);
  HURRAY_FUZZ_CHECK(reader->rejection() == out->rejection);
  return reader;
}

bool SameExtent(const stream::container::TensorExtent& a,
                const stream::container::TensorExtent& b) {
  return a.descriptor_offset == b.descriptor_offset &&
         a.descriptor_length == b.descriptor_length &&
         a.buffer_count == b.buffer_count && a.data_offset == b.data_offset &&
         a.data_length == b.data_length;
}

// Both readers accepted `file`: they must agree on what it holds.
void CompareContent(const stream::container::HrryForwardReader& forward,
                    const CheckingSink& sink,
                    const stream::container::HrryFile& file) {
  HURRAY_FUZZ_CHECK(forward.index().size() == file.index().size());
  HURRAY_FUZZ_CHECK(forward.kv().entries().size() ==
                    file.kv().entries().size());
  const absl::Span<const stream::container::TensorExtent> tensors =
      forward.tensors();
  HURRAY_FUZZ_CHECK(tensors.size() == sink.tensors().size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    const CheckingSink::Tensor& seen = sink.tensors()[i];
    HURRAY_FUZZ_CHECK(seen.complete);
    const stream::container::IndexEntry* named = forward.entry_of_tensor(i);
    if (named == nullptr) continue;  // permissive: no entry names it
    const stream::container::IndexEntry* e = file.Find(named->name);
    HURRAY_FUZZ_CHECK(e != nullptr);
    const stream::container::TensorExtent* extent = file.extent(*e);
    HURRAY_FUZZ_CHECK(extent != nullptr);
    HURRAY_FUZZ_CHECK(SameExtent(*extent, tensors[i]));
    auto d = std::make_unique<TensorDescriptor>();
    HURRAY_FUZZ_CHECK(file.ReadDescriptor(*e, d.get()).ok());
    HURRAY_FUZZ_CHECK(*d == *seen.descriptor);
    for (uint32_t b = 0; b < d->buffer_count; ++b) {
      const absl::StatusOr<absl::Span<const uint8_t>> bytes =
          file.Buffer(*e, *d, b);
      // BUF-19: a view whose address misses the declared alignment. The
      // files compared here sit at a 2 MiB boundary (HrryFile::CopyOf,
      // Open), so only a buffer whose file offset misses its alignment
      // (FILE-REG-02, strict-only) or an alignment above 2 MiB gets it.
      if (!bytes.ok() && RuleIdOf(bytes.status()) == "BUF-19") {
        const uint64_t align = d->buffers[b].alignment;
        HURRAY_FUZZ_CHECK(align > stream::container::kMapAlignment ||
                          *OffsetOf(bytes.status()) % align != 0);
        continue;
      }
      HURRAY_FUZZ_CHECK(bytes.ok());
      HURRAY_FUZZ_CHECK(bytes->size() == seen.buffers[b].size());
      HURRAY_FUZZ_CHECK(bytes->empty() ||
                        std::memcmp(bytes->data(), seen.buffers[b].data(),
                                    bytes->size()) == 0);
    }
  }
  // Members of every head: no crash, and only for heads.
  for (const stream::container::IndexEntry* e : file.InFileOrder()) {
    (void)file.Members(*e);
  }
}

// Adds `e` to `kv` with the adder of its type.
absl::Status AddKv(const stream::container::KvEntry& e,
                   stream::container::KvBuilder* kv) {
  using stream::container::KvType;
  const stream::container::KvValue& v = e.value;
  switch (v.type) {
    case KvType::kString:
      return kv->AddString(e.key, v.str());
    case KvType::kInt64:
      return kv->AddInt64(e.key, v.i64);
    case KvType::kUInt64:
      return kv->AddUInt64(e.key, v.u64);
    case KvType::kFloat64:
      return kv->AddFloat64(e.key, v.f64);
    case KvType::kBool:
      return kv->AddBool(e.key, v.boolean);
    case KvType::kBytes:
      return kv->AddBytes(e.key, v.bytes);
    case KvType::kArray:
      break;
  }
  const std::vector<stream::container::KvValue> items = v.Elements();
  switch (v.element_type) {
    case KvType::kString: {
      std::vector<absl::string_view> x;
      for (const auto& i : items) x.push_back(i.str());
      return kv->AddStringArray(e.key, x);
    }
    case KvType::kInt64: {
      std::vector<int64_t> x;
      for (const auto& i : items) x.push_back(i.i64);
      return kv->AddInt64Array(e.key, x);
    }
    case KvType::kUInt64: {
      std::vector<uint64_t> x;
      for (const auto& i : items) x.push_back(i.u64);
      return kv->AddUInt64Array(e.key, x);
    }
    case KvType::kFloat64: {
      std::vector<double> x;
      for (const auto& i : items) x.push_back(i.f64);
      return kv->AddFloat64Array(e.key, x);
    }
    case KvType::kBool: {
      std::unique_ptr<bool[]> x(new bool[items.size() + 1]);
      for (size_t i = 0; i < items.size(); ++i) x[i] = items[i].boolean;
      return kv->AddBoolArray(e.key,
                              absl::MakeConstSpan(x.get(), items.size()));
    }
    case KvType::kBytes: {
      std::vector<absl::Span<const uint8_t>> x;
      for (const auto& i : items) x.push_back(i.bytes);
      return kv->AddBytesArray(e.key, x);
    }
    case KvType::kArray:
      break;
  }
  return absl::InvalidArgumentError("array of arrays");
}

void Must(const absl::Status& s, const char* what) {
  if (!s.ok()) {
    std::fprintf(stderr, "%s: %s\n", what, s.ToString().c_str());
    HURRAY_FUZZ_CHECK(false);
  }
}

// A file accepted in strict mode, written again by HrryWriter from what the
// forward reader reported (same header choices, names, descriptors,
// buffers, extension-layout data and KV entries): the writer accepts all of
// it, and both readers accept the new file with the same content.
void CheckRewrite(absl::Span<const uint8_t> file,
                  const stream::container::FileOptions& options,
                  const stream::container::HrryForwardReader& forward,
                  const CheckingSink& sink) {
  const stream::container::FileHeader& h = forward.header();
  stream::container::HrryWriterOptions w;
  w.parse = options.parse;
  w.data_buffer_alignment = h.data_buffer_alignment;
  w.first_descriptor_offset = h.first_descriptor_offset;
  w.tensor_count_hint = h.tensor_count_hint;
  w.with_kv = h.has(stream::container::file_flag::kHasKvMetadata) ||
              !forward.kv().entries().empty();
  w.sorted_index = h.has(stream::container::file_flag::kSortedIndex);
  w.index_crc = h.has(stream::container::file_flag::kHasIndexCrc32c);
  std::vector<uint8_t> out;
  auto put = [&out](absl::Span<const uint8_t> b) {
    out.insert(out.end(), b.begin(), b.end());
    return absl::OkStatus();
  };
  stream::container::HrryWriter writer(w);
  Must(writer.Begin(put), "HrryWriter::Begin");
  const absl::Span<const stream::container::TensorExtent> tensors =
      forward.tensors();
  for (size_t i = 0; i < tensors.size(); ++i) {
    const CheckingSink::Tensor& t = sink.tensors()[i];
    const TensorDescriptor& d = *t.descriptor;
    std::vector<absl::Span<const uint8_t>> buffers(t.buffers.begin(),
                                                   t.buffers.end());
    absl::Span<const uint8_t> extension_data;
    if (layout_tag::IsExtension(d.layout_tag)) {
      extension_data = file.subspan(
          tensors[i].descriptor_offset + d.layout.extension_data_offset,
          d.layout.extension_data_length);
    }
    HURRAY_FUZZ_CHECK(forward.entry_of_tensor(i) != nullptr);  // strict
    Must(writer.Add(forward.entry_of_tensor(i)->name, d, buffers, put,
                    extension_data),
         "HrryWriter::Add");
  }
  for (const stream::container::KvEntry& e : forward.kv().entries()) {
    Must(AddKv(e, &writer.kv()), "KvBuilder");
  }
  Must(writer.Finish(put), "HrryWriter::Finish");
  HURRAY_FUZZ_CHECK(writer.bytes_written() == out.size());

  Forward again;
  std::mt19937 rng(1);
  const std::unique_ptr<stream::container::HrryForwardReader> reader =
      ReadForward(out, options, 0, &rng, &again);
  HURRAY_FUZZ_CHECK(again.rejection.ok());
  HURRAY_FUZZ_CHECK(SameEvents(sink, again.sink));
  HURRAY_FUZZ_CHECK(reader->kv().entries().size() ==
                    forward.kv().entries().size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    HURRAY_FUZZ_CHECK(reader->entry_of_tensor(i)->name ==
                      forward.entry_of_tensor(i)->name);
  }
  const absl::StatusOr<std::unique_ptr<stream::container::HrryFile>> random =
      stream::container::HrryFile::CopyOf(out, options);
  HURRAY_FUZZ_CHECK(random.ok());
  CompareContent(*reader, again.sink, **random);
}

// HrryFile::Open (mmap of a real file) says what FromBytes says.
void CheckOpen(absl::Span<const uint8_t> file,
               const stream::container::FileOptions& options,
               const absl::Status& from_bytes) {
  const char* dir = std::getenv("TEST_TMPDIR");
  const std::string path = std::string(dir != nullptr ? dir : "/tmp") +
                           "/hrry_file_fuzz." + std::to_string(getpid());
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(file.data()),
              static_cast<std::streamsize>(file.size()));
    HURRAY_FUZZ_CHECK(out.good());
  }
  const absl::StatusOr<std::unique_ptr<stream::container::HrryFile>> opened =
      stream::container::HrryFile::Open(path, options);
  std::remove(path.c_str());
  HURRAY_FUZZ_CHECK(opened.ok() == from_bytes.ok());
  HURRAY_FUZZ_CHECK(RuleIdOf(opened.status()) == RuleIdOf(from_bytes));
  HURRAY_FUZZ_CHECK(OffsetOf(opened.status()) == OffsetOf(from_bytes));
  if (opened.ok()) {
    HURRAY_FUZZ_CHECK((*opened)->bytes().size() == file.size());
  }
}

struct Verdict {
  Rejection forward;
  absl::Status random_access;
};

Verdict Check(absl::Span<const uint8_t> file,
              stream::container::FileOptions options, size_t max_chunk,
              uint32_t seed, bool open_file, bool fail_source) {
  std::mt19937 rng(seed);
  Forward one_shot, chunked;
  const std::unique_ptr<stream::container::HrryForwardReader> reader =
      ReadForward(file, options, 0, &rng, &one_shot);
  ReadForward(file, options, max_chunk, &rng, &chunked);
  HURRAY_FUZZ_CHECK(one_shot.state == chunked.state);
  HURRAY_FUZZ_CHECK(one_shot.rejection == chunked.rejection);
  HURRAY_FUZZ_CHECK(SameEvents(one_shot.sink, chunked.sink));
  HURRAY_FUZZ_CHECK(stream::container::ReadHrry(file, options, nullptr) ==
                    one_shot.rejection);
  if (fail_source) {
    // The source fails after the last byte: STREAM-IO there, unless the
    // file was already rejected.
    stream::container::HrryForwardReader failing(options);
    const stream::container::FileState fed = failing.Feed(file);
    const Rejection before = failing.rejection();
    HURRAY_FUZZ_CHECK(failing.FailSource() ==
                      stream::container::FileState::kRejected);
    if (fed == stream::container::FileState::kNeedMore) {
      HURRAY_FUZZ_CHECK(failing.rejection().rule == Rule::kStreamIo);
      HURRAY_FUZZ_CHECK(failing.rejection().offset == file.size());
    } else {
      HURRAY_FUZZ_CHECK(failing.rejection() == before);
    }
  }

  options.verify_region = true;
  // A copy at a 2 MiB boundary, like a mapped file: the fuzzer's bytes sit
  // anywhere, and Buffer() checks the views' addresses (BUF-19).
  const absl::StatusOr<std::unique_ptr<stream::container::HrryFile>> random =
      stream::container::HrryFile::CopyOf(file, options);
  if (!random.ok()) {
    HURRAY_FUZZ_CHECK(RuleIdOf(random.status()).has_value());
    HURRAY_FUZZ_CHECK(OffsetOf(random.status()).has_value());
  }
  if (random.ok() != one_shot.rejection.ok()) {
    std::fprintf(stderr, "forward: %s @%llu; random access: %s\n",
                 one_shot.rejection.ok()
                     ? "accepts"
                     : std::string(RuleId(one_shot.rejection.rule)).c_str(),
                 static_cast<unsigned long long>(one_shot.rejection.offset),
                 random.status().ToString().c_str());
    HURRAY_FUZZ_CHECK(false);
  }
  if (random.ok()) {
    CompareContent(*reader, one_shot.sink, **random);
    if (options.parse.mode == Mode::kStrict) {
      CheckRewrite(file, options, *reader, one_shot.sink);
    }
  }
  if (open_file) CheckOpen(file, options, random.status());

  options.verify_region = false;
  const absl::StatusOr<std::unique_ptr<stream::container::HrryFile>> no_walk =
      stream::container::HrryFile::FromBytes(file, options);
  // In strict mode every indexed tensor is one the walk checked
  // (FILE-IDX-15); permissive mode lets entries name no tensor of the
  // region, and only the reader without the walk decodes those.
  if (one_shot.rejection.ok() && options.parse.mode == Mode::kStrict) {
    HURRAY_FUZZ_CHECK(no_walk.ok());
  }
  return {one_shot.rejection, random.status()};
}

void Run(const uint8_t* data, size_t size) {
  uint8_t h[kHeaderSize] = {};
  if (size > 0) std::memcpy(h, data, std::min(size, kHeaderSize));
  const absl::Span<const uint8_t> file =
      size > kHeaderSize
          ? absl::MakeConstSpan(data + kHeaderSize, size - kHeaderSize)
          : absl::Span<const uint8_t>();

  stream::container::FileOptions options;
  const Mode mode = (h[0] & 1) ? Mode::kPermissive : Mode::kStrict;
  if (h[0] & 2) {
    options.parse = vectors::AgreedOptions(mode);
  } else {
    options.parse.mode = mode;
  }
  options.reject_kv_without_flag = (h[0] & 4) != 0;
  options.reject_padding_after_head = (h[0] & 8) != 0;
  // Small partition box memory: a composite validator per read stays cheap.
  options.limits.max_box_words = 4096;
  const uint32_t seed = h[6] | h[7] << 8;
  const size_t max_chunk = kMaxChunk[h[6] & 3];

  const bool open_file = (h[0] & 64) != 0;
  const bool fail_source = (h[0] & 128) != 0;
  const Verdict base =
      Check(file, options, max_chunk, seed, open_file, fail_source);
  if (!(h[0] & 16) || !base.forward.ok() || file.empty()) return;

  // One fault in a file both readers accept.
  uint32_t at = 0;
  std::memcpy(&at, h + 1, 4);
  at %= file.size();
  std::vector<uint8_t> damaged(file.begin(), file.end());
  if (h[0] & 32) {
    damaged.resize(at);
  } else {
    damaged[at] ^= h[5] == 0 ? 0x01 : h[5];
  }
  const Verdict v =
      Check(damaged, options, max_chunk, seed, open_file, fail_source);
  if (v.forward.ok()) return;  // same verdict checked in Check
  const std::optional<absl::string_view> id = RuleIdOf(v.random_access);
  const std::optional<uint64_t> offset = OffsetOf(v.random_access);
  if (*id != RuleId(v.forward.rule) || *offset != v.forward.offset) {
    std::fprintf(stderr,
                 "one fault (%s at %u): forward %s @%llu, random "
                 "access %s\n",
                 (h[0] & 32) ? "cut" : "xor", at,
                 std::string(RuleId(v.forward.rule)).c_str(),
                 static_cast<unsigned long long>(v.forward.offset),
                 v.random_access.ToString().c_str());
    HURRAY_FUZZ_CHECK(false);
  }
}

}  // namespace
}  // namespace hurray::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  hurray::fuzz::Run(data, size);
  return 0;
}
