#include "stream/ingest/sinks.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <optional>
#include <utility>

#include "absl/base/config.h"
#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "dequant/dequantizer.h"
#include "dequant/large_buffer.h"
#include "dequant/minifloat.h"
#include "dequant/output.h"
#include "dequant/params.h"
#include "dequant/plan.h"
#include "dequant/storage_walk.h"
#include "parser/element_type.h"
#include "parser/quantization.h"
#include "parser/rules.h"
#include "parser/wire.h"
#include "stream/container/crc32c.h"
#include "stream/container/safe_output_dir.h"
#include "stream/container/utf8.h"
#include "stream/ingest/output/block_paged.h"
#include "stream/ingest/output/npy.h"
#include "stream/ingest/output/row_major_gather.h"
#include "stream/ingest/output/sparse_dequant.h"
#include "stream/ingest/output/sparse_walk.h"

namespace hurray::stream {
namespace {

// An index-data rejection (its offset is a byte of buffer `buffer`) as a
// status whose message names the buffer; the payloads are ToStatus's.
absl::Status InBuffer(const Rejection& r, uint32_t buffer) {
  const absl::Status plain = ToStatus(r);
  absl::Status s(plain.code(),
                 absl::StrCat(RuleId(r.rule), " at byte ", r.offset,
                              " of buffer ", buffer, ": ", r.message));
  plain.ForEachPayload([&s](absl::string_view url, const absl::Cord& payload) {
    s.SetPayload(url, payload);
  });
  return s;
}

// Data bytes handed to the dequantizer at once: bounds the float buffer
// (2-bit codes: 4 floats per byte, 2 MiB of output).
constexpr size_t kSubPiece = size_t{128} << 10;
constexpr size_t kSpoolReadBytes = size_t{1} << 20;
constexpr size_t kOutBufferBytes = size_t{1} << 20;

absl::Status ErrnoStatus(absl::string_view what, const std::string& path) {
  return absl::DataLossError(
      absl::StrCat(what, " ", path, ": ", std::strerror(errno)));
}

// The CRC-32C of a whole file of `dir`, read never through a symlink.
absl::StatusOr<uint32_t> FileCrc32c(const SafeOutputDir& dir,
                                    const std::string& name) {
  absl::StatusOr<int> fd = dir.OpenForReading(name);
  if (!fd.ok()) return fd.status();
  std::vector<uint8_t> buf(kSpoolReadBytes);
  uint32_t crc = 0;
  for (;;) {
    const ssize_t got = ::read(*fd, buf.data(), buf.size());
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      const absl::Status s = ErrnoStatus("cannot read", dir.Describe(name));
      ::close(*fd);
      return s;
    }
    if (got == 0) break;
    crc = Crc32cExtend(
        crc, absl::MakeConstSpan(buf.data(), static_cast<size_t>(got)));
  }
  ::close(*fd);
  return crc;
}

// One more output of a tensor (a kept sparse tensor's index array): the
// part of its name ("<name><suffix>.npy"), its temp, its CRC-32C.
struct KeptPart {
  std::string suffix;
  std::string temp;
  uint32_t crc = 0;
};

// The index arrays of a sparse layout, each a uint64 buffer (coo.md,
// csr.md, csc.md, csf.md § Buffer Table): COO indices [nnz, rank]; CSR and
// CSC indices and indptr (scipy's names); CSF pos_L and crd_L per level.
struct KeptArray {
  std::string suffix;
  uint32_t buffer;
  uint64_t columns;
};

// The file suffix of an index array: ".npy", or ".u64" (raw little-endian
// uint64) for --format f32.
std::string IndexFileSuffix(OutputFormat f) {
  return f == OutputFormat::kF32 ? ".u64" : std::string(OutputSuffix(f));
}

std::vector<KeptArray> KeptArrays(const TensorDescriptor& d) {
  switch (d.layout_tag) {
    case layout_tag::kCoo:
      return {{".indices", 1, d.rank}};
    case layout_tag::kCsr:
    case layout_tag::kCsc:
      return {{".indices", 1, 1}, {".indptr", 2, 1}};
    default: {
      std::vector<KeptArray> v;
      for (uint32_t l = 0; l < d.rank && l < kMaxRank; ++l) {
        v.push_back({absl::StrCat(".pos_", l), 2 * l + 1, 1});
        v.push_back({absl::StrCat(".crd_", l), 2 * l + 2, 1});
      }
      return v;
    }
  }
}

std::string ShapeText(const TensorDescriptor& d) {
  std::string s = "[";
  for (uint32_t i = 0; i < d.rank && i < kMaxRank; ++i) {
    absl::StrAppend(&s, i == 0 ? "" : ", ", d.shape[i]);
  }
  return s + "]";
}

}  // namespace

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
    if (n > 1 && ch.size() == n && !c1 && IsValidUtf8(ch)) {
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

// --- RecordingIngestSink. ----------------------------------------------------

absl::Status RecordingIngestSink::OnTensorKey(absl::string_view key) {
  pending_key_ = std::string(key);
  return status_;
}

absl::Status RecordingIngestSink::OnDescriptor(const TensorDescriptor& d) {
  TensorRecord r;
  r.index = records_.size();
  r.name = std::move(pending_key_);
  pending_key_.clear();
  r.shape = ShapeText(d);
  r.dims.assign(d.dims().begin(), d.dims().end());
  r.type_tag = d.type_tag;
  r.type = std::string(ElementTypeName(d.type_tag));
  r.scheme = d.has(flag::kHasQuantization)
                 ? SchemeName(d.quantization.scheme_tag)
                 : "none";
  for (uint32_t i = 0; i < d.buffer_count && i < kMaxBuffers; ++i) {
    r.bytes += d.buffers[i].byte_size;
  }
  records_.push_back(std::move(r));
  in_tensor_ = true;
  elements_.emplace(d, element_mode_);
  DataCheckOptions checks;
  checks.mode = element_mode_;
  index_ = MakeIndexChecker(d, checks);
  unchecked_.clear();
  return status_;
}

absl::Status RecordingIngestSink::OnBufferPiece(
    uint32_t buffer_index, uint64_t offset_in_buffer,
    absl::Span<const uint8_t> piece) {
  NoteData(buffer_index, offset_in_buffer, piece);
  return status_;
}

void RecordingIngestSink::NoteData(uint32_t buffer_index,
                                   uint64_t offset_in_buffer,
                                   absl::Span<const uint8_t> piece) {
  if (!in_tensor_ || !status_.ok()) return;
  if (elements_.has_value()) {
    const Rejection r = elements_->Feed(buffer_index, offset_in_buffer, piece);
    if (!r.ok()) {
      Fail(ToStatus(r));
      return;
    }
  }
  if (index_ != nullptr) {
    const Rejection r = index_->Feed(buffer_index, piece);
    if (!r.ok()) {
      Fail(InBuffer(r, index_->rejected_buffer()));
      return;
    }
  }
  if (!record_data_crc_) return;
  TensorRecord& r = records_.back();
  r.data_crc32c = Crc32cExtend(r.data_crc32c, piece);
}

void RecordingIngestSink::FinishDataChecks() {
  const std::unique_ptr<IndexDataChecker> index = std::move(index_);
  if (index == nullptr || !in_tensor_ || !status_.ok()) return;
  const Rejection r = index->Finish();
  if (!r.ok()) {
    Fail(InBuffer(r, index->rejected_buffer()));
    return;
  }
  // Bounded memory cannot always check these in one forward pass (a CSR
  // matrix whose coordinates all come before its first row pointer, an
  // unsorted COO too large for the duplicate table): say so.
  for (const Rule rule :
       {Rule::kLayCoo06, Rule::kLayCsr07, Rule::kLayCsc07, Rule::kLayCsf09}) {
    if (index->Skipped(rule)) {
      absl::StrAppend(&unchecked_, unchecked_.empty() ? "" : ", ",
                      RuleId(rule));
    }
  }
}

absl::Status RecordingIngestSink::OnTensorEnd() {
  elements_.reset();
  FinishDataChecks();
  if (!in_tensor_ || !status_.ok()) return status_;
  TensorRecord& r = records_.back();
  r.complete = true;
  if (r.verdict.empty()) r.verdict = "valid";
  if (!unchecked_.empty()) {
    absl::StrAppend(&r.verdict, " (not checked in one pass: ", unchecked_, ")");
    unchecked_.clear();
  }
  in_tensor_ = false;
  return status_;
}

absl::Status RecordingIngestSink::OnTensorNames(
    absl::Span<const std::string> names) {
  for (size_t i = 0; i < names.size() && i < records_.size(); ++i) {
    if (!names[i].empty()) records_[i].name = names[i];
  }
  return status_;
}

absl::Status RecordingIngestSink::Preload(std::vector<TensorRecord> done) {
  records_ = std::move(done);
  for (size_t i = 0; i < records_.size(); ++i) records_[i].index = i;
  in_tensor_ = false;
  return absl::OkStatus();
}

absl::Status RecordingIngestSink::DropTensors(const std::vector<bool>& keep) {
  if (in_tensor_) return absl::FailedPreconditionError("a tensor is open");
  size_t out = 0;
  for (size_t i = 0; i < records_.size(); ++i) {
    if (i < keep.size() && !keep[i]) continue;
    if (out != i) records_[out] = std::move(records_[i]);
    records_[out].index = out;
    ++out;
  }
  records_.resize(out);
  return status_;
}

void RecordingIngestSink::Fail(absl::Status s) {
  if (!status_.ok()) return;
  status_ = std::move(s);
  if (in_tensor_) {
    records_.back().verdict = absl::StrCat("rejected: ", status_.message());
    records_.back().output.clear();
  }
}

// --- DequantSink. ------------------------------------------------------------

class DequantSink::Tensor {
 public:
  // kQuant: row-major quantized without parameter buffers, dequantized as
  // it arrives; kPlain: row-major plain, converted as it arrives; kSpool:
  // buffer 0 spooled (and the parameter buffers kept) until the tensor's
  // end, then read in logical row-major order (GatherRowMajor) for the
  // other dense layouts.
  // kSparse: every buffer spooled, densified at the end. kPaged: every
  // buffer spooled, the page pool converted (dequantized) at the end and
  // its pages copied out in block-table order.
  enum class Kind : uint8_t { kNone, kQuant, kPlain, kSpool, kSparse, kPaged };

  // `dir`: where the files go (outputs with write_files, spools).
  Tensor(const DequantSinkOptions& o, SafeOutputDir* dir,
         SafetensorsWriter* safetensors)
      : options_(o), dir_(dir), safetensors_(safetensors) {
    desc_ = std::make_unique<TensorDescriptor>();
  }
  ~Tensor() { Abandon(); }

  // Closes and removes what an unfinished tensor wrote.
  void Abandon() {
    if (in_safetensors_) safetensors_->AbandonTensor();
    in_safetensors_ = false;
    late_entries_.clear();
    keep_ = false;
    CloseOut();
    if (!temp_.empty()) dir_->Remove(temp_);
    temp_.clear();
    DropSpool();
    kind_ = Kind::kNone;
    conv_.reset();
    dq_.reset();
    out_buf_.clear();
  }

  // The name the output gets when it is published.
  const std::string& final_name() const { return final_name_; }
  const std::string& base() const { return base_; }
  // Begin chose to keep a sparse tensor as its arrays.
  bool kept() const { return keep_; }

  // Sets up for `d`; a tensor that gets no output says why in *none, else
  // an error.
  absl::Status Begin(const TensorDescriptor& d, const std::string& base,
                     const std::string& name, std::string* none) {
    absl::Status s = BeginKind(d, base, name, none);
    // The in-memory spool keeps its buffer from one tensor to the next, so
    // each tensor's bytes land in pages mapped and recently used instead
    // of a fresh allocation (bench/RESULTS.md: a quarter less client CPU
    // in tcp_dequant); never beside another kind's spools or the gather
    // cache, which share its budget (sinks.h).
    if (kind_ != Kind::kSpool || !spool_in_memory_) ReleaseMemory();
    return s;
  }

  // Frees the in-memory spool's pages kept for the next tensor.
  void ReleaseMemory() { spool_mem_.Release(); }

  // After a failure: Abandon, and nothing kept for a next tensor.
  void Discard() {
    Abandon();
    ReleaseMemory();
  }

  absl::Status BeginKind(const TensorDescriptor& d, const std::string& base,
                         const std::string& name, std::string* none) {
    Abandon();
    name_ = name;
    final_name_ = absl::StrCat(base, OutputSuffix(options_.format));
    base_ = base;
    out_crc_ = 0;
    if (d.layout_tag == layout_tag::kComposite) {
      *none = "composite head: its members are the outputs";
      return absl::OkStatus();
    }
    if (IsSparseLayout(d.layout_tag)) {
      absl::StatusOr<OutputType> out =
          ChooseOutput(d.type_tag, d.has(flag::kHasQuantization),
                       options_.format, options_.dtype);
      if (!out.ok()) {
        *none = absl::StrCat("no output: ", out.status().message());
        return absl::OkStatus();
      }
      out_type_ = *out;
      return BeginSparse(d, none);
    }
    if (d.layout_tag == layout_tag::kBlockPaged) {
      absl::StatusOr<OutputType> out =
          ChooseOutput(d.type_tag, d.has(flag::kHasQuantization),
                       options_.format, options_.dtype);
      if (!out.ok()) {
        *none = absl::StrCat("no output: ", out.status().message());
        return absl::OkStatus();
      }
      out_type_ = *out;
      return BeginPaged(d, none);
    }
    if (!layout_tag::IsDense(d.layout_tag)) {
      *none = absl::StrCat("no output: layout ", LayoutName(d.layout_tag),
                           " is not converted yet");
      return absl::OkStatus();
    }
    const bool quantized = d.has(flag::kHasQuantization);
    absl::StatusOr<OutputType> out =
        ChooseOutput(d.type_tag, quantized, options_.format, options_.dtype);
    if (!out.ok()) {
      *none = absl::StrCat("no output: ", out.status().message());
      return absl::OkStatus();
    }
    out_type_ = *out;
    if (quantized) return BeginQuant(d, none);
    return BeginPlain(d, none);
  }

  absl::Status Piece(uint32_t buffer, absl::Span<const uint8_t> piece) {
    switch (kind_) {
      case Kind::kNone:
        return absl::OkStatus();
      case Kind::kQuant:
        return buffer == 0 ? Dequantize(piece) : absl::OkStatus();
      case Kind::kPlain:
        return buffer == 0 ? ConvertPlain(piece) : absl::OkStatus();
      case Kind::kSparse:
      case Kind::kPaged:
        return buffer < sparse_.size() ? AppendSpool(&sparse_[buffer], piece)
                                       : absl::OkStatus();
      case Kind::kSpool:
        if (buffer == 0) return Spool(piece);
        if (buffer < params_.size()) {
          params_[buffer].insert(params_[buffer].end(), piece.begin(),
                                 piece.end());
        }
        return absl::OkStatus();
    }
    return absl::OkStatus();
  }

  // The tensor's bytes all arrived: finish the output. *temp names the
  // finished output's temp in the directory (empty when there is none or
  // no files are written), for the caller to publish; *crc is its CRC-32C.
  absl::Status End(std::string* temp, uint32_t* crc, std::string* verdict,
                   std::vector<KeptPart>* more) {
    if (kind_ == Kind::kNone) return absl::OkStatus();
    if (kind_ == Kind::kPaged) {
      absl::Status s = FinishPaged(verdict);
      if (!s.ok() || kind_ == Kind::kNone) return s;
      return CloseFinished(temp, crc);
    }
    if (kind_ == Kind::kSpool) {
      absl::Status s = quantized_ ? DequantizeSpool() : ConvertSpool();
      if (!s.ok()) return s;
    }
    if (kind_ == Kind::kSparse && keep_) {
      return KeepArrays(temp, crc, verdict, more);
    }
    if (kind_ == Kind::kSparse) {
      absl::Status s = Densify(verdict);
      if (!s.ok() || kind_ == Kind::kNone) return s;
      return CloseFinished(temp, crc);
    }
    if (quantized_) {
      absl::Status s = dq_->Finish();
      if (!s.ok()) return s;
    }
    if (conv_->done() < conv_->count()) {
      return absl::DataLossError("the data buffer is shorter than its shape");
    }
    if (kind_ != Kind::kSparse) {
      *verdict = absl::StrCat(quantized_ ? "dequantized (" : "converted (",
                              conv_->done(), " values)");
    }
    return CloseFinished(temp, crc);
  }

  // After Begin: the tensor has an entry in model.safetensors.
  bool in_safetensors() const { return in_safetensors_; }
  // After End: the entry was made at the tensor's end (block-paged: the
  // shape is known only then).
  // The name suffixes of the entries, "" for the tensor's own name.
  std::vector<std::string> TakeLateEntries() {
    std::vector<std::string> v;
    v.swap(late_entries_);
    return v;
  }

 private:
  // The output is complete in out_buf_ / its temp: flush and close it.
  absl::Status CloseFinished(std::string* temp, uint32_t* crc) {
    absl::Status s = FlushOut();
    if (!s.ok()) return s;
    if (out_fd_ >= 0 && ::close(out_fd_) != 0) {
      out_fd_ = -1;
      return ErrnoStatus("cannot write", dir_->Describe(temp_));
    }
    out_fd_ = -1;
    dq_.reset();
    conv_.reset();
    kind_ = Kind::kNone;
    *temp = std::move(temp_);
    temp_.clear();
    *crc = out_crc_;
    if (in_safetensors_) safetensors_->EndTensor();
    in_safetensors_ = false;
    return absl::OkStatus();
  }

  // The logical shape of the output (complex as pairs: a trailing 2).
  std::vector<uint64_t> OutputShape(const TensorDescriptor& d) const {
    std::vector<uint64_t> shape(d.shape, d.shape + std::min(d.rank, kMaxRank));
    if (out_type_.pairs) shape.push_back(2);
    return shape;
  }

  absl::Status BeginQuant(const TensorDescriptor& d, std::string* none) {
    absl::StatusOr<dequant::Plan> plan = dequant::MakePlan(d);
    if (!plan.ok()) {
      if (RuleIdOf(plan.status()).has_value()) return plan.status();
      *none = absl::StrCat("no output: ", plan.status().message());
      return absl::OkStatus();
    }
    quantized_ = true;
    dq_options_.mode = options_.mode;
    // Floats from the dequantizer, converted to the output type.
    conv_.emplace(type_tag::kFloat32, out_type_, plan->logical_elements);
    // Other dense layouts store elements out of logical order: the data
    // buffer is spooled and read back in row-major order at the end
    // (GatherRowMajor), whatever its size.
    const bool scattered = d.layout_tag != layout_tag::kRowMajor;
    if (d.buffer_count == 1 && !scattered) {
      absl::StatusOr<dequant::Dequantizer> dq = dequant::Dequantizer::Create(
          *std::move(plan), d, dequant::ParameterBytes(), dq_options_);
      if (!dq.ok()) return NoneOrFail(dq.status(), none);
      dq_.emplace(*std::move(dq));
      kind_ = Kind::kQuant;
      return OpenOut(d);
    }
    uint64_t parameter_bytes = 0;
    for (uint32_t i = 1; i < d.buffer_count; ++i) {
      parameter_bytes += d.buffers[i].byte_size;
    }
    if (parameter_bytes > options_.max_parameter_bytes) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "the parameter buffers of a tensor take ", parameter_bytes,
          " bytes, more than the limit of ", options_.max_parameter_bytes));
    }
    return BeginSpool(d);
  }

  absl::Status BeginPlain(const TensorDescriptor& d, std::string* none) {
    quantized_ = false;
    uint64_t count = 0, bytes = 0;
    if (!d.ElementCount(&count) || !d.StorageBytesFor(count, &bytes)) {
      *none = "no output: the shape has no fixed element count";
      return absl::OkStatus();
    }
    conv_.emplace(d.type_tag, out_type_, count);
    if (count == 0) {
      kind_ = Kind::kPlain;
      return OpenOut(d);
    }
    if (d.buffer_count == 0 ||
        (d.layout_tag == layout_tag::kRowMajor &&
         (d.byte_offset > d.buffers[0].byte_size ||
          bytes > d.buffers[0].byte_size - d.byte_offset))) {
      *none = "no output: the data buffer does not hold the shape";
      conv_.reset();
      return absl::OkStatus();
    }
    if (d.layout_tag == layout_tag::kRowMajor) {
      plain_skip_ = d.byte_offset;
      kind_ = Kind::kPlain;
      return OpenOut(d);
    }
    return BeginSpool(d);
  }

  absl::Status BeginSpool(const TensorDescriptor& d) {
    *desc_ = d;
    params_.resize(d.buffer_count);
    for (uint32_t i = 0; i < d.buffer_count; ++i) {
      params_[i].clear();
      if (i > 0 && quantized_) {
        params_[i].reserve(static_cast<size_t>(d.buffers[i].byte_size));
      }
    }
    if (!quantized_) params_.resize(1);  // a plain tensor's others: unused
    spool_size_ = 0;
    spool_in_memory_ = d.buffers[0].byte_size <= options_.spool_memory_bytes;
    if (spool_in_memory_) {
      spool_mem_.Clear();
      spool_mem_.Reserve(static_cast<size_t>(d.buffers[0].byte_size));
    } else {
      if (dir_ == nullptr) {
        return absl::FailedPreconditionError(
            absl::StrCat("a data buffer of ", d.buffers[0].byte_size,
                         " bytes to spool, and no usable directory for it"));
      }
      absl::StatusOr<TempFile> t = dir_->CreateTemp(0600);
      if (!t.ok()) return t.status();
      spool_fd_ = t->fd;
      spool_name_ = t->name;
    }
    kind_ = Kind::kSpool;
    return OpenOut(d);
  }

  absl::Status NoneOrFail(const absl::Status& s, std::string* none) {
    if (RuleIdOf(s).has_value() ||
        s.code() == absl::StatusCode::kInvalidArgument) {
      return s;
    }
    *none = absl::StrCat("no output: ", s.message());
    return absl::OkStatus();
  }

  // The output's temp, and the .npy header (its shape and type known now).
  absl::Status OpenOut(const TensorDescriptor& d) {
    return OpenOutShape(OutputShape(d));
  }
  absl::Status OpenOutShape(const std::vector<uint64_t>& shape) {
    if (!options_.write_files) return absl::OkStatus();
    if (safetensors_ != nullptr) {
      absl::Status s = safetensors_->BeginTensor(
          name_, out_type_.safetensors_dtype(), shape);
      in_safetensors_ = s.ok();
      return s;
    }
    absl::StatusOr<TempFile> t = dir_->CreateTemp(0644);
    if (!t.ok()) return t.status();
    out_fd_ = t->fd;
    temp_ = t->name;
    if (options_.format == OutputFormat::kNpy) {
      const std::string h = NpyHeader(out_type_.npy_descr(), shape);
      out_buf_.assign(h.begin(), h.end());
    }
    return absl::OkStatus();
  }

  void CloseOut() {
    if (out_fd_ >= 0) ::close(out_fd_);
    out_fd_ = -1;
  }

  // --- Sparse tensors: every buffer spooled, then written dense. ---------

  // One spooled buffer: in memory within the budget, else a temp of OUT.
  struct BufferSpool {
    std::vector<uint8_t> mem;
    TempFile file;
    uint64_t size = 0;
  };

  absl::Status OpenSpool(BufferSpool* b, uint64_t bytes, uint64_t* budget) {
    b->size = 0;
    if (bytes <= *budget) {
      *budget -= bytes;
      b->mem.reserve(static_cast<size_t>(bytes));
      return absl::OkStatus();
    }
    if (dir_ == nullptr) {
      return absl::FailedPreconditionError(
          "a sparse tensor to spool, and no usable directory for it");
    }
    absl::StatusOr<TempFile> t = dir_->CreateTemp(0600);
    if (!t.ok()) return t.status();
    b->file = *t;
    return absl::OkStatus();
  }

  absl::Status AppendSpool(BufferSpool* b, absl::Span<const uint8_t> piece) {
    b->size += piece.size();
    if (b->file.fd < 0) {
      b->mem.insert(b->mem.end(), piece.begin(), piece.end());
      return absl::OkStatus();
    }
    return WriteAllFd(b->file.fd, piece.data(), piece.size(),
                      dir_->Describe(b->file.name));
  }

  void DropSparse() {
    for (BufferSpool& b : sparse_) {
      if (b.file.fd >= 0) {
        ::close(b.file.fd);
        dir_->Remove(b.file.name);
      }
    }
    sparse_.clear();
  }

  // A read-only (or, for `writable`, shared read-write) mapping of a
  // file's first `size` bytes, unmapped when it goes away.
  class Mapping {
   public:
    Mapping() = default;
    Mapping(const Mapping&) = delete;
    Mapping& operator=(const Mapping&) = delete;
    ~Mapping() { Reset(); }
    void Reset() {
      if (map_ != nullptr) ::munmap(map_, size_);
      map_ = nullptr;
      size_ = 0;
    }
    absl::Status Map(int fd, uint64_t size, bool writable) {
      if (size == 0) return absl::OkStatus();
      void* m = ::mmap(nullptr, static_cast<size_t>(size),
                       writable ? PROT_READ | PROT_WRITE : PROT_READ,
                       MAP_SHARED, fd, 0);
      if (m == MAP_FAILED) {
        return absl::DataLossError(
            absl::StrCat("cannot map a spool: ", std::strerror(errno)));
      }
      map_ = static_cast<uint8_t*>(m);
      size_ = static_cast<size_t>(size);
      return absl::OkStatus();
    }
    uint8_t* data() const { return map_; }
    // Drops the pages touched so far from the resident set.
    void Release() const {
      if (map_ != nullptr) ::madvise(map_, size_, MADV_DONTNEED);
    }

   private:
    uint8_t* map_ = nullptr;
    size_t size_ = 0;
  };

  absl::Status BeginSparse(const TensorDescriptor& d, std::string* none) {
    quantized_ = d.has(flag::kHasQuantization);
    if (quantized_) {
      // Parameter buffers after the layout's: values + index buffers.
      const uint32_t layout_buffers = d.layout_tag == layout_tag::kCoo ? 2
                                      : d.layout_tag == layout_tag::kCsf
                                          ? 2 * d.rank + 1
                                          : 3;
      uint64_t parameter_bytes = 0;
      for (uint32_t i = layout_buffers; i < d.buffer_count && i < kMaxBuffers;
           ++i) {
        parameter_bytes += d.buffers[i].byte_size;
      }
      if (parameter_bytes > options_.max_parameter_bytes) {
        return absl::ResourceExhaustedError(absl::StrCat(
            "the parameter buffers of a tensor take ", parameter_bytes,
            " bytes, more than the limit of ", options_.max_parameter_bytes));
      }
    }
    uint64_t count = 0, dense = 0;
    const uint64_t width = out_type_.bytes() * (out_type_.pairs ? 2 : 1);
    const bool fits = d.ElementCount(&count) &&
                      wire::CheckedMul(count, width, &dense) &&
                      dense <= options_.max_dense_bytes;
    // Kept as its arrays: asked for, or too large to write dense.
    keep_ = options_.sparse == SparseOutput::kKeep || !fits;
    if (keep_) {
      // Values first: "<name>.values", then the index arrays (KeepArrays).
      final_name_ =
          absl::StrCat(base_, ".values", OutputSuffix(options_.format));
      if (!wire::CheckedMul(d.layout.nnz, width, &dense)) {
        *none = "no output: the values' size overflows";
        keep_ = false;
        return absl::OkStatus();
      }
    }
    *desc_ = d;
    dense_bytes_ = dense;
    conv_.emplace(quantized_ ? type_tag::kFloat32 : d.type_tag, out_type_,
                  d.layout.nnz);
    sparse_.resize(d.buffer_count);
    uint64_t budget = options_.spool_memory_bytes;
    for (uint32_t i = 0; i < d.buffer_count; ++i) {
      absl::Status s = OpenSpool(&sparse_[i], d.buffers[i].byte_size, &budget);
      if (!s.ok()) return s;
    }
    kind_ = Kind::kSparse;
    if (keep_) return absl::OkStatus();  // the outputs open at the end
    return OpenOut(d);
  }

  // A sparse tensor kept as its arrays (DequantSinkOptions::sparse): the
  // values converted (dequantized) in stored order as the main output
  // "<name>.values", then each index array as it is stored (uint64) in
  // *more. The index is walked first: a broken one (permissive input)
  // leaves nothing.
  absl::Status KeepArrays(std::string* temp, uint32_t* crc,
                          std::string* verdict, std::vector<KeptPart>* more) {
    std::vector<std::unique_ptr<Mapping>> maps;
    std::vector<absl::Span<const uint8_t>> views;
    absl::Status s = ViewSpools(&maps, &views);
    if (s.ok()) {
      uint64_t seen = 0;
      s = ForEachSparseElement(*desc_, views, [&](uint64_t, uint64_t) {
        if (++seen % (uint64_t{1} << 18) == 0) ReleaseAll(maps);
      });
    }
    if (!s.ok()) {
      if (s.code() != absl::StatusCode::kInvalidArgument) return s;
      NoOutputAtEnd(verdict, s.message());
      DropSparse();
      return absl::OkStatus();
    }
    const uint64_t nnz = desc_->layout.nnz;
    std::vector<uint64_t> shape = {nnz};
    if (out_type_.pairs) shape.push_back(2);
    const std::string name = name_;
    name_ = name + ".values";
    s = OpenOutShape(shape);
    if (s.ok() && in_safetensors_) late_entries_.push_back(".values");
    if (s.ok()) s = Densify(verdict, /*by_value=*/true);
    if (!s.ok() || kind_ == Kind::kNone) {
      DropSparse();
      return s;
    }
    s = CloseFinished(temp, crc);
    if (!s.ok()) return s;
    for (const KeptArray& a : KeptArrays(*desc_)) {
      if (a.buffer >= views.size()) continue;
      // Whole entries (rows) only: the header's shape holds every byte.
      std::vector<uint64_t> ashape = {views[a.buffer].size() / 8 / a.columns};
      if (a.columns > 1) ashape.push_back(a.columns);
      const absl::Span<const uint8_t> bytes =
          views[a.buffer].first(static_cast<size_t>(ashape[0] * a.columns * 8));
      s = WritePart(name, a.suffix, bytes, ashape, &maps, more);
      if (!s.ok()) break;
    }
    maps.clear();
    DropSparse();
    if (!s.ok()) return s;
    *verdict = absl::StrCat("kept sparse (", nnz, " values and ", more->size(),
                            " index arrays, shape ", ShapeText(*desc_), ")");
    return absl::OkStatus();
  }

  // One index array (little-endian uint64) as its own output.
  absl::Status WritePart(const std::string& name, const std::string& suffix,
                         absl::Span<const uint8_t> bytes,
                         const std::vector<uint64_t>& shape,
                         std::vector<std::unique_ptr<Mapping>>* maps,
                         std::vector<KeptPart>* more) {
    if (!options_.write_files) return absl::OkStatus();
    auto release = [maps] {
      for (auto& m : *maps) m->Release();
    };
    if (safetensors_ != nullptr) {
      absl::Status s = safetensors_->BeginTensor(name + suffix, "U64", shape);
      for (size_t at = 0; s.ok() && at < bytes.size(); at += kSpoolReadBytes) {
        s = safetensors_->Append(bytes.subspan(at, kSpoolReadBytes));
        release();
      }
      if (!s.ok()) {
        safetensors_->AbandonTensor();
        return s;
      }
      safetensors_->EndTensor();
      late_entries_.push_back(suffix);
      return absl::OkStatus();
    }
    absl::StatusOr<TempFile> t = dir_->CreateTemp(0644);
    if (!t.ok()) return t.status();
    more->push_back(KeptPart{suffix, t->name, 0});
    KeptPart& part = more->back();
    absl::Status s = absl::OkStatus();
    if (options_.format == OutputFormat::kNpy) {
      const std::string h = NpyHeader("<u8", shape);
      part.crc = Crc32cExtend(
          0, absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(h.data()),
                                 h.size()));
      s = WriteAllFd(t->fd, h.data(), h.size(), dir_->Describe(t->name));
    }
    for (size_t at = 0; s.ok() && at < bytes.size(); at += kSpoolReadBytes) {
      const absl::Span<const uint8_t> c = bytes.subspan(at, kSpoolReadBytes);
      part.crc = Crc32cExtend(part.crc, c);
      s = WriteAllFd(t->fd, c.data(), c.size(), dir_->Describe(t->name));
      release();
    }
    if (::close(t->fd) != 0 && s.ok()) {
      s = ErrnoStatus("cannot write", dir_->Describe(t->name));
    }
    return s;
  }

  // The values converted to the output type, then each stored element
  // copied to its row-major place in a zero-filled file (the output after
  // its header, or a temp for safetensors), mapped shared.
  // Every spooled buffer as bytes: in memory, or its file mapped (the
  // mappings in *maps).
  absl::Status ViewSpools(std::vector<std::unique_ptr<Mapping>>* maps,
                          std::vector<absl::Span<const uint8_t>>* views) {
    views->assign(sparse_.size(), {});
    for (size_t i = 0; i < sparse_.size(); ++i) {
      BufferSpool& b = sparse_[i];
      if (b.file.fd < 0) {
        (*views)[i] = b.mem;
        continue;
      }
      maps->push_back(std::make_unique<Mapping>());
      absl::Status s = maps->back()->Map(b.file.fd, b.size, false);
      if (!s.ok()) return s;
      (*views)[i] = absl::MakeConstSpan(maps->back()->data(),
                                        static_cast<size_t>(b.size));
    }
    return absl::OkStatus();
  }

  // Drops the pages of every spool mapping read so far from the resident
  // set (clean file pages: a later read faults them in again).
  static void ReleaseAll(const std::vector<std::unique_ptr<Mapping>>& maps) {
    for (const auto& m : maps) m->Release();
  }
  // Input bytes read from mapped spools between two ReleaseAll.
  static constexpr size_t kReleaseBytes = size_t{4} << 20;

  // A tensor found at its end to get no output (a broken index in a
  // permissive input): nothing of it is kept, the verdict says why.
  void NoOutputAtEnd(std::string* verdict, absl::string_view why) {
    *verdict = absl::StrCat("no output: ", why);
    late_entries_.clear();
    CloseOut();
    if (!temp_.empty()) dir_->Remove(temp_);
    temp_.clear();
    if (in_safetensors_) safetensors_->AbandonTensor();
    in_safetensors_ = false;
    kind_ = Kind::kNone;
  }

  // One float as the output type (quantized outputs: float32, float16 or
  // bfloat16, ChooseOutput), little-endian.
  void StoreFloat(float f, uint8_t* to) {
    switch (out_type_.tag) {
      case type_tag::kFloat16:
        wire::StoreU16(to, DoubleToF16Bits(f));
        return;
      case type_tag::kBFloat16:
        wire::StoreU16(to, DoubleToBf16Bits(f));
        return;
      default:
        wire::StoreF32(to, f);
    }
  }

  // by_value: each stored element at its value index instead of its
  // position (a kept sparse tensor's values, dequantized or converted).
  absl::Status Densify(std::string* verdict, bool by_value = false) {
    std::vector<std::unique_ptr<Mapping>> maps;
    std::vector<absl::Span<const uint8_t>> views;
    {
      absl::Status s = ViewSpools(&maps, &views);
      if (!s.ok()) return s;
    }
    // Converted values: a spool of their own. Quantized values are
    // dequantized at their positions instead (SparseDequantizer).
    const uint64_t nnz = desc_->layout.nnz;
    const uint32_t width = conv_->out_bytes_per_element();
    std::optional<SparseDequantizer> deq;
    if (quantized_) {
      absl::StatusOr<dequant::ParameterBytes> pb =
          dequant::ParametersFromBuffers(*desc_, views);
      absl::StatusOr<SparseDequantizer> q =
          pb.ok() ? SparseDequantizer::Create(*desc_, *pb, options_.mode)
                  : absl::StatusOr<SparseDequantizer>(pb.status());
      if (!q.ok()) {
        if (RuleIdOf(q.status()).has_value()) return q.status();
        NoOutputAtEnd(verdict, q.status().message());
        DropSparse();
        return absl::OkStatus();
      }
      deq.emplace(*std::move(q));
    }
    BufferSpool values;
    uint64_t budget = options_.spool_memory_bytes;
    absl::Status s = OpenSpool(&values, quantized_ ? 0 : nnz * width, &budget);
    std::vector<uint8_t> chunk;
    for (size_t at = 0; !quantized_ && s.ok() && at < views[0].size();
         at += kSubPiece) {
      chunk.clear();
      conv_->Feed(views[0].subspan(at, kSubPiece), &chunk);
      s = AppendSpool(&values, chunk);
      if ((at + kSubPiece) % kReleaseBytes == 0) ReleaseAll(maps);
    }
    if (s.ok() && !quantized_ && conv_->done() < nnz) {
      s = absl::DataLossError("the values buffer is shorter than nnz");
    }
    if (s.ok() && quantized_ &&
        views[0].size() * 8 / std::max<uint32_t>(desc_->ElementBits(), 1) <
            nnz) {
      s = absl::DataLossError("the values buffer is shorter than nnz");
    }
    Mapping values_map;
    const uint8_t* vals = values.mem.data();
    if (s.ok() && values.file.fd >= 0) {
      s = values_map.Map(values.file.fd, values.size, false);
      vals = values_map.data();
    }
    // The dense file.
    TempFile dense;
    uint64_t header = 0;
    if (s.ok() && options_.write_files) {
      if (in_safetensors_) {
        absl::StatusOr<TempFile> t = dir_->CreateTemp(0600);
        if (t.ok()) dense = *t;
        s = t.status();
      } else {
        header = out_buf_.size();
        s = FlushOut();
        dense.fd = out_fd_;
      }
    }
    Mapping out_map;
    if (s.ok() && dense.fd >= 0) {
      if (::ftruncate(dense.fd, static_cast<off_t>(header + dense_bytes_)) !=
          0) {
        s = ErrnoStatus("cannot size", dir_->Describe(temp_));
      } else {
        s = out_map.Map(dense.fd, header + dense_bytes_, true);
      }
    }
    uint64_t placed = 0;
    if (s.ok()) {
      uint8_t* out =
          out_map.data() == nullptr ? nullptr : out_map.data() + header;
      s = ForEachSparseElement(
          *desc_, views, [&](uint64_t value, uint64_t position) {
            const uint64_t at = by_value ? value : position;
            if (out != nullptr && deq.has_value()) {
              StoreFloat(deq->Value(views[0], value, position),
                         out + at * width);
            } else if (out != nullptr) {
              std::memcpy(out + at * width, vals + value * width, width);
            }
            if (++placed % (uint64_t{1} << 18) == 0) {
              out_map.Release();
              values_map.Release();
              ReleaseAll(maps);
            }
          });
    }
    if (s.ok() && in_safetensors_ && dense.fd >= 0) {
      const absl::Span<const uint8_t> all(out_map.data(),
                                          static_cast<size_t>(dense_bytes_));
      for (size_t at = 0; s.ok() && at < all.size(); at += kSpoolReadBytes) {
        s = safetensors_->Append(all.subspan(at, kSpoolReadBytes));
        out_map.Release();
      }
    }
    out_map.Reset();
    if (in_safetensors_ && dense.fd >= 0) {
      ::close(dense.fd);
      dir_->Remove(dense.name);
    }
    if (values.file.fd >= 0) {
      values_map.Reset();
      ::close(values.file.fd);
      dir_->Remove(values.file.name);
    }
    maps.clear();
    if (!by_value) DropSparse();
    if (!s.ok()) {
      // A broken index (permissive input) leaves no output, not a failure.
      if (s.code() != absl::StatusCode::kInvalidArgument) return s;
      NoOutputAtEnd(verdict, s.message());
      return absl::OkStatus();
    }
    if (!in_safetensors_ && dense.fd >= 0) {
      absl::StatusOr<uint32_t> crc = FileCrc32c(*dir_, temp_);
      if (!crc.ok()) return crc.status();
      out_crc_ = *crc;
    }
    *verdict = absl::StrCat("densified (", placed, " stored values)");
    return absl::OkStatus();
  }

  // --- Block-paged tensors (stream/ingest/output/block_paged.h). ----------

  absl::Status BeginPaged(const TensorDescriptor& d, std::string* none) {
    quantized_ = d.has(flag::kHasQuantization);
    uint64_t parameter_bytes = 0;
    for (uint32_t i = 3; i < d.buffer_count && i < kMaxBuffers; ++i) {
      parameter_bytes += d.buffers[i].byte_size;
    }
    if (parameter_bytes > options_.max_parameter_bytes) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "the parameter buffers of a tensor take ", parameter_bytes,
          " bytes, more than the limit of ", options_.max_parameter_bytes));
    }
    if (d.rank != 3 || d.buffer_count < 3) {
      *none = "no output: a block-paged tensor needs rank 3 and 3 buffers";
      return absl::OkStatus();
    }
    *desc_ = d;
    sparse_.resize(d.buffer_count);
    uint64_t budget = options_.spool_memory_bytes;
    for (uint32_t i = 0; i < d.buffer_count; ++i) {
      absl::Status s = OpenSpool(&sparse_[i], d.buffers[i].byte_size, &budget);
      if (!s.ok()) return s;
    }
    kind_ = Kind::kPaged;
    return absl::OkStatus();  // the output opens at the end (its rows)
  }

  // The page pool converted to the output type (dequantized when
  // quantized), row-major [num_pages · page_size, heads, dims], into *pool.
  absl::Status ConvertPool(const std::vector<absl::Span<const uint8_t>>& views,
                           const std::vector<std::unique_ptr<Mapping>>& maps,
                           BufferSpool* pool, std::string* none) {
    std::vector<absl::Span<const uint8_t>> buffers = views;
    dequant::ParameterBytes pb;
    if (quantized_) {
      absl::StatusOr<dequant::ParameterBytes> p =
          dequant::ParametersFromBuffers(*desc_, buffers);
      if (!p.ok()) return p.status();
      pb = *p;
    }
    TensorDescriptor rm;
    dequant::ParameterBytes rm_params;
    std::vector<uint8_t> widened;
    absl::Status s =
        PoolAsRowMajor(*desc_, pb, options_.mode, &rm, &rm_params, &widened);
    if (!s.ok()) {
      if (RuleIdOf(s).has_value()) return s;
      *none = std::string(s.message());
      return absl::OkStatus();
    }
    uint64_t count = 0, bytes = 0;
    if (!rm.ElementCount(&count) ||
        !wire::CheckedMul(count, conv_->out_bytes_per_element(), &bytes)) {
      *none = "the page pool's size overflows";
      return absl::OkStatus();
    }
    uint64_t budget = options_.spool_memory_bytes;
    s = OpenSpool(pool, bytes, &budget);
    if (!s.ok()) return s;
    std::vector<uint8_t> chunk;
    if (!quantized_) {
      ElementConverter conv(desc_->type_tag, out_type_, count);
      for (size_t at = 0; s.ok() && at < views[0].size(); at += kSubPiece) {
        chunk.clear();
        conv.Feed(views[0].subspan(at, kSubPiece), &chunk);
        s = AppendSpool(pool, chunk);
        if ((at + kSubPiece) % kReleaseBytes == 0) ReleaseAll(maps);
      }
      if (s.ok() && conv.done() < count) {
        s = absl::DataLossError("the page pool is shorter than its pages");
      }
      return s;
    }
    absl::StatusOr<dequant::Dequantizer> dq =
        dequant::Dequantizer::Create(rm, rm_params, dq_options_);
    if (!dq.ok()) {
      if (RuleIdOf(dq.status()).has_value()) return dq.status();
      *none = std::string(dq.status().message());
      return absl::OkStatus();
    }
    ElementConverter conv(type_tag::kFloat32, out_type_, count);
    // The pool, dequantized in order (rm is row-major) and converted.
    dequant::WindowOutput pool_out(
        [&](uint64_t, absl::Span<const float> f) -> absl::Status {
          le_.resize(f.size() * 4);
          for (size_t i = 0; i < f.size(); ++i) {
            wire::StoreF32(&le_[4 * i], f[i]);
          }
          chunk.clear();
          conv.Feed(le_, &chunk);
          return AppendSpool(pool, chunk);
        });
    for (size_t at = 0; s.ok() && at < views[0].size(); at += kSubPiece) {
      const absl::Span<const uint8_t> part = views[0].subspan(at, kSubPiece);
      s = dq->Feed(part, pool_out);
      if ((at + kSubPiece) % kReleaseBytes == 0) ReleaseAll(maps);
    }
    if (s.ok()) s = dq->Finish();
    if (s.ok() && conv.done() < count) {
      s = absl::DataLossError("the page pool is shorter than its pages");
    }
    return s;
  }

  // The rows in block-table order (PlanPagedRows), each page copied from
  // the converted pool.
  absl::Status FinishPaged(std::string* verdict) {
    dq_options_.mode = options_.mode;
    conv_.emplace(quantized_ ? type_tag::kFloat32 : desc_->type_tag, out_type_,
                  0);
    std::vector<std::unique_ptr<Mapping>> maps;
    std::vector<absl::Span<const uint8_t>> views;
    absl::Status s = ViewSpools(&maps, &views);
    if (!s.ok()) return s;
    absl::StatusOr<PagedRows> rows = PlanPagedRows(*desc_, views[1], views[2]);
    if (!rows.ok()) {
      if (rows.status().code() != absl::StatusCode::kInvalidArgument) {
        return rows.status();
      }
      NoOutputAtEnd(verdict, rows.status().message());
      return absl::OkStatus();
    }
    std::string none;
    BufferSpool pool;
    s = ConvertPool(views, maps, &pool, &none);
    Mapping pool_map;
    const uint8_t* vals = pool.mem.data();
    if (s.ok() && none.empty() && pool.file.fd >= 0) {
      s = pool_map.Map(pool.file.fd, pool.size, false);
      vals = pool_map.data();
    }
    std::vector<uint64_t> shape = {rows->rows, desc_->shape[1],
                                   desc_->shape[2]};
    if (out_type_.pairs) shape.push_back(2);
    if (s.ok() && none.empty()) {
      s = OpenOutShape(shape);
      if (in_safetensors_) late_entries_.push_back("");
    }
    const uint64_t row_bytes =
        rows->row_elements * conv_->out_bytes_per_element();
    uint64_t copied = 0;
    if (s.ok() && none.empty()) {
      const uint64_t page_bytes = row_bytes * desc_->layout.page_size;
      // Each page's rows from the converted pool; its pages dropped from
      // the resident set every 16 MiB.
      auto copy = [&](uint64_t page, uint64_t slots) -> absl::Status {
        const uint8_t* from = vals + page * page_bytes;
        for (uint64_t left = slots * row_bytes; left > 0;) {
          const size_t n =
              static_cast<size_t>(std::min<uint64_t>(left, kOutBufferBytes));
          out_buf_.insert(out_buf_.end(), from, from + n);
          from += n;
          left -= n;
          copied += n;
          if (out_buf_.size() >= kOutBufferBytes) {
            absl::Status f = FlushOut();
            if (!f.ok()) return f;
          }
          if (copied % kReleaseBytes < n) pool_map.Release();
        }
        return absl::OkStatus();
      };
      s = ForEachPagedRun(*desc_, *rows, views[1], copy);
    }
    pool_map.Reset();
    if (pool.file.fd >= 0) {
      ::close(pool.file.fd);
      dir_->Remove(pool.file.name);
    }
    maps.clear();
    DropSparse();
    if (s.ok() && !none.empty()) {
      NoOutputAtEnd(verdict, none);
      return absl::OkStatus();
    }
    if (!s.ok()) {
      if (s.code() != absl::StatusCode::kInvalidArgument ||
          RuleIdOf(s).has_value()) {
        return s;
      }
      NoOutputAtEnd(verdict, s.message());
      return absl::OkStatus();
    }
    const uint64_t values =
        row_bytes == 0 ? 0 : copied / row_bytes * rows->row_elements;
    *verdict = absl::StrCat(quantized_ ? "dequantized (" : "converted (",
                            values, " values, block-paged");
    if (rows->padded) {
      absl::StrAppend(verdict, "; every slot of its ", rows->logical_pages,
                      " logical pages: the format does not give each "
                      "sequence's token count");
    }
    absl::StrAppend(verdict, ")");
    return absl::OkStatus();
  }

  void DropSpool() {
    DropSparse();
    if (spool_fd_ >= 0) {
      ::close(spool_fd_);
      dir_->Remove(spool_name_);
    }
    spool_fd_ = -1;
    spool_name_.clear();
    spool_mem_.Clear();  // its block stays for the next tensor (Begin)
    for (auto& p : params_) std::vector<uint8_t>().swap(p);
  }

  absl::Status FlushOut() {
    if (out_buf_.empty()) return absl::OkStatus();
    absl::Status s = absl::OkStatus();
    if (out_fd_ >= 0) {  // write_files
      out_crc_ = Crc32cExtend(out_crc_, out_buf_);
      s = WriteAllFd(out_fd_, out_buf_.data(), out_buf_.size(),
                     dir_->Describe(temp_));
    } else if (in_safetensors_) {
      s = safetensors_->Append(out_buf_);
    }
    out_buf_.clear();
    return s;
  }

  // Converted bytes go out in writes of about kOutBufferBytes.
  absl::Status Emit(absl::Span<const uint8_t> source) {
    if (out_fd_ < 0 && !in_safetensors_) {  // write_files = false
      conv_->Discard(source);
      return absl::OkStatus();
    }
    conv_->Feed(source, &out_buf_);
    return out_buf_.size() >= kOutBufferBytes ? FlushOut() : absl::OkStatus();
  }

  absl::Status WriteFloats(const float* f, size_t n) {
#if defined(ABSL_IS_LITTLE_ENDIAN)
    return Emit(
        absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(f), n * 4));
