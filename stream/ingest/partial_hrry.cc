#include "stream/ingest/partial_hrry.h"

#include <algorithm>
#include <memory>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "parser/decoder.h"
#include "parser/rules.h"
#include "parser/wire.h"
#include "stream/container/file_checks.h"
#include "stream/container/tensor_walker.h"
#include "stream/ingest/consumers.h"

namespace hurray::stream::ingest {
namespace {

// The source failed at `offset`: STREAM-IO with its reason, as the loader
// reports a failed source.
absl::Status SourceFailed(uint64_t offset, const absl::Status& why) {
  // The source refused to go on (an HTTP object that changed between two
  // ranges): no verdict on the bytes read, reported as it is.
  if (why.code() == absl::StatusCode::kFailedPrecondition) return why;
  return WithDetail(
      ToStatus({Rule::kStreamIo, offset, "the byte source failed"}),
      why.message());
}

absl::Status ReadInto(container::RangeSource* source, uint64_t offset,
                      uint64_t length, std::vector<uint8_t>* out) {
  out->clear();
  out->reserve(static_cast<size_t>(length));
  absl::Status s =
      source->Read(offset, length, [out](absl::Span<const uint8_t> piece) {
        out->insert(out->end(), piece.begin(), piece.end());
        return absl::OkStatus();
      });
  if (!s.ok()) return SourceFailed(offset, s);
  if (out->size() != length) {
    return SourceFailed(offset + out->size(),
                        absl::DataLossError("fewer bytes than asked for"));
  }
  return absl::OkStatus();
}

// Where the entry's tensor ends by the index: its descriptor, or its data
// (the walker checks the index's claim against the descriptor).
Rejection IndexedEnd(const container::IndexEntry& e,
                     const container::FileGeometry& g, uint64_t* end) {
  uint64_t data_end;
  if (e.data_offset > g.region_limit ||
      !wire::CheckedAdd(e.data_offset, e.data_length, &data_end) ||
      data_end > g.region_limit) {
    return {Rule::kFileIdx13, e.data_length_at(),
            "the data range reaches the KV section, index or trailer"};
  }
  // Placement was checked: descriptor_offset + descriptor_length fits (and
  // the region ends at least a byte after it). At least one byte is read,
  // so that an entry naming an empty descriptor is walked and refused.
  *end = std::max({e.descriptor_offset + e.descriptor_length, data_end,
                   e.descriptor_offset + 1});
  return kAccepted;
}

// Descriptors of possible composite heads read in one range: at most this
// many bytes.
constexpr uint64_t kMaxHeadRangeBytes = 4 << 20;

// One run of consecutive tensors (file order) walked from its first
// descriptor.
struct Group {
  uint32_t first = 0;  // position in file order
  uint32_t count = 0;
  uint64_t begin = 0, end = 0;
};

// Forwards the walker's events to the ingest sink, and stops the walk when
// it finds more tensors than the group has (the index's data_length reached
// into the next tensor).
// Only the tensors `report` marks reach the sink (the others are walked
// for their composite's sake).
class GroupSink final : public container::TensorSink {
 public:
  GroupSink(IngestSink* sink, std::vector<const container::IndexEntry*> entries,
            std::vector<bool> report)
      : sink_(sink),
        last_(entries.back()),
        entries_(std::move(entries)),
        report_(std::move(report)) {}
  absl::Status OnDescriptor(const TensorDescriptor& d) override {
    if (seen_ == report_.size()) {
      return ToStatus({Rule::kFileIdx12, last_->data_length_at(),
                       "data_length differs from the buffers and their "
                       "padding"});
    }
    on_ = report_[seen_];
    const container::IndexEntry& e = *entries_[seen_++];
    if (!on_) return absl::OkStatus();
    // The index names it before its bytes (a .hrry read forward learns
    // the names only at the end: OnTensorNames still comes).
    HURRAY_RETURN_IF_ERROR(sink_->OnTensorKey(e.name));
    return sink_->OnDescriptor(d);
  }
  absl::Status OnBufferPiece(uint32_t i, uint64_t at,
                             absl::Span<const uint8_t> piece) override {
    return on_ ? sink_->OnBufferPiece(i, at, piece) : absl::OkStatus();
  }
  absl::Status OnTensorEnd() override {
    ++ended_;
    return on_ ? sink_->OnTensorEnd() : absl::OkStatus();
  }
  uint32_t ended() const { return ended_; }

