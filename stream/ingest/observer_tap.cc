#include "stream/ingest/observer_tap.h"

#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "parser/rules.h"

namespace hurray::stream::ingest {

using resume::TensorRecord;

namespace {

// A float32 file of ours, mapped read-only for the length of one callback.
class MappedValues {
 public:
  ~MappedValues() {
    if (map_ != nullptr) ::munmap(map_, size_);
  }
  absl::Status Map(const container::SafeOutputDir& dir,
                   const std::string& name) {
    absl::StatusOr<int> fd = dir.OpenForReading(name);
    if (!fd.ok()) return fd.status();
    struct stat st;
    absl::Status s;
    if (::fstat(*fd, &st) != 0) {
      s = absl::ErrnoToStatus(errno, dir.Describe(name));
    } else if (st.st_size % 4 != 0) {
      s = absl::InternalError(
          absl::StrCat(dir.Describe(name), ": not whole float32 values"));
    } else if (st.st_size > 0) {
      size_ = static_cast<size_t>(st.st_size);
      void* m = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, *fd, 0);
      if (m == MAP_FAILED) {
        s = absl::ErrnoToStatus(errno, dir.Describe(name));
      } else {
        map_ = m;
      }
    }
    ::close(*fd);
    return s;
  }
  absl::Span<const float> values() const {
    return {static_cast<const float*>(map_), size_ / 4};
  }

 private:
  void* map_ = nullptr;
  size_t size_ = 0;
};

}  // namespace

absl::Status ObserverTap::DeliverUpTo(size_t end, bool named_only) {
  const std::vector<TensorRecord>& records = records_->records();
  for (; delivered_ < end && delivered_ < records.size(); ++delivered_) {
    const TensorRecord& r = records[delivered_];
    if (!r.complete || (named_only && r.name.empty())) break;
    IngestedTensor t;
    t.record = &r;
    t.shape = r.dims;
    t.type_tag = r.type_tag;
    std::vector<absl::Span<const uint8_t>> views;
    MappedValues mapped;
    if (data_ == TensorData::kRaw) {
      for (const std::vector<uint8_t>& b : buffers_) views.emplace_back(b);
      t.buffers = views;
      t.descriptor = descriptor_.get();
    } else if (data_ == TensorData::kDequantized && r.more.empty()) {
      // A range read hands a tensor over before the index names its file
      // (pending_output).
      const std::string& file = r.output.empty() ? r.pending_output : r.output;
      if (values_ != nullptr && values_->tensor() == r.index) {
        t.values = values_->floats();
        t.has_values = true;
      } else if (values_dir_ != nullptr && !file.empty()) {
        HURRAY_RETURN_IF_ERROR(Stop(mapped.Map(*values_dir_, file)));
        t.values = mapped.values();
        t.has_values = true;
      }
    }
    absl::Status s = observer_->OnTensor(t);
    if (remove_values_ && values_dir_ != nullptr && !r.output.empty()) {
      // Ours, staged in the scratch directory: never needed again.
      std::error_code ec;
      std::filesystem::remove(
          std::filesystem::path(values_dir_->path()) / r.output, ec);
    }
    if (!s.ok()) return Stop(std::move(s));
  }
  buffers_.clear();
  return absl::OkStatus();
}

ScratchDir::~ScratchDir() {
  if (path_.empty()) return;
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

absl::Status ScratchDir::Create(const std::string& parent) {
  std::string base = parent;
  if (base.empty()) {
    const char* tmp = std::getenv("TMPDIR");
    base = tmp != nullptr && *tmp != '\0' ? tmp : "/tmp";
  }
  std::string templ = absl::StrCat(base, "/hurray-ingest-XXXXXX");
  // mkdtemp(3) creates a new directory of mode 0700, never an existing one.
  if (::mkdtemp(templ.data()) == nullptr) {
    return absl::ErrnoToStatus(errno, absl::StrCat("cannot create a scratch "
                                                   "directory in ",
                                                   base));
  }
  path_ = templ;
  return absl::OkStatus();
}

}  // namespace hurray::stream::ingest
