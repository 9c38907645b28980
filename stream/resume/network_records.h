// The records of a network ingest are keyed: the first tensor of each key
// carries the key as its name, members and shards follow unnamed. A resume
// state keeps the records of the completed keys; a resumed run fetches the
// last of them again (stream/ingest/resume_check_sink.h).
#ifndef HURRAY_STREAM_RESUME_NETWORK_RECORDS_H_
#define HURRAY_STREAM_RESUME_NETWORK_RECORDS_H_

#include <cstddef>
#include <vector>

#include "stream/resume/tensor_record.h"

namespace hurray::stream::resume {

// The index of the first record of the last key (records.size() when none
// is named).
size_t LastKeyStart(const std::vector<TensorRecord>& records);
// The number of keys (named records).
size_t CountKeys(const std::vector<TensorRecord>& records);
// How many leading records belong to the first `keys` keys.
size_t RecordsOfKeys(const std::vector<TensorRecord>& records, size_t keys);

}  // namespace hurray::stream::resume

#endif  // HURRAY_STREAM_RESUME_NETWORK_RECORDS_H_
