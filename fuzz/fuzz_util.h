// Helpers shared by the descriptor fuzz targets: a check that aborts with a
// message (a failed property is a crash for libFuzzer and for the replay
// tests), and a one-shot decode on a fresh decoder that records everything
// the targets compare.
#ifndef HURRAY_FUZZ_FUZZ_UTIL_H_
#define HURRAY_FUZZ_FUZZ_UTIL_H_

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "absl/types/span.h"
#include "parser/decoder.h"
#include "parser/options.h"
#include "parser/rules.h"

// Aborts when `cond` is false. Never compiled out (unlike assert()).
#define HURRAY_FUZZ_CHECK(cond)                                           \
  do {                                                                    \
    if (!(cond)) {                                                        \
      std::fprintf(stderr, "%s:%d: fuzz property failed: %s\n", __FILE__, \
                   __LINE__, #cond);                                      \
      std::abort();                                                       \
    }                                                                     \
  } while (0)

namespace hurray::fuzz {

inline const char* StateName(DecodeState s) {
  switch (s) {
    case DecodeState::kNeedMore:
      return "need-more";
    case DecodeState::kDone:
      return "done";
    case DecodeState::kRejected:
      return "rejected";
  }
  return "?";
}

inline std::string Describe(const DescriptorDecoder& d) {
  std::string s = StateName(d.state());
  if (d.state() == DecodeState::kRejected) {
    s += " ";
    s += std::string(RuleId(d.rejection().rule));
    s += " @" + std::to_string(d.rejection().offset);
  }
  s += ", consumed " + std::to_string(d.consumed());
  return s;
}

// Feed(bytes) then Finish() on a decoder of its own (never reused, so no
// state can leak in from an earlier input).
struct OneShot {
  std::unique_ptr<DescriptorDecoder> decoder;
  size_t consumed = 0;  // what Feed reported
  DecodeState state = DecodeState::kNeedMore;

  bool done() const { return state == DecodeState::kDone; }
  const TensorDescriptor& descriptor() const { return decoder->descriptor(); }
  const Rejection& rejection() const { return decoder->rejection(); }
};

inline OneShot DecodeOneShot(absl::Span<const uint8_t> bytes,
                             const ParseOptions& options) {
  OneShot r;
  r.decoder = std::make_unique<DescriptorDecoder>(options);
  const FeedResult fed = r.decoder->Feed(bytes);
  HURRAY_FUZZ_CHECK(fed.consumed <= bytes.size());
  HURRAY_FUZZ_CHECK(fed.state == r.decoder->state());
  r.consumed = fed.consumed;
  r.state = r.decoder->Finish();
  HURRAY_FUZZ_CHECK(r.state != DecodeState::kNeedMore);
  HURRAY_FUZZ_CHECK(r.decoder->consumed() == r.consumed);
  HURRAY_FUZZ_CHECK(r.done() == r.rejection().ok());
  return r;
}

}  // namespace hurray::fuzz

#endif  // HURRAY_FUZZ_FUZZ_UTIL_H_
