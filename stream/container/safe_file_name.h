// A tensor name as a safe file name (without its suffix): the outputs of
// `hurray ingest` (stream/ingest/sinks.h, "file names") are named with it,
// and a resume state (stream/resume/ingest_state.h) accepts only the names it
// gives. Valid UTF-8 is kept as it is; control characters (C0, DEL, C1),
// bytes that are not UTF-8, '/', '%', '~' and a leading '.' become %XX
// (upper-case hex), so a name never holds '/' or NUL, is never '.', '..' or
// hidden, and distinct names give distinct files; an empty result is
// "tensor_<index>"; names whose file name would pass 200 bytes are cut to at
// most 180 bytes (at a character boundary) plus "~<index>".
#ifndef HURRAY_STREAM_CONTAINER_SAFE_FILE_NAME_H_
#define HURRAY_STREAM_CONTAINER_SAFE_FILE_NAME_H_

#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"

namespace hurray::stream::container {

std::string SafeFileName(absl::string_view name, uint64_t index);

}  // namespace hurray::stream::container

#endif  // HURRAY_STREAM_CONTAINER_SAFE_FILE_NAME_H_
