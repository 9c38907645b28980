#include "stream/ingest/consumers.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>

#include "absl/strings/cord.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "parser/rules.h"
#include "stream/container/crc32c.h"

namespace hurray::stream::ingest {

using container::Checkpoint;
using container::ContainerFormat;

namespace {

constexpr uint8_t kFileMagicBytes[8] = {'H', 'R', 'R', 'Y', 'F', 'I', 'L', 'E'};

}  // namespace

ContainerFormat SniffFormat(absl::Span<const uint8_t> first) {
  const size_t n = std::min<size_t>(first.size(), 8);
  // An empty span may have no data pointer: memcmp must not see it.
  if (n == 0) return ContainerFormat::kUnknown;
  if (std::memcmp(first.data(), kFileMagicBytes, n) != 0) {
    return ContainerFormat::kStream;
  }
  return n == 8 ? ContainerFormat::kHrry : ContainerFormat::kUnknown;
}

absl::Status WithDetail(const absl::Status& status, absl::string_view why) {
  if (status.ok() || why.empty()) return status;
  absl::Status out(status.code(), absl::StrCat(status.message(), ": ", why));
  status.ForEachPayload(
      [&out](absl::string_view url, const absl::Cord& payload) {
        out.SetPayload(url, payload);
      });
  return out;
}

// --- ReaderConsumer. ---------------------------------------------------------

absl::Status ReaderConsumer::Latch(absl::Status s) {
  if (!status_.ok()) return status_;
  if (!s.ok()) {
    status_ = std::move(s);
    // The reader's verdict (not the source failing, which says nothing
    // about the input).
    // Nor the sink's own failure: it already knows, and it decides what
    // its outputs become.
    if (!source_failed_ && !sink_failed_ && sink_ != nullptr) {
      sink_->OnInputRejected();
    }
  }
  return status_;
}

absl::Status ReaderConsumer::Feed(absl::Span<const uint8_t> chunk) {
  if (!status_.ok()) return status_;
  chunk_ = chunk;
  chunk_base_ = position();
  absl::Status s = DoFeed(chunk);
  chunk_ = {};
  // Only a resumable run pays for the CRC.
  if (checkpoint_)
    crc_before_chunk_ = container::Crc32cExtend(crc_before_chunk_, chunk);
  return Latch(std::move(s));
}

absl::Status ReaderConsumer::Finish() {
  if (!status_.ok()) return status_;
  return Latch(DoFinish());
}

absl::Status ReaderConsumer::FailSource(absl::string_view why) {
  if (!status_.ok()) return status_;
  source_failed_ = true;
  return Latch(WithDetail(DoFail(), why));
}

absl::Status ReaderConsumer::FromSink(absl::Status s) {
  if (!s.ok()) sink_failed_ = true;
  return s;
}

absl::Status ReaderConsumer::OnTensorKey(absl::string_view key) {
  return sink_ == nullptr ? absl::OkStatus()
                          : FromSink(sink_->OnTensorKey(key));
}

absl::Status ReaderConsumer::OnDescriptor(const TensorDescriptor& d) {
  return sink_ == nullptr ? absl::OkStatus() : FromSink(sink_->OnDescriptor(d));
}

absl::Status ReaderConsumer::OnBufferPiece(uint32_t buffer_index,
                                           uint64_t offset_in_buffer,
                                           absl::Span<const uint8_t> piece) {
  return sink_ == nullptr ? absl::OkStatus()
                          : FromSink(sink_->OnBufferPiece(
                                buffer_index, offset_in_buffer, piece));
}

absl::Status ReaderConsumer::OnTensorEnd() {
  if (sink_ != nullptr) {
    // A tensor the sink refused is not complete: the walk stops here.
    HURRAY_RETURN_IF_ERROR(FromSink(sink_->OnTensorEnd()));
  }
  ++tensors_;
  if (!checkpoint_) return absl::OkStatus();
  Checkpoint c;
  c.tensors = tensors_;
  if (!AtBoundary(&c)) return absl::OkStatus();
  // Every byte before the checkpoint passed: those of earlier chunks and
  // the head of this one (AtBoundary places c.offset inside it).
  if (c.offset < chunk_base_ || c.offset - chunk_base_ > chunk_.size()) {
    return absl::OkStatus();
  }
  c.crc32c = container::Crc32cExtend(
      crc_before_chunk_,
      chunk_.first(static_cast<size_t>(c.offset - chunk_base_)));
  checkpoint_(c);
  return absl::OkStatus();
}

absl::Status ReaderConsumer::OnEndOfStream() {
  return sink_ == nullptr ? absl::OkStatus() : FromSink(sink_->OnEndOfStream());
}

// --- StreamConsumer. ---------------------------------------------------------

StreamConsumer::StreamConsumer(const container::StreamOptions& options,
                               IngestSink* sink, const Checkpoint* resume)
    : ReaderConsumer(sink, resume),
      reader_(options, this, resume == nullptr ? 0 : resume->offset) {}

// status(): the rejection, or the status the sink stopped the read with.
absl::Status StreamConsumer::DoFeed(absl::Span<const uint8_t> chunk) {
  if (reader_.Feed(chunk) == container::StreamState::kRejected)
    return reader_.status();
  return absl::OkStatus();
}

absl::Status StreamConsumer::DoFinish() {
  if (reader_.Finish() == container::StreamState::kRejected)
    return reader_.status();
  return absl::OkStatus();
}

absl::Status StreamConsumer::DoFail() {
  if (reader_.FailSource() == container::StreamState::kRejected)
    return reader_.status();
  return absl::OkStatus();
}

bool StreamConsumer::AtBoundary(Checkpoint* c) {
  // The walker's position is exact inside OnTensorEnd.
  if (reader_.open_composites() != 0) return false;
  c->format = ContainerFormat::kStream;
  c->offset = reader_.position();
  return true;
}

// --- HrryConsumer. -----------------------------------------------------------

HrryConsumer::HrryConsumer(const container::FileOptions& options,
                           IngestSink* sink, const Checkpoint* resume)
    : ReaderConsumer(sink, resume), reader_(options, this) {
  if (sink != nullptr) sink->ExpectTensorNames();
  if (resume == nullptr) return;
  // A bad checkpoint rejects the reader (sticky): the first Feed reports it.
  if (!reader_
           .ResumeAt(resume->header, resume->last, resume->offset,
                     resume->extents)
           .ok()) {
    return;
  }
  if (reader_.state() == container::FileState::kRejected)
    status_ = reader_.status();
}

absl::Status HrryConsumer::DoFeed(absl::Span<const uint8_t> chunk) {
  if (reader_.Feed(chunk) == container::FileState::kRejected)
    return reader_.status();
  return absl::OkStatus();
}

absl::Status HrryConsumer::DoFinish() {
  if (reader_.Finish() == container::FileState::kRejected)
    return reader_.status();
  return absl::OkStatus();
}

absl::Status HrryConsumer::DoFail() {
  if (reader_.FailSource() == container::FileState::kRejected)
    return reader_.status();
  return absl::OkStatus();
}

bool HrryConsumer::AtBoundary(Checkpoint* c) {
  const absl::Span<const container::TensorExtent> done = reader_.tensors();
  if (done.empty() || reader_.open_composites() != 0) return false;
  const container::TensorExtent& last = done.back();
  // After a buffer-less tensor the walker may be in head padding.
  if (last.buffer_count == 0) return false;
  const uint64_t end = last.data_offset + last.data_length;
  if (end < chunk_base_ || end - chunk_base_ > chunk_.size()) return false;
  c->format = ContainerFormat::kHrry;
  c->offset = end;
  c->header.resize(container::kFileHeaderSize);
  container::EncodeFileHeader(reader_.header(), c->header.data());
  // The 40 bytes before `end`: the reader keeps them (the trailer's window).
  reader_.LastBytesBefore(end, &c->last);
  c->extents.assign(done.begin(), done.end());
  return true;
}

namespace {

// A KV value as JSON (arrays) or plain text (scalars); bytes in hex.
nlohmann::json KvJson(const container::KvValue& v) {
  switch (v.type) {
    case container::KvType::kString:
      return std::string(v.str());
    case container::KvType::kInt64:
      return v.i64;
    case container::KvType::kUInt64:
      return v.u64;
    case container::KvType::kFloat64:
      return v.f64;
    case container::KvType::kBool:
      return v.boolean;
    case container::KvType::kBytes:
      return absl::BytesToHexString(v.str());
    case container::KvType::kArray: {
      nlohmann::json a = nlohmann::json::array();
      for (const container::KvValue& e : v.Elements()) a.push_back(KvJson(e));
      return a;
    }
  }
  return nullptr;
}

}  // namespace

std::vector<std::pair<std::string, std::string>> KvText(
    const container::KvSection& kv) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const container::KvEntry& e : kv.entries()) {
    const nlohmann::json j = KvJson(e.value);
    out.emplace_back(
        std::string(e.key),
        j.is_string()
            ? j.get<std::string>()
            : j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  }
  return out;
}

