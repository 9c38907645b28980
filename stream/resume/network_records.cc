#include "stream/resume/network_records.h"

namespace hurray::stream::resume {

size_t LastKeyStart(const std::vector<TensorRecord>& records) {
  for (size_t i = records.size(); i > 0; --i) {
    if (!records[i - 1].name.empty()) return i - 1;
  }
  return records.size();
}

size_t CountKeys(const std::vector<TensorRecord>& records) {
  size_t n = 0;
  for (const TensorRecord& r : records) n += r.name.empty() ? 0 : 1;
  return n;
}

size_t RecordsOfKeys(const std::vector<TensorRecord>& records, size_t keys) {
  size_t named = 0;
  for (size_t i = 0; i < records.size(); ++i) {
    if (records[i].name.empty()) continue;
    if (named == keys) return i;
    ++named;
  }
  return records.size();
}

}  // namespace hurray::stream::resume
