// Fuzz target: the index data rules of the sparse and block-paged layouts
// (parser/data_checks.h) with hostile index bytes under a descriptor that
// passed the validator.
//
// Input format (bytes missing at the end read as 0):
//   byte 0   bits 0-2 order window, one of 1, 2, 3, 4, 8, 16, 64, 1024
//                     entries (DataCheckOptions::order_window_entries)
//            bit 3    duplicate budget 256 bytes (else the default 1 MiB)
//   byte 1   bits 0-3 largest chunk, 2^n bytes
//   byte 2-3 seed of the chunk sizes and of the interleaving
//   rest     one tensor as a stream carries it: the descriptor (strict
//            mode, vectors::AgreedOptions), then its buffers back to back in
//            table order; a buffer the input cuts short is fed as far as it
//            goes (the checkers then report STREAM-EOF-BUFFER).
//
// Three runs over the same bytes, each on a fresh checker:
//   A  Feed, table order, each buffer whole, then Finish;
//   B  Feed, table order, chunks of pseudo-random sizes (empty ones too),
//      then Finish;
//   C  FeedSome, buffers picked at random, chunks of pseudo-random sizes,
//      the caller alternating as the header asks, then Finish.
// Properties:
//   * A and B agree exactly: the rule, its offset, the buffer named, and
//     which rules were skipped (data_checks.h: for one feed order, the
//     chunking changes neither);
//   * a rejection is sticky: Feed after it returns it again;
//   * C never skips an order rule (FeedSome refuses bytes instead) and
//     always progresses while every buffer is whole in the input;
//   * C accepts only if A accepts, and A accepting with nothing skipped
//     means C accepts (FeedSome checks the same rules, completely).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "fuzz/fuzz_util.h"
#include "parser/data_checks.h"
#include "parser/decoder.h"
#include "parser/descriptor.h"
#include "parser/options.h"
#include "parser/rules.h"
#include "tests/vectors.h"

