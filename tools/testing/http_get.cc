// Test tool: one GET through stream/http/http_body.h, for the hostile-server
// cases the CLI cannot reach (a range request with a wrong answer, headers
// across redirects).
//
//   http_get URL [--ca-file PEM] [--header 'N: v']... [--range FIRST]
//            [--if-range V] [--idle-timeout S]
//
// Prints "status S redirects R first F" on stderr, the body on stdout;
// exit 0, or 1 with the error on stderr.
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "stream/http/http_body.h"
#include "stream/http/http_url.h"

int main(int argc, char** argv) {
  using namespace hurray::stream;
  if (argc < 2) {
    std::fprintf(stderr, "usage: http_get URL [options]\n");
    return 2;
  }
  absl::StatusOr<http::Url> url = http::ParseUrl(argv[1]);
  if (!url.ok()) {
    std::fprintf(stderr, "%s\n", std::string(url.status().message()).c_str());
    return 1;
  }
  http::HttpOptions o;
  std::optional<http::HttpRange> range;
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--ca-file") {
      o.ca_file = value;
    } else if (flag == "--header") {
      auto h = http::ParseHeaderFlag(value);
      if (!h.ok()) return 2;
      o.headers.push_back(*h);
    } else if (flag == "--range") {
      if (!range.has_value()) range.emplace();
      if (!absl::SimpleAtoi(value, &range->first)) return 2;
    } else if (flag == "--if-range") {
      if (!range.has_value()) range.emplace();
      range->if_range = value;
    } else if (flag == "--idle-timeout") {
      if (!absl::SimpleAtod(value, &o.idle_timeout_seconds)) return 2;
    } else {
      return 2;
    }
  }
  absl::StatusOr<std::unique_ptr<http::HttpBody>> body =
      http::HttpBody::Open(*url, o, range);
  if (!body.ok()) {
    std::fprintf(stderr, "%s\n", std::string(body.status().message()).c_str());
    return 1;
  }
  std::fprintf(stderr, "status %d redirects %d first %llu\n",
               (*body)->info().status, (*body)->info().redirects,
               static_cast<unsigned long long>((*body)->info().range_first));
  std::vector<uint8_t> buf(1 << 16);
  while (true) {
    absl::StatusOr<size_t> n = (*body)->Read(absl::MakeSpan(buf));
    if (!n.ok()) {
      std::fprintf(stderr, "%s\n", std::string(n.status().message()).c_str());
      return 1;
    }
    if (*n == 0) return 0;
    std::fwrite(buf.data(), 1, *n, stdout);
  }
}
