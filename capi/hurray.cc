// The C interface (capi/hurray.h) over the C++ reader. Every entry point is
// noexcept and catches everything: an exception must never unwind into C
// (undefined behaviour), so a failed allocation becomes HURRAY_NO_MEMORY and
// anything else HURRAY_INTERNAL.
#include "capi/hurray.h"

#include <atomic>
#include <cstdio>
#include <cstring>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "capi/error_fill.h"
#include "dequant/dequantizer.h"
#include "dequant/params.h"
#include "hurray_version.h"
#include "parser/decoder.h"
#include "parser/descriptor.h"
#include "parser/element_type.h"
#include "parser/options.h"
#include "parser/quantization.h"
#include "parser/rules.h"
#include "parser/validator.h"
#include "stream/container/hrry_mmap.h"
#include "stream/container/stream_reader.h"
#include "stream/container/tensor_sink.h"

// Opaque handles. hurray_descriptor is never defined: it is a
// hurray::TensorDescriptor seen through an incomplete C type.
struct hurray_decoder {
  explicit hurray_decoder(const hurray::ParseOptions& o) : decoder(o) {}
  hurray::DescriptorDecoder decoder;
  // Finish() with nothing fed: HURRAY_END, and the input has ended (feed
  // returns BAD_STATE until reset).
  bool finished_empty = false;
};

// Shared by the file handle and its tensors: hurray_file_close drops the
// handle's reference, each tensor holds one, the last one deletes it (a
// tensor freed after its file's close still reads a mapped file). Atomic:
// the file and its tensors are distinct handles, usable from two threads.
struct hurray_file {
  std::unique_ptr<hurray::stream::container::HrryFile> file;
  hurray::ParseOptions parse;
  mutable std::atomic<uint64_t> refs{1};
};

struct hurray_tensor {
  const hurray_file* file = nullptr;
  const hurray::stream::container::IndexEntry* entry = nullptr;
  hurray::TensorDescriptor descriptor;
};

namespace {

using hurray::capi::ClearError;
using hurray::capi::CopyString;
using hurray::capi::Guarded;
using hurray::capi::SetError;
using hurray::capi::SetErrorOf;
using hurray::capi::UnitCode;

using hurray::TensorDescriptor;

const TensorDescriptor* Unwrap(const hurray_descriptor* d) {
  return reinterpret_cast<const TensorDescriptor*>(d);
}
const hurray_descriptor* Wrap(const TensorDescriptor* d) {
  return reinterpret_cast<const hurray_descriptor*>(d);
}

hurray::ParseOptions ParseOptionsFor(uint32_t flags) {
  hurray::ParseOptions o;
  if (flags & HURRAY_PERMISSIVE) o.mode = hurray::Mode::kPermissive;
  if (flags & HURRAY_NO_VALIDATE) o.validate = false;
  return o;
}

// A Rejection (no allocation: the message is static).
hurray_status SetRejection(hurray_error* e, const hurray::Rejection& r) {
  if (r.ok()) {
    ClearError(e, HURRAY_OK);
    return HURRAY_OK;
  }
  ClearError(e, HURRAY_REJECTED);
  if (e != nullptr) {
    CopyString(hurray::RuleId(r.rule), e->rule_id);
    e->offset = r.offset;
    e->offset_unit = UnitCode(r.unit);
    CopyString(r.message != nullptr ? r.message : "", e->message);
  }
  return HURRAY_REJECTED;
}

// An absl::Status from the C++ API: a rule id makes it a rejection; other
// codes map by meaning.
hurray_status StatusCodeOf(const absl::Status& s) {
  if (s.ok()) return HURRAY_OK;
  if (hurray::RuleIdOf(s).has_value()) return HURRAY_REJECTED;
  switch (s.code()) {
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kOutOfRange:
      return HURRAY_INVALID_ARGUMENT;
    case absl::StatusCode::kNotFound:
    case absl::StatusCode::kPermissionDenied:
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kDataLoss:
      return HURRAY_IO_ERROR;
    case absl::StatusCode::kFailedPrecondition:
      return HURRAY_BAD_STATE;
    case absl::StatusCode::kUnimplemented:
      return HURRAY_UNSUPPORTED;
    case absl::StatusCode::kResourceExhausted:
      return HURRAY_NO_MEMORY;
    default:
      return HURRAY_INTERNAL;
  }
}

hurray_status SetStatus(hurray_error* e, const absl::Status& s) {
  return s.ok() ? SetError(e, HURRAY_OK, "")
                : SetErrorOf(e, StatusCodeOf(s), s);
}

hurray_status FromDecodeState(hurray::DecodeState s) {
  switch (s) {
    case hurray::DecodeState::kNeedMore:
      return HURRAY_NEED_MORE;
    case hurray::DecodeState::kDone:
      return HURRAY_OK;
    case hurray::DecodeState::kRejected:
      return HURRAY_REJECTED;
  }
  return HURRAY_INTERNAL;
}

// Forwards TensorSink events to the C callbacks until one asks to stop.
class CallbackSink final : public hurray::stream::container::TensorSink {
 public:
  explicit CallbackSink(const hurray_stream_callbacks& cb) : cb_(cb) {}

