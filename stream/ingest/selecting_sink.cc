#include "stream/ingest/selecting_sink.h"

#include "absl/strings/str_cat.h"

namespace hurray::stream::ingest {

SelectingSink::SelectingSink(RecordingIngestSink* inner,
                             std::vector<std::string> names)
    : inner_(inner),
      names_(std::move(names)),
      wanted_(names_.begin(), names_.end()) {}

void SelectingSink::ExpectTensorNames() {
  named_ = true;
  inner_->ExpectTensorNames();
}

absl::Status SelectingSink::OnDescriptor(const TensorDescriptor& d) {
  if (!named_) {
    return absl::FailedPreconditionError(
        "--tensors needs a .hrry file (a bare stream names no tensor)");
  }
  const int64_t self = static_cast<int64_t>(parent_.size());
  parent_.push_back(open_.empty() ? -1 : open_.back().head);
  if (!open_.empty()) --open_.back().left;
  if (d.layout_tag == layout_tag::kComposite && d.layout.member_count > 0) {
    open_.push_back({self, d.layout.member_count});
  }
  while (!open_.empty() && open_.back().left == 0) open_.pop_back();
  return inner_->OnDescriptor(d);
}

absl::Status SelectingSink::OnTensorNames(absl::Span<const std::string> names) {
  absl::flat_hash_set<absl::string_view> present(names.begin(), names.end());
  for (const std::string& n : names_) {
    if (!present.contains(n)) {
      inner_->OnInputRejected();  // nothing of this run is published
      return absl::NotFoundError(
          absl::StrCat("no tensor named '", n, "' in the index"));
    }
  }
  std::vector<bool> keep(names.size(), false);
  std::vector<std::string> kept;
  for (size_t i = 0; i < names.size(); ++i) {
    const int64_t p = i < parent_.size() ? parent_[i] : -1;
    keep[i] =
        wanted_.contains(names[i]) || (p >= 0 && keep[static_cast<size_t>(p)]);
    if (keep[i]) kept.push_back(names[i]);
  }
  absl::Status s = inner_->DropTensors(keep);
  if (!s.ok()) return s;
  return inner_->OnTensorNames(kept);
}

}  // namespace hurray::stream::ingest