namespace hurray::fuzz {
namespace {

using Span = absl::Span<const uint8_t>;

// Rules a checker may skip (parser/data_checks.h): the order windows of
// Feed and the duplicate budget of unsorted COO.
constexpr Rule kOrderRules[] = {Rule::kLayCsr07, Rule::kLayCsc07,
                                Rule::kLayCsf09};
constexpr Rule kSkippable[] = {Rule::kLayCsr07, Rule::kLayCsc07,
                               Rule::kLayCsf09, Rule::kLayCoo06};

struct Header {
  DataCheckOptions options;
  size_t max_chunk = 1;
  uint32_t seed = 0;
};

Header ReadHeader(Span h) {
  static constexpr uint32_t kWindows[] = {1, 2, 3, 4, 8, 16, 64, 1024};
  Header r;
  r.options.order_window_entries = kWindows[h[0] & 7];
  if (h[0] & 8) r.options.duplicate_budget_bytes = 256;
  r.max_chunk = size_t{1} << (h[1] & 15);
  r.seed = h[2] | (uint32_t{h[3]} << 8);
  return r;
}

struct Verdict {
  std::string text;  // "OK" or "<rule> buffer <b> @<offset>"
  std::string skipped;
};

Verdict Describe(const IndexDataChecker& c, const Rejection& r) {
  Verdict v;
  v.text = r.ok() ? "OK"
                  : absl::StrCat(RuleId(r.rule), " buffer ",
                                 c.rejected_buffer(), " @", r.offset);
  for (Rule rule : kSkippable) {
    if (c.Skipped(rule)) absl::StrAppend(&v.skipped, RuleId(rule), " ");
  }
  return v;
}

// The bytes the input holds of each buffer of the table.
std::vector<Span> CutBuffers(const TensorDescriptor& d, Span data,
                             bool* whole) {
  std::vector<Span> out;
  *whole = true;
  for (const BufferHandle& b : d.buffer_table()) {
    const uint64_t n = std::min<uint64_t>(b.byte_size, data.size());
    if (n < b.byte_size) *whole = false;
    out.push_back(data.first(static_cast<size_t>(n)));
    data.remove_prefix(static_cast<size_t>(n));
  }
  return out;
}

// Feed, table order; `max_chunk` 0: each buffer whole.
Verdict RunFeed(const TensorDescriptor& d, const DataCheckOptions& o,
                const std::vector<Span>& buffers, size_t max_chunk,
                std::minstd_rand* rng) {
  std::unique_ptr<IndexDataChecker> c = MakeIndexChecker(d, o);
  HURRAY_FUZZ_CHECK(c != nullptr);
  for (uint32_t i = 0; i < buffers.size(); ++i) {
    Span rest = buffers[i];
    do {
      const size_t n = max_chunk == 0
                           ? rest.size()
                           : std::min(rest.size(), (*rng)() % (max_chunk + 1));
      const Rejection r = c->Feed(i, rest.first(n));
      rest.remove_prefix(n);
      if (!r.ok()) {
        // Sticky: the next call returns the same rejection.
        const Rejection again = c->Feed(i, rest);
        HURRAY_FUZZ_CHECK(again.rule == r.rule && again.offset == r.offset);
        HURRAY_FUZZ_CHECK(c->Finish().rule == r.rule);
        return Describe(*c, r);
      }
    } while (!rest.empty());
  }
  const Rejection r = c->Finish();
  return Describe(*c, r);
}

// FeedSome, buffers picked at random among those with bytes left and not
// refused since the last progress.
Verdict RunFeedSome(const TensorDescriptor& d, const DataCheckOptions& o,
                    const std::vector<Span>& buffers, bool whole,
                    size_t max_chunk, std::minstd_rand* rng) {
  std::unique_ptr<IndexDataChecker> c = MakeIndexChecker(d, o);
  HURRAY_FUZZ_CHECK(c != nullptr);
  std::vector<Span> rest = buffers;
  std::vector<bool> refused(buffers.size(), false);
  for (;;) {
    std::vector<uint32_t> open;
    for (uint32_t i = 0; i < rest.size(); ++i) {
      if (!rest[i].empty() && !refused[i]) open.push_back(i);
    }
    if (open.empty()) {
      bool left = false;
      for (const Span& s : rest) left = left || !s.empty();
      // "It stops only where the other buffer of the pair has bytes left to
      // feed": with every buffer whole, alternating always progresses.
      HURRAY_FUZZ_CHECK(!(left && whole));
      break;
    }
    const uint32_t i = open[(*rng)() % open.size()];
    const size_t n = std::min(rest[i].size(), size_t{1} + (*rng)() % max_chunk);
    const DataFeedResult r = c->FeedSome(i, rest[i].first(n));
    HURRAY_FUZZ_CHECK(r.consumed <= n);
    if (!r.rejection.ok()) return Describe(*c, r.rejection);
    rest[i].remove_prefix(r.consumed);
    if (r.consumed > 0) {
      std::fill(refused.begin(), refused.end(), false);
    }
    if (r.consumed < n) refused[i] = true;
  }
  for (Rule rule : kOrderRules) HURRAY_FUZZ_CHECK(!c->Skipped(rule));
  const Rejection r = c->Finish();
  return Describe(*c, r);
}

void Run(const uint8_t* data, size_t size) {
  uint8_t h[4] = {};
  std::copy_n(data, std::min<size_t>(size, 4), h);
  const Header header = ReadHeader(Span(h, 4));
  const Span input = size > 4 ? Span(data + 4, size - 4) : Span();

  DescriptorDecoder decoder(vectors::AgreedOptions(Mode::kStrict));
  const FeedResult fed = decoder.Feed(input);
  (void)fed;
  if (decoder.Finish() != DecodeState::kDone) return;
  const TensorDescriptor& d = decoder.descriptor();
  // A layout with index data (the probe allocates no duplicate table).
  DataCheckOptions probe;
  probe.duplicate_budget_bytes = 0;
  if (MakeIndexChecker(d, probe) == nullptr) return;

  bool whole = false;
  const std::vector<Span> buffers =
      CutBuffers(d, input.subspan(decoder.consumed()), &whole);
  std::minstd_rand rng(header.seed + 1);

  const Verdict a = RunFeed(d, header.options, buffers, 0, &rng);
  const Verdict b = RunFeed(d, header.options, buffers, header.max_chunk, &rng);
  if (a.text != b.text || a.skipped != b.skipped) {
    std::fprintf(stderr, "whole: %s [%s]\nchunked: %s [%s]\n", a.text.c_str(),
                 a.skipped.c_str(), b.text.c_str(), b.skipped.c_str());
    HURRAY_FUZZ_CHECK(false && "Feed depends on the chunking");
  }
  const Verdict c =
      RunFeedSome(d, header.options, buffers, whole, header.max_chunk, &rng);
  if (c.text == "OK") HURRAY_FUZZ_CHECK(a.text == "OK");
  if (a.text == "OK" && a.skipped.empty() && c.text != "OK") {
    std::fprintf(stderr, "Feed: OK\nFeedSome: %s\n", c.text.c_str());
    HURRAY_FUZZ_CHECK(false && "FeedSome rejects what Feed accepts");
  }
}

}  // namespace
}  // namespace hurray::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  hurray::fuzz::Run(data, size);
  return 0;
}