#else
    le_.resize(n * 4);
    for (size_t i = 0; i < n; ++i) wire::StoreF32(&le_[4 * i], f[i]);
    return Emit(le_);
#endif
  }

  absl::Status Dequantize(absl::Span<const uint8_t> piece) {
    while (!piece.empty()) {
      const absl::Span<const uint8_t> part =
          piece.first(std::min(piece.size(), kSubPiece));
      piece.remove_prefix(part.size());
      absl::Status s = dq_->Feed(part, floats_out_);
      if (!s.ok()) return s;
    }
    return absl::OkStatus();
  }

  absl::Status ConvertPlain(absl::Span<const uint8_t> piece) {
    const size_t skip =
        static_cast<size_t>(std::min<uint64_t>(plain_skip_, piece.size()));
    plain_skip_ -= skip;
    piece.remove_prefix(skip);
    while (!piece.empty()) {
      const absl::Span<const uint8_t> part =
          piece.first(std::min(piece.size(), kSubPiece));
      piece.remove_prefix(part.size());
      absl::Status s = Emit(part);
      if (!s.ok()) return s;
    }
    return absl::OkStatus();
  }

  absl::Status Spool(absl::Span<const uint8_t> piece) {
    spool_size_ += piece.size();
    if (spool_in_memory_) {
      spool_mem_.Append(piece.data(), piece.size());
      return absl::OkStatus();
    }
    return WriteAllFd(spool_fd_, piece.data(), piece.size(),
                      dir_->Describe(spool_name_));
  }

  // Reads the spooled data buffer of `d` (a dense layout) in logical
  // row-major order: from memory, or from the spool file through a block
  // cache of options_.gather_cache_bytes (bounded memory whatever the
  // layout: output/row_major_gather.h).
  absl::Status GatherSpool(const TensorDescriptor& d, GatherEmit emit) {
    if (spool_in_memory_ || spool_size_ == 0) {
      return GatherRowMajor(d, SpoolBytes(), kSpoolReadBytes, emit);
    }
    GatherFile file;
    file.fd = spool_fd_;
    file.size = spool_size_;
    file.name = dir_->Describe(spool_name_);
    file.cache_bytes = options_.gather_cache_bytes;
    return GatherRowMajorFromFile(d, file, kSpoolReadBytes, emit);
  }

  absl::Status ConvertSpool() {
    absl::Status s = GatherSpool(
        *desc_, [this](absl::Span<const uint8_t> c) { return Emit(c); });
    DropSpool();
    return s;
  }

  absl::Status DequantizeSpool() {
    std::vector<absl::Span<const uint8_t>> views(params_.size());
    for (size_t i = 1; i < params_.size(); ++i) views[i] = params_[i];
    absl::StatusOr<dequant::ParameterBytes> pb =
        dequant::ParametersFromBuffers(*desc_, views);
    if (!pb.ok()) return pb.status();
    absl::StatusOr<dequant::Plan> plan = dequant::MakePlan(*desc_);
    if (!plan.ok()) return plan.status();
    const bool row_major = desc_->layout_tag == layout_tag::kRowMajor;
    // Another layout: the stored grid is read back in row-major order and
    // dequantized as the same tensor stored row-major (packed from byte 0).
    TensorDescriptor rm = *desc_;
    if (!row_major) {
      rm.layout_tag = layout_tag::kRowMajor;
      rm.layout = LayoutFields();
      rm.byte_offset = 0;
      rm.buffers[0].byte_size = plan->storage_bytes;
    }
    absl::StatusOr<dequant::Dequantizer> dq =
        dequant::Dequantizer::Create(rm, *pb, dq_options_);
    if (!dq.ok()) return dq.status();
    dq_.emplace(*std::move(dq));
    for (auto& p : params_) std::vector<uint8_t>().swap(p);
    if (!row_major) {
      const TensorDescriptor grid =
          dequant::StoredGridDescriptor(*desc_, *plan);
      absl::Status s = GatherSpool(
          grid, [this](absl::Span<const uint8_t> c) { return Dequantize(c); });
      DropSpool();
      return s;
    }
    if (spool_in_memory_) {
      absl::Status s = Dequantize(SpoolBytes());
      spool_mem_.Clear();
      return s;
    }
    read_buf_.resize(kSpoolReadBytes);
    uint64_t at = 0;
    while (at < spool_size_) {
      const size_t n = static_cast<size_t>(
          std::min<uint64_t>(read_buf_.size(), spool_size_ - at));
      const ssize_t got =
          ::pread(spool_fd_, read_buf_.data(), n, static_cast<off_t>(at));
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) {
        return ErrnoStatus("cannot read", dir_->Describe(spool_name_));
      }
      absl::Status s = Dequantize(
          absl::MakeConstSpan(read_buf_.data(), static_cast<size_t>(got)));
      if (!s.ok()) return s;
      at += static_cast<uint64_t>(got);
    }
    DropSpool();
    std::vector<uint8_t>().swap(read_buf_);
    return absl::OkStatus();
  }

  const DequantSinkOptions& options_;
  SafeOutputDir* dir_;
  SafetensorsWriter* safetensors_;  // null unless --format safetensors
  bool in_safetensors_ = false;
  std::string name_;  // the tensor's name in model.safetensors
  Kind kind_ = Kind::kNone;
  bool quantized_ = false;
  OutputType out_type_;
  std::optional<ElementConverter> conv_;
  std::string final_name_;
  std::string temp_;  // the output being written
  uint32_t out_crc_ = 0;
  int out_fd_ = -1;
  std::vector<uint8_t> out_buf_;
  dequant::DequantOptions dq_options_;
  std::optional<dequant::Dequantizer> dq_;
  // Feed's output: a reused window of at most one sub-piece's floats,
  // written out as they complete (the tensor is heap-held: `this` stays).
  dequant::WindowOutput floats_out_{
      [this](uint64_t, absl::Span<const float> f) {
        return WriteFloats(f.data(), f.size());
      }};
  std::vector<uint8_t> le_;
  // Spool.
  std::unique_ptr<TensorDescriptor> desc_;
  std::vector<std::vector<uint8_t>> params_;
  bool spool_in_memory_ = true;
  // Huge pages (dequant/large_buffer.h): a fresh 16 MiB spool was 4096
  // page faults.
  dequant::LargeByteBuffer spool_mem_;
  absl::Span<const uint8_t> SpoolBytes() const {
    return absl::MakeConstSpan(spool_mem_.data(), spool_mem_.size());
  }
  std::string spool_name_;
  int spool_fd_ = -1;
  uint64_t spool_size_ = 0;
  std::vector<uint8_t> read_buf_;
  // Row-major plain: bytes of buffer 0 before byte_offset, still to skip.
  uint64_t plain_skip_ = 0;
  // Sparse.
  std::vector<BufferSpool> sparse_;
  uint64_t dense_bytes_ = 0;
  std::vector<std::string> late_entries_;
  bool keep_ = false;  // a sparse tensor kept as its arrays
  std::string base_;   // the file name before its suffixes
};

