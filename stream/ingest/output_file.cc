#include "stream/ingest/output_file.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "parser/wire.h"
#include "stream/container/crc32c.h"
#include "stream/ingest/output/npy.h"

namespace hurray::stream::ingest {

absl::Status ErrnoStatus(absl::string_view what, const std::string& path) {
  return absl::DataLossError(
      absl::StrCat(what, " ", path, ": ", std::strerror(errno)));
}

absl::StatusOr<uint32_t> FileCrc32c(const container::SafeOutputDir& dir,
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
    crc = container::Crc32cExtend(
        crc, absl::MakeConstSpan(buf.data(), static_cast<size_t>(got)));
  }
  ::close(*fd);
  return crc;
}

std::vector<uint64_t> OutputShape(const TensorDescriptor& d,
                                  const OutputType& out_type) {
  std::vector<uint64_t> shape(d.shape, d.shape + std::min(d.rank, kMaxRank));
  if (out_type.pairs) shape.push_back(2);
  return shape;
}

absl::Status OutputFile::Open(const std::string& name, const OutputType& type,
                              const std::vector<uint64_t>& shape) {
  if (!ctx_.options->write_files) return absl::OkStatus();
  if (ctx_.values != nullptr) {
    // The output's size from the validated shape (an overflow does not fit).
    uint64_t bytes = type.bytes();
    for (uint64_t d : shape) {
      if (!wire::CheckedMul(bytes, d, &bytes)) bytes = UINT64_MAX;
    }
    if (ctx_.values->Fits(bytes) || ctx_.dir == nullptr) {
      absl::Status s = ctx_.values->Start(bytes);
      in_memory_ = s.ok();
      if (!s.ok() && ctx_.dir == nullptr) {
        return absl::ResourceExhaustedError(
            absl::StrCat(s.message(), ", and no directory to stage them in"));
      }
      return s;
    }
    // Too large for memory: a file, as without the buffer.
  }
  if (ctx_.safetensors != nullptr) {
    absl::Status s =
        ctx_.safetensors->BeginTensor(name, type.safetensors_dtype(), shape);
    in_safetensors_ = s.ok();
    return s;
  }
  absl::StatusOr<container::TempFile> t = ctx_.dir->CreateTemp(0644);
  if (!t.ok()) return t.status();
  fd_ = t->fd;
  temp_ = t->name;
  if (ctx_.write_behind != nullptr) {
    behind_ = std::make_unique<WriteBehind::File>(ctx_.write_behind, fd_,
                                                  ctx_.dir->Describe(temp_));
  }
  if (ctx_.options->format == OutputFormat::kNpy) {
    const std::string h = NpyHeader(type.npy_descr(), shape);
    buf_.assign(h.begin(), h.end());
  }
  return absl::OkStatus();
}

void OutputFile::set_crc(uint32_t crc) {
  if (behind_ != nullptr) behind_->set_crc(crc);
  crc_ = crc;
}

absl::Status OutputFile::Flush() {
  if (behind_ != nullptr) return behind_->Write(&buf_);
  if (buf_.empty()) return absl::OkStatus();
  absl::Status s = absl::OkStatus();
  if (in_memory_) {
    s = ctx_.values->Append(buf_);
  } else if (fd_ >= 0) {  // write_files
    crc_ = container::Crc32cExtend(crc_, buf_);
    s = container::WriteAllFd(fd_, buf_.data(), buf_.size(),
                              ctx_.dir->Describe(temp_));
  } else if (in_safetensors_) {
    s = ctx_.safetensors->Append(buf_);
  }
  buf_.clear();
  return s;
}

absl::Status OutputFile::Sync() {
  absl::Status s = Flush();
  if (s.ok() && behind_ != nullptr) s = behind_->Wait();
  return s;
}

absl::Status OutputFile::Emit(ElementConverter& conv,
                              absl::Span<const uint8_t> source) {
  if (!writing()) {  // write_files = false
    conv.Discard(source);
    return absl::OkStatus();
  }
  if (in_memory_) {
    conv.Feed(source, &buf_);
    return Flush();
  }
  // In slices, so that the buffer passes kOutBufferBytes by at most one
  // slice's output (the buffers queued on the WriteBehind stay near it).
  while (!source.empty()) {
    const absl::Span<const uint8_t> slice =
        source.first(std::min(source.size(), kEmitSliceBytes));
    source.remove_prefix(slice.size());
    conv.Feed(slice, &buf_);
    absl::Status s = FlushIfFull();
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status OutputFile::Close(WriterResult* r) {
  absl::Status s = Sync();
  if (!s.ok()) return s;
  if (behind_ != nullptr) crc_ = behind_->crc();
  behind_.reset();
  if (fd_ >= 0 && ::close(fd_) != 0) {
    fd_ = -1;
    return ErrnoStatus("cannot write", ctx_.dir->Describe(temp_));
  }
  fd_ = -1;
  r->temp = std::move(temp_);
  temp_.clear();
  r->crc = crc_;
  if (in_safetensors_) ctx_.safetensors->EndTensor();
  in_safetensors_ = false;
  if (in_memory_) ctx_.values->Close();
  in_memory_ = false;
  return absl::OkStatus();
}

void OutputFile::Abandon() {
  if (in_safetensors_) ctx_.safetensors->AbandonTensor();
  in_safetensors_ = false;
  if (in_memory_) ctx_.values->Abandon();
  in_memory_ = false;
  behind_.reset();  // no write left on fd_
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  if (!temp_.empty()) ctx_.dir->Remove(temp_);
  temp_.clear();
  buf_.clear();
}

}  // namespace hurray::stream::ingest