 private:
  IngestSink* sink_;
  const container::IndexEntry* last_;
  std::vector<const container::IndexEntry*> entries_;
  std::vector<bool> report_;
  size_t seen_ = 0;
  uint32_t ended_ = 0;
  bool on_ = false;
};

class SelectedReader {
 public:
  SelectedReader(container::RangeSource* source,
                 const container::FileGeometry& g,
                 const container::FileIndex& index,
                 const container::FileOptions& options, IngestSink* sink,
                 PartialReadStats* stats)
      : source_(source),
        g_(g),
        index_(index),
        options_(options),
        sink_(sink),
        stats_(stats) {}

  absl::Status Run(absl::Span<const container::IndexEntry* const> selected,
                   const container::KvSection& kv) {
    sink_->ExpectTensorNames();
    absl::Status s = Plan(selected);
    if (s.ok()) s = ReadGroups();
    if (!s.ok()) {
      // A rule broken (not the source failing, nor the sink): the input is
      // rejected and nothing it names may be published.
      const auto rule = RuleIdOf(s);
      if (!sink_failed_ && rule.has_value() && *rule != "STREAM-IO") {
        sink_->OnInputRejected();
      }
      return s;
    }
    sink_->OnMetadata(KvText(kv));
    HURRAY_RETURN_IF_ERROR(sink_->OnTensorNames(names_));
    return sink_->OnEndOfStream();
  }

 private:
  const container::IndexEntry& At(uint32_t pos) const {
    return index_.entries()[order_[pos]];
  }

  // The member count of each tensor that is a composite head (0 for the
  // others). Only a tensor without data can be one (§ Composite Tensors):
  // their descriptors are read, neighbours within the gap in one range.
  absl::StatusOr<std::vector<uint32_t>> MemberCounts() {
    const uint32_t n = static_cast<uint32_t>(order_.size());
    std::vector<uint32_t> members(n, 0);
    std::vector<uint32_t> heads;
    for (uint32_t p = 0; p < n; ++p) {
      const container::IndexEntry& e = At(p);
      if (e.data_length != 0) continue;
      // Nothing larger than a descriptor may be read (the decoder would
      // refuse it at its descriptor_length field, byte 6).
      if (e.descriptor_length > options_.parse.limits.max_descriptor_bytes) {
        return ToStatus({Rule::kLimitDescBytes, e.descriptor_offset + 6,
                         "the descriptor is larger than the descriptor byte "
                         "limit"});
      }
      heads.push_back(p);
    }
    auto decoder = std::make_unique<DescriptorDecoder>(options_.parse);
    std::vector<uint8_t> bytes;
    for (size_t i = 0; i < heads.size();) {
      const uint64_t begin = At(heads[i]).descriptor_offset;
      size_t j = i + 1;
      uint64_t end = begin + At(heads[i]).descriptor_length;
      while (j < heads.size()) {
        const container::IndexEntry& e = At(heads[j]);
        const uint64_t e_end = e.descriptor_offset + e.descriptor_length;
        if (e.descriptor_offset < end ||
            e.descriptor_offset - end > kCoalesceGapBytes ||
            e_end - begin > kMaxHeadRangeBytes) {
          break;
        }
        end = e_end;
        ++j;
      }
      HURRAY_RETURN_IF_ERROR(ReadInto(source_, begin, end - begin, &bytes));
      for (; i < j; ++i) {
        const container::IndexEntry& e = At(heads[i]);
        const Rejection r =
            DecodeWith(absl::MakeConstSpan(bytes).subspan(
                           static_cast<size_t>(e.descriptor_offset - begin),
                           e.descriptor_length),
                       decoder.get());
        if (!r.ok()) {
          return ToStatus({r.rule, e.descriptor_offset + r.offset, r.message});
        }
        const TensorDescriptor& d = decoder->descriptor();
        if (d.layout_tag == layout_tag::kComposite) {
          members[heads[i]] = d.layout.member_count;
        }
      }
    }
    return members;
  }

