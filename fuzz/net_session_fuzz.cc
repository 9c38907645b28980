// Fuzz target: a sequence of protocol frames fed to both sides of the
// network protocol (stream/net/client_session.h, stream/net/server_session.h)
// at input-chosen split points.
//
// Input: byte 0 = flags (bit 0: permissive; bits 1–7: seed of the split
// points), then the bytes of a conversation. They are fed
//   * to a NetClientSession (as the server's responses; keys "dense",
//     "quant", "partition"), and
//   * to a NetServerSession over a fixed .hrry file (as the client's
//     messages), its output drained at the end, and once more drained
//     after every piece,
// once whole and once in pieces of 1..64 bytes chosen by the seed.
//
// Properties (any violation aborts):
//   * Never OnTensorEnd before every byte of every buffer arrived; pieces in
//     order and inside their buffers; no event after a rejection's tensor
//     (the recording sink checks, see stream/container/testing/test_util.h).
//   * Same result whatever the split: the same status (rule id, offset) and
//     the same tensors (descriptors, bytes, completeness), the same
//     Satisfied(); for the server drained at the end, the same status and
//     the same output bytes.
//   * Satisfied() implies OnEndOfStream and an OK status; a failed status
//     never comes with OnEndOfStream.
//   * Whatever the client answers is well framed (each queued message is a
//     complete header + payload).
//   * The session's accessors agree with what it returned (status,
//     position, tensors and keys completed, the same whatever the split);
//     its output drains in steps; FailSource gives STREAM-IO after success
//     and keeps a rejection.
//   * A tensor list ("hurray:list" payload) that parses re-encodes to the
//     input bytes.
//   * Codec round trip (stream/net/message.h), frame by frame: a payload
//     that decodes re-encodes to bytes that decode again and re-encode to
//     the same bytes; layout entries re-encode to the bytes they came from;
//     an encoder given one byte too few fails instead of writing past it.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "fuzz/fuzz_util.h"
#include "parser/rules.h"
#include "stream/container/hrry_mmap.h"
#include "stream/container/testing/test_util.h"
#include "stream/net/client_session.h"
#include "stream/net/message.h"
#include "stream/net/server_session.h"
#include "stream/net/testing/net_test_util.h"