DequantSink::DequantSink(const DequantSinkOptions& options)
    : options_(options) {
  set_element_mode(options_.mode);  // strict-only element rules as asked
  // Opened once: every output and spool is created relative to it.
  absl::StatusOr<std::unique_ptr<SafeOutputDir>> dir =
      SafeOutputDir::Open(options_.out_dir);
  if (dir.ok()) {
    dir_ = *std::move(dir);
  } else {
    dir_status_ = dir.status();
  }
  if (dir_ != nullptr && options_.write_files &&
      options_.format == OutputFormat::kSafetensors) {
    safetensors_ = std::make_unique<SafetensorsWriter>(dir_.get());
  }
  tensor_ = std::make_unique<Tensor>(options_, dir_.get(), safetensors_.get());
}

DequantSink::~DequantSink() {
  tensor_.reset();
  safetensors_.reset();
}

void DequantSink::FailTensor(absl::Status s) {
  tensor_->Discard();
  // A data-level rule rejects the input; other failures (a full disk)
  // leave the finished outputs to a resumed run.
  if (RuleIdOf(s).has_value()) {
    DropPending("not written: the input was rejected after it");
  }
  Fail(std::move(s));
}

void DequantSink::DropPending(absl::string_view why) {
  for (TensorRecord& r : records_) {
    if (r.pending_output.empty()) continue;
    if (dir_ != nullptr) dir_->Remove(r.pending_output);
    for (const TensorRecord::MoreOutput& m : r.more) {
      if (dir_ != nullptr && !m.pending.empty()) dir_->Remove(m.pending);
    }
    r.more.clear();
    r.pending_output.clear();
    r.output_crc32c = 0;
    if (r.complete) absl::StrAppend(&r.verdict, "; ", why);
  }
}

