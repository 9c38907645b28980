#include "stream/ingest/output_naming.h"

#include "absl/strings/str_cat.h"

namespace hurray::stream::ingest {

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

}  // namespace hurray::stream::ingest