  absl::Status OnDescriptor(const TensorDescriptor& d) override {
    if (!cancelled_ && cb_.on_descriptor != nullptr) {
      Stop(cb_.on_descriptor(cb_.user, Wrap(&d)));
    }
    return absl::OkStatus();
  }
  absl::Status OnBufferPiece(uint32_t buffer_index, uint64_t offset,
                             absl::Span<const uint8_t> piece) override {
    if (!cancelled_ && cb_.on_buffer_piece != nullptr) {
      Stop(cb_.on_buffer_piece(cb_.user, buffer_index, offset, piece.data(),
                               piece.size()));
    }
    return absl::OkStatus();
  }
  absl::Status OnTensorEnd() override {
    if (!cancelled_ && cb_.on_tensor_end != nullptr) {
      Stop(cb_.on_tensor_end(cb_.user));
    }
    return absl::OkStatus();
  }
  absl::Status OnEndOfStream() override {
    if (!cancelled_ && cb_.on_end_of_stream != nullptr) {
      cb_.on_end_of_stream(cb_.user);
    }
    return absl::OkStatus();
  }
  bool cancelled() const { return cancelled_; }
  void Cancel() { cancelled_ = true; }

 private:
  void Stop(int rc) {
    if (rc != 0) cancelled_ = true;
  }
  hurray_stream_callbacks cb_;
  bool cancelled_ = false;
};

}  // namespace

struct hurray_stream {
  hurray_stream(const hurray_stream_callbacks& cb,
                const hurray::stream::container::StreamOptions& o)
      : sink(cb), reader(o, &sink) {}
  CallbackSink sink;  // declared first: the reader points at it
  hurray::stream::container::StreamReader reader;
  bool in_call = false;       // a callback re-entering its own reader
  bool free_pending = false;  // freed by a callback: deleted after the call
  bool finished = false;      // hurray_stream_finish was called
};

namespace {

// Marks a stream busy for one call, also when it unwinds.
class InCall {
 public:
  explicit InCall(hurray_stream* s) : s_(s) { s_->in_call = true; }
  ~InCall() { s_->in_call = false; }
  InCall(const InCall&) = delete;
  InCall& operator=(const InCall&) = delete;

 private:
  hurray_stream* s_;
};

}  // namespace

