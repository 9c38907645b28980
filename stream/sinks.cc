#include "stream/sinks.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <optional>
#include <utility>

#include "absl/base/config.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "dequant/dequantizer.h"
#include "dequant/minifloat.h"
#include "dequant/params.h"
#include "dequant/plan.h"
#include "parser/element_type.h"
#include "parser/quantization.h"
#include "parser/rules.h"
#include "parser/wire.h"
#include "stream/crc32c.h"
#include "stream/safe_output_dir.h"
#include "stream/utf8.h"

namespace hurray::stream {
namespace {

// Data bytes handed to the dequantizer at once: bounds the float buffer
// (2-bit codes: 4 floats per byte, 2 MiB of output).
constexpr size_t kSubPiece = size_t{128} << 10;
constexpr size_t kSpoolReadBytes = size_t{1} << 20;

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

std::string ShapeText(const TensorDescriptor& d) {
  std::string s = "[";
  for (uint32_t i = 0; i < d.rank && i < kMaxRank; ++i) {
    absl::StrAppend(&s, i == 0 ? "" : ", ", d.shape[i]);
  }
  return s + "]";
}

// Bytes per element of the plain types converted to float32; 0 otherwise.
uint32_t PlainWidth(uint8_t type) {
  switch (type) {
    case type_tag::kFloat32:
      return 4;
    case type_tag::kFloat16:
    case type_tag::kBFloat16:
      return 2;
    case type_tag::kFloat8E4M3:
    case type_tag::kFloat8E5M2:
      return 1;
    default:
      return 0;
  }
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

void RecordingIngestSink::OnTensorKey(absl::string_view key) {
  pending_key_ = std::string(key);
}

void RecordingIngestSink::OnDescriptor(const TensorDescriptor& d) {
  TensorRecord r;
  r.index = records_.size();
  r.name = std::move(pending_key_);
  pending_key_.clear();
  r.shape = ShapeText(d);
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
}

void RecordingIngestSink::OnBufferPiece(uint32_t buffer_index,
                                        uint64_t offset_in_buffer,
                                        absl::Span<const uint8_t> piece) {
  NoteData(buffer_index, offset_in_buffer, piece);
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
  if (!record_data_crc_) return;
  TensorRecord& r = records_.back();
  r.data_crc32c = Crc32cExtend(r.data_crc32c, piece);
}

void RecordingIngestSink::OnTensorEnd() {
  elements_.reset();
  if (!in_tensor_ || !status_.ok()) return;
  TensorRecord& r = records_.back();
  r.complete = true;
  if (r.verdict.empty()) r.verdict = "valid";
  in_tensor_ = false;
}

void RecordingIngestSink::OnTensorNames(absl::Span<const std::string> names) {
  for (size_t i = 0; i < names.size() && i < records_.size(); ++i) {
    if (!names[i].empty()) records_[i].name = names[i];
  }
}

absl::Status RecordingIngestSink::Preload(std::vector<TensorRecord> done) {
  records_ = std::move(done);
  for (size_t i = 0; i < records_.size(); ++i) records_[i].index = i;
  in_tensor_ = false;
  return absl::OkStatus();
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
  enum class Kind : uint8_t { kNone, kQuant, kPlain, kSpool };

  // `dir`: where the files go (outputs with write_files, spools).
  Tensor(const DequantSinkOptions& o, SafeOutputDir* dir)
      : options_(o), dir_(dir) {
    desc_ = std::make_unique<TensorDescriptor>();
  }
  ~Tensor() { Abandon(); }

  // Closes and removes what an unfinished tensor wrote.
  void Abandon() {
    CloseOut();
    if (!temp_.empty()) dir_->Remove(temp_);
    temp_.clear();
    DropSpool();
    kind_ = Kind::kNone;
  }

  // The name the output gets when it is published.
  const std::string& final_name() const { return final_name_; }

  // Sets up for `d`; returns a skip reason in *skip, or an error.
  absl::Status Begin(const TensorDescriptor& d, const std::string& base,
                     std::string* skip) {
    Abandon();
    final_name_ = base + ".f32";
    out_crc_ = 0;
    if (d.buffer_count == 0) {
      *skip = d.layout_tag == layout_tag::kComposite
                  ? "skipped: composite head (no data)"
                  : "skipped: no data buffer";
      return absl::OkStatus();
    }
    if (d.has(flag::kHasQuantization)) return BeginQuant(d, skip);
    return BeginPlain(d, skip);
  }

  absl::Status Piece(uint32_t buffer, absl::Span<const uint8_t> piece) {
    switch (kind_) {
      case Kind::kNone:
        return absl::OkStatus();
      case Kind::kQuant:
        return buffer == 0 ? Dequantize(piece) : absl::OkStatus();
      case Kind::kPlain:
        return buffer == 0 ? Convert(piece) : absl::OkStatus();
      case Kind::kSpool:
        if (buffer == 0) return Spool(piece);
        params_[buffer].insert(params_[buffer].end(), piece.begin(),
                               piece.end());
        return absl::OkStatus();
    }
    return absl::OkStatus();
  }

  // The tensor's bytes all arrived: finish the output. *temp names the
  // finished output's temp in the directory (empty when skipped or not
  // writing files), for the caller to publish; *crc is its CRC-32C.
  absl::Status End(std::string* temp, uint32_t* crc, std::string* verdict) {
    if (kind_ == Kind::kNone) return absl::OkStatus();
    if (kind_ == Kind::kSpool) {
      absl::Status s = DequantizeSpool();
      if (!s.ok()) return s;
    }
    if (kind_ == Kind::kPlain) {
      if (plain_done_ < plain_count_) {
        return absl::DataLossError("the data buffer is shorter than its shape");
      }
      *verdict = absl::StrCat("converted (", plain_count_, " values)");
    } else {
      absl::Status s = dq_->Finish();
      if (!s.ok()) return s;
      *verdict =
          absl::StrCat("dequantized (", dq_->elements_written(), " values)");
    }
    if (out_fd_ >= 0 && ::close(out_fd_) != 0) {
      out_fd_ = -1;
      return ErrnoStatus("cannot write", dir_->Describe(temp_));
    }
    out_fd_ = -1;
    dq_.reset();
    kind_ = Kind::kNone;
    *temp = std::move(temp_);
    temp_.clear();
    *crc = out_crc_;
    return absl::OkStatus();
  }

 private:
  absl::Status BeginQuant(const TensorDescriptor& d, std::string* skip) {
    absl::StatusOr<dequant::Plan> plan = dequant::MakePlan(d);
    if (!plan.ok()) {
      if (RuleIdOf(plan.status()).has_value()) return plan.status();
      *skip = absl::StrCat("skipped: ", plan.status().message());
      return absl::OkStatus();
    }
    dq_options_.mode = options_.mode;
    // Other dense layouts store elements out of logical order: the whole
    // tensor is dequantized in memory (Dequantizer::ConsumeScattered), from
    // a data buffer spooled in memory, within the sink's bounds.
    const bool scattered = d.layout_tag != layout_tag::kRowMajor;
    if (scattered &&
        (plan->logical_elements > options_.max_scattered_elements ||
         d.buffers[0].byte_size > options_.spool_memory_bytes)) {
      *skip = absl::StrCat("skipped: layout ", LayoutName(d.layout_tag),
                           " is dequantized in memory, and this tensor is "
                           "larger than the sink's limit");
      return absl::OkStatus();
    }
    if (d.buffer_count == 1 && !scattered) {
      absl::StatusOr<dequant::Dequantizer> dq = dequant::Dequantizer::Create(
          d, dequant::ParameterBytes(), dq_options_);
      if (!dq.ok()) return SkipOrFail(dq.status(), skip);
      dq_.emplace(*std::move(dq));
      kind_ = Kind::kQuant;
      return OpenOut();
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
    *desc_ = d;
    params_.resize(d.buffer_count);
    for (uint32_t i = 0; i < d.buffer_count; ++i) {
      params_[i].clear();
      if (i > 0)
        params_[i].reserve(static_cast<size_t>(d.buffers[i].byte_size));
    }
    spool_size_ = 0;
    spool_in_memory_ = d.buffers[0].byte_size <= options_.spool_memory_bytes;
    if (spool_in_memory_) {
      spool_mem_.clear();
      spool_mem_.reserve(static_cast<size_t>(d.buffers[0].byte_size));
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
    return OpenOut();
  }

  absl::Status BeginPlain(const TensorDescriptor& d, std::string* skip) {
    const uint32_t width = PlainWidth(d.type_tag);
    uint64_t count = 0;
    if (width == 0) {
      *skip = absl::StrCat("skipped: no float32 conversion for ",
                           ElementTypeName(d.type_tag));
    } else if (d.layout_tag != layout_tag::kRowMajor) {
      *skip = absl::StrCat("skipped: layout ", LayoutName(d.layout_tag),
                           " is not converted");
    } else if (!d.ElementCount(&count) || d.byte_offset != 0 ||
               count > d.buffers[0].byte_size / width) {
      *skip = "skipped: the data buffer does not hold the shape";
    }
    if (!skip->empty()) return absl::OkStatus();
    plain_type_ = d.type_tag;
    plain_width_ = width;
    plain_count_ = count;
    plain_done_ = 0;
    carry_n_ = 0;
    kind_ = Kind::kPlain;
    return OpenOut();
  }

  absl::Status SkipOrFail(const absl::Status& s, std::string* skip) {
    if (RuleIdOf(s).has_value() ||
        s.code() == absl::StatusCode::kInvalidArgument) {
      return s;
    }
    *skip = absl::StrCat("skipped: ", s.message());
    return absl::OkStatus();
  }

  absl::Status OpenOut() {
    if (!options_.write_files) return absl::OkStatus();
    absl::StatusOr<TempFile> t = dir_->CreateTemp(0644);
    if (!t.ok()) return t.status();
    out_fd_ = t->fd;
    temp_ = t->name;
    return absl::OkStatus();
  }

  void CloseOut() {
    if (out_fd_ >= 0) ::close(out_fd_);
    out_fd_ = -1;
  }

  void DropSpool() {
    if (spool_fd_ >= 0) {
      ::close(spool_fd_);
      dir_->Remove(spool_name_);
    }
    spool_fd_ = -1;
    spool_name_.clear();
    std::vector<uint8_t>().swap(spool_mem_);
    for (auto& p : params_) std::vector<uint8_t>().swap(p);
  }

  absl::Status WriteFloats(const float* f, size_t n) {
    if (out_fd_ < 0) return absl::OkStatus();  // write_files = false
#if defined(ABSL_IS_LITTLE_ENDIAN)
    const absl::Span<const uint8_t> bytes(reinterpret_cast<const uint8_t*>(f),
                                          n * 4);
#else
    le_.resize(n * 4);
    for (size_t i = 0; i < n; ++i) wire::StoreF32(&le_[4 * i], f[i]);
    const absl::Span<const uint8_t> bytes(le_);
#endif
    out_crc_ = Crc32cExtend(out_crc_, bytes);
    return WriteAllFd(out_fd_, bytes.data(), bytes.size(),
                      dir_->Describe(temp_));
  }

  absl::Status Dequantize(absl::Span<const uint8_t> piece) {
    while (!piece.empty()) {
      const absl::Span<const uint8_t> part =
          piece.first(std::min(piece.size(), kSubPiece));
      piece.remove_prefix(part.size());
      floats_.resize(static_cast<size_t>(dq_->OutputCountFor(part.size())));
      size_t written = 0;
      absl::Status s = dq_->Consume(part, absl::MakeSpan(floats_), &written);
      if (!s.ok()) return s;
      s = WriteFloats(floats_.data(), written);
      if (!s.ok()) return s;
    }
    return absl::OkStatus();
  }

  float PlainValue(const uint8_t* p) const {
    switch (plain_type_) {
      case type_tag::kFloat32:
        return wire::LoadF32(p);
      case type_tag::kFloat16:
        return dequant::F16ToF32(wire::LoadU16(p));
      case type_tag::kBFloat16:
        return dequant::Bf16ToF32(wire::LoadU16(p));
      default:
        return dequant::MinifloatDecoderFor(plain_type_)(*p);
    }
  }

  absl::Status Convert(absl::Span<const uint8_t> piece) {
    floats_.clear();
    size_t i = 0;
    // An element cut by the previous piece.
    while (carry_n_ > 0 && i < piece.size() && plain_done_ < plain_count_) {
      carry_[carry_n_++] = piece[i++];
      if (carry_n_ == plain_width_) {
        floats_.push_back(PlainValue(carry_));
        ++plain_done_;
        carry_n_ = 0;
      }
    }
    while (plain_done_ < plain_count_ && piece.size() - i >= plain_width_) {
      floats_.push_back(PlainValue(piece.data() + i));
      i += plain_width_;
      ++plain_done_;
      if (floats_.size() == kSubPiece) {
        absl::Status s = WriteFloats(floats_.data(), floats_.size());
        if (!s.ok()) return s;
        floats_.clear();
      }
    }
    while (plain_done_ < plain_count_ && i < piece.size()) {
      carry_[carry_n_++] = piece[i++];
    }
    return WriteFloats(floats_.data(), floats_.size());
  }

  absl::Status Spool(absl::Span<const uint8_t> piece) {
    spool_size_ += piece.size();
    if (spool_in_memory_) {
      spool_mem_.insert(spool_mem_.end(), piece.begin(), piece.end());
      return absl::OkStatus();
    }
    return WriteAllFd(spool_fd_, piece.data(), piece.size(),
                      dir_->Describe(spool_name_));
  }

  absl::Status DequantizeSpool() {
    std::vector<absl::Span<const uint8_t>> views(params_.size());
    for (size_t i = 1; i < params_.size(); ++i) views[i] = params_[i];
    absl::StatusOr<dequant::ParameterBytes> pb =
        dequant::ParametersFromBuffers(*desc_, views);
    if (!pb.ok()) return pb.status();
    absl::StatusOr<dequant::Dequantizer> dq =
        dequant::Dequantizer::Create(*desc_, *pb, dq_options_);
    if (!dq.ok()) return dq.status();
    dq_.emplace(*std::move(dq));
    for (auto& p : params_) std::vector<uint8_t>().swap(p);
    if (!dq_->in_order()) {
      // BeginQuant kept such tensors in memory and bounded their size.
      std::vector<float> tensor(
          static_cast<size_t>(dq_->plan().logical_elements));
      absl::Status s =
          dq_->ConsumeScattered(spool_mem_, absl::MakeSpan(tensor));
      std::vector<uint8_t>().swap(spool_mem_);
      if (s.ok()) s = WriteFloats(tensor.data(), tensor.size());
      return s;
    }
    if (spool_in_memory_) {
      absl::Status s = Dequantize(spool_mem_);
      std::vector<uint8_t>().swap(spool_mem_);
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
  Kind kind_ = Kind::kNone;
  std::string final_name_;
  std::string temp_;  // the output being written
  uint32_t out_crc_ = 0;
  int out_fd_ = -1;
  dequant::DequantOptions dq_options_;
  std::optional<dequant::Dequantizer> dq_;
  std::vector<float> floats_;
  std::vector<uint8_t> le_;
  // Spool.
  std::unique_ptr<TensorDescriptor> desc_;
  std::vector<std::vector<uint8_t>> params_;
  bool spool_in_memory_ = true;
  std::vector<uint8_t> spool_mem_;
  std::string spool_name_;
  int spool_fd_ = -1;
  uint64_t spool_size_ = 0;
  std::vector<uint8_t> read_buf_;
  // Plain conversion.
  uint8_t plain_type_ = 0;
  uint32_t plain_width_ = 0;
  uint64_t plain_count_ = 0, plain_done_ = 0;
  uint8_t carry_[4] = {};
  uint32_t carry_n_ = 0;
};

DequantSink::DequantSink(const DequantSinkOptions& options)
    : options_(options) {
  // Opened once: every output and spool is created relative to it.
  absl::StatusOr<std::unique_ptr<SafeOutputDir>> dir =
      SafeOutputDir::Open(options_.out_dir);
  if (dir.ok()) {
    dir_ = *std::move(dir);
  } else {
    dir_status_ = dir.status();
  }
  tensor_ = std::make_unique<Tensor>(options_, dir_.get());
}

DequantSink::~DequantSink() = default;

void DequantSink::FailTensor(absl::Status s) {
  tensor_->Abandon();
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
    r.pending_output.clear();
    r.output_crc32c = 0;
    if (r.complete) absl::StrAppend(&r.verdict, "; ", why);
  }
}

void DequantSink::OnInputRejected() {
  tensor_->Abandon();
  DropPending("not written: the input was rejected after it");
  if (dir_ != nullptr) dir_->RemoveAll();
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
    const std::string& name = r.output.empty() ? r.pending_output : r.output;
    if (!r.pending_output.empty()) {
      absl::Status s = dir_->Adopt(r.pending_output);
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
    if (*crc != r.output_crc32c) {
      return absl::FailedPreconditionError(
          absl::StrCat("the output ", dir_->Describe(name),
                       " changed since the interrupted run (CRC-32C ", *crc,
                       ", the resume state says ", r.output_crc32c,
                       "): refusing to resume"));
    }
  }
  return RecordingIngestSink::Preload(std::move(done));
}

void DequantSink::OnDescriptor(const TensorDescriptor& d) {
  if (!status_.ok()) return;
  RecordingIngestSink::OnDescriptor(d);
  if (options_.write_files && dir_ == nullptr) return Fail(dir_status_);
  TensorRecord& r = records_.back();
  const std::string base = r.name.empty() ? absl::StrCat("tensor_", r.index)
                                          : SafeFileName(r.name, r.index);
  std::string skip;
  absl::Status s = tensor_->Begin(d, base, &skip);
  if (!s.ok()) return FailTensor(s);
  r.verdict = skip;
}

void DequantSink::OnBufferPiece(uint32_t buffer_index,
                                uint64_t offset_in_buffer,
                                absl::Span<const uint8_t> piece) {
  if (!status_.ok()) return;
  NoteData(buffer_index, offset_in_buffer, piece);
  if (!status_.ok()) {  // an element rule rejected the data
    tensor_->Abandon();
    DropPending("not written: the input was rejected after it");
    return;
  }
  absl::Status s = tensor_->Piece(buffer_index, piece);
  if (!s.ok()) FailTensor(s);
}

void DequantSink::OnTensorEnd() {
  if (!status_.ok() || !in_tensor_) return;
  TensorRecord& r = records_.back();
  std::string verdict, temp;
  absl::Status s = tensor_->End(&temp, &r.output_crc32c, &verdict);
  if (s.ok() && !temp.empty()) {
    if (names_at_end_) {
      // The index has not named it yet (and may never pass).
      r.pending_output = temp;
      if (options_.keep_unnamed_outputs) dir_->Keep(temp);
    } else {
      s = dir_->Publish(temp, tensor_->final_name());
      if (s.ok()) {
        r.output = tensor_->final_name();
      } else {
        dir_->Remove(temp);
      }
    }
  }
  if (!s.ok()) return FailTensor(s);
  if (!verdict.empty()) r.verdict = verdict;
  RecordingIngestSink::OnTensorEnd();
}

void DequantSink::OnTensorNames(absl::Span<const std::string> names) {
  RecordingIngestSink::OnTensorNames(names);
  if (!status_.ok()) return;
  // The file passed: every finished output gets its name.
  for (size_t i = 0; i < records_.size(); ++i) {
    TensorRecord& r = records_[i];
    if (r.pending_output.empty()) continue;
    const std::string name =
        options_.rename_to_names && i < names.size() && !names[i].empty()
            ? SafeFileName(names[i], i) + ".f32"
            : absl::StrCat("tensor_", i, ".f32");
    absl::Status s = dir_->Publish(r.pending_output, name);
    if (!s.ok()) return Fail(s);
    r.pending_output.clear();
    r.output = name;
  }
}

}  // namespace hurray::stream