  // The tensors to walk: each named one with the composite it belongs to
  // (from its outermost head: a member is validated in its composite), and
  // those to report: the named ones and the members of named heads.
  absl::Status Plan(absl::Span<const container::IndexEntry* const> selected) {
    const uint32_t n = static_cast<uint32_t>(index_.size());
    order_.resize(n);
    for (uint32_t i = 0; i < n; ++i) order_[i] = i;
    std::sort(order_.begin(), order_.end(), [this](uint32_t a, uint32_t b) {
      return index_.entries()[a].descriptor_offset <
             index_.entries()[b].descriptor_offset;
    });
    std::vector<uint32_t> pos_of(n);
    for (uint32_t p = 0; p < n; ++p) pos_of[order_[p]] = p;
    wanted_.assign(n, false);
    for (const container::IndexEntry* e : selected) {
      wanted_[pos_of[static_cast<size_t>(e - index_.entries().data())]] = true;
    }
    absl::StatusOr<std::vector<uint32_t>> members = MemberCounts();
    if (!members.ok()) return members.status();
    // Pre-order: a head's members are the next tensors, a nested head
    // standing for itself and its own members.
    struct Open {
      uint32_t head;
      uint64_t left;
    };
    std::vector<Open> open;
    std::vector<uint32_t> root(n);
    for (uint32_t p = 0; p < n; ++p) {
      root[p] = open.empty() ? p : root[open.front().head];
      if (!open.empty()) {
        if (wanted_[open.back().head]) wanted_[p] = true;
        --open.back().left;
      }
      if ((*members)[p] > 0) open.push_back({p, (*members)[p]});
      while (!open.empty() && open.back().left == 0) open.pop_back();
    }
    std::vector<bool> root_wanted(n, false);
    for (uint32_t p = 0; p < n; ++p) {
      if (wanted_[p]) root_wanted[root[p]] = true;
    }
    // Runs of consecutive tensors to walk.
    for (uint32_t p = 0; p < n; ++p) {
      if (!root_wanted[root[p]]) continue;
      uint64_t end = 0;
      const Rejection r = IndexedEnd(At(p), g_, &end);
      if (!r.ok()) return ToStatus(r);
      if (!groups_.empty() &&
          groups_.back().first + groups_.back().count == p) {
        Group& last = groups_.back();
        ++last.count;
        last.end = std::max(last.end, end);
      } else {
        groups_.push_back({p, 1, At(p).descriptor_offset, end});
      }
    }
    return absl::OkStatus();
  }

  absl::Status ReadGroups() {
    size_t g = 0;
    while (g < groups_.size()) {
      // Neighbours within the gap share one range.
      size_t last = g;
      while (last + 1 < groups_.size() &&
             groups_[last + 1].begin >= groups_[last].end &&
             groups_[last + 1].begin - groups_[last].end <= kCoalesceGapBytes) {
        ++last;
      }
      const uint64_t begin = groups_[g].begin, end = groups_[last].end;
      current_ = g;
      pos_ = begin;
      StartGroup();
      uint64_t delivered = 0;
      absl::Status s = source_->Read(begin, end - begin,
                                     [&](absl::Span<const uint8_t> piece) {
                                       delivered += piece.size();
                                       return Dispatch(piece);
                                     });
      if (stats_ != nullptr) {
        ++stats_->ranges;
        stats_->bytes_read += delivered;
      }
      if (!walk_status_.ok()) return walk_status_;
      if (!s.ok()) return SourceFailed(pos_, s);
      if (pos_ != end) {
        return SourceFailed(
            pos_, absl::DataLossError("the range ended before its bytes"));
      }
      if (current_ != last + 1) {
        return SourceFailed(pos_, absl::InternalError("ranges out of step"));
      }
      g = last + 1;
    }
    return absl::OkStatus();
  }

  void StartGroup() {
    const Group& grp = groups_[current_];
    std::vector<const container::IndexEntry*> entries;
    for (uint32_t k = 0; k < grp.count; ++k)
      entries.push_back(&At(grp.first + k));
    gate_ = std::make_unique<GroupSink>(
        sink_, std::move(entries),
        std::vector<bool>(wanted_.begin() + grp.first,
                          wanted_.begin() + grp.first + grp.count));
    container::Framing framing;
    framing.data_alignment = g_.header.data_buffer_alignment;
    framing.reject_padding_after_head = options_.reject_padding_after_head;
    framing.record_extents = true;
    walker_ = std::make_unique<container::TensorWalker>(
        options_.parse, options_.limits, framing, grp.begin, gate_.get());
  }