extern "C" {

// ---- Versions -------------------------------------------------------------

uint32_t hurray_version(void) {
  return (HURRAY_API_VERSION_MAJOR << 16) | (HURRAY_API_VERSION_MINOR << 8) |
         HURRAY_API_VERSION_PATCH;
}

const char* hurray_version_string(void) { return HURRAY_VERSION_STRING; }

void hurray_format_version(uint32_t* major, uint32_t* minor) {
  if (major != nullptr) *major = hurray::kSupportedMajor;
  if (minor != nullptr) *minor = hurray::kSupportedMinor;
}

const char* hurray_status_name(hurray_status status) {
  switch (status) {
    case HURRAY_OK:
      return "OK";
    case HURRAY_NEED_MORE:
      return "NEED_MORE";
    case HURRAY_END:
      return "END";
    case HURRAY_REJECTED:
      return "REJECTED";
    case HURRAY_INVALID_ARGUMENT:
      return "INVALID_ARGUMENT";
    case HURRAY_BUFFER_TOO_SMALL:
      return "BUFFER_TOO_SMALL";
    case HURRAY_NOT_FOUND:
      return "NOT_FOUND";
    case HURRAY_BAD_STATE:
      return "BAD_STATE";
    case HURRAY_UNSUPPORTED:
      return "UNSUPPORTED";
    case HURRAY_IO_ERROR:
      return "IO_ERROR";
    case HURRAY_NO_MEMORY:
      return "NO_MEMORY";
    case HURRAY_CANCELLED:
      return "CANCELLED";
    case HURRAY_INTERNAL:
      return "INTERNAL";
    default:
      return "UNKNOWN";
  }
}

// ---- Descriptors ----------------------------------------------------------

uint32_t hurray_descriptor_rank(const hurray_descriptor* d) {
  return d != nullptr ? Unwrap(d)->rank : 0;
}

hurray_status hurray_descriptor_shape(const hurray_descriptor* d,
                                      uint64_t* shape, size_t capacity,
                                      uint32_t* rank) {
  if (d == nullptr) return HURRAY_INVALID_ARGUMENT;
  const TensorDescriptor& t = *Unwrap(d);
  if (rank != nullptr) *rank = t.rank;
  if (t.rank == 0) return HURRAY_OK;
  if (shape == nullptr) return HURRAY_INVALID_ARGUMENT;
  if (capacity < t.rank) return HURRAY_BUFFER_TOO_SMALL;
  std::memcpy(shape, t.shape, sizeof(uint64_t) * t.rank);
  return HURRAY_OK;
}

uint8_t hurray_descriptor_type_tag(const hurray_descriptor* d) {
  return d != nullptr ? Unwrap(d)->type_tag : 0;
}

const char* hurray_type_name(uint8_t type_tag) {
  // ElementTypeName views a static table entry, which is NUL-terminated.
  const hurray::ElementTypeInfo* info = hurray::FindElementType(type_tag);
  return info != nullptr ? info->name.data() : "";
}

uint8_t hurray_descriptor_layout_tag(const hurray_descriptor* d) {
  return d != nullptr ? Unwrap(d)->layout_tag : 0;
}

const char* hurray_layout_name(uint8_t layout_tag) {
  const char* name = hurray::LayoutName(layout_tag);
  return name != nullptr ? name : "";
}

uint32_t hurray_descriptor_flags(const hurray_descriptor* d) {
  return d != nullptr ? Unwrap(d)->flags : 0;
}

uint64_t hurray_descriptor_byte_offset(const hurray_descriptor* d) {
  return d != nullptr ? Unwrap(d)->byte_offset : 0;
}

uint32_t hurray_descriptor_length(const hurray_descriptor* d) {
  return d != nullptr ? Unwrap(d)->descriptor_length : 0;
}

hurray_status hurray_descriptor_element_count(const hurray_descriptor* d,
                                              uint64_t* count) {
  if (d == nullptr || count == nullptr) return HURRAY_INVALID_ARGUMENT;
  return Unwrap(d)->ElementCount(count) ? HURRAY_OK : HURRAY_UNSUPPORTED;
}

uint32_t hurray_descriptor_buffer_count(const hurray_descriptor* d) {
  return d != nullptr ? Unwrap(d)->buffer_count : 0;
}

hurray_status hurray_descriptor_buffer_size(const hurray_descriptor* d,
                                            uint32_t index,
                                            uint64_t* byte_size) {
  if (d == nullptr || byte_size == nullptr) return HURRAY_INVALID_ARGUMENT;
  const TensorDescriptor& t = *Unwrap(d);
  if (index >= t.buffer_count) return HURRAY_INVALID_ARGUMENT;
  *byte_size = t.buffers[index].byte_size;
  return HURRAY_OK;
}

uint8_t hurray_descriptor_quantization_scheme(const hurray_descriptor* d) {
  if (d == nullptr) return HURRAY_SCHEME_NONE;
  const TensorDescriptor& t = *Unwrap(d);
  if (!t.has(hurray::flag::kHasQuantization)) return HURRAY_SCHEME_NONE;
  return t.quantization.scheme_tag;
}

hurray_status hurray_descriptor_quantization(const hurray_descriptor* d,
                                             hurray_quantization* out) {
  if (d == nullptr || out == nullptr) return HURRAY_INVALID_ARGUMENT;
  const TensorDescriptor& t = *Unwrap(d);
  if (!t.has(hurray::flag::kHasQuantization)) return HURRAY_NOT_FOUND;
  const hurray::QuantizationDescriptor& q = t.quantization;
  *out = hurray_quantization{};
  out->scheme = q.scheme_tag;
  out->scheme_version = q.scheme_version;
  out->symmetric = q.symmetric() ? 1 : 0;
  out->scale_type_tag = q.scale_type_tag;
  out->scale = q.scale;
  out->zero_point = q.zero_point;
  out->axis = q.axis;
  out->block_size = q.block_size;
  // Per-tensor affine keeps its parameters inline: no buffer.
  const bool inline_params =
      q.scheme_tag == hurray::scheme_tag::kPerTensorAffine;
  out->scale_buffer_index =
      inline_params ? hurray::kNoBufferIndex : q.scale_buffer_index;
  out->zero_point_buffer_index =
      inline_params ? hurray::kNoBufferIndex : q.zero_point_buffer_index;
  return HURRAY_OK;
}

// ---- Decoder --------------------------------------------------------------

hurray_decoder* hurray_decoder_new(uint32_t flags) {
  // The one allocation of a decoder's life; feeding never allocates.
  return new (std::nothrow) hurray_decoder(ParseOptionsFor(flags));
}

void hurray_decoder_free(hurray_decoder* decoder) { delete decoder; }

namespace {

// Drops one reference of a file (its handle's or a tensor's).
void Unref(const hurray_file* file) {
  if (file->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete file;
}

}  // namespace

hurray_status hurray_decoder_feed(hurray_decoder* decoder, const uint8_t* data,
                                  size_t size, size_t* consumed) {
  if (consumed != nullptr) *consumed = 0;
  if (decoder == nullptr || (data == nullptr && size != 0)) {
    return HURRAY_INVALID_ARGUMENT;
  }
  // finish said the input ended: more of it is the caller's mistake, not
  // bytes to drop or to take as the next descriptor.
  if (decoder->finished_empty) return HURRAY_BAD_STATE;
  const hurray::FeedResult r = decoder->decoder.Feed({data, size});
  if (consumed != nullptr) *consumed = r.consumed;
  return FromDecodeState(r.state);
}

hurray_status hurray_decoder_finish(hurray_decoder* decoder) {
  if (decoder == nullptr) return HURRAY_INVALID_ARGUMENT;
  if (decoder->decoder.state() == hurray::DecodeState::kNeedMore &&
      !decoder->decoder.in_progress()) {
    // Nothing of a descriptor was fed: a clean end of input between
    // descriptors, as the stream reader treats it (not DESC-HDR-01).
    decoder->finished_empty = true;
    return HURRAY_END;
  }
  return FromDecodeState(decoder->decoder.Finish());
}

void hurray_decoder_reset(hurray_decoder* decoder) {
  if (decoder == nullptr) return;
  decoder->decoder.Reset();
  decoder->finished_empty = false;
}

hurray_status hurray_decoder_state(const hurray_decoder* decoder) {
  if (decoder == nullptr) return HURRAY_INVALID_ARGUMENT;
  if (decoder->finished_empty) return HURRAY_END;
  return FromDecodeState(decoder->decoder.state());
}

uint64_t hurray_decoder_consumed(const hurray_decoder* decoder) {
  return decoder != nullptr ? decoder->decoder.consumed() : 0;
}

const hurray_descriptor* hurray_decoder_descriptor(
    const hurray_decoder* decoder) {
  if (decoder == nullptr ||
      decoder->decoder.state() != hurray::DecodeState::kDone) {
    return nullptr;
  }
  return Wrap(&decoder->decoder.descriptor());
}

const char* hurray_decoder_rule_id(const hurray_decoder* decoder) {
  if (decoder == nullptr || decoder->decoder.rejection().ok()) return "";
  // Rule ids view the static rule table, NUL-terminated string literals.
  return hurray::RuleId(decoder->decoder.rejection().rule).data();
}

uint64_t hurray_decoder_offset(const hurray_decoder* decoder) {
  if (decoder == nullptr || decoder->decoder.rejection().ok()) return 0;
  return decoder->decoder.rejection().offset;
}

const char* hurray_decoder_message(const hurray_decoder* decoder) {
  if (decoder == nullptr || decoder->decoder.rejection().ok()) return "";
  const char* m = decoder->decoder.rejection().message;
  return m != nullptr ? m : "";
}

hurray_status hurray_decoder_error(const hurray_decoder* decoder,
                                   hurray_error* error) {
  if (decoder == nullptr) {
    return SetError(error, HURRAY_INVALID_ARGUMENT, "null decoder");
  }
  SetRejection(error, decoder->decoder.rejection());
  const hurray_status state = hurray_decoder_state(decoder);
  if (error != nullptr) error->status = state;
  return state;
}

// ---- Files ----------------------------------------------------------------

hurray_status hurray_file_open(const char* path, uint32_t flags,
                               hurray_file** file, hurray_error* error) {
  if (file != nullptr) *file = nullptr;
  if (path == nullptr || file == nullptr) {
    return SetError(error, HURRAY_INVALID_ARGUMENT, "null argument");
  }
  return Guarded(error, [&]() -> hurray_status {
    hurray::stream::container::FileOptions options;
    options.parse = ParseOptionsFor(flags & HURRAY_PERMISSIVE);
    absl::StatusOr<std::unique_ptr<hurray::stream::container::HrryFile>> f =
        hurray::stream::container::HrryFile::Open(path, options);
    if (!f.ok()) return SetStatus(error, f.status());
    auto handle = std::make_unique<hurray_file>();
    handle->file = *std::move(f);
    handle->parse = options.parse;
    *file = handle.release();
    ClearError(error, HURRAY_OK);
    return HURRAY_OK;
  });
}

hurray_status hurray_file_open_memory(const uint8_t* data, size_t size,
                                      uint32_t flags, hurray_file** file,
                                      hurray_error* error) {
  if (file != nullptr) *file = nullptr;
  if ((data == nullptr && size != 0) || file == nullptr) {
    return SetError(error, HURRAY_INVALID_ARGUMENT, "null argument");
  }
  return Guarded(error, [&]() -> hurray_status {
    hurray::stream::container::FileOptions options;
    options.parse = ParseOptionsFor(flags & HURRAY_PERMISSIVE);
    absl::StatusOr<std::unique_ptr<hurray::stream::container::HrryFile>> f =
        hurray::stream::container::HrryFile::FromBytes({data, size}, options);
    if (!f.ok()) return SetStatus(error, f.status());
    auto handle = std::make_unique<hurray_file>();
    handle->file = *std::move(f);
    handle->parse = options.parse;
    *file = handle.release();
    ClearError(error, HURRAY_OK);
    return HURRAY_OK;
  });
}

void hurray_file_close(hurray_file* file) {
  if (file != nullptr) Unref(file);
}

size_t hurray_file_tensor_count(const hurray_file* file) {
  return file != nullptr ? file->file->index().size() : 0;
}

hurray_status hurray_file_tensor_name(const hurray_file* file, size_t index,
                                      const char** name, size_t* name_size) {
  if (file == nullptr || name == nullptr || name_size == nullptr) {
    return HURRAY_INVALID_ARGUMENT;
  }
  const auto entries = file->file->index().entries();
  if (index >= entries.size()) return HURRAY_INVALID_ARGUMENT;
  *name = entries[index].name.data();
  *name_size = entries[index].name.size();
  return HURRAY_OK;
}

hurray_status hurray_file_lookup(const hurray_file* file, const char* name,
                                 size_t name_size, hurray_tensor** tensor,
                                 hurray_error* error) {
  if (tensor != nullptr) *tensor = nullptr;
  if (file == nullptr || tensor == nullptr ||
      (name == nullptr && name_size != 0)) {
    return SetError(error, HURRAY_INVALID_ARGUMENT, "null argument");
  }
  return Guarded(error, [&]() -> hurray_status {
    const hurray::stream::container::IndexEntry* entry =
        file->file->Find(absl::string_view(name, name_size));
    if (entry == nullptr) {
      return SetError(error, HURRAY_NOT_FOUND, "no tensor of that name");
    }
    auto t = std::make_unique<hurray_tensor>();
    const absl::Status s = file->file->ReadDescriptor(*entry, &t->descriptor);
    if (!s.ok()) return SetStatus(error, s);
    t->file = file;
    t->entry = entry;
    file->refs.fetch_add(1, std::memory_order_relaxed);
    *tensor = t.release();
    ClearError(error, HURRAY_OK);
    return HURRAY_OK;
  });
}

void hurray_tensor_free(hurray_tensor* tensor) {
  if (tensor == nullptr) return;
  const hurray_file* file = tensor->file;
  delete tensor;
  Unref(file);
}

const hurray_descriptor* hurray_tensor_descriptor(const hurray_tensor* tensor) {
  return tensor != nullptr ? Wrap(&tensor->descriptor) : nullptr;
}

hurray_status hurray_tensor_buffer(const hurray_tensor* tensor, uint32_t index,
                                   const uint8_t** data, uint64_t* size,
                                   hurray_error* error) {
  if (tensor == nullptr || data == nullptr || size == nullptr) {
    return SetError(error, HURRAY_INVALID_ARGUMENT, "null argument");
  }
  *data = nullptr;
  *size = 0;
  return Guarded(error, [&]() -> hurray_status {
    absl::StatusOr<absl::Span<const uint8_t>> b =
        tensor->file->file->Buffer(*tensor->entry, tensor->descriptor, index);
    if (!b.ok()) return SetStatus(error, b.status());
    *data = b->data();
    *size = b->size();
    ClearError(error, HURRAY_OK);
    return HURRAY_OK;
  });
}

// ---- Dequantization -------------------------------------------------------

hurray_status hurray_dequantized_count(const hurray_descriptor* d,
                                       uint64_t* count) {
  if (d == nullptr || count == nullptr) return HURRAY_INVALID_ARGUMENT;
  const TensorDescriptor& t = *Unwrap(d);
  if (!t.has(hurray::flag::kHasQuantization) ||
      !hurray::layout_tag::IsDense(t.layout_tag)) {
    return HURRAY_UNSUPPORTED;
  }
  return t.ElementCount(count) ? HURRAY_OK : HURRAY_UNSUPPORTED;
}

hurray_status hurray_dequantize(const hurray_descriptor* d,
                                const uint8_t* const* buffers,
                                const uint64_t* sizes, uint32_t buffer_count,
                                float* out, uint64_t out_count, uint32_t flags,
                                hurray_error* error) {
  if (d == nullptr ||
      (buffer_count != 0 && (buffers == nullptr || sizes == nullptr))) {
    return SetError(error, HURRAY_INVALID_ARGUMENT, "null argument");
  }
  const TensorDescriptor& t = *Unwrap(d);
  uint64_t count = 0;
  const hurray_status counted = hurray_dequantized_count(d, &count);
  if (counted != HURRAY_OK) {
    return SetError(error, counted,
                    "only quantized dense tensors of known shape dequantize");
  }
  if (out_count < count) {
    return SetError(error, HURRAY_BUFFER_TOO_SMALL, "output buffer too small");
  }
  if (out == nullptr && count != 0) {
    return SetError(error, HURRAY_INVALID_ARGUMENT, "null output");
  }
  if (buffer_count != t.buffer_count) {
    return SetError(error, HURRAY_INVALID_ARGUMENT,
                    "buffer_count differs from the descriptor's");
  }
  for (uint32_t i = 0; i < buffer_count; ++i) {
    if (buffers[i] == nullptr && sizes[i] != 0) {
      return SetError(error, HURRAY_INVALID_ARGUMENT, "null buffer");
    }
    if (sizes[i] != t.buffers[i].byte_size) {
      return SetError(error, HURRAY_INVALID_ARGUMENT,
                      "a buffer's size differs from its byte_size");
    }
  }
  return Guarded(error, [&]() -> hurray_status {
    // The Dequantizer takes a validated descriptor: one from a decoder
    // without the validator (or in another mode) is checked here.
    const hurray::ParseOptions parse =
        ParseOptionsFor(flags & HURRAY_PERMISSIVE);
    const hurray::Rejection invalid = hurray::ValidateDescriptor(t, parse);
    if (!invalid.ok()) return SetRejection(error, invalid);
    std::vector<absl::Span<const uint8_t>> spans(buffer_count);
    for (uint32_t i = 0; i < buffer_count; ++i) {
      spans[i] = {buffers[i], static_cast<size_t>(sizes[i])};
    }
    absl::StatusOr<hurray::dequant::ParameterBytes> params =
        hurray::dequant::ParametersFromBuffers(t, spans);
    if (!params.ok()) return SetStatus(error, params.status());
    hurray::dequant::DequantOptions options;
    options.mode = parse.mode;
    absl::StatusOr<hurray::dequant::Dequantizer> dq =
        hurray::dequant::Dequantizer::Create(t, *params, options);
    if (!dq.ok()) return SetStatus(error, dq.status());
    if (dq->plan().logical_elements != count) {
      return SetError(error, HURRAY_INTERNAL, "element count mismatch");
    }
    const absl::Span<const uint8_t> data =
        buffer_count > 0 ? spans[0] : absl::Span<const uint8_t>();
    absl::Status s = dq->ConsumeWhole(data, {out, static_cast<size_t>(count)},
                                      /*threads=*/1);
    if (s.ok()) s = dq->Finish();
    if (!s.ok()) return SetStatus(error, s);
    ClearError(error, HURRAY_OK);
    return HURRAY_OK;
  });
}

hurray_status hurray_tensor_dequantize(const hurray_tensor* tensor, float* out,
                                       uint64_t out_count, uint32_t flags,
                                       hurray_error* error) {
  if (tensor == nullptr) {
    return SetError(error, HURRAY_INVALID_ARGUMENT, "null tensor");
  }
  const uint32_t n = tensor->descriptor.buffer_count;
  // Views into the mapped file: no copy of the data.
  const uint8_t* data[hurray::kMaxBuffers];
  uint64_t sizes[hurray::kMaxBuffers];
  for (uint32_t i = 0; i < n && i < hurray::kMaxBuffers; ++i) {
    const hurray_status s =
        hurray_tensor_buffer(tensor, i, &data[i], &sizes[i], error);
    if (s != HURRAY_OK) return s;
  }
  return hurray_dequantize(hurray_tensor_descriptor(tensor), data, sizes, n,
                           out, out_count, flags, error);
}

// ---- Stream reader ---------------------------------------------------------

hurray_stream* hurray_stream_new(const hurray_stream_callbacks* callbacks,
                                 uint32_t flags) {
  try {
    hurray::stream::container::StreamOptions options;
    options.parse = ParseOptionsFor(flags & HURRAY_PERMISSIVE);
    hurray_stream_callbacks cb{};
    if (callbacks != nullptr) cb = *callbacks;
    return new (std::nothrow) hurray_stream(cb, options);
  } catch (...) {
    return nullptr;
  }
}

void hurray_stream_free(hurray_stream* stream) {
  if (stream == nullptr) return;
  if (stream->in_call) {
    // Freed from its own callback: the reader is still on the stack, so it
    // is deleted when the feed or finish returns, and calls nothing more.
    stream->free_pending = true;
    stream->sink.Cancel();
    return;
  }
  delete stream;
}

namespace {

hurray_status StreamResult(const hurray_stream* s,
                           hurray::stream::container::StreamState state) {
  if (s->sink.cancelled()) return HURRAY_CANCELLED;
  switch (state) {
    case hurray::stream::container::StreamState::kNeedMore:
      return HURRAY_NEED_MORE;
    case hurray::stream::container::StreamState::kDone:
      return HURRAY_OK;
    case hurray::stream::container::StreamState::kRejected:
      return HURRAY_REJECTED;
  }
  return HURRAY_INTERNAL;
}

// Completes a hurray_stream_free made by a callback during the call.
hurray_status FreeIfPending(hurray_stream* s, hurray_status result) {
  if (!s->free_pending) return result;
  delete s;
  return HURRAY_CANCELLED;
}

}  // namespace

hurray_status hurray_stream_feed(hurray_stream* stream, const uint8_t* data,
                                 size_t size) {
  if (stream == nullptr || (data == nullptr && size != 0)) {
    return HURRAY_INVALID_ARGUMENT;
  }
  if (stream->in_call) return HURRAY_BAD_STATE;
  if (stream->sink.cancelled()) return HURRAY_CANCELLED;
  // After the end of the input the reader would take nothing and say done:
  // the bytes would be dropped without a word.
  if (stream->finished) return HURRAY_BAD_STATE;
  const hurray_status result = Guarded(nullptr, [&]() -> hurray_status {
    const InCall busy(stream);
    const hurray::stream::container::StreamState s =
        stream->reader.Feed({data, size});
    return StreamResult(stream, s);
  });
  return FreeIfPending(stream, result);
}

hurray_status hurray_stream_finish(hurray_stream* stream) {
  if (stream == nullptr) return HURRAY_INVALID_ARGUMENT;
  if (stream->in_call) return HURRAY_BAD_STATE;
  if (stream->sink.cancelled()) return HURRAY_CANCELLED;
  stream->finished = true;
  const hurray_status result = Guarded(nullptr, [&]() -> hurray_status {
    const InCall busy(stream);
    const hurray::stream::container::StreamState s = stream->reader.Finish();
    return StreamResult(stream, s);
  });
  return FreeIfPending(stream, result);
}

hurray_status hurray_stream_error(const hurray_stream* stream,
                                  hurray_error* error) {
  if (stream == nullptr) {
    return SetError(error, HURRAY_INVALID_ARGUMENT, "null stream");
  }
  SetRejection(error, stream->reader.rejection());
  const hurray_status state = StreamResult(stream, stream->reader.state());
  if (error != nullptr) error->status = state;
  return state;
}

uint64_t hurray_stream_position(const hurray_stream* stream) {
  return stream != nullptr ? stream->reader.position() : 0;
}

uint64_t hurray_stream_tensors_completed(const hurray_stream* stream) {
  return stream != nullptr ? stream->reader.tensors_completed() : 0;
}

}  // extern "C"