absl::Status HrryConsumer::OnEndOfStream() {
  if (sink_ != nullptr) {
    sink_->OnMetadata(KvText(reader_.kv()));
    std::vector<std::string> names(reader_.tensors().size());
    for (size_t i = 0; i < names.size(); ++i) {
      const container::IndexEntry* e = reader_.entry_of_tensor(i);
      if (e != nullptr) names[i] = std::string(e->name);
    }
    HURRAY_RETURN_IF_ERROR(FromSink(sink_->OnTensorNames(names)));
  }
  return ReaderConsumer::OnEndOfStream();
}

// --- SniffingConsumer. -------------------------------------------------------

SniffingConsumer::SniffingConsumer(const container::FileOptions& options,
                                   IngestSink* sink)
    : options_(options), sink_(sink) {}

absl::Status SniffingConsumer::Start(ContainerFormat f) {
  format_ = f;
  if (f == ContainerFormat::kHrry) {
    inner_ = std::make_unique<HrryConsumer>(options_, sink_);
  } else {
    container::StreamOptions so;
    so.parse = options_.parse;
    so.limits = options_.limits;
    inner_ = std::make_unique<StreamConsumer>(so, sink_);
  }
  if (checkpoint_) inner_->set_checkpoint(checkpoint_);
  const size_t n = head_n_;
  head_n_ = 0;
  return inner_->Feed(absl::MakeConstSpan(head_, n));
}

