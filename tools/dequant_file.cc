#include "tools/dequant_file.h"

#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "dequant/dequantizer.h"
#include "dequant/output.h"
#include "dequant/params.h"
#include "dequant/plan.h"
#include "dequant/storage_walk.h"
#include "parser/decoder.h"
#include "parser/element_type.h"
#include "parser/rules.h"
#include "parser/wire.h"
#include "stream/container/safe_output_dir.h"
#include "stream/ingest/output/element_convert.h"
#include "stream/ingest/output/npy.h"
#include "stream/ingest/output/row_major_gather.h"
#include "stream/ingest/output/safetensors.h"
#include "tools/command_util.h"

namespace hurray::tools {
namespace {

// Parameter buffers are read whole before the data streams by; refuse
// parameter tables larger than this (per-channel and per-block tables are
// a small fraction of the data).
constexpr uint64_t kMaxParameterBytes = uint64_t{1} << 30;
constexpr size_t kChunkBytes = size_t{1} << 20;
// A Dequantizer that is not in order (never one of a row-major tensor, the
// only kind fed directly) would gather its whole output: refused above this.
constexpr uint64_t kMaxScatteredFloats = uint64_t{1} << 30;

// Where Dequantizer::Feed puts the floats: written to OUT as they complete
// (row-major storage, through a reused window). Tensor() is the
// Dequantizer's path for other layouts, which this command never feeds it
// (they go through GatheredDequantize), kept bounded all the same.
class DequantFileOutput final : public dequant::DequantOutput {
 public:
  using Write = std::function<absl::Status(absl::Span<const float>)>;
  explicit DequantFileOutput(Write write) : write_(std::move(write)) {}

  absl::Span<float> Window(uint64_t, size_t count) override {
    if (window_.size() < count) window_.resize(count);
    return absl::MakeSpan(window_.data(), count);
  }
  absl::Status Commit(uint64_t, size_t count) override {
    return write_(absl::MakeConstSpan(window_.data(), count));
  }
  absl::Span<float> Tensor(uint64_t count) override {
    if (count > kMaxScatteredFloats) return {};
    if (tensor_.size() != count) tensor_.assign(static_cast<size_t>(count), 0);
    return absl::MakeSpan(tensor_);
  }
  // The gathered tensor, if any, in chunks.
  absl::Status WriteTensor() {
    const absl::Span<const float> all(tensor_);
    for (size_t at = 0; at < all.size(); at += kChunkBytes / 4) {
      absl::Status s = write_(all.subspan(at, kChunkBytes / 4));
      if (!s.ok()) return s;
    }
    return absl::OkStatus();
  }

 private:
  Write write_;
  std::vector<float> window_;
  std::vector<float> tensor_;
};

struct Failure {
  int exit_code;
  absl::Status status;
};

// The tensor's buffers sit back to back after its descriptor.
absl::StatusOr<std::vector<uint8_t>> ReadAt(std::ifstream& in, uint64_t offset,
                                            uint64_t size) {
  std::vector<uint8_t> bytes(size);
  in.clear();
  in.seekg(static_cast<std::streamoff>(offset));
  in.read(reinterpret_cast<char*>(bytes.data()),
          static_cast<std::streamsize>(size));
  if (!in) return absl::DataLossError("cannot read a parameter buffer");
  return bytes;
}

// The data buffer of a non-row-major tensor, whole: in memory, or copied
// to a temp of OUT's directory and read back through a block cache.
class WholeBuffer {
 public:
  ~WholeBuffer() {
    if (temp_.fd >= 0) ::close(temp_.fd);
    if (dir_ != nullptr && !temp_.name.empty()) dir_->Remove(temp_.name);
  }