void DequantSink::OnMetadata(
    absl::Span<const std::pair<std::string, std::string>> kv) {
  metadata_.assign(kv.begin(), kv.end());
}

absl::Status DequantSink::OnEndOfStream() {
  tensor_->ReleaseMemory();
  if (!status_.ok() || safetensors_ == nullptr) return status_;
  safetensors_->SetMetadata(std::move(metadata_));
  absl::Status s = safetensors_->Finish();
  if (!s.ok()) {
    Fail(s);
    return status_;
  }
  for (size_t i = 0; i < records_.size(); ++i) {
    if (i < safetensors_entries_.size() && !safetensors_entries_[i].empty()) {
      records_[i].output = kSafetensorsFileName;
    }
  }
  return status_;
}

void DequantSink::OnInputRejected() {
  tensor_->Discard();
  if (safetensors_ != nullptr) safetensors_->Discard();
  DropPending("not written: the input was rejected after it");
  if (dir_ != nullptr) dir_->RemoveAll();
}

// One output of an interrupted run: a pending one is adopted (it must be
// one of ours), and its bytes must have the CRC-32C the state recorded.
absl::Status DequantSink::CheckEarlierOutput(const std::string& output,
                                             const std::string& pending,
                                             uint32_t crc32c) {
  const std::string& name = output.empty() ? pending : output;
  if (!pending.empty()) {
    absl::Status s = dir_->Adopt(pending);
    if (!s.ok()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "the resume state names an output of the interrupted run that "
          "is not usable: ",
          s.message()));
    }
  }
  absl::StatusOr<uint32_t> crc = FileCrc32c(*dir_, name);
  if (!crc.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot check an output of the interrupted run: ",
                     crc.status().message()));
  }
  if (*crc != crc32c) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the output ", dir_->Describe(name),
        " changed since the interrupted run (CRC-32C ", *crc,
        ", the resume state says ", crc32c, "): refusing to resume"));
  }
  return absl::OkStatus();
}