  // Bytes at pos_ of the current range: to the walker of the group they
  // belong to, or dropped between groups.
  absl::Status Dispatch(absl::Span<const uint8_t> piece) {
    while (!piece.empty()) {
      if (current_ >= groups_.size()) {
        return absl::InternalError("bytes after the last group");
      }
      const Group& grp = groups_[current_];
      if (pos_ < grp.begin) {
        const size_t skip = static_cast<size_t>(
            std::min<uint64_t>(grp.begin - pos_, piece.size()));
        pos_ += skip;
        piece.remove_prefix(skip);
        continue;
      }
      const size_t n =
          static_cast<size_t>(std::min<uint64_t>(grp.end - pos_, piece.size()));
      const container::WalkState walked = walker_->Feed(piece.first(n)).state;
      pos_ += n;
      piece.remove_prefix(n);
      if (walked == container::WalkState::kRejected) {
        sink_failed_ = walker_->stopped_by_sink() &&
                       !RuleIdOf(walker_->status()).has_value();
        walk_status_ = walker_->status();
        return walk_status_;
      }
      if (pos_ == grp.end) {
        walk_status_ = EndGroup();
        if (!walk_status_.ok()) return walk_status_;
        ++current_;
        if (current_ < groups_.size()) StartGroup();
      }
    }
    return absl::OkStatus();
  }

  // Every tensor of the group walked, each where its entry says.
  absl::Status EndGroup() {
    const Group& grp = groups_[current_];
    const absl::Span<const container::TensorExtent> walked = walker_->extents();
    for (uint32_t k = 0; k < grp.count; ++k) {
      const container::IndexEntry& e = At(grp.first + k);
      const container::TensorExtent* x =
          k < walked.size() ? &walked[k] : nullptr;
      if (x == nullptr && k == walked.size() &&
          walker_->current().descriptor_offset == e.descriptor_offset &&
          !walker_->in_descriptor()) {
        x = &walker_->current();  // decoded, its buffers cut short
      }
      if (x == nullptr || x->descriptor_offset != e.descriptor_offset) {
        // A tensor the index does not name lies before this one, or the
        // previous one ran past this descriptor.
        return ToStatus({Rule::kFileIdx15, e.descriptor_offset_at(),
                         "no tensor of the region starts at "
                         "descriptor_offset"});
      }
      HURRAY_RETURN_IF_ERROR(
          ToStatus(container::CheckEntry(e, *x, g_, options_.parse.mode)));
      if (k >= gate_->ended()) {
        // The index's data range ends before the descriptor's buffers.
        return ToStatus({Rule::kFileIdx12, e.data_length_at(),
                         "data_length differs from the buffers and their "
                         "padding"});
      }
      if (wanted_[grp.first + k]) names_.emplace_back(e.name);
    }
    if (walker_->open_composites() != 0) {
      return ToStatus(
          {Rule::kCmpCls03, grp.end,
           "the tensor region ends before the composite's members"});
    }
    if (stats_ != nullptr) {
      stats_->tensors +=
          std::count(wanted_.begin() + grp.first,
                     wanted_.begin() + grp.first + grp.count, true);
    }
    return absl::OkStatus();
  }

