#include "stream/ingest/buffer_spool.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace hurray::stream::ingest {

absl::Status OpenSpool(container::SafeOutputDir* dir, BufferSpool* b,
                       uint64_t bytes, uint64_t* budget) {
  b->size = 0;
  if (bytes <= *budget) {
    *budget -= bytes;
    b->mem.reserve(static_cast<size_t>(bytes));
    return absl::OkStatus();
  }
  if (dir == nullptr) {
    return absl::FailedPreconditionError(
        "a sparse tensor to spool, and no usable directory for it");
  }
  absl::StatusOr<container::TempFile> t = dir->CreateTemp(0600);
  if (!t.ok()) return t.status();
  b->file = *t;
  return absl::OkStatus();
}

absl::Status AppendSpool(container::SafeOutputDir* dir, BufferSpool* b,
                         absl::Span<const uint8_t> piece) {
  b->size += piece.size();
  if (b->file.fd < 0) {
    b->mem.insert(b->mem.end(), piece.begin(), piece.end());
    return absl::OkStatus();
  }
  return container::WriteAllFd(b->file.fd, piece.data(), piece.size(),
                               dir->Describe(b->file.name));
}

void DropSpool(container::SafeOutputDir* dir, BufferSpool* b) {
  if (b->file.fd < 0) return;
  ::close(b->file.fd);
  dir->Remove(b->file.name);
  b->file.fd = -1;
}

void Mapping::Reset() {
  if (map_ != nullptr) ::munmap(map_, size_);
  map_ = nullptr;
  size_ = 0;
}

absl::Status Mapping::Map(int fd, uint64_t size, bool writable) {
  if (size == 0) return absl::OkStatus();
  void* m =
      ::mmap(nullptr, static_cast<size_t>(size),
             writable ? PROT_READ | PROT_WRITE : PROT_READ, MAP_SHARED, fd, 0);
  if (m == MAP_FAILED) {
    return absl::DataLossError(
        absl::StrCat("cannot map a spool: ", std::strerror(errno)));
  }
  map_ = static_cast<uint8_t*>(m);
  size_ = static_cast<size_t>(size);
  return absl::OkStatus();
}

void Mapping::Release() const {
  if (map_ != nullptr) ::madvise(map_, size_, MADV_DONTNEED);
}

absl::Status BufferSpools::Open(const TensorDescriptor& d,
                                uint64_t spool_memory_bytes) {
  spools_.resize(d.buffer_count);
  uint64_t budget = spool_memory_bytes;
  for (uint32_t i = 0; i < d.buffer_count; ++i) {
    absl::Status s =
        OpenSpool(dir_, &spools_[i], d.buffers[i].byte_size, &budget);
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status BufferSpools::Append(uint32_t buffer,
                                  absl::Span<const uint8_t> piece) {
  if (buffer >= spools_.size()) return absl::OkStatus();
  return AppendSpool(dir_, &spools_[buffer], piece);
}

absl::Status BufferSpools::View(std::vector<std::unique_ptr<Mapping>>* maps,
                                std::vector<absl::Span<const uint8_t>>* views) {
  views->assign(spools_.size(), {});
  for (size_t i = 0; i < spools_.size(); ++i) {
    BufferSpool& b = spools_[i];
    if (b.file.fd < 0) {
      (*views)[i] = b.mem;
      continue;
    }
    maps->push_back(std::make_unique<Mapping>());
    absl::Status s = maps->back()->Map(b.file.fd, b.size, false);
    if (!s.ok()) return s;
    (*views)[i] =
        absl::MakeConstSpan(maps->back()->data(), static_cast<size_t>(b.size));
  }
  return absl::OkStatus();
}

void BufferSpools::Drop() {
  for (BufferSpool& b : spools_) DropSpool(dir_, &b);
  spools_.clear();
}

void ReleaseAll(const std::vector<std::unique_ptr<Mapping>>& maps) {
  for (const auto& m : maps) m->Release();
}

}  // namespace hurray::stream::ingest