absl::Status DequantSink::Preload(std::vector<TensorRecord> done) {
  for (const TensorRecord& r : done) {
    if (r.output.empty() && r.pending_output.empty()) continue;
    if (dir_ == nullptr || !options_.write_files) {
      return absl::FailedPreconditionError(
          options_.write_files
              ? dir_status_.message()
              : "the resume state lists output files, this run writes none");
    }
    HURRAY_RETURN_IF_ERROR(
        CheckEarlierOutput(r.output, r.pending_output, r.output_crc32c));
    // A kept sparse tensor's index arrays, each checked the same way.
    for (const TensorRecord::MoreOutput& m : r.more) {
      HURRAY_RETURN_IF_ERROR(CheckEarlierOutput(m.output, m.pending, m.crc32c));
    }
  }
  return RecordingIngestSink::Preload(std::move(done));
}

absl::Status DequantSink::OnDescriptor(const TensorDescriptor& d) {
  if (!status_.ok()) return status_;
  HURRAY_RETURN_IF_ERROR(RecordingIngestSink::OnDescriptor(d));
  if (options_.write_files && dir_ == nullptr) {
    Fail(dir_status_);
    return status_;
  }
  TensorRecord& r = records_.back();
  const std::string base = r.name.empty() ? absl::StrCat("tensor_", r.index)
                                          : SafeFileName(r.name, r.index);
  std::string none;
  absl::Status s = tensor_->Begin(
      d, base, r.name.empty() ? absl::StrCat("tensor_", r.index) : r.name,
      &none);
  if (!s.ok()) {
    FailTensor(s);
    return status_;
  }
  r.verdict = none;
  if (safetensors_ != nullptr) {
    safetensors_entries_.resize(records_.size());
    if (tensor_->in_safetensors()) {
      safetensors_entries_.back().emplace_back(safetensors_->tensor_count() - 1,
                                               "");
    }
  }
  return status_;
}

