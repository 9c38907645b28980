#include "stream/ingest/sinks.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "parser/element_type.h"
#include "parser/quantization.h"
#include "parser/rules.h"
#include "stream/container/crc32c.h"
#include "stream/container/safe_file_name.h"
#include "stream/ingest/output_file.h"
#include "stream/ingest/output_naming.h"
#include "stream/ingest/values_buffer.h"
#include "stream/ingest/write_behind.h"

namespace hurray::stream::ingest {

using container::SafeFileName;
using resume::TensorRecord;

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

}  // namespace

// --- RecordingIngestSink. ----------------------------------------------------

absl::Status RecordingIngestSink::OnTensorKey(absl::string_view key) {
  pending_key_ = std::string(key);
  return absl::OkStatus();
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
  return absl::OkStatus();
}

absl::Status RecordingIngestSink::OnBufferPiece(
    uint32_t buffer_index, uint64_t offset_in_buffer,
    absl::Span<const uint8_t> piece) {
  return NoteData(buffer_index, offset_in_buffer, piece);
}

absl::Status RecordingIngestSink::NoteData(uint32_t buffer_index,
                                           uint64_t offset_in_buffer,
                                           absl::Span<const uint8_t> piece) {
  if (!in_tensor_) return absl::OkStatus();
  if (elements_.has_value()) {
    const Rejection r = elements_->Feed(buffer_index, offset_in_buffer, piece);
    if (!r.ok()) return Fail(ToStatus(r));
  }
  if (index_ != nullptr) {
    const Rejection r = index_->Feed(buffer_index, piece);
    if (!r.ok()) return Fail(InBuffer(r, index_->rejected_buffer()));
  }
  if (record_data_crc_) {
    TensorRecord& r = records_.back();
    r.data_crc32c = container::Crc32cExtend(r.data_crc32c, piece);
  }
  return absl::OkStatus();
}

absl::Status RecordingIngestSink::FinishDataChecks() {
  const std::unique_ptr<IndexDataChecker> index = std::move(index_);
  if (index == nullptr || !in_tensor_) return absl::OkStatus();
  const Rejection r = index->Finish();
  if (!r.ok()) return Fail(InBuffer(r, index->rejected_buffer()));
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
  return absl::OkStatus();
}

absl::Status RecordingIngestSink::OnTensorEnd() {
  elements_.reset();
  HURRAY_RETURN_IF_ERROR(FinishDataChecks());
  if (!in_tensor_) return absl::OkStatus();
  TensorRecord& r = records_.back();
  r.complete = true;
  if (r.verdict.empty()) r.verdict = "valid";
  if (!unchecked_.empty()) {
    absl::StrAppend(&r.verdict, " (not checked in one pass: ", unchecked_, ")");
    unchecked_.clear();
  }
  in_tensor_ = false;
  return absl::OkStatus();
}

absl::Status RecordingIngestSink::OnTensorNames(
    absl::Span<const std::string> names) {
  for (size_t i = 0; i < names.size() && i < records_.size(); ++i) {
    if (!names[i].empty()) records_[i].name = names[i];
  }
  return absl::OkStatus();
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
  return absl::OkStatus();
}

absl::Status RecordingIngestSink::Fail(absl::Status s) {
  if (status_.ok()) {
    status_ = s;
    if (in_tensor_) {
      records_.back().verdict = absl::StrCat("rejected: ", s.message());
      records_.back().output.clear();
    }
  }
  return s;
}

// --- DequantSink. ------------------------------------------------------------

DequantSink::DequantSink(const DequantSinkOptions& options)
    : options_(options) {
  set_element_mode(options_.mode);  // strict-only element rules as asked
  // Opened once: every output and spool is created relative to it.
  absl::StatusOr<std::unique_ptr<container::SafeOutputDir>> dir =
      options_.values != nullptr && options_.out_dir.empty()
          ? absl::FailedPreconditionError(
                "no directory to stage files in (the scratch directory "
                "could not be created)")
          : container::SafeOutputDir::Open(options_.out_dir);
  if (dir.ok()) {
    dir_ = *std::move(dir);
  } else {
    dir_status_ = dir.status();
  }
  if (dir_ != nullptr && options_.write_files &&
      options_.format == OutputFormat::kSafetensors) {
    safetensors_ = std::make_unique<SafetensorsWriter>(dir_.get());
  }
  if (dir_ != nullptr && options_.write_files && safetensors_ == nullptr) {
    write_behind_ = std::make_unique<WriteBehind>();
  }
  ctx_.options = &options_;
  ctx_.dir = dir_.get();
  ctx_.safetensors = safetensors_.get();
  ctx_.spool_memory = &spool_memory_;
  ctx_.float_window = &float_window_;
  ctx_.values = options_.values;
  ctx_.write_behind = write_behind_.get();
}

DequantSink::~DequantSink() {
  writer_.reset();
  safetensors_.reset();
  write_behind_.reset();
}

void DequantSink::Discard() {
  writer_.reset();
  spool_memory_.Release();
}

