#include "stream/net/testing/net_rule_cases.h"

#include <cstdlib>
#include <memory>

#include "parser/decoder.h"
#include "parser/descriptor.h"
#include "parser/element_type.h"
#include "parser/encoder.h"
#include "stream/container/testing/test_util.h"
#include "stream/net/client_session.h"
#include "stream/net/server_session.h"
#include "stream/net/testing/net_test_util.h"
#include "tests/vectors.h"

namespace hurray::stream::net::testing {

using Bytes = std::vector<uint8_t>;
using Case = NetRuleCase;

namespace {

constexpr size_t kH = net::kHeaderSize;

std::unique_ptr<TensorDescriptor> ShardOf(std::vector<uint64_t> parent,
                                          std::vector<uint64_t> offset) {
  auto d = vectors::Dense(type_tag::kUInt8, {4, 8});
  d->flags |= flag::kHasShard;
  for (size_t k = 0; k < parent.size(); ++k) {
    d->shard.parent_shape[k] = parent[k];
    d->shard.shard_offset[k] = offset[k];
  }
  return d;
}

PartOffsets OffsetsOf(const TensorDescriptor& d) {
  return ComputeOffsets(d).value();
}

#define ASSERT_FALSE_OR_ABORT(cond) \
  if (!(cond)) std::abort()

Case Named(const char* id) {
  Case c;
  c.id = id;
  return c;
}

absl::Status RunClient(const Case& c, const Bytes& in) {
  NetClientOptions o = testing::ClientOptions(c.keys);
  o.parse.mode = c.mode;
  o.max_message_size = c.max_message_size;
  NetClientSession s(o, nullptr);
  absl::Status st = s.Feed(in);
  if (st.ok()) st = s.Finish();
  return st;
}

class ServerFile {
 public:
  ServerFile()
      : bytes_(testing::NetTestFile(0)), file_(testing::OpenTestFile(bytes_)) {}
  const container::HrryFile& file() const { return *file_; }

