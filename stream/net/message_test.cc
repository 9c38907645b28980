// Round trips of every message codec, the bounded decoders' rejections (rule
// id and offset), and the framer fed at every split point.
#include "stream/net/message.h"

#include <cstdint>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "parser/rules.h"
#include "stream/net/framer.h"

namespace hurray::stream::net {
namespace {

using Bytes = std::vector<uint8_t>;

Bytes Layouts() {
  Bytes b(64);
  size_t n = 0;
  n += *EncodeLayoutEntry({0x01, {}}, absl::MakeSpan(b).subspan(n));
  const Bytes meta = {9, 8, 7};
  n += *EncodeLayoutEntry({0xF3, meta}, absl::MakeSpan(b).subspan(n));
  n += *EncodeLayoutEntry({0xF4, {}}, absl::MakeSpan(b).subspan(n));
  b.resize(n);
  return b;
}

TEST(NetMessage, HeaderRoundTrip) {
  uint8_t h[kHeaderSize];
  EncodeHeader({0x05, 0xABCDEF01, 0x12345678}, h);
  const MessageHeader d = DecodeHeader(h);
  EXPECT_EQ(d.type, 0x05u);
  EXPECT_EQ(d.stream_id, 0xABCDEF01u);
  EXPECT_EQ(d.payload_length, 0x12345678u);
  EXPECT_EQ(h[0], 0x05);  // little-endian
  EXPECT_EQ(h[8], 0x78);
}

TEST(NetMessage, HelloRoundTripWithExtensionLayouts) {
  const Bytes layouts = Layouts();
  const Bytes devices = {0, 1, 0xF2};
  const Bytes classes = {0, 2};
  Hello h;
  h.protocol_version = 1;
  h.max_message_size = 12345;
  h.capability_flags = kCapParallelStreams;
  h.layouts = LayoutList(3, layouts);
  h.devices = devices;
  h.memory_classes = classes;
  Bytes out(HelloSize(h));
  ASSERT_EQ(*EncodeHello(h, absl::MakeSpan(out)), out.size());
  EXPECT_FALSE(EncodeHello(h, absl::MakeSpan(out).first(out.size() - 1)).ok());
  Hello d;
  ASSERT_TRUE(DecodeHello(out, &d).ok());
  EXPECT_EQ(d.max_message_size, 12345u);
  EXPECT_EQ(d.capability_flags, kCapParallelStreams);
  EXPECT_EQ(Bytes(d.devices.begin(), d.devices.end()), devices);
  EXPECT_EQ(Bytes(d.memory_classes.begin(), d.memory_classes.end()), classes);
  std::vector<uint8_t> tags;
  std::vector<size_t> meta;
  d.layouts.ForEach([&](const LayoutEntry& e) {
    tags.push_back(e.tag);
    meta.push_back(e.ext_metadata.size());
  });
  EXPECT_EQ(tags, (std::vector<uint8_t>{0x01, 0xF3, 0xF4}));
  EXPECT_EQ(meta, (std::vector<size_t>{0, 3, 0}));
  // Every shorter payload is rejected (NET-MSG-01), except the one that
  // stops before the optional memory class list.
  for (size_t n = 0; n < out.size(); ++n) {
    Hello x;
    const Rejection r = DecodeHello(absl::MakeConstSpan(out).first(n), &x);
    if (n == out.size() - 4) {
      EXPECT_TRUE(r.ok()) << n;
      continue;
    }
    EXPECT_EQ(r.rule, Rule::kNetMsg01) << n;
    EXPECT_LE(r.offset, n);
  }
  Bytes longer = out;
  longer.push_back(0);
  Hello x;
  EXPECT_EQ(DecodeHello(longer, &x).offset, out.size());
}

TEST(NetMessage, RequestRoundTrip) {
  const Bytes layouts = Layouts();
  TensorRequest r;
  r.key = "model.layers.0.weight";
  r.preferred_layouts = LayoutList(3, layouts);
  r.preferred_device = 1;
  r.min_alignment = 256;
  r.request_flags = kRequestAllowTranscode | kRequestParallelOk;
  Bytes out(RequestSize(r));
  ASSERT_EQ(*EncodeRequest(r, absl::MakeSpan(out)), out.size());
  TensorRequest d;
  ASSERT_TRUE(DecodeRequest(out, &d).ok());
  EXPECT_EQ(d.key, r.key);
  EXPECT_EQ(d.preferred_layouts.count(), 3);
  EXPECT_EQ(d.preferred_device, 1);
  EXPECT_EQ(d.min_alignment, 256u);
  EXPECT_EQ(d.request_flags, 3u);
  for (size_t n = 0; n < out.size(); ++n) {
    EXPECT_EQ(DecodeRequest(absl::MakeConstSpan(out).first(n), &d).rule,
              Rule::kNetMsg01);
  }
  Bytes bad = out;
  bad[4] = 0xFF;  // the key is not UTF-8
  EXPECT_EQ(DecodeRequest(bad, &d).offset, 4u);
}

TEST(NetMessage, DescriptorTransportFields) {
  Bytes desc(40, 0);
  desc[6] = 40;  // descriptor_length
  Bytes p = desc;
  Bytes t(kTransportFieldsSize);
  ASSERT_TRUE(EncodeTransportFields({1000, 2, 3}, absl::MakeSpan(t)).ok());
  p.insert(p.end(), t.begin(), t.end());
  DescriptorMessage m;
  ASSERT_TRUE(DecodeDescriptorMessage(p, Mode::kStrict, &m).ok());
  EXPECT_EQ(m.descriptor.size(), 40u);
  EXPECT_EQ(m.transport.total_data_bytes, 1000u);
  EXPECT_EQ(m.transport.shard_index, 2u);
  EXPECT_EQ(m.transport.total_shards, 3u);
  EXPECT_EQ(DecodeDescriptorMessage(absl::MakeConstSpan(p).first(9),
                                    Mode::kStrict, &m)
                .rule,
            Rule::kNetTd01);
  EXPECT_EQ(DecodeDescriptorMessage(absl::MakeConstSpan(p).first(55),
                                    Mode::kStrict, &m)
                .rule,
            Rule::kNetTd01);
  p.push_back(0);
  EXPECT_EQ(DecodeDescriptorMessage(p, Mode::kStrict, &m).rule, Rule::kNetTd02);
  EXPECT_TRUE(DecodeDescriptorMessage(p, Mode::kPermissive, &m).ok());
}

TEST(NetMessage, DataPutErrorRoundTrips) {
  Bytes msg;
  const Bytes data = {1, 2, 3};
  AppendData(&msg, 7, 0x1122334455667788ull, data);
  const MessageHeader h = DecodeHeader(msg.data());
  EXPECT_EQ(h.payload_length, 11u);
  DataMessage dm;
  ASSERT_TRUE(
      DecodeData(absl::MakeConstSpan(msg).subspan(kHeaderSize), &dm).ok());
  EXPECT_EQ(dm.offset, 0x1122334455667788ull);
  EXPECT_EQ(Bytes(dm.data.begin(), dm.data.end()), data);
  EXPECT_EQ(DecodeData(Bytes(7), &dm).rule, Rule::kNetDat02);
  EXPECT_TRUE(DecodeDataEnd({}).ok());
  EXPECT_EQ(DecodeDataEnd(Bytes(1)).rule, Rule::kNetEnd01);

  const Bytes desc = {1, 2, 3, 4};
  TensorPut p{"k", desc, 99};
  Bytes po(PutSize(p));
  ASSERT_TRUE(EncodePut(p, absl::MakeSpan(po)).ok());
  TensorPut pd;
  ASSERT_TRUE(DecodePut(po, &pd).ok());
  EXPECT_EQ(pd.key, "k");
  EXPECT_EQ(Bytes(pd.descriptor.begin(), pd.descriptor.end()), desc);
  EXPECT_EQ(pd.total_data_bytes, 99u);
  for (size_t n = 0; n < po.size(); ++n) {
    EXPECT_EQ(DecodePut(absl::MakeConstSpan(po).first(n), &pd).rule,
              Rule::kNetMsg01);
  }

  ErrorMessage e{7, "too big \xC3\xA9"};
  Bytes eo(ErrorSize(e));
  ASSERT_TRUE(EncodeError(e, absl::MakeSpan(eo)).ok());
  ErrorMessage ed;
  ASSERT_TRUE(DecodeError(eo, &ed).ok());
  EXPECT_EQ(ed.code, 7u);
  EXPECT_EQ(ed.message, e.message);
  for (size_t n = 0; n < eo.size(); ++n) {
    EXPECT_EQ(DecodeError(absl::MakeConstSpan(eo).first(n), &ed).rule,
              Rule::kNetMsg01);
  }
  EXPECT_EQ(TruncateUtf8("ab\xC3\xA9", 3), "ab");
  EXPECT_EQ(std::string(ErrorCodeName(2)), "UNKNOWN_TENSOR");
  EXPECT_EQ(std::string(MessageTypeName(5)), "TENSOR_DATA");
}

TEST(NetMessage, LayoutEntryEncoding) {
  uint8_t b[8];
  EXPECT_EQ(*EncodeLayoutEntry({0x02, {}}, b), 1u);
  const Bytes meta = {1, 2};
  EXPECT_EQ(*EncodeLayoutEntry({0xF0, meta}, b), 5u);
  EXPECT_EQ(b[1], 2);
  EXPECT_EQ(b[2], 0);
  EXPECT_FALSE(EncodeLayoutEntry({0x02, meta}, b).ok());
}

// Records what the framer hands over.
class Recorder : public FrameHandler {
 public:
  Rejection OnMessage(const MessageHeader& h, uint64_t at,
                      absl::Span<const uint8_t> payload) override {
    log += "M" + std::to_string(h.type) + "@" + std::to_string(at) + ":" +
           std::string(payload.begin(), payload.end()) + ";";
    return kAccepted;
  }
  Rejection OnDataBegin(const MessageHeader& h, uint64_t at,
                        uint64_t offset) override {
    log += "D" + std::to_string(h.stream_id) + "@" + std::to_string(at) + "+" +
           std::to_string(offset) + ":";
    return kAccepted;
  }
  Rejection OnDataPiece(uint64_t, absl::Span<const uint8_t> piece) override {
    log += std::string(piece.begin(), piece.end());
    return kAccepted;
  }
  Rejection OnDataEnd() override {
    log += ";";
    return kAccepted;
  }
  std::string log;
};

Bytes Str(const std::string& s) { return Bytes(s.begin(), s.end()); }

TEST(NetFramer, SameMessagesAtEverySplitPoint) {
  Bytes in;
  AppendMessage(&in, MessageType::kPing, 1, Str("hi"));
  AppendData(&in, 2, 5, Str("abcdef"));
  AppendData(&in, 2, 11, {});
  AppendMessage(&in, MessageType::kTensorDataEnd, 2, {});
  Recorder whole;
  MessageFramer f({}, &whole);
  ASSERT_TRUE(f.Feed(in).ok());
  ASSERT_TRUE(f.Finish().ok());
  EXPECT_EQ(whole.log, "M10@0:hi;D2@14+5:abcdef;D2@40+11:;M6@60:;");
  for (size_t split = 0; split <= in.size(); ++split) {
    Recorder r;
    MessageFramer g({}, &r);
    ASSERT_TRUE(g.Feed(absl::MakeConstSpan(in).first(split)).ok());
    ASSERT_TRUE(g.Feed(absl::MakeConstSpan(in).subspan(split)).ok());
    EXPECT_EQ(r.log, whole.log) << split;
    if (split < in.size()) {
      Recorder t;
      MessageFramer h({}, &t);
      (void)h.Feed(absl::MakeConstSpan(in).first(split));  // Finish tells
      const Rejection e = h.Finish();
      const bool boundary =
          split == 0 || split == 14 || split == 40 || split == 60;
      EXPECT_EQ(e.ok(), boundary) << split;
      if (!boundary) {
        EXPECT_EQ(e.rule, Rule::kNet05);
        EXPECT_EQ(e.offset, split);
      }
    }
  }
}

TEST(NetFramer, HeaderRules) {
  auto first = [](uint32_t type, uint32_t stream, uint32_t length,
                  FramerOptions o = {}) {
    Recorder r;
    MessageFramer f(o, &r);
    uint8_t h[kHeaderSize];
    EncodeHeader({type, stream, length}, h);
    return f.Feed(absl::MakeConstSpan(h));
  };
  EXPECT_EQ(first(0x0E, 1, 0).rule, Rule::kNet03);
  EXPECT_EQ(first(0, 1, 0).rule, Rule::kNet03);
  EXPECT_EQ(first(0x100, 1, 0).rule, Rule::kNet03);
  EXPECT_EQ(first(0xF1, 1, 0).rule, Rule::kNet03);
  FramerOptions agreed;
  agreed.agreed_private_types = 1 << 1;
  EXPECT_TRUE(first(0xF1, 1, 0, agreed).ok());
  EXPECT_EQ(first(0xFF, 1, 0).rule, Rule::kNet04);
  EXPECT_EQ(first(0x0A, 0, 0).rule, Rule::kNet02);
  EXPECT_EQ(first(0x0A, 0, 0).offset, 4u);
  FramerOptions permissive;
  permissive.mode = Mode::kPermissive;
  EXPECT_TRUE(first(0x0A, 0, 0, permissive).ok());
  FramerOptions small;
  small.max_payload = 100;
  EXPECT_TRUE(first(0x0A, 1, 100, small).ok());
  EXPECT_EQ(first(0x0A, 1, 101, small).rule, Rule::kNet01);
  EXPECT_EQ(first(0x0A, 1, 101, small).offset, 8u);
  EXPECT_EQ(first(0x05, 1, 7).rule, Rule::kNetDat02);
}

}  // namespace
}  // namespace hurray::stream::net