absl::Status DequantSink::OnBufferPiece(uint32_t buffer_index,
                                        uint64_t offset_in_buffer,
                                        absl::Span<const uint8_t> piece) {
  if (!status_.ok()) return status_;
  NoteData(buffer_index, offset_in_buffer, piece);
  if (!status_.ok()) {  // an element rule rejected the data
    tensor_->Discard();
    DropPending("not written: the input was rejected after it");
    return status_;
  }
  absl::Status s = tensor_->Piece(buffer_index, piece);
  if (!s.ok()) FailTensor(s);
  return status_;
}

absl::Status DequantSink::OnTensorEnd() {
  if (!status_.ok() || !in_tensor_) return status_;
  // The index rules first: nothing is published for a rejected tensor.
  FinishDataChecks();
  if (!status_.ok()) {
    tensor_->Discard();
    DropPending("not written: the input was rejected after it");
    return status_;
  }
  TensorRecord& r = records_.back();
  std::string verdict, temp;
  std::vector<KeptPart> more;
  absl::Status s = tensor_->End(&temp, &r.output_crc32c, &verdict, &more);
  const std::vector<std::string> late = tensor_->TakeLateEntries();
  if (s.ok() && safetensors_ != nullptr) {
    safetensors_entries_.resize(records_.size());
    for (size_t j = 0; j < late.size(); ++j) {
      safetensors_entries_.back().emplace_back(
          safetensors_->tensor_count() - late.size() + j, late[j]);
    }
  }
  if (!s.ok() || temp.empty()) {
    for (const KeptPart& p : more) dir_->Remove(p.temp);
    more.clear();
  }
  if (s.ok() && !temp.empty()) {
    // A kept sparse tensor: "<name>.values" and its index arrays, all
    // complete before any is published.
    r.part = more.empty() && !tensor_->kept() ? "" : ".values";
    const std::string fmt = IndexFileSuffix(options_.format);
    if (names_at_end_) {
      // The index has not named it yet (and may never pass).
      r.pending_output = temp;
      if (options_.keep_unnamed_outputs) s = KeepForResume(&r.pending_output);
      for (const KeptPart& p : more) {
        r.more.push_back({p.suffix, "", p.temp, p.crc});
        if (options_.keep_unnamed_outputs && s.ok()) {
          s = KeepForResume(&r.more.back().pending);
        }
      }
    } else {
      s = dir_->Publish(temp, tensor_->final_name());
      if (s.ok()) {
        r.output = tensor_->final_name();
      } else {
        dir_->Remove(temp);
      }
      for (const KeptPart& p : more) {
        const std::string name = tensor_->base() + p.suffix + fmt;
        if (s.ok()) s = dir_->Publish(p.temp, name);
        if (s.ok()) {
          r.more.push_back({p.suffix, name, "", p.crc});
        } else {
          dir_->Remove(p.temp);
        }
      }
    }
  }
  if (!s.ok()) {
    FailTensor(s);
    return status_;
  }
  if (!verdict.empty()) r.verdict = verdict;
  return RecordingIngestSink::OnTensorEnd();
}