  absl::Status Read(std::ifstream& in, uint64_t offset, uint64_t size,
                    const std::string& output, uint64_t memory_limit) {
    in.clear();
    in.seekg(static_cast<std::streamoff>(offset));
    if (size <= memory_limit) {
      mem_.resize(static_cast<size_t>(size));
      in.read(reinterpret_cast<char*>(mem_.data()),
              static_cast<std::streamsize>(size));
      if (static_cast<uint64_t>(in.gcount()) != size) {
        return absl::DataLossError("cannot read the data buffer");
      }
      return absl::OkStatus();
    }
    absl::StatusOr<std::unique_ptr<stream::container::SafeOutputDir>> dir =
        stream::container::SafeOutputDir::Open(
            std::filesystem::path(output).parent_path().string());
    if (!dir.ok()) return dir.status();
    dir_ = *std::move(dir);
    absl::StatusOr<stream::container::TempFile> t = dir_->CreateTemp(0600);
    if (!t.ok()) return t.status();
    temp_ = *std::move(t);
    std::vector<uint8_t> chunk(kChunkBytes);
    for (uint64_t left = size; left > 0;) {
      const size_t n =
          static_cast<size_t>(std::min<uint64_t>(left, chunk.size()));
      in.read(reinterpret_cast<char*>(chunk.data()),
              static_cast<std::streamsize>(n));
      if (static_cast<size_t>(in.gcount()) != n) {
        return absl::DataLossError("cannot read the data buffer");
      }
      absl::Status s = stream::container::WriteAllFd(
          temp_.fd, chunk.data(), n, dir_->Describe(temp_.name));
      if (!s.ok()) return s;
      left -= n;
    }
    spooled_ = size;
    return absl::OkStatus();
  }

  // Reads `d`'s stored grid in logical row-major order into `emit`.
  absl::Status Gather(const TensorDescriptor& d, size_t cache_bytes,
                      stream::ingest::GatherEmit emit) const {
    if (spooled_ == 0) {
      return stream::ingest::GatherRowMajor(d, mem_, kChunkBytes, emit);
    }
    stream::ingest::GatherFile file;
    file.fd = temp_.fd;
    file.size = spooled_;
    file.name = dir_->Describe(temp_.name);
    file.cache_bytes = cache_bytes;
    return stream::ingest::GatherRowMajorFromFile(d, file, kChunkBytes, emit);
  }

  uint64_t spooled() const { return spooled_; }