absl::Status DequantSink::FailTensor(absl::Status s) {
  Discard();
  // A data-level rule rejects the input; other failures (a full disk)
  // leave the finished outputs to a resumed run.
  if (RuleIdOf(s).has_value()) {
    DropPending("not written: the input was rejected after it");
  }
  return Fail(std::move(s));
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
  spool_memory_.Release();
  if (safetensors_ == nullptr) return absl::OkStatus();
  safetensors_->SetMetadata(std::move(metadata_));
  absl::Status s = safetensors_->Finish();
  if (!s.ok()) return Fail(std::move(s));
  for (size_t i = 0; i < records_.size(); ++i) {
    if (i < safetensors_entries_.size() && !safetensors_entries_[i].empty()) {
      records_[i].output = kSafetensorsFileName;
    }
  }
  return absl::OkStatus();
}

void DequantSink::OnInputRejected() {
  Discard();
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
  HURRAY_RETURN_IF_ERROR(RecordingIngestSink::OnDescriptor(d));
  TensorRecord& r = records_.back();
  // The values buffer holds one tensor's values until the next one: not for
  // a tensor that waits for its name (a .hrry read forward; a range read
  // names each tensor before it, OnTensorKey).
  if (options_.values != nullptr) options_.values->Reset();
  ctx_.values = names_at_end_ && r.name.empty() ? nullptr : options_.values;
  if (options_.write_files && dir_ == nullptr && ctx_.values == nullptr) {
    return Fail(dir_status_);
  }
  const std::string base = r.name.empty() ? absl::StrCat("tensor_", r.index)
                                          : SafeFileName(r.name, r.index);
  std::string none;
  writer_.reset();
  absl::StatusOr<std::unique_ptr<TensorWriter>> w = MakeTensorWriter(
      ctx_, d, base, r.name.empty() ? absl::StrCat("tensor_", r.index) : r.name,
      &none);
  if (w.ok()) writer_ = *std::move(w);
  // The in-memory spool keeps its block from one tensor to the next, so
  // each tensor's bytes land in pages mapped and recently used instead
  // of a fresh allocation (bench/RESULTS.md: a quarter less client CPU
  // in tcp_dequant); never beside another kind's spools or the gather
  // cache, which share its budget (sinks.h).
  if (writer_ == nullptr || !writer_->uses_spool_memory()) {
    spool_memory_.Release();
  }
  if (!w.ok()) return FailTensor(w.status());
  r.verdict = none;
  if (safetensors_ != nullptr) {
    safetensors_entries_.resize(records_.size());
    if (writer_ != nullptr && writer_->in_safetensors()) {
      safetensors_entries_.back().emplace_back(safetensors_->tensor_count() - 1,
                                               "");
    }
  }
  return absl::OkStatus();
}

absl::Status DequantSink::OnBufferPiece(uint32_t buffer_index,
                                        uint64_t offset_in_buffer,
                                        absl::Span<const uint8_t> piece) {
  absl::Status s = NoteData(buffer_index, offset_in_buffer, piece);
  if (!s.ok()) {  // an element rule rejected the data
    Discard();
    DropPending("not written: the input was rejected after it");
    return s;
  }
  if (writer_ == nullptr) return absl::OkStatus();
  s = writer_->Piece(buffer_index, piece);
  return s.ok() ? s : FailTensor(std::move(s));
}

absl::Status DequantSink::OnTensorEnd() {
  if (!in_tensor_) return absl::OkStatus();
  // The index rules first: nothing is published for a rejected tensor.
  if (absl::Status checks = FinishDataChecks(); !checks.ok()) {
    Discard();
    DropPending("not written: the input was rejected after it");
    return checks;
  }
  TensorRecord& r = records_.back();
  WriterResult done;
  absl::Status s = writer_ == nullptr ? absl::OkStatus() : writer_->End(&done);
  r.output_crc32c = done.crc;
  const std::string& verdict = done.verdict;
  const std::string& temp = done.temp;
  std::vector<KeptPart>& more = done.more;
  const std::vector<std::string>& late = done.late_entries;
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
    r.part = more.empty() && !writer_->kept() ? "" : ".values";
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
      s = dir_->Publish(temp, writer_->final_name());
      if (s.ok()) {
        r.output = writer_->final_name();
      } else {
        dir_->Remove(temp);
      }
      for (const KeptPart& p : more) {
        const std::string name = writer_->base() + p.suffix + fmt;
        if (s.ok()) s = dir_->Publish(p.temp, name);
        if (s.ok()) {
          r.more.push_back({p.suffix, name, "", p.crc});
        } else {
          dir_->Remove(p.temp);
        }
      }
    }
  }
  if (!s.ok()) return FailTensor(std::move(s));
  if (!verdict.empty()) r.verdict = verdict;
  // Its values are in memory (not a kept sparse tensor's arrays).
  if (ctx_.values != nullptr && ctx_.values->complete() && writer_ != nullptr &&
      !writer_->kept()) {
    ctx_.values->set_tensor(r.index);
  }
  writer_.reset();
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
      return Fail(std::move(s));
    }
    r.pending_output.clear();
    r.output = name;
    for (TensorRecord::MoreOutput& m : r.more) {
      if (m.pending.empty()) continue;
      const std::string more =
          absl::StrCat(base, m.part, IndexFileSuffix(options_.format));
      s = dir_->Publish(m.pending, more);
      if (!s.ok()) {
        return Fail(std::move(s));
      }
      m.pending.clear();
      m.output = more;
    }
  }
  return absl::OkStatus();
}

}  // namespace hurray::stream::ingest
