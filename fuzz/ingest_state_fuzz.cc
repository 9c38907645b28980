// Fuzz target: the resume state file of `hurray ingest --resume`
// (stream/resume/ingest_state.h), parsed as the hostile input it is (issue 13).
//
// Input: the bytes of a state file. Properties:
//   * ParseState never crashes and refuses with InvalidArgument only;
//   * an accepted state's server identity is printable ASCII of a tcp://
//     source;
//   * an accepted state names only outputs our own mapping gives its
//     records (tensor_<i>.f32 or SafeFileName(name, i).f32, .npy; a kept
//     sparse tensor's .values and index arrays under the same base) or our
//     temp names: plain names, never '/' or '..';
//   * it serializes to a text that parses back to the same serialization
//     (one spelling);
//   * a consumer resumed from its checkpoint, with a sink preloaded with
//     its records, finishes with OK or a rule id (never a crash): the
//     readers' ResumeAt sees only checkpoints ParseState let through.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "fuzz/fuzz_util.h"
#include "parser/rules.h"
#include "stream/container/checkpoint.h"
#include "stream/container/safe_file_name.h"
#include "stream/container/safe_output_dir.h"
#include "stream/ingest/consumers.h"
#include "stream/ingest/sinks.h"
#include "stream/resume/ingest_state.h"
#include "stream/resume/tensor_record.h"

namespace hurray::fuzz {
namespace {

void CheckAccepted(const stream::resume::IngestState& st) {
  // A server identity is printed in errors: printable ASCII, bounded.
  if (st.server.has_value()) {
    HURRAY_FUZZ_CHECK(stream::resume::IsServerIdentity(*st.server));
    HURRAY_FUZZ_CHECK(absl::StartsWith(st.source, "tcp://"));
  }
  for (size_t i = 0; i < st.records.size(); ++i) {
    const stream::resume::TensorRecord& r = st.records[i];
    HURRAY_FUZZ_CHECK(r.complete);
    if (!r.output.empty()) {
      HURRAY_FUZZ_CHECK(
          stream::container::SafeOutputDir::IsPlainName(r.output));
      HURRAY_FUZZ_CHECK(r.output.find('/') == std::string::npos);
      HURRAY_FUZZ_CHECK(r.output != "..");
      // <base><part>.f32 or .npy, base tensor_<i> or the sanitized name.
      const std::string unnamed = absl::StrCat("tensor_", i, r.part);
      const std::string named =
          stream::container::SafeFileName(r.name, i) + r.part;
      bool own = false;
      for (const char* ext : {".f32", ".npy"}) {
        own = own || r.output == unnamed + ext ||
              (!r.name.empty() && r.output == named + ext);
      }
      HURRAY_FUZZ_CHECK(own);
      HURRAY_FUZZ_CHECK(r.pending_output.empty());
    }
    if (!r.pending_output.empty()) {
      HURRAY_FUZZ_CHECK(
          stream::container::SafeOutputDir::IsTempName(r.pending_output));
      HURRAY_FUZZ_CHECK(
          stream::container::SafeOutputDir::IsPlainName(r.pending_output));
    }
    // A kept sparse tensor (issue 16): its values are "<base>.values...",
    // each index array a plain name published or pending as they are.
    HURRAY_FUZZ_CHECK(r.part.empty() || r.part == ".values");
    HURRAY_FUZZ_CHECK(r.more.empty() == r.part.empty());
    for (const stream::resume::TensorRecord::MoreOutput& m : r.more) {
      HURRAY_FUZZ_CHECK(m.output.empty() == r.output.empty());
      HURRAY_FUZZ_CHECK(m.pending.empty() == r.pending_output.empty());
      if (!m.output.empty()) {
        HURRAY_FUZZ_CHECK(
            stream::container::SafeOutputDir::IsPlainName(m.output));
        HURRAY_FUZZ_CHECK(
            !stream::container::SafeOutputDir::IsTempName(m.output));
        HURRAY_FUZZ_CHECK(m.output.find('/') == std::string::npos);
        HURRAY_FUZZ_CHECK(
            absl::StartsWith(m.output, absl::StrCat("tensor_", i, m.part)) ||
            (!r.name.empty() &&
             absl::StartsWith(
                 m.output,
                 stream::container::SafeFileName(r.name, i) + m.part)));
      } else {
        HURRAY_FUZZ_CHECK(
            stream::container::SafeOutputDir::IsTempName(m.pending));
        HURRAY_FUZZ_CHECK(
            stream::container::SafeOutputDir::IsPlainName(m.pending));
      }
    }
  }
  if (st.http.has_value()) {
    // Sent as an If-Range header: printable ASCII only, bounded.
    HURRAY_FUZZ_CHECK(!st.http->validator.empty() &&
                      st.http->validator.size() <=
                          stream::resume::kMaxValidatorBytes);
    for (char c : st.http->validator) {
      HURRAY_FUZZ_CHECK(c >= 0x20 && c <= 0x7e);
    }
  }
  HURRAY_FUZZ_CHECK(st.records.size() == st.checkpoint.tensors);
  HURRAY_FUZZ_CHECK(st.checkpoint.format !=
                    stream::container::ContainerFormat::kUnknown);
}

}  // namespace
}  // namespace hurray::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace hurray;
  const absl::string_view text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<stream::resume::IngestState> st =
      stream::resume::ParseState(text);
  if (!st.ok()) {
    HURRAY_FUZZ_CHECK(st.status().code() == absl::StatusCode::kInvalidArgument);
    return 0;
  }
  fuzz::CheckAccepted(*st);

  // One spelling: what we write parses back to itself.
  const std::string again = stream::resume::SerializeState(*st);
  absl::StatusOr<stream::resume::IngestState> back =
      stream::resume::ParseState(again);
  HURRAY_FUZZ_CHECK(back.ok());
  HURRAY_FUZZ_CHECK(stream::resume::SerializeState(*back) == again);

  // Resume from the checkpoint: no file is touched (validation only).
  stream::ingest::ValidateSink sink;
  HURRAY_FUZZ_CHECK(sink.Preload(st->records).ok());
  std::unique_ptr<stream::container::ByteConsumer> consumer =
      stream::ingest::MakeConsumer(stream::container::ContainerFormat::kUnknown,
                                   stream::container::FileOptions(), &sink,
                                   &st->checkpoint,
                                   [](const stream::container::Checkpoint&) {});
  const absl::Status s = consumer->Finish();
  HURRAY_FUZZ_CHECK(s.ok() || RuleIdOf(s).has_value());
  return 0;
}