 private:
  std::vector<uint8_t> mem_;
  std::unique_ptr<stream::container::SafeOutputDir> dir_;
  stream::container::TempFile temp_;
  uint64_t spooled_ = 0;
};

// A non-row-major tensor: its stored grid read back in logical row-major
// order (GatherRowMajor) and dequantized as the same tensor stored
// row-major (packed from byte 0), as stream/ingest/sinks.cc does.
absl::Status GatheredDequantize(const TensorDescriptor& d,
                                const dequant::ParameterBytes& params,
                                const dequant::DequantOptions& dq_options,
                                const WholeBuffer& data, size_t cache_bytes,
                                dequant::DequantOutput& sink,
                                uint64_t* elements) {
  absl::StatusOr<dequant::Plan> plan = dequant::MakePlan(d);
  if (!plan.ok()) return plan.status();
  TensorDescriptor rm = d;
  rm.layout_tag = layout_tag::kRowMajor;
  rm.layout = LayoutFields();
  rm.byte_offset = 0;
  rm.buffers[0].byte_size = plan->storage_bytes;
  absl::StatusOr<dequant::Dequantizer> dq =
      dequant::Dequantizer::Create(rm, params, dq_options);
  if (!dq.ok()) return dq.status();
  const TensorDescriptor grid = dequant::StoredGridDescriptor(d, *plan);
  absl::Status s = data.Gather(
      grid, cache_bytes,
      [&](absl::Span<const uint8_t> c) { return dq->Feed(c, sink); });
  if (s.ok()) s = dq->Finish();
  if (!s.ok()) return s;
  *elements = dq->elements_written();
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<DequantWritten> DequantizeFile(
    const std::string& file, const std::string& output,
    const ParseOptions& options, stream::ingest::OutputFormat format,
    stream::ingest::OutputDtype dtype, const DequantLimits& limits,
    TensorDescriptor* desc, int* exit_code) {
  *exit_code = kExitError;
  // The input is read with seeks (parameter buffers first): only a regular
  // file will do; a directory, a pipe or a device is an I/O error (exit 2),
  // never a verdict on bytes that were not read.
  std::error_code ec;
  const std::filesystem::file_status st = std::filesystem::status(file, ec);
  if (ec) {
    return absl::NotFoundError(
        absl::StrCat("cannot open the input file: ", ec.message()));
  }
  if (!std::filesystem::is_regular_file(st)) {
    return absl::FailedPreconditionError(
        std::filesystem::is_directory(st)
            ? "the input is a directory, not a tensor file"
            : "the input is not a regular file");
  }
  std::ifstream in(file, std::ios::binary);
  if (!in) return absl::NotFoundError("cannot open the input file");
  in.seekg(0, std::ios::end);
  const uint64_t file_size = static_cast<uint64_t>(in.tellg());
  in.seekg(0);

  // The descriptor, fed in chunks until the decoder is done.
  auto decoder = std::make_unique<DescriptorDecoder>(options);
  std::vector<uint8_t> chunk(4096);
  uint64_t at = 0;
  while (decoder->state() == DecodeState::kNeedMore) {
    in.read(reinterpret_cast<char*>(chunk.data()),
            static_cast<std::streamsize>(chunk.size()));
    const size_t got = static_cast<size_t>(in.gcount());
    if (in.bad()) return absl::DataLossError("cannot read the input file");
    if (got == 0) break;
    at += decoder->Feed(absl::MakeConstSpan(chunk.data(), got)).consumed;
  }
  if (decoder->Finish() == DecodeState::kRejected) {
    *exit_code = kExitRejected;
    return decoder->status();
  }
  *desc = decoder->descriptor();
  const TensorDescriptor& d = *desc;
  if (!d.has(flag::kHasQuantization)) {
    return absl::FailedPreconditionError("the tensor is not quantized");
  }

  // Buffer offsets; a file shorter than the buffer table says ends inside a
  // buffer (RESOLUTIONS.md 14).
  std::vector<uint64_t> offsets(d.buffer_count);
  uint64_t end = at;
  for (uint32_t i = 0; i < d.buffer_count; ++i) {
    offsets[i] = end;
    if (!wire::CheckedAdd(end, d.buffers[i].byte_size, &end) ||
        end > file_size) {
      *exit_code = kExitRejected;
      return ToStatus({Rule::kStreamEofBuffer, std::min(end, file_size),
                       "the input ends inside a buffer"});
    }
  }
  // Parameter buffers first (they follow the data on the wire).
  std::vector<std::vector<uint8_t>> buffers(d.buffer_count);
  std::vector<absl::Span<const uint8_t>> views(d.buffer_count);
  uint64_t parameter_bytes = 0;
  for (uint32_t i = 1; i < d.buffer_count; ++i) {
    parameter_bytes += d.buffers[i].byte_size;
    if (parameter_bytes > kMaxParameterBytes) {
      return absl::ResourceExhaustedError("parameter buffers exceed 1 GiB");
    }
    absl::StatusOr<std::vector<uint8_t>> b =
        ReadAt(in, offsets[i], d.buffers[i].byte_size);
    if (!b.ok()) return b.status();
    buffers[i] = *std::move(b);
    views[i] = buffers[i];
  }
  absl::StatusOr<dequant::ParameterBytes> params =
      dequant::ParametersFromBuffers(d, views);
  if (!params.ok()) return params.status();
  dequant::DequantOptions dq_options;
  dq_options.mode = options.mode;
  absl::StatusOr<dequant::Dequantizer> dq =
      dequant::Dequantizer::Create(d, *params, dq_options);
  if (!dq.ok()) {
    if (RuleIdOf(dq.status()).has_value()) *exit_code = kExitRejected;
    return dq.status();
  }

  // The data buffer, streamed through the dequantizer into a hidden temp of
  // OUT's directory, published as OUT only once complete
  // (stream/container/safe_output_dir.h): a rejection or failure leaves OUT as
  // it was, and a symlink at OUT is replaced, never written through.
  absl::StatusOr<std::unique_ptr<stream::container::SafeOutputFile>> out =
      stream::container::SafeOutputFile::Create(output);
  if (!out.ok()) return out.status();
  // The output type (float32 unless --dtype), and the .npy header.
  absl::StatusOr<stream::ingest::OutputType> type =
      stream::ingest::ChooseOutput(d.type_tag, /*quantized=*/true, format,
                                   dtype);
  if (!type.ok()) return type.status();
  if (format == stream::ingest::OutputFormat::kNpy) {
    const std::string h =
        stream::ingest::NpyHeader(type->npy_descr(), d.dims());
    absl::Status s = (*out)->Write(absl::MakeConstSpan(
        reinterpret_cast<const uint8_t*>(h.data()), h.size()));
    if (!s.ok()) return s;
  }
  if (format == stream::ingest::OutputFormat::kSafetensors) {
    // One tensor, named after FILE (its stem), its size known: the header
    // first, then the data as it is dequantized.
    stream::ingest::SafetensorsEntry e;
    e.name = std::filesystem::path(file).stem().string();
    if (e.name.empty()) e.name = "tensor_0";
    e.dtype = std::string(type->safetensors_dtype());
    e.shape.assign(d.dims().begin(), d.dims().end());
    if (!wire::CheckedMul(dq->plan().logical_elements, type->bytes(), &e.end)) {
      return absl::ResourceExhaustedError("the output's size overflows");
    }
    const std::string h = stream::ingest::SafetensorsHeader({e}, {});
    uint8_t n[8];
    wire::StoreU64(n, h.size());
    absl::Status s = (*out)->Write(n);
    if (s.ok()) {
      s = (*out)->Write(absl::MakeConstSpan(
          reinterpret_cast<const uint8_t*>(h.data()), h.size()));
    }
    if (!s.ok()) return s;
  }
  stream::ingest::ElementConverter conv(type_tag::kFloat32, *type,
                                        dq->plan().logical_elements);
  std::vector<uint8_t> le, converted;
  // Floats in logical row-major order, converted and appended to OUT.
  auto write_floats = [&](absl::Span<const float> floats) -> absl::Status {
    le.resize(4 * floats.size());
    for (size_t i = 0; i < floats.size(); ++i) {
      wire::StoreF32(&le[4 * i], floats[i]);
    }
    converted.clear();
    conv.Feed(le, &converted);
    return (*out)->Write(converted);
  };
  DequantFileOutput sink(write_floats);
  DequantWritten written;
  if (d.layout_tag != layout_tag::kRowMajor) {
    // Any other dense layout, of any size, in bounded memory.
    WholeBuffer data;
    absl::Status s = data.Read(in, offsets[0], d.buffers[0].byte_size, output,
                               limits.data_memory_bytes);
    if (s.ok()) {
      s = GatheredDequantize(d, *params, dq_options, data,
                             limits.gather_cache_bytes, sink,
                             &written.elements);
    }
    if (!s.ok()) {
      if (RuleIdOf(s).has_value()) *exit_code = kExitRejected;
      return s;
    }
    written.spooled_bytes = data.spooled();
    s = (*out)->Commit();
    if (!s.ok()) return s;
    *exit_code = kExitOk;
    return written;
  }
  if (!dq->streamable() && d.buffers[0].byte_size > kMaxScatteredFloats) {
    return absl::ResourceExhaustedError("a data buffer above 1 GiB");
  }
  std::vector<uint8_t> data(dq->streamable()
                                ? kChunkBytes
                                : static_cast<size_t>(d.buffers[0].byte_size));
  in.clear();
  in.seekg(static_cast<std::streamoff>(offsets[0]));
  uint64_t left = d.buffers[0].byte_size;
  while (left > 0) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(left, data.size()));
    in.read(reinterpret_cast<char*>(data.data()),
            static_cast<std::streamsize>(n));
    if (static_cast<size_t>(in.gcount()) != n) {
      return absl::DataLossError("cannot read the data buffer");
    }
    left -= n;
    absl::Status s = dq->Feed(absl::MakeConstSpan(data.data(), n), sink);
    if (!s.ok()) {
      if (RuleIdOf(s).has_value()) *exit_code = kExitRejected;
      return s;
    }
  }
  absl::Status s = dq->Finish();
  if (!s.ok()) {
    if (RuleIdOf(s).has_value()) *exit_code = kExitRejected;
    return s;
  }
  s = sink.WriteTensor();
  if (!s.ok()) return s;
  s = (*out)->Commit();
  if (!s.ok()) return s;
  *exit_code = kExitOk;
  written.elements = dq->elements_written();
  return written;
}

}  // namespace hurray::tools
