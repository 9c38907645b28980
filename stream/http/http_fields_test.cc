// http_fields.h: --header, Content-Range and the response's fields, without
// a connection (the same checks run on every HTTP(S) response).
#include "stream/http/http_fields.h"

#include <optional>
#include <vector>

#include "gtest/gtest.h"

namespace hurray::stream::http {
namespace {

HttpResponseInfo Info(int status, std::optional<uint64_t> length) {
  HttpResponseInfo info;
  info.status = status;
  info.content_length = length;
  return info;
}

TEST(ParseContentRange, Forms) {
  uint64_t first = 0, last = 0;
  std::optional<uint64_t> size;
  ASSERT_TRUE(ParseContentRange("bytes 0-63/1000", &first, &last, &size));
  EXPECT_EQ(first, 0u);
  EXPECT_EQ(last, 63u);
  EXPECT_EQ(size, 1000u);
  ASSERT_TRUE(ParseContentRange("bytes 5-9/*", &first, &last, &size));
  EXPECT_FALSE(size.has_value());
  EXPECT_FALSE(ParseContentRange("bytes 9-5/10", &first, &last, &size));
  EXPECT_FALSE(ParseContentRange("bytes 0-9/9", &first, &last, &size));
  EXPECT_FALSE(ParseContentRange("items 0-9/10", &first, &last, &size));
  EXPECT_FALSE(ParseContentRange("bytes -9/10", &first, &last, &size));
}

TEST(ParseHeaderFlag, NameValueAndManagedHeaders) {
  auto h = ParseHeaderFlag("X-Token:  abc ");
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(h->first, "X-Token");
  EXPECT_EQ(h->second, "abc");
  EXPECT_FALSE(ParseHeaderFlag("Range: bytes=0-").ok());
  EXPECT_FALSE(ParseHeaderFlag("bad name: v").ok());
  EXPECT_FALSE(ParseHeaderFlag("X: a\rb").ok());
  EXPECT_FALSE(ParseHeaderFlag("no colon").ok());
}

TEST(InterpretResponse, A206ForTheRangeAskedFor) {
  HttpResponseInfo info = Info(206, 64);
  const std::vector<HeaderField> f = {{"Content-Range", "bytes 0-63/5000"},
                                      {"ETag", "\"e1\""}};
  ASSERT_TRUE(InterpretResponse(f, HttpRange{0, 63, ""}, &info).ok());
  EXPECT_EQ(info.range_first, 0u);
  EXPECT_EQ(info.object_size, 5000u);
  EXPECT_TRUE(info.accept_ranges);
  EXPECT_EQ(info.etag, "\"e1\"");
}

TEST(InterpretResponse, A206ForAnotherRangeIsRefused) {
  HttpResponseInfo info = Info(206, 10);
  const std::vector<HeaderField> f = {{"Content-Range", "bytes 0-9/5000"}};
  const absl::Status s = InterpretResponse(f, HttpRange{100, 109, ""}, &info);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(s.message().find("Content-Range"), absl::string_view::npos);
}

TEST(InterpretResponse, A206EndsAtTheObjectsEndWhenTheRangeGoesPastIt) {
  // bytes=4000-8191 of a 5000-byte object (RFC 9110 14.1.2).
  HttpResponseInfo info = Info(206, 1000);
  const std::vector<HeaderField> f = {
      {"Content-Range", "bytes 4000-4999/5000"}};
  ASSERT_TRUE(InterpretResponse(f, HttpRange{4000, 8191, ""}, &info).ok());
  EXPECT_EQ(info.range_last, 4999u);
  // Short of the end: refused, as is any other last byte.
  HttpResponseInfo shorter = Info(206, 900);
  const std::vector<HeaderField> g = {
      {"Content-Range", "bytes 4000-4899/5000"}};
  EXPECT_FALSE(InterpretResponse(g, HttpRange{4000, 8191, ""}, &shorter).ok());
  HttpResponseInfo inside = Info(206, 900);
  EXPECT_FALSE(InterpretResponse(g, HttpRange{4000, 4999, ""}, &inside).ok());
}

TEST(InterpretResponse, A206WithoutContentRangeOrWithAnotherLength) {
  HttpResponseInfo info = Info(206, 64);
  EXPECT_FALSE(InterpretResponse({}, HttpRange{0, 63, ""}, &info).ok());
  HttpResponseInfo longer = Info(206, 65);
  const std::vector<HeaderField> f = {{"Content-Range", "bytes 0-63/5000"}};
  EXPECT_FALSE(InterpretResponse(f, HttpRange{0, 63, ""}, &longer).ok());
  // Unasked: a 206 without a range request.
  HttpResponseInfo unasked = Info(206, 64);
  EXPECT_FALSE(InterpretResponse(f, std::nullopt, &unasked).ok());
}

TEST(InterpretResponse, EncodingsOtherThanIdentityAreRefused) {
  HttpResponseInfo info = Info(200, 10);
  EXPECT_TRUE(
      InterpretResponse({{"Content-Encoding", "identity"}}, std::nullopt, &info)
          .ok());
  EXPECT_FALSE(
      InterpretResponse({{"Content-Encoding", "gzip"}}, std::nullopt, &info)
          .ok());
  EXPECT_FALSE(InterpretResponse({{"Transfer-Encoding", "gzip, chunked"}},
                                 std::nullopt, &info)
                   .ok());
}

TEST(InterpretResponse, A200GivesTheSizeAndAcceptRanges) {
  HttpResponseInfo info = Info(200, 49537);
  ASSERT_TRUE(InterpretResponse({{"Accept-Ranges", "none"}},
                                HttpRange{0, 63, ""}, &info)
                  .ok());
  EXPECT_EQ(info.object_size, 49537u);
  EXPECT_FALSE(info.accept_ranges);
  HttpResponseInfo ranged = Info(200, 1);
  ASSERT_TRUE(
      InterpretResponse({{"accept-ranges", " Bytes "}}, std::nullopt, &ranged)
          .ok());
  EXPECT_TRUE(ranged.accept_ranges);
  HttpResponseInfo missing = Info(404, 0);
  EXPECT_FALSE(InterpretResponse({}, std::nullopt, &missing).ok());
}

}  // namespace
}  // namespace hurray::stream::http