namespace {

using hurray::Mode;
using hurray::stream::net::NetClientOptions;
using hurray::stream::net::NetClientSession;
using hurray::stream::net::NetServerOptions;
using hurray::stream::net::NetServerSession;
namespace container = hurray::stream::container;
namespace net = hurray::stream::net;

// Pieces of 1..64 bytes from a small LCG.
std::vector<size_t> Splits(size_t size, uint32_t seed) {
  std::vector<size_t> out;
  uint32_t x = seed * 2654435761u + 12345u;
  size_t at = 0;
  while (at < size) {
    x = x * 1103515245u + 12345u;
    const size_t n = 1 + (x >> 16) % 64;
    out.push_back(n);
    at += n;
  }
  return out;
}

std::string Key(const absl::Status& s) {
  if (s.ok()) return "ok";
  return std::string(hurray::RuleIdOf(s).value_or("?")) + "@" +
         std::to_string(hurray::OffsetOf(s).value_or(0)) + " " +
         std::to_string(static_cast<int>(s.code()));
}

void CheckFramed(absl::Span<const uint8_t> out) {
  size_t at = 0;
  while (at < out.size()) {
    HURRAY_FUZZ_CHECK(out.size() - at >= net::kHeaderSize);
    const net::MessageHeader h = net::DecodeHeader(out.data() + at);
    HURRAY_FUZZ_CHECK(out.size() - at - net::kHeaderSize >= h.payload_length);
    at += net::kHeaderSize + h.payload_length;
  }
}

// For a message m decoded from a payload: e1 = Append(m) must decode, and
// Append(Decode(e1)) == e1.
template <typename Msg, typename DecodeFn, typename AppendFn>
void RoundTrip(const Msg& m, DecodeFn decode, AppendFn append) {
  std::vector<uint8_t> e1, e2;
  append(&e1, m);
  HURRAY_FUZZ_CHECK(e1.size() >= net::kHeaderSize);
  Msg again;
  HURRAY_FUZZ_CHECK(
      decode(absl::MakeConstSpan(e1).subspan(net::kHeaderSize), &again).ok());
  append(&e2, again);
  HURRAY_FUZZ_CHECK(e1 == e2);
}

// Layout entries re-encode to their own bytes; one byte short fails.
void CheckLayouts(const net::LayoutList& list) {
  std::vector<uint8_t> bytes;
  list.ForEach([&](const net::LayoutEntry& e) {
    static std::vector<uint8_t>& scratch =
        *new std::vector<uint8_t>(3 + 0xFFFF);
    uint8_t* const buf = scratch.data();
    const size_t need =
        (e.tag >= 0xF0 && e.tag <= 0xFE) ? 3 + e.ext_metadata.size() : 1;
    HURRAY_FUZZ_CHECK(
        !net::EncodeLayoutEntry(e, absl::MakeSpan(buf, need - 1)).ok());
    const absl::StatusOr<size_t> n =
        net::EncodeLayoutEntry(e, absl::MakeSpan(buf, need));
    HURRAY_FUZZ_CHECK(n.ok() && *n == need);
    bytes.insert(bytes.end(), buf, buf + need);
  });
  HURRAY_FUZZ_CHECK(absl::MakeConstSpan(bytes) == list.bytes());
}

// The "hurray:list" payload: a parsed list re-encodes to the same bytes.
void CheckTensorList(absl::Span<const uint8_t> in) {
  const absl::StatusOr<std::vector<std::string>> names =
      hurray::stream::net::ParseTensorList(in);
  if (!names.ok()) return;
  std::vector<uint8_t> again;
  for (const std::string& n : *names) {
    const uint32_t len = static_cast<uint32_t>(n.size());
    for (int i = 0; i < 4; ++i) again.push_back(uint8_t(len >> (8 * i)));
    again.insert(again.end(), n.begin(), n.end());
  }
  HURRAY_FUZZ_CHECK(absl::MakeConstSpan(again) == in);
}

// Encoding m into one byte less than its size fails (`scratch` is reused).
template <typename Msg, typename SizeFn, typename EncodeFn>
void CheckShortBufferRefused(const Msg& m, SizeFn size, EncodeFn encode,
                             std::vector<uint8_t>* scratch) {
  scratch->assign(size(m) - 1, 0);
  HURRAY_FUZZ_CHECK(!encode(m, absl::MakeSpan(*scratch)).ok());
}

void CheckCodec(absl::Span<const uint8_t> in, Mode mode) {
  std::vector<uint8_t> small;
  for (size_t at = 0; in.size() - at >= net::kHeaderSize;) {
    const net::MessageHeader h = net::DecodeHeader(in.data() + at);
    at += net::kHeaderSize;
    const absl::Span<const uint8_t> p =
        in.subspan(at, std::min<size_t>(h.payload_length, in.size() - at));
    at += p.size();
    HURRAY_FUZZ_CHECK(net::MessageTypeName(h.type) != nullptr);
    const uint32_t sid = h.stream_id;
    switch (h.type) {
      case 0x01:
      case 0x02: {
        const auto type = static_cast<net::MessageType>(h.type);
        net::Hello hello;
        if (!net::DecodeHello(p, &hello).ok()) break;
        CheckLayouts(hello.layouts);
        CheckShortBufferRefused(hello, net::HelloSize, net::EncodeHello,
                                &small);
        RoundTrip(hello, net::DecodeHello,
                  [&](std::vector<uint8_t>* o, const net::Hello& m) {
                    net::AppendHello(o, type, sid, m);
                  });
        break;
      }
      case 0x03: {
        net::TensorRequest r;
        if (!net::DecodeRequest(p, &r).ok()) break;
        CheckLayouts(r.preferred_layouts);
        CheckShortBufferRefused(r, net::RequestSize, net::EncodeRequest,
                                &small);
        RoundTrip(r, net::DecodeRequest,
                  [&](std::vector<uint8_t>* o, const net::TensorRequest& m) {
                    net::AppendRequest(o, sid, m);
                  });
        break;
      }
      case 0x04: {
        const auto decode = [&](absl::Span<const uint8_t> b,
                                net::DescriptorMessage* m) {
          return net::DecodeDescriptorMessage(b, mode, m);
        };
        net::DescriptorMessage d;
        if (!decode(p, &d).ok()) break;
        RoundTrip(
            d, decode,
            [&](std::vector<uint8_t>* o, const net::DescriptorMessage& m) {
              net::AppendDescriptor(o, sid, m.descriptor, m.transport);
            });
        break;
      }
      case 0x05: {
        net::DataMessage d;
        if (!net::DecodeData(p, &d).ok()) break;
        RoundTrip(d, net::DecodeData,
                  [&](std::vector<uint8_t>* o, const net::DataMessage& m) {
                    net::AppendData(o, sid, m.offset, m.data);
                  });
        break;
      }
      case 0x07: {
        net::TensorPut put;
        if (!net::DecodePut(p, &put).ok()) break;
        CheckShortBufferRefused(put, net::PutSize, net::EncodePut, &small);
        RoundTrip(put, net::DecodePut,
                  [&](std::vector<uint8_t>* o, const net::TensorPut& m) {
                    net::AppendPut(o, sid, m);
                  });
        break;
      }
      case 0x09: {
        net::ErrorMessage e;
        if (!net::DecodeError(p, &e).ok()) break;
        HURRAY_FUZZ_CHECK(net::ErrorCodeName(e.code) != nullptr);
        CheckShortBufferRefused(e, net::ErrorSize, net::EncodeError, &small);
        RoundTrip(e, net::DecodeError,
                  [&](std::vector<uint8_t>* o, const net::ErrorMessage& m) {
                    net::AppendError(o, sid, m);
                  });
        break;
      }
      default:
        break;
    }
  }
}

struct ClientResult {
  std::string status;
  bool satisfied = false;
  uint64_t tensors = 0;
  size_t keys = 0;
  container::testing::RecordingSink sink;
};

void RunClient(absl::Span<const uint8_t> in, Mode mode,
               const std::vector<size_t>* splits, ClientResult* r) {
  NetClientOptions o =
      net::testing::ClientOptions({"dense", "quant", "partition"});
  o.parse.mode = mode;
  o.max_outstanding = 2;
  o.max_message_size = 1 << 20;
  NetClientSession c(o, &r->sink);
  absl::Status s;
  if (splits == nullptr) {
    s = c.Feed(in);
  } else {
    size_t at = 0;
    for (size_t n : *splits) {
      if (!s.ok()) break;
      const size_t k = std::min(n, in.size() - at);
      s = c.Feed(in.subspan(at, k));
      at += k;
    }
  }
  if (s.ok()) s = c.Finish();
  CheckFramed(c.PendingOutput());
  r->status = Key(s);
  r->satisfied = c.Satisfied();
  r->tensors = c.tensors_completed();
  r->keys = c.keys_completed();
  HURRAY_FUZZ_CHECK(c.position() <= in.size());
  HURRAY_FUZZ_CHECK(Key(c.status()) == r->status);
  HURRAY_FUZZ_CHECK(r->keys <= r->tensors + 3);
  // No SERVER_HELLO yet: the limit reads 0 (nothing sent is bounded by it).
  if (!c.has_server_hello())
    HURRAY_FUZZ_CHECK(c.server_max_message_size() == 0);
  // Drained in two steps, the output empties.
  const size_t pending = c.PendingOutput().size();
  c.ConsumeOutput(pending / 2);
  HURRAY_FUZZ_CHECK(c.PendingOutput().size() == pending - pending / 2);
  c.ConsumeOutput(pending);
  HURRAY_FUZZ_CHECK(c.PendingOutput().empty());
  // A failing byte source: harmless once satisfied, STREAM-IO before,
  // and a rejection stays.
  const absl::Status failed = c.FailSource("fuzz");
  if (!s.ok()) {
    HURRAY_FUZZ_CHECK(Key(failed) == r->status);
  } else if (r->satisfied) {
    HURRAY_FUZZ_CHECK(failed.ok());
  } else {
    HURRAY_FUZZ_CHECK(hurray::RuleIdOf(failed).value_or("") == "STREAM-IO");
  }
  HURRAY_FUZZ_CHECK(r->sink.errors.empty());
  if (r->satisfied) HURRAY_FUZZ_CHECK(s.ok() && r->sink.ended);
  if (!s.ok()) HURRAY_FUZZ_CHECK(!r->sink.ended);
}

struct ServerResult {
  std::string status;
  std::vector<uint8_t> out;
};

void RunServer(const hurray::stream::container::HrryFile& file,
               absl::Span<const uint8_t> in, Mode mode,
               const std::vector<size_t>* splits, bool drain_each,
               ServerResult* r) {
  NetServerOptions o;
  o.mode = mode;
  o.max_message_size = 1 << 16;
  o.max_data_frame = 4096;
  NetServerSession s(&file, o);
  absl::Status st;
  auto feed = [&](absl::Span<const uint8_t> piece) {
    st = s.Feed(piece);
    if (!drain_each) return;
    const std::vector<uint8_t> out = net::testing::Drain(&s);
    r->out.insert(r->out.end(), out.begin(), out.end());
  };
  if (splits == nullptr) {
    feed(in);
  } else {
    size_t at = 0;
    for (size_t n : *splits) {
      if (!st.ok()) break;
      const size_t k = std::min(n, in.size() - at);
      feed(in.subspan(at, k));
      at += k;
    }
  }
  if (st.ok()) st = s.Finish();
  const std::vector<uint8_t> out = net::testing::Drain(&s);
  r->out.insert(r->out.end(), out.begin(), out.end());
  // Input ended or rejected: once its output is written, the session is
  // closed.
  HURRAY_FUZZ_CHECK(s.Closed());
  CheckFramed(r->out);
  r->status = Key(st);
}

struct Fixture {
  std::vector<uint8_t> bytes = net::testing::NetTestFile(3000);
  std::unique_ptr<hurray::stream::container::HrryFile> file =
      net::testing::OpenTestFile(bytes);
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Fixture* fixture = new Fixture();
  if (size < 1 || size > (1 << 20)) return 0;
  const Mode mode = (data[0] & 1) ? Mode::kPermissive : Mode::kStrict;
  const uint32_t seed = data[0] >> 1;
  const absl::Span<const uint8_t> in(data + 1, size - 1);
  const std::vector<size_t> splits = Splits(in.size(), seed);
  CheckCodec(in, mode);
  CheckTensorList(in);

  ClientResult whole, pieces;
  RunClient(in, mode, nullptr, &whole);
  RunClient(in, mode, &splits, &pieces);
  HURRAY_FUZZ_CHECK(whole.status == pieces.status);
  HURRAY_FUZZ_CHECK(whole.satisfied == pieces.satisfied);
  HURRAY_FUZZ_CHECK(whole.tensors == pieces.tensors);
  HURRAY_FUZZ_CHECK(whole.keys == pieces.keys);
  HURRAY_FUZZ_CHECK(container::testing::SameEvents(whole.sink, pieces.sink));

  // The server answers as soon as it can, so what it sends depends on when
  // its output is drained; fed the same bytes before draining, it must say
  // the same whatever the split. Drained after every piece (as the TCP
  // server does), its output must still be well framed.
  ServerResult sw, sp, interleaved;
  RunServer(*fixture->file, in, mode, nullptr, false, &sw);
  RunServer(*fixture->file, in, mode, &splits, false, &sp);
  HURRAY_FUZZ_CHECK(sw.status == sp.status);
  HURRAY_FUZZ_CHECK(sw.out == sp.out);
  RunServer(*fixture->file, in, mode, &splits, true, &interleaved);
  return 0;
}
