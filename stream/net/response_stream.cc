#include "stream/net/response_stream.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "parser/box_overlap.h"
#include "parser/composite_validator.h"
#include "parser/decoder.h"
#include "parser/wire.h"

namespace hurray::stream::net {
namespace {

constexpr absl::string_view kInnerRulePayloadUrl = "hurray.dev/inner-rule";

uint64_t SaturatingMul(uint64_t a, uint64_t b) {
  uint64_t r;
  return wire::CheckedMul(a, b, &r) ? r : std::numeric_limits<uint64_t>::max();
}

// The session is over (a sink failed; its status is the session's): stops
// the framer quietly.
Rejection Over(uint64_t at) {
  return {Rule::kNet08, at, "the session is over"};
}

absl::Status Stop() { return absl::CancelledError("stopped by the session"); }

}  // namespace

absl::Status WrapRejection(const Rejection& outer, const Rejection& inner) {
  const absl::Status s = ToStatus(outer);
  const absl::string_view id = RuleId(inner.rule);
  absl::Status wrapped(
      s.code(), absl::StrCat(s.message(), ": ", id, " at byte ", inner.offset,
                             ": ", inner.message));
  s.ForEachPayload([&](absl::string_view url, const absl::Cord& payload) {
    wrapped.SetPayload(url, payload);
  });
  wrapped.SetPayload(kInnerRulePayloadUrl, absl::Cord(id));
  return wrapped;
}

ResponseStream::ResponseStream(ClientShared* shared) : shared_(shared) {}
ResponseStream::~ResponseStream() {
  shared_->spooled_bytes -= std::min(shared_->spooled_bytes, spool_.bytes());
}

void ResponseStream::Start(uint32_t stream_id, size_t key, bool live) {
  // The session's LIMIT-TOTAL-BYTES counts every stream's data bytes
  // (NetChecks); a walker sees its own stream only.
  container::ContainerLimits limits = shared_->options.limits;
  limits.max_total_bytes = std::numeric_limits<uint64_t>::max();
  walker_ = std::make_unique<container::TensorWalker>(
      shared_->options.parse, limits, container::Framing(), 0,
      static_cast<container::TensorSink*>(this));
  shared_->spooled_bytes -= std::min(shared_->spooled_bytes, spool_.bytes());
  spool_.Clear();
  stream_id_ = stream_id;
  key_ = key;
  live_ = live;
  key_reported_ = false;
  net_rejection_ = kAccepted;
  user_failed_ = false;
  open_ = head_ = walker_done_ = false;
  total_ = sum_ = received_ = 0;
  own_shards_.total = own_shards_.done = 0;
  shards_ = &own_shards_;
}

void ResponseStream::StartShard(uint32_t stream_id, ResponseStream& primary) {
  Start(stream_id, primary.key_, /*live=*/false);
  key_reported_ = true;
  shards_ = primary.shards_;
}

Rejection ResponseStream::GoLive(uint64_t at) {
  live_ = true;
  if (spool_.empty()) return kAccepted;
  shared_->spooled_bytes -= std::min(shared_->spooled_bytes, spool_.bytes());
  container::TensorSink* sink = shared_->sink;
  if (sink == nullptr) {
    spool_.Clear();
    return kAccepted;
  }
  absl::Status s;
  if (!key_reported_) {
    key_reported_ = true;
    s = sink->OnTensorKey(shared_->options.keys[key_]);
  }
  if (s.ok()) s = spool_.Replay(sink);
  spool_.Clear();
  if (!s.ok()) {
    SinkFailed(std::move(s));
    return Over(at);
  }
  return kAccepted;
}

absl::Status ResponseStream::UserFailed(absl::Status s) {
  user_failed_ = true;
  if (shared_->status.ok()) shared_->status = s;
  return s;
}

void ResponseStream::SinkFailed(absl::Status s) {
  UserFailed(std::move(s)).IgnoreError();
}

bool ResponseStream::Spool(uint64_t cost) {
  const uint64_t limit = shared_->options.max_spooled_bytes;
  if (shared_->spooled_bytes > limit || cost > limit - shared_->spooled_bytes) {
    return false;
  }
  shared_->spooled_bytes += cost;
  return true;
}

Rejection ResponseStream::Walk(absl::Span<const uint8_t> bytes, uint64_t at) {
  walker_at_ = walker_->position();
  received_at_ = at;
  if (walker_->Feed(bytes).state == container::WalkState::kRejected)
    return Stopped(at);
  return kAccepted;
}

Rejection ResponseStream::Stopped(uint64_t at) {
  if (!net_rejection_.ok()) return net_rejection_;
  if (user_failed_) return Over(at);
  const Rejection& w = walker_->rejection();
  const uint64_t offset =
      received_at_ + (w.offset > walker_at_ ? w.offset - walker_at_ : 0);
  const Rejection inner{w.rule, offset, w.message};
  if (RuleId(w.rule).substr(0, 4) == "CMP-") {
    // interchange.md § Composite Tensor Streaming: a member check failed.
    const Rejection outer{Rule::kNetCmp02, offset,
                          "a composite member check failed"};
    shared_->wrapped = WrapRejection(outer, inner);
    return outer;
  }
  if (GetRuleInfo(w.rule).level == RuleLevel::kDescriptor) {
    const Rejection outer{Rule::kNetTd03, offset,
                          "the embedded descriptor is invalid"};
    shared_->wrapped = WrapRejection(outer, inner);
    return outer;
  }
  return inner;  // LIMIT-BUFFER-BYTES, LIMIT-MEMBERS
}

Rejection ResponseStream::OnDescriptor(const DescriptorMessage& m,
                                       uint64_t at) {
  base_ = at + kHeaderSize;
  transport_ = m.transport;
  transport_at_ = base_ + m.descriptor.size();
  descriptor_seen_ = false;
  net_rejection_ = kAccepted;
  HURRAY_RETURN_IF_REJECTED(Walk(m.descriptor, base_));
  if (descriptor_seen_) return kAccepted;
  // The payload held less than a whole descriptor.
  if (walker_->Finish() == container::WalkState::kRejected) return Stopped(at);
  // Nothing at all (descriptor_length 0): the decoder's own verdict.
  auto decoder = std::make_unique<DescriptorDecoder>(shared_->options.parse);
  const Rejection inner = DecodeWith(m.descriptor, decoder.get());
  const Rejection outer{Rule::kNetTd03, base_ + inner.offset,
                        "the embedded descriptor is invalid"};
  shared_->wrapped =
      WrapRejection(outer, {inner.rule, base_ + inner.offset, inner.message});
  return outer;
}

Rejection ResponseStream::NetChecks(const TensorDescriptor& d) {
  const TransportFields& t = transport_;
  const NetClientOptions& o = shared_->options;
  // NET-TD-08: TENSOR_DATA_END is the only synchronisation across machines
  // (§ Completion): every buffer must be SYNC_PRODUCER_SYNCED.
  if (o.cross_machine) {
    for (uint32_t i = 0; i < d.buffer_count; ++i) {
      if (d.buffers[i].sync_mode != 0) {
        return {Rule::kNetTd08, base_ + d.offsets.handle(i) + 13,
                "a buffer's sync_mode is not SYNC_PRODUCER_SYNCED on a "
                "cross-machine transport"};
      }
    }
  }
  if (t.total_shards == 0 || t.shard_index >= t.total_shards) {
    return {Rule::kNetTd04, transport_at_ + 8,
            "shard_index is not below total_shards"};
  }
  if (t.total_shards > 1 && !d.has(flag::kHasShard)) {
    return {Rule::kNetTd05, transport_at_ + 12,
            "a sharded transfer whose descriptor has no shard section"};
  }
  // The walker checked each buffer's byte_size; total_data_bytes is the
  // transport's own declaration (permissive mode may send more than Σ).
  uint64_t sum = 0;
  for (uint32_t i = 0; i < d.buffer_count; ++i) {
    sum += d.buffers[i].byte_size;  // each ≤ the buffer limit: no overflow
  }
  if (t.total_data_bytes >
      SaturatingMul(o.limits.max_buffer_bytes,
                    std::max<uint32_t>(d.buffer_count, 1))) {
    return {Rule::kLimitBufferBytes, transport_at_,
            "total_data_bytes is larger than the buffer byte limit"};
  }
  // LIMIT-TOTAL-BYTES: the data bytes of every stream of the session.
  if (t.total_data_bytes >
      o.limits.max_total_bytes -
          std::min(o.limits.max_total_bytes, shared_->declared_bytes)) {
    return {Rule::kLimitTotalBytes, transport_at_,
            "the data would pass the total byte limit"};
  }
  const bool head = d.layout_tag == layout_tag::kComposite;
  if (head && t.total_data_bytes != 0) {
    return {Rule::kNetTd07, transport_at_,
            "a composite head declares data bytes"};
  }
  // RESOLUTIONS.md 15: total_data_bytes = Σ byte_size. Fewer bytes could
  // never fill the buffers, so that is refused in permissive mode too.
  if (t.total_data_bytes != sum &&
      (Applies(Rule::kNetTd06, o.parse.mode) || t.total_data_bytes < sum)) {
    return {Rule::kNetTd06, transport_at_,
            "total_data_bytes is not the sum of the buffers' byte_size"};
  }
  sum_ = sum;
  return CheckShard(d);
}

absl::Status ResponseStream::OnDescriptor(const TensorDescriptor& d) {
  descriptor_seen_ = true;
  net_rejection_ = NetChecks(d);
  if (!net_rejection_.ok()) return Stop();
  shared_->declared_bytes += transport_.total_data_bytes;
  open_ = true;
  head_ = d.layout_tag == layout_tag::kComposite;
  total_ = transport_.total_data_bytes;
  received_ = 0;
  walker_done_ = false;
  container::TensorSink* sink = shared_->sink;
  if (sink == nullptr) return absl::OkStatus();
  if (!live_) {
    if (!Spool(EventSpool::DescriptorCost())) {
      net_rejection_ = {Rule::kLimitSpoolBytes, base_,
                        "more bytes of later responses held than allowed"};
      return Stop();
    }
    spool_.RecordDescriptor(d);
    return absl::OkStatus();
  }
  if (!key_reported_) {
    key_reported_ = true;
    absl::Status s = sink->OnTensorKey(shared_->options.keys[key_]);
    if (!s.ok()) return UserFailed(std::move(s));
  }
  absl::Status s = sink->OnDescriptor(d);
  if (!s.ok()) return UserFailed(std::move(s));
  return absl::OkStatus();
}

absl::Status ResponseStream::OnBufferPiece(uint32_t buffer_index,
                                           uint64_t offset_in_buffer,
                                           absl::Span<const uint8_t> piece) {
  container::TensorSink* sink = shared_->sink;
  if (sink == nullptr) return absl::OkStatus();
  if (live_) {
    absl::Status s = sink->OnBufferPiece(buffer_index, offset_in_buffer, piece);
    if (!s.ok()) return UserFailed(std::move(s));
    return absl::OkStatus();
  }
  if (!Spool(EventSpool::PieceCost(piece.size()))) {
    const uint64_t w = walker_->position() - piece.size();
    net_rejection_ = {Rule::kLimitSpoolBytes, received_at_ + (w - walker_at_),
                      "more bytes of later responses held than allowed"};
    return Stop();
  }
  spool_.RecordPiece(buffer_index, offset_in_buffer, piece);
  return absl::OkStatus();
}

absl::Status ResponseStream::OnTensorEnd() {
  // The walker has every buffer byte; the tensor ends at TENSOR_DATA_END.
  walker_done_ = true;
  return absl::OkStatus();
}

Rejection ResponseStream::OnDataBegin(uint64_t at, uint64_t offset,
                                      uint64_t length) {
  if (head_) {
    return {Rule::kNetCmp01, at,
            "a composite head's TENSOR_DESCRIPTOR is not followed directly "
            "by TENSOR_DATA_END"};
  }
  if (total_ == 0) {
    return {Rule::kNetDat05, at,
            "TENSOR_DATA for a tensor whose total_data_bytes is 0"};
  }
  if (offset != received_) {
    return {Rule::kNetDat03, at + kHeaderSize,
            "byte_offset_in_buffer is not the number of bytes received"};
  }
  if (length > total_ - received_) {
    return {Rule::kNetDat04, at + 8, "the frame goes past total_data_bytes"};
  }
  return kAccepted;
}

Rejection ResponseStream::OnDataPiece(uint64_t at,
                                      absl::Span<const uint8_t> piece) {
  // Bytes past Σ byte_size (permissive mode, NET-TD-06 relaxed) are
  // dropped: they are not the start of another tensor.
  const uint64_t fed = std::min(received_, sum_);
  const size_t n =
      static_cast<size_t>(std::min<uint64_t>(piece.size(), sum_ - fed));
  received_ += piece.size();
  if (n == 0) return kAccepted;
  net_rejection_ = kAccepted;
  return Walk(piece.first(n), at);
}

Rejection ResponseStream::OnDataEnd(uint64_t at) {
  if (received_ != total_ || !walker_done_) {
    return {Rule::kNetEnd02, at,
            "TENSOR_DATA_END before total_data_bytes arrived"};
  }
  open_ = false;
  head_ = false;
  container::TensorSink* sink = shared_->sink;
  if (sink != nullptr) {
    if (live_) {
      absl::Status s = sink->OnTensorEnd();
      if (!s.ok()) {
        SinkFailed(std::move(s));
        return Over(at);
      }
    } else {
      spool_.RecordTensorEnd();
    }
  }
  ++shared_->tensors_completed;
  if (shards_->total > 1 && ++shards_->done == shards_->total) {
    return CloseShards(at);
  }
  return kAccepted;
}

// § Parallel Transfers, § Shard Consistency.
Rejection ResponseStream::CheckShard(const TensorDescriptor& d) {
  const TransportFields& t = transport_;
  ShardSet& set = *shards_;
  if (set.total <= 1) {
    if (t.total_shards == 1) return kAccepted;
    if (t.total_shards > shared_->options.limits.max_members) {
      return {Rule::kLimitMembers, transport_at_ + 12,
              "more shards than the member limit"};
    }
    // The first shard fixes what the others must share.
    set.total = t.total_shards;
    set.done = 0;
    set.seen.assign(set.total, false);
    set.rank = d.rank;
    set.type = d.type_tag;
    set.layout = d.layout_tag;
    std::copy(d.shard.parent_shape, d.shard.parent_shape + d.rank,
              set.parent_shape);
    set.boxes.clear();
  } else if (t.total_shards != set.total) {
    return {Rule::kNetPar03, transport_at_ + 12,
            "shards of one tensor declare different total_shards"};
  }
  if (set.seen[t.shard_index]) {
    return {Rule::kNetPar03, transport_at_ + 8,
            "two shards with the same shard_index"};
  }
  if (d.rank != set.rank || d.type_tag != set.type ||
      d.layout_tag != set.layout ||
      !std::equal(set.parent_shape, set.parent_shape + d.rank,
                  d.shard.parent_shape)) {
    return {Rule::kNetPar01,
            base_ + (d.has(flag::kHasShard) ? d.offsets.shard : 0),
            "shards differ in parent_shape, element type or layout"};
  }
  set.seen[t.shard_index] = true;
  // The box [shard_offset, shard_offset + shape) inside parent_shape.
  set.boxes.push_back(0);
  for (uint32_t k = 0; k < d.rank; ++k) {
    set.boxes.push_back(d.shard.shard_offset[k]);
  }
  for (uint32_t k = 0; k < d.rank; ++k) {
    uint64_t hi;
    if (!wire::CheckedAdd(d.shard.shard_offset[k], d.shape[k], &hi) ||
        hi > set.parent_shape[k]) {
      return {Rule::kNetPar02, base_ + d.offsets.shard,
              "a shard lies outside parent_shape"};
    }
    set.boxes.push_back(hi);
  }
  return kAccepted;
}

// Every shard arrived: the boxes must tile parent_shape exactly.
Rejection ResponseStream::CloseShards(uint64_t at) {
  ShardSet& set = *shards_;
  const uint32_t rank = set.rank;
  const size_t words = 2 * rank + 1;
  CompositeValidator::Count total, whole;
  whole.Set(1);
  for (uint32_t k = 0; k < rank; ++k) whole.Multiply(set.parent_shape[k]);
  for (uint32_t i = 0; i < set.total; ++i) {
    CompositeValidator::Count v;
    v.Set(1);
    for (uint32_t k = 0; k < rank; ++k) {
      v.Multiply(set.boxes[i * words + 1 + rank + k] -
                 set.boxes[i * words + 1 + k]);
    }
    total.Add(v);
  }
  std::vector<uint32_t> order, active;
  order.reserve(set.total);
  active.reserve(set.total);
  uint32_t a = 0, b = 0;
  const OverlapResult o = FindOverlap(
      set.boxes.data(), set.total, rank, set.parent_shape,
      shared_->options.limits.max_overlap_work, &order, &active, &a, &b);
  if (o == OverlapResult::kFound) {
    return {Rule::kNetPar02, at, "two shards overlap"};
  }
  if (o == OverlapResult::kOverBudget) {
    return {Rule::kLimitMembers, at,
            "checking the shards for overlap needs more work than allowed"};
  }
  if (!(total == whole)) {
    return {Rule::kNetPar02, at, "the shards do not cover parent_shape"};
  }
  set.total = 0;
  return kAccepted;
}

}  // namespace hurray::stream::net