  container::RangeSource* source_;
  const container::FileGeometry& g_;
  const container::FileIndex& index_;
  const container::FileOptions& options_;
  IngestSink* sink_;
  PartialReadStats* stats_;
  std::vector<uint32_t> order_;  // entry indices in file order
  std::vector<bool> wanted_;     // by file position: reported to the sink  //
                                 // entry indices in file order
  std::vector<Group> groups_;
  size_t current_ = 0;
  uint64_t pos_ = 0;
  std::unique_ptr<GroupSink> gate_;
  std::unique_ptr<container::TensorWalker> walker_;
  absl::Status walk_status_;
  bool sink_failed_ = false;
  std::vector<std::string> names_;
};

}  // namespace

absl::Status MemoryRangeSource::Read(uint64_t offset, uint64_t length,
                                     PieceFn feed) {
  if (offset > bytes_.size() || length > bytes_.size() - offset) {
    return absl::OutOfRangeError("the range lies outside the file");
  }
  // Pieces of at most 1 MiB, like the loader's chunks.
  constexpr uint64_t kPiece = 1 << 20;
  for (uint64_t at = offset; at < offset + length; at += kPiece) {
    const uint64_t n = std::min(kPiece, offset + length - at);
    HURRAY_RETURN_IF_ERROR(
        feed(bytes_.subspan(static_cast<size_t>(at), static_cast<size_t>(n))));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<HrryMetadata>> ReadHrryMetadata(
    container::RangeSource* source, const container::FileOptions& options) {
  auto m = std::make_unique<HrryMetadata>();
  const uint64_t size = source->size();
  const Mode mode = options.parse.mode;
  if (size > options.limits.max_total_bytes) {
    return ToStatus({Rule::kLimitTotalBytes, options.limits.max_total_bytes,
                     "the file is longer than the total byte limit"});
  }
  // file-format.md § Random-Access Reader: header, trailer, index, KV.
  container::FileHeader header;
  std::vector<uint8_t> bytes;
  if (size >= container::kFileHeaderSize) {
    HURRAY_RETURN_IF_ERROR(
        ReadInto(source, 0, container::kFileHeaderSize, &bytes));
    HURRAY_RETURN_IF_ERROR(
        ToStatus(container::ParseFileHeader(bytes, &header)));
  }
  if (size < container::kMinFileSize) {
    return ToStatus(
        {Rule::kFileHdr01, size, "the file is shorter than 104 bytes"});
  }
  HURRAY_RETURN_IF_ERROR(ReadInto(source, size - container::kTrailerSize,
                                  container::kTrailerSize, &bytes));
  container::FileGeometry& g = m->geometry;
  HURRAY_RETURN_IF_ERROR(
      ToStatus(container::ParseTrailer(bytes, size, header, options, &g)));
  // The KV section and the index, in one range (they lie inside the file:
  // ParseTrailer checked it).
  const container::FileTrailer& t = g.trailer;
  uint64_t lo = t.index_offset, hi = t.index_offset + t.index_length;
  if (g.kv_present) {
    lo = std::min<uint64_t>(lo, t.kv_offset);
    hi = std::max<uint64_t>(hi, t.kv_offset + t.kv_length);
  }
  if (hi - lo > options.max_metadata_bytes) {
    return ToStatus({Rule::kLimitBufferBytes, lo + options.max_metadata_bytes,
                     "the KV and index sections pass the metadata byte limit"});
  }
  HURRAY_RETURN_IF_ERROR(ReadInto(source, lo, hi - lo, &m->tail));
  const absl::Span<const uint8_t> tail = m->tail;
  const absl::Span<const uint8_t> index =
      tail.subspan(static_cast<size_t>(t.index_offset - lo),
                   static_cast<size_t>(t.index_length));
  Rejection r = container::CheckIndexCrc(index, g);
  if (r.ok()) {
    r = m->index.Parse(index, t.index_offset,
                       header.has(container::file_flag::kSortedIndex), mode);
  }
  if (r.ok() && g.kv_present) {
    r = m->kv.Parse(
        tail.subspan(static_cast<size_t>(t.kv_offset - lo), t.kv_length),
        t.kv_offset, mode);
  }
  // What the index alone decides, for every entry.
  for (size_t i = 0; r.ok() && i < m->index.size(); ++i) {
    r = container::CheckEntryPlacement(m->index.entries()[i], g);
  }
  if (r.ok() && Applies(Rule::kFileIdx14, mode))
    r = container::CheckOverlaps(m->index);
  if (!r.ok()) return ToStatus(r);
  return m;
}

absl::StatusOr<std::vector<const container::IndexEntry*>> ResolveNames(
    const container::FileIndex& index, absl::Span<const std::string> names) {
  std::vector<const container::IndexEntry*> out;
  absl::flat_hash_set<const container::IndexEntry*> seen;
  for (const std::string& name : names) {
    const container::IndexEntry* e = index.Find(name);
    if (e == nullptr) {
      return absl::NotFoundError(
          absl::StrCat("no tensor named '", name, "' in the index"));
    }
    if (seen.insert(e).second) out.push_back(e);
  }
  return out;
}

absl::Status ReadSelected(
    container::RangeSource* source, const container::FileGeometry& geometry,
    const container::FileIndex& index, const container::KvSection& kv,
    absl::Span<const container::IndexEntry* const> selected,
    const container::FileOptions& options, IngestSink* sink,
    PartialReadStats* stats) {
  SelectedReader reader(source, geometry, index, options, sink, stats);
  return reader.Run(selected, kv);
}

}  // namespace hurray::stream::ingest