 private:
  Bytes bytes_;
  std::unique_ptr<container::HrryFile> file_;
};

absl::Status RunServer(const Case& c, const Bytes& in) {
  static ServerFile* f = new ServerFile();
  NetServerOptions o;
  o.mode = c.mode;
  NetServerSession s(&f->file(), o);
  absl::Status st = s.Feed(in);
  testing::Drain(&s);
  if (st.ok()) st = s.Finish();
  return st;
}

}  // namespace

Bytes ClientHelloBytes() {
  Bytes out;
  net::Hello h;
  net::AppendHello(&out, net::MessageType::kClientHello, 1, h);
  return out;
}
Bytes RequestBytes(uint32_t stream, absl::string_view key) {
  Bytes out;
  net::TensorRequest r;
  r.key = key;
  net::AppendRequest(&out, stream, r);
  return out;
}
namespace {

Bytes Message(uint32_t type, uint32_t stream, Bytes payload) {
  Bytes out;
  net::AppendMessage(&out, static_cast<net::MessageType>(type), stream,
                     payload);
  return out;
}
Bytes Header(uint32_t type, uint32_t stream, uint32_t length) {
  Bytes out(kH);
  net::EncodeHeader({type, stream, length}, out.data());
  return out;
}

std::vector<Case> AllCases() {
  std::vector<Case> cases;
  const Bytes hello = ServerHelloBytes();
  const uint64_t H = hello.size();
  // The tensor "t": uint8 [4], one buffer of 4 bytes.
  const Bytes desc = vectors::Bytes(*vectors::Dense(type_tag::kUInt8, {4}));
  const uint64_t dl = desc.size();
  const Bytes data4 = {1, 2, 3, 4};
  const Bytes d_msg = DescriptorBytes(1, desc, 4);
  const Bytes data_msg = DataBytes(1, 0, data4);
  const Bytes end = EndBytes(1);
  const Bytes valid = Cat({hello, d_msg, data_msg, end});
  const uint64_t D = H;                    // the descriptor message
  const uint64_t T = D + kH + dl;          // its transport fields
  const uint64_t A = D + d_msg.size();     // the data message
  const uint64_t E = A + data_msg.size();  // TENSOR_DATA_END
  const Bytes ping = Message(0x0A, 1, {});

  // --- Framing ---------------------------------------------------------------
  {
    Case c = Named("NET-01");
    c.max_message_size = 4096;
    c.valid = Cat({hello, Message(0x0A, 1, Bytes(4096)), d_msg, data_msg, end});
    c.broken =
        Cat({hello, Message(0x0A, 1, Bytes(4097)), d_msg, data_msg, end});
    c.offset = H + 8;
    cases.push_back(c);
  }
  {
    Case c = Named("NET-02");
    c.valid = Cat({hello, ping, d_msg, data_msg, end});
    c.broken = Cat({hello, Message(0x0A, 0, {}), d_msg, data_msg, end});
    c.offset = H + 4;
    cases.push_back(c);
  }
  {
    Case c = Named("NET-03");
    c.valid = Cat({hello, ping, d_msg, data_msg, end});
    c.broken = Cat({hello, Message(0x0E, 1, {}), d_msg, data_msg, end});
    c.offset = H;
    cases.push_back(c);
  }
  {
    Case c = Named("NET-04");
    c.valid = Cat({hello, ping, d_msg, data_msg, end});
    c.broken = Cat({hello, Message(0xFF, 1, {}), d_msg, data_msg, end});
    c.offset = H;
    cases.push_back(c);
  }
  {
    Case c = Named("NET-05");
    c.valid = valid;
    c.broken = Bytes(valid.begin(), valid.end() - 1);  // inside the END header
    c.offset = valid.size() - 1;
    cases.push_back(c);
  }
  {
    Case c = Named("NET-06");
    c.valid = valid;
    c.broken = Cat({ping, hello, d_msg, data_msg, end});
    c.offset = 0;
    cases.push_back(c);
  }
  {
    Case c = Named("NET-07");
    c.valid = Cat({hello, ping, d_msg, data_msg, end});
    c.broken = Cat({hello, RequestBytes(1, "x"), d_msg, data_msg, end});
    c.offset = H;
    cases.push_back(c);
  }
  {
    // Server side: the client closed stream 1 with ERROR, then used it.
    Case c = Named("NET-08");
    c.server_side = true;
    Bytes err;
    net::AppendError(&err, 1, {6, "bad"});
    const Bytes ch = ClientHelloBytes();
    c.valid = Cat({ch, err, RequestBytes(3, "dense")});
    c.broken = Cat({ch, err, RequestBytes(1, "dense")});
    c.offset = ch.size() + err.size();
    cases.push_back(c);
  }
  // --- TENSOR_DESCRIPTOR -----------------------------------------------------
  {
    Case c = Named("NET-TD-01");
    c.valid = valid;
    c.broken =
        Cat({hello, Message(0x04, 1, Bytes(desc.begin(), desc.begin() + 9)),
             data_msg, end});
    c.offset = D + kH;
    cases.push_back(c);
  }
  {
    Case c = Named("NET-TD-02");
    c.valid = valid;
    Bytes p = Bytes(d_msg.begin() + kH, d_msg.end());
    p.push_back(0);
    c.broken = Cat({hello, Message(0x04, 1, p), data_msg, end});
    c.offset = D + kH + 6;
    cases.push_back(c);
  }
  {
    Case c = Named("NET-TD-03");
    c.valid = valid;
    auto bad = vectors::Dense(type_tag::kUInt8, {4});
    bad->buffers[0].byte_size = 3;  // BUF-*: 3 bytes cannot hold 4 uint8
    const Bytes bd = vectors::Bytes(*bad);
    c.broken = Cat(
        {hello, DescriptorBytes(1, bd, 3), DataBytes(1, 0, {1, 2, 3}), end});
    const absl::Status inner = hurray::Decode(bd).status();
    ASSERT_FALSE_OR_ABORT(!inner.ok());
    c.offset = D + kH + OffsetOf(inner).value_or(0);
    c.wrapped = true;
    cases.push_back(c);
  }
  {
    Case c = Named("NET-TD-04");
    c.valid = valid;
    c.broken = Cat({hello, DescriptorBytes(1, desc, 4, 1, 1), data_msg, end});
    c.offset = T + 8;
    cases.push_back(c);
  }
  {
    Case c = Named("NET-TD-05");
    c.valid = valid;
    c.broken = Cat({hello, DescriptorBytes(1, desc, 4, 0, 2), data_msg, end});
    c.offset = T + 12;
    cases.push_back(c);
  }
  {
    Case c = Named("NET-TD-06");
    c.valid = valid;
    c.broken = Cat({hello, DescriptorBytes(1, desc, 5), data_msg, end});
    c.offset = T;
    cases.push_back(c);
  }
  {
    Case c = Named("NET-TD-07");
    const Bytes head = vectors::Bytes(*container::testing::GroupHead(1));
    c.valid =
        Cat({hello, DescriptorBytes(1, head, 0), end, d_msg, data_msg, end});
    c.broken =
        Cat({hello, DescriptorBytes(1, head, 4), end, d_msg, data_msg, end});
    c.offset = H + kH + head.size();
    cases.push_back(c);
  }
  {
    Case c = Named("NET-TD-08");
    c.valid = valid;
    auto d = vectors::Dense(type_tag::kUInt8, {4});
    d->buffers[0].device_tag = 0x01;  // CUDA
    d->buffers[0].sync_mode = 0x01;   // SYNC_EVENT: valid in process only
    c.broken =
        Cat({hello, DescriptorBytes(1, vectors::Bytes(*d), 4), data_msg, end});
    c.offset = D + kH + OffsetsOf(*d).handle(0) + 13;
    cases.push_back(c);
  }
  {
    Case c = Named("NET-TD-09");
    c.valid = valid;
    c.broken = Cat({hello, d_msg, DataBytes(1, 0, {1, 2}), d_msg});
    c.offset = A + kH + 8 + 2;
    cases.push_back(c);
  }
  // --- TENSOR_DATA -----------------------------------------------------------
  {
    Case c = Named("NET-DAT-01");
    c.valid = valid;
    c.broken = Cat({hello, data_msg, d_msg, data_msg, end});
    c.offset = H;
    cases.push_back(c);
  }
  {
    Case c = Named("NET-DAT-02");
    c.valid = valid;
    c.broken = Cat({hello, d_msg, Header(0x05, 1, 7), Bytes(7), end});
    c.offset = A + 8;
    cases.push_back(c);
  }
  {
    Case c = Named("NET-DAT-03");
    c.valid = valid;
    c.broken = Cat({hello, d_msg, DataBytes(1, 1, data4), end});
    c.offset = A + kH;
    cases.push_back(c);
  }
  {
    Case c = Named("NET-DAT-04");
    c.valid = valid;
    c.broken = Cat({hello, d_msg, DataBytes(1, 0, {1, 2, 3, 4, 5}), end});
    c.offset = A + 8;
    cases.push_back(c);
  }
  {
    Case c = Named("NET-DAT-05");
    const Bytes empty = vectors::Bytes(*vectors::Dense(type_tag::kUInt8, {0}));
    const Bytes dm = DescriptorBytes(1, empty, 0);
    c.valid = Cat({hello, dm, end});
    c.broken = Cat({hello, dm, DataBytes(1, 0, {}), end});
    c.offset = H + dm.size();
    cases.push_back(c);
  }
  // --- TENSOR_DATA_END -------------------------------------------------------
  {
    Case c = Named("NET-END-01");
    c.valid = valid;
    c.broken = Cat({hello, d_msg, data_msg, Message(0x06, 1, {0})});
    c.offset = E + 8;
    cases.push_back(c);
  }
  {
    Case c = Named("NET-END-02");
    c.valid = valid;
    c.broken = Cat({hello, d_msg, DataBytes(1, 0, {1, 2}), end});
    c.offset = A + kH + 8 + 2;
    cases.push_back(c);
  }
  {
    Case c = Named("NET-END-03");
    c.valid = valid;
    c.broken = Cat({hello, end, d_msg, data_msg, end});
    c.offset = H;
    cases.push_back(c);
  }
  // --- Composites ------------------------------------------------------------
  {
    Case c = Named("NET-CMP-01");
    const Bytes head = vectors::Bytes(*container::testing::GroupHead(1));
    const Bytes hm = DescriptorBytes(1, head, 0);
    c.valid = Cat({hello, hm, end, d_msg, data_msg, end});
    c.broken = Cat({hello, hm, d_msg, data_msg, end});
    c.offset = H + hm.size();
    cases.push_back(c);
  }
  {
    // A partition head over float32 [8, 8]: a uint8 member breaks
    // CMP-MEM (type), wrapped in NET-CMP-02.
    Case c = Named("NET-CMP-02");
    auto head = vectors::CompositePartition();
    head->layout.member_count = 2;
    const Bytes hm = DescriptorBytes(1, vectors::Bytes(*head), 0);
    auto top = vectors::Dense(type_tag::kFloat32, {4, 8});
    top->flags |= flag::kHasShard;
    top->shard.parent_shape[0] = 8;
    top->shard.parent_shape[1] = 8;
    auto bottom = vectors::Dense(type_tag::kFloat32, {4, 8});
    bottom->flags |= flag::kHasShard;
    bottom->shard.parent_shape[0] = 8;
    bottom->shard.parent_shape[1] = 8;
    bottom->shard.shard_offset[0] = 4;
    const Bytes tb = vectors::Bytes(*top), bb = vectors::Bytes(*bottom);
    const Bytes zeros(128, 0);
    const Bytes tm =
        Cat({DescriptorBytes(1, tb, 128), DataBytes(1, 0, zeros), end});
    c.valid = Cat({hello, hm, end, tm, DescriptorBytes(1, bb, 128),
                   DataBytes(1, 0, zeros), end});
    auto wrong = ShardOf({8, 8}, {4, 0});  // uint8, not float32
    c.broken =
        Cat({hello, hm, end, tm, DescriptorBytes(1, vectors::Bytes(*wrong), 32),
             DataBytes(1, 0, Bytes(32)), end});
    c.offset = 0;  // checked below: inside the bad member's descriptor
    c.wrapped = true;
    cases.push_back(c);
  }
  // --- Shards ----------------------------------------------------------------
  {
    const Bytes s0 = vectors::Bytes(*ShardOf({8, 8}, {0, 0}));
    const Bytes s1 = vectors::Bytes(*ShardOf({8, 8}, {4, 0}));
    const Bytes d32(32, 7);
    const Bytes first =
        Cat({DescriptorBytes(1, s0, 32, 0, 2), DataBytes(1, 0, d32), end});
    const Bytes second = Cat(
        {DescriptorBytes(2, s1, 32, 1, 2), DataBytes(2, 0, d32), EndBytes(2)});
    const Bytes ok = Cat({hello, first, second});
    const uint64_t S = H + first.size();  // the second shard's descriptor
    {
      Case c = Named("NET-PAR-01");
      c.valid = ok;
      auto other = ShardOf({8, 16}, {4, 0});
      c.broken = Cat({hello, first,
                      DescriptorBytes(2, vectors::Bytes(*other), 32, 1, 2),
                      DataBytes(2, 0, d32), EndBytes(2)});
      c.offset = S + kH + OffsetsOf(*other).shard;
      cases.push_back(c);
    }
    {
      Case c = Named("NET-PAR-02");
      c.valid = ok;
      const Bytes broken = Cat({hello, first, DescriptorBytes(2, s0, 32, 1, 2),
                                DataBytes(2, 0, d32), EndBytes(2)});
      c.broken = broken;
      c.offset = broken.size() - kH;  // judged at the last shard's END
      cases.push_back(c);
    }
    {
      Case c = Named("NET-PAR-03");
      c.valid = ok;
      c.broken = Cat({hello, first, DescriptorBytes(2, s1, 32, 0, 2),
                      DataBytes(2, 0, d32), EndBytes(2)});
      c.offset = S + kH + s1.size() + 8;
      cases.push_back(c);
    }
  }
  // --- Our own ---------------------------------------------------------------
  {
    Case c = Named("NET-MSG-01");
    c.valid = valid;
    // A SERVER_HELLO cut after its fixed fields: no layout count.
    c.broken = Cat(
        {Message(0x02, 1, Bytes(hello.begin() + kH, hello.begin() + kH + 16)),
         d_msg, data_msg, end});
    c.offset = kH + 16;
    cases.push_back(c);
  }
  {
    Case c = Named("NET-SEQ-01");
    c.valid = valid;
    c.broken = Cat({hello, hello, d_msg, data_msg, end});
    c.offset = H;
    cases.push_back(c);
  }
  return cases;
}

}  // namespace

std::vector<NetRuleCase> AllNetRuleCases() { return AllCases(); }

absl::Status RunNetRuleClient(const NetRuleCase& c, const Bytes& in) {
  return RunClient(c, in);
}
absl::Status RunNetRuleServer(const NetRuleCase& c, const Bytes& in) {
  return RunServer(c, in);
}
Bytes MessageBytes(uint32_t type, uint32_t stream, Bytes payload) {
  return Message(type, stream, std::move(payload));
}
Bytes HeaderBytes(uint32_t type, uint32_t stream, uint32_t length) {
  return Header(type, stream, length);
}

}  // namespace hurray::stream::net::testing
