#include "stream/ingest/output/safetensors.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <set>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace hurray::stream::ingest {
namespace {

absl::Status ErrnoError(absl::string_view what, const std::string& where) {
  return absl::DataLossError(
      absl::StrCat(what, " ", where, ": ", std::strerror(errno)));
}

// Copies `size` bytes of `from` (from offset 0) to the end of `to`.
absl::Status CopyData(int from, int to, uint64_t size,
                      const std::string& where) {
  loff_t in = 0;
  bool fallback = false;
  while (static_cast<uint64_t>(in) < size && !fallback) {
    const ssize_t n =
        ::copy_file_range(from, &in, to, nullptr,
                          static_cast<size_t>(std::min<uint64_t>(
                              size - static_cast<uint64_t>(in), 1u << 30)),
                          0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EXDEV || errno == ENOSYS || errno == EINVAL ||
                  errno == EOPNOTSUPP)) {
      fallback = true;
      break;
    }
    if (n <= 0) return ErrnoError("cannot copy the data into", where);
  }
  std::vector<uint8_t> buf(size_t{1} << 20);
  while (static_cast<uint64_t>(in) < size) {
    const ssize_t n =
        ::pread(from, buf.data(),
                static_cast<size_t>(std::min<uint64_t>(
                    size - static_cast<uint64_t>(in), buf.size())),
                in);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return ErrnoError("cannot read the data for", where);
    absl::Status s =
        container::WriteAllFd(to, buf.data(), static_cast<size_t>(n), where);
    if (!s.ok()) return s;
    in += n;
  }
  return absl::OkStatus();
}

}  // namespace

std::string SafetensorsHeader(
    const std::vector<SafetensorsEntry>& entries,
    const std::vector<std::pair<std::string, std::string>>& metadata) {
  nlohmann::ordered_json h = nlohmann::ordered_json::object();
  if (!metadata.empty()) {
    nlohmann::ordered_json m = nlohmann::ordered_json::object();
    for (const auto& [k, v] : metadata) m[k] = v;
    h["__metadata__"] = std::move(m);
  }
  std::set<std::string> seen = {"__metadata__"};
  for (size_t i = 0; i < entries.size(); ++i) {
    const SafetensorsEntry& e = entries[i];
    // The key as the dump will spell it (invalid UTF-8 replaced).
    std::string name = nlohmann::json(e.name).dump(
        -1, ' ', false, nlohmann::json::error_handler_t::replace);
    name = nlohmann::json::parse(name).get<std::string>();
    if (!seen.insert(name).second) {
      name = absl::StrCat(name, "~", i);
      seen.insert(name);
    }
    nlohmann::ordered_json t = nlohmann::ordered_json::object();
    t["dtype"] = e.dtype;
    t["shape"] = e.shape;
    t["data_offsets"] = {e.begin, e.end};
    h[name] = std::move(t);
  }
  std::string text =
      h.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  text.append((8 - text.size() % 8) % 8, ' ');
  return text;
}

SafetensorsWriter::~SafetensorsWriter() { Discard(); }

void SafetensorsWriter::Discard() {
  if (data_.fd >= 0) {
    ::close(data_.fd);
    dir_->Remove(data_.name);
  }
  data_ = container::TempFile();
}

absl::Status SafetensorsWriter::Open() {
  if (data_.fd >= 0) return absl::OkStatus();
  absl::StatusOr<container::TempFile> t = dir_->CreateTemp(0600);
  if (!t.ok()) return t.status();
  data_ = *t;
  return absl::OkStatus();
}

absl::Status SafetensorsWriter::BeginTensor(std::string name,
                                            absl::string_view dtype,
                                            std::vector<uint64_t> shape) {
  absl::Status s = Open();
  if (!s.ok()) return s;
  SafetensorsEntry e;
  e.name = std::move(name);
  e.dtype = std::string(dtype);
  e.shape = std::move(shape);
  e.begin = e.end = size_;
  entries_.push_back(std::move(e));
  in_tensor_ = true;
  return absl::OkStatus();
}

absl::Status SafetensorsWriter::Append(absl::Span<const uint8_t> bytes) {
  if (!in_tensor_ || bytes.empty()) return absl::OkStatus();
  absl::Status s = container::WriteAllFd(data_.fd, bytes.data(), bytes.size(),
                                         dir_->Describe(data_.name));
  if (!s.ok()) return s;
  size_ += bytes.size();
  entries_.back().end = size_;
  return absl::OkStatus();
}

void SafetensorsWriter::AbandonTensor() {
  if (!in_tensor_) return;
  in_tensor_ = false;
  size_ = entries_.back().begin;
  entries_.pop_back();
  if (data_.fd >= 0) {
    // Later tensors overwrite the bytes; the length follows.
    if (::ftruncate(data_.fd, static_cast<off_t>(size_)) != 0 ||
        ::lseek(data_.fd, static_cast<off_t>(size_), SEEK_SET) < 0) {
      Discard();  // Finish then fails: no data temp
    }
  }
}

void SafetensorsWriter::SetName(size_t i, std::string name) {
  if (i < entries_.size()) entries_[i].name = std::move(name);
}

absl::Status SafetensorsWriter::Finish() {
  absl::Status s = Open();  // a stream without tensors: header only
  if (!s.ok()) return s;
  const std::string header = SafetensorsHeader(entries_, metadata_);
  absl::StatusOr<container::TempFile> out = dir_->CreateTemp(0644);
  if (!out.ok()) return out.status();
  uint8_t len[8];
  for (int i = 0; i < 8; ++i) {
    len[i] =
        static_cast<uint8_t>(static_cast<uint64_t>(header.size()) >> (8 * i));
  }
  const std::string where = dir_->Describe(out->name);
  s = container::WriteAllFd(out->fd, len, 8, where);
  if (s.ok())
    s = container::WriteAllFd(out->fd, header.data(), header.size(), where);
  if (s.ok()) s = CopyData(data_.fd, out->fd, size_, where);
  if (::close(out->fd) != 0 && s.ok()) s = ErrnoError("cannot write", where);
  if (s.ok()) s = dir_->Publish(out->name, kSafetensorsFileName);
  if (!s.ok()) dir_->Remove(out->name);
  Discard();
  entries_.clear();
  return s;
}

}  // namespace hurray::stream::ingest