absl::Status SniffingConsumer::Feed(absl::Span<const uint8_t> chunk) {
  if (inner_ != nullptr) return inner_->Feed(chunk);
  const size_t take = std::min(chunk.size(), sizeof(head_) - head_n_);
  if (take == 0) return absl::OkStatus();  // chunk.data() may be null
  std::memcpy(head_ + head_n_, chunk.data(), take);
  head_n_ += take;
  const ContainerFormat f = SniffFormat(absl::MakeConstSpan(head_, head_n_));
  if (f == ContainerFormat::kUnknown) return absl::OkStatus();
  absl::Status s = Start(f);
  if (!s.ok()) return s;
  return inner_->Feed(chunk.subspan(take));
}

absl::Status SniffingConsumer::Finish() {
  if (inner_ == nullptr) {
    // A proper prefix of "HRRYFILE" is a (too short) file, else a stream.
    absl::Status s =
        Start(head_n_ >= 5 ? ContainerFormat::kHrry : ContainerFormat::kStream);
    if (!s.ok()) return s;
  }
  return inner_->Finish();
}

absl::Status SniffingConsumer::FailSource(absl::string_view why) {
  if (inner_ == nullptr) {
    absl::Status s =
        Start(head_n_ >= 5 ? ContainerFormat::kHrry : ContainerFormat::kStream);
    if (!s.ok()) return s;
  }
  return inner_->FailSource(why);
}

uint64_t SniffingConsumer::position() const {
  return inner_ == nullptr ? head_n_ : inner_->position();
}

std::unique_ptr<container::ByteConsumer> MakeConsumer(
    ContainerFormat format, const container::FileOptions& options,
    IngestSink* sink, const Checkpoint* resume, CheckpointFn checkpoint) {
  if (resume != nullptr) format = resume->format;
  std::unique_ptr<ReaderConsumer> c;
  switch (format) {
    case ContainerFormat::kHrry:
      c = std::make_unique<HrryConsumer>(options, sink, resume);
      break;
    case ContainerFormat::kStream: {
      container::StreamOptions so;
      so.parse = options.parse;
      so.limits = options.limits;
      c = std::make_unique<StreamConsumer>(so, sink, resume);
      break;
    }
    case ContainerFormat::kUnknown: {
      auto s = std::make_unique<SniffingConsumer>(options, sink);
      if (checkpoint) s->set_checkpoint(std::move(checkpoint));
      return s;
    }
  }
  if (checkpoint) c->set_checkpoint(std::move(checkpoint));
  return c;
}

}  // namespace hurray::stream::ingest
