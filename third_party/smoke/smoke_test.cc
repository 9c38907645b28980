#include <algorithm>
#include <bit>
#include <concepts>
#include <cstdint>
#include <optional>
#include <ranges>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/btree_map.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/container/inlined_vector.h"
#include "absl/hash/hash.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "absl/types/optional.h"
#include "absl/types/span.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "third_party/smoke/smoke_lib.h"

namespace hurray::smoke {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;
using ::testing::UnorderedElementsAre;

TEST(AbslSmoke, StatusOrValue) {
  absl::StatusOr<uint32_t> v = ParseUint32("1234");
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(*v, 1234u);
}

TEST(AbslSmoke, StatusWithCordPayload) {
  absl::StatusOr<uint32_t> v = ParseUint32("12x");
  ASSERT_FALSE(v.ok());
  const absl::Status& s = v.status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("\"12x\" (3 bytes)"));
  // absl::optional, not std::optional (ABSL_OPTION_USE_STD_OPTIONAL=0).
  absl::optional<absl::Cord> payload = s.GetPayload(kPayloadUrl);
  ASSERT_TRUE(payload.has_value());
  EXPECT_EQ(std::string(*payload), "12x");
  // Status::ToString includes payloads.
  EXPECT_THAT(s.ToString(), HasSubstr("smoke.input"));

  absl::Status copy = s;
  copy.ErasePayload(kPayloadUrl);
  EXPECT_FALSE(copy.GetPayload(kPayloadUrl).has_value());
  EXPECT_NE(copy, s);
}

TEST(AbslSmoke, StrFormatAndStrCat) {
  // std::string_view is accepted by StrFormat, but NOT implicitly converted
  // to absl::string_view (Debian pins ABSL_OPTION_USE_STD_STRING_VIEW=0).
  std::string_view sv = "view";
  EXPECT_EQ(absl::StrFormat("%s-%05d-%.2f-%x", sv, 42, 1.5, 255u),
            "view-00042-1.50-ff");
  EXPECT_EQ(absl::StrCat("a", 1, absl::string_view(sv.data(), sv.size())),
            "a1view");
  std::vector<std::string> parts = absl::StrSplit("a,b,,c", ',');
  EXPECT_THAT(parts, ElementsAre("a", "b", "", "c"));
  EXPECT_EQ(absl::StrJoin(parts, "|"), "a|b||c");
}

TEST(AbslSmoke, Containers) {
  absl::flat_hash_map<std::string, int> m;
  for (int i = 0; i < 100; ++i) m[absl::StrCat("k", i)] = i;
  EXPECT_EQ(m.size(), 100u);
  EXPECT_EQ(m.at("k42"), 42);
  absl::flat_hash_set<int> s = {1, 2, 3};
  EXPECT_THAT(s, UnorderedElementsAre(1, 2, 3));
  absl::btree_map<int, char> b = {{2, 'b'}, {1, 'a'}};
  EXPECT_THAT(b, ElementsAre(Pair(1, 'a'), Pair(2, 'b')));
  absl::InlinedVector<int, 4> iv = {1, 2, 3, 4, 5};
  EXPECT_EQ(iv.size(), 5u);
  EXPECT_NE(absl::HashOf(std::string("x")), absl::HashOf(std::string("y")));
}

TEST(AbslSmoke, SpanEndianMutexTime) {
  const uint8_t bytes[] = {0x01, 0x00, 0x02, 0x01, 0xff};
  EXPECT_EQ(SumLe16(bytes), 0x0001u + 0x0102u);
  absl::Mutex mu;
  int guarded = 0;
  {
    absl::MutexLock lock(&mu);
    ++guarded;
  }
  EXPECT_EQ(guarded, 1);
  absl::Time t0 = absl::Now();
  EXPECT_GE(absl::Now() - t0, absl::ZeroDuration());
  EXPECT_EQ(absl::FormatDuration(absl::Milliseconds(1500)), "1.5s");
}

template <typename T>
requires std::unsigned_integral<T>
constexpr int PopCount(T v) { return std::popcount(v); }

TEST(Cxx20Smoke, LibraryFeatures) {
  static_assert(PopCount(0xF0u) == 4);
  std::vector<int> v = {5, 3, 1, 4, 2};
  std::ranges::sort(v);  // Range *algorithms* work with every compiler.
  EXPECT_TRUE(std::ranges::is_sorted(v));
  EXPECT_EQ(*std::ranges::max_element(v), 5);
#if !defined(__clang__) || __clang_major__ >= 15
  // Range *views* (std::views::*, ref_view, subrange, iota, pipes) do NOT
  // compile with clang 14 + libstdc++ 12 (Debian 12), i.e. under
  // --config=fuzz. Avoid them in code that must build under --config=fuzz.
  auto evens = v | std::views::filter([](int x) { return x % 2 == 0; }) |
               std::views::transform([](int x) { return x * 10; });
  std::vector<int> out(evens.begin(), evens.end());
  EXPECT_THAT(out, ElementsAre(20, 40));
#endif
  std::span<const int> sp(v);
  EXPECT_EQ(sp.subspan(1, 2).front(), 2);
  EXPECT_TRUE(std::string_view("hurray").starts_with("hur"));
  EXPECT_EQ(std::endian::native, std::endian::little);
}

}  // namespace
}  // namespace hurray::smoke