absl::Status DequantSink::KeepForResume(std::string* temp) {
  absl::StatusOr<std::string> kept = dir_->Keep(*temp);
  if (!kept.ok()) return kept.status();
  *temp = *std::move(kept);
  return absl::OkStatus();
}

absl::Status DequantSink::DropTensors(const std::vector<bool>& keep) {
  if (safetensors_ != nullptr) {
    return absl::FailedPreconditionError(
        "tensors cannot be dropped from model.safetensors");
  }
  for (size_t i = 0; i < records_.size() && i < keep.size(); ++i) {
    if (keep[i] || records_[i].pending_output.empty()) continue;
    if (dir_ != nullptr) {
      dir_->Remove(records_[i].pending_output);
      for (const TensorRecord::MoreOutput& m : records_[i].more) {
        if (!m.pending.empty()) dir_->Remove(m.pending);
      }
    }
    records_[i].pending_output.clear();
    records_[i].more.clear();
  }
  return RecordingIngestSink::DropTensors(keep);
}

absl::Status DequantSink::OnTensorNames(absl::Span<const std::string> names) {
  HURRAY_RETURN_IF_ERROR(RecordingIngestSink::OnTensorNames(names));
  if (safetensors_ != nullptr) {
    for (size_t i = 0; i < names.size() && i < safetensors_entries_.size();
         ++i) {
      if (names[i].empty()) continue;
      for (const auto& [entry, suffix] : safetensors_entries_[i]) {
        safetensors_->SetName(entry, names[i] + suffix);
      }
    }
  }
  // The file passed: every finished output gets its name.
  const absl::string_view suffix = OutputSuffix(options_.format);
  for (size_t i = 0; i < records_.size(); ++i) {
    TensorRecord& r = records_[i];
    if (r.pending_output.empty()) continue;
    const std::string base =
        options_.rename_to_names && i < names.size() && !names[i].empty()
            ? SafeFileName(names[i], i)
            : absl::StrCat("tensor_", i);
    const std::string name = absl::StrCat(base, r.part, suffix);
    absl::Status s = dir_->Publish(r.pending_output, name);
    if (!s.ok()) {
      Fail(s);
      return status_;
    }
    r.pending_output.clear();
    r.output = name;
    for (TensorRecord::MoreOutput& m : r.more) {
      if (m.pending.empty()) continue;
      const std::string more =
          absl::StrCat(base, m.part, IndexFileSuffix(options_.format));
      s = dir_->Publish(m.pending, more);
      if (!s.ok()) {
        Fail(s);
        return status_;
      }
      m.pending.clear();
      m.output = more;
    }
  }
  return status_;
}

}  // namespace hurray::stream
