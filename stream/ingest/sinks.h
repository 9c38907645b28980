// Sinks for `hurray ingest` and the loader (stream/ingest/loader.h).
//
// IngestSink is the C++ callback interface: a TensorSink plus the names a
// .hrry file gives its tensors in the index at its end, and a status that
// stops the input when the sink fails. Every sink here keeps one
// TensorRecord per tensor (the summary table of `hurray ingest`, and what a
// resume state keeps: stream/resume/tensor_record.h).
//
//   ValidateSink  records each tensor (the readers validate); nothing else.
//   DequantSink   writes each tensor in logical row-major order, whatever
//                 its dense layout, dequantized (dequant::Dequantizer) or
//                 converted: OUT_DIR/<name>.npy, OUT_DIR/<name>.f32 (raw
//                 float32) or every tensor in OUT_DIR/model.safetensors
//                 (DequantSinkOptions::format; types and --dtype:
//                 stream/ingest/output/element_convert.h).
//
// DequantSink, file names. Bare streams: tensor_<i>.f32 (i from 0, in
// stream order), or the sanitized key when the container names the tensor
// first (a network TENSOR_REQUEST key). .hrry read forward: the index at the
// end names the tensors, so their outputs wait under temporary names until
// the file passed, then get <sanitized name>.f32 (OnTensorNames); a file
// rejected before that publishes nothing. Sanitizing (SafeFileName,
// stream/container/safe_file_name.h): valid UTF-8 is kept as it is ("层.0",
// "stats+shard"); control characters (C0, DEL, C1), bytes that are not UTF-8,
// '/', '%', '~' and a leading '.' become %XX (upper-case hex), so a name never
// holds '/' or NUL, is never '.', '..' or hidden, and distinct names give
// distinct files; names whose file name would pass 200 bytes are cut to at most
// 180 bytes (at a character boundary) plus "~<tensor index>".
//
// DequantSink, files (issue 13). Every file goes through SafeOutputDir
// (stream/container/safe_output_dir.h): outputs and spools are hidden temps
// created with O_EXCL | O_NOFOLLOW relative to OUT_DIR opened once, published
// by renameat when the tensor passed (and, for .hrry, the index named it), so
// no symlink planted in OUT_DIR is followed and no file the run did not
// publish is replaced. On a rejection (IngestSink::OnInputRejected, or a
// data-level rule of the sink) every temp of the run is removed and the
// records of the tensors that were complete and valid before it say
// "not written". With keep_unnamed_outputs (a resumable run), finished
// outputs waiting for their .hrry names survive an interruption, named in
// TensorRecord::pending_output, for Preload to take over.
//
// DequantSink, memory. The data buffer comes before the parameter buffers
// on the wire (interchange.md § Scope, dequant/params.h), so a tensor with
// parameter buffers spools its data buffer — in memory up to
// spool_memory_bytes, else in a temp of OUT_DIR — keeps the
// parameter buffers in memory (at most max_parameter_bytes, else the sink
// fails with ResourceExhausted) and dequantizes the spool in chunks at the
// tensor's end. Per-tensor affine tensors (no parameter buffers) and plain
// float tensors are converted as their bytes arrive. Whatever the tensor or
// file size, the sink holds at most spool_memory_bytes (24 MiB) + the
// parameters (4 MiB, and the dequantizer's float copy of them, at most
// 16 MiB) + 3 MiB of output buffers (the one being filled and at most 3
// queued for the write-behind thread, each at most 512 KiB plus 256 KiB:
// stream/ingest/write_behind.h): 47 MiB, and with the loader's ring
// (4 MiB; a stream's grows up to 16 MiB while this sink dequantizes a
// spool, loader.h max_ring_bytes) 51 or 63 MiB, under the 64 MiB of peak
// RSS that bench/ingest_bench.cc measures. The in-memory spool's buffer is kept
// for the next tensor while tensors keep spooling in memory (it is freed before
// any other kind of tensor, at the end of the stream and on a failure).
//
// Other dense layouts than row-major (column-major, strided, tiled, Morton,
// Hilbert) spool their data buffer like the parameter case above (in memory
// up to spool_memory_bytes, else a temp of OUT_DIR, read at the tensor's end
// through a block cache of gather_cache_bytes, never mapped) and read it back
// in logical row-major order (stream/ingest/output/row_major_gather.h): a
// quantized tensor's stored grid then goes through a Dequantizer for the same
// tensor stored row-major. Memory stays bounded whatever the tensor's size.
//
// safetensors: the tensors' bytes go to one temp as they are converted and
// model.safetensors is written at OnEndOfStream (header first, the data
// copied after it, stream/ingest/output/safetensors.h), with the .hrry KV
// section as __metadata__ and the index names (raw, not sanitized); every
// record with data names it as its output.
//
// Sparse tensors (COO, CSR, CSC, CSF; stream/ingest/output/sparse_walk.h) are
// written dense, zeros where nothing is stored, up to max_dense_bytes of
// output: every buffer is spooled (memory within spool_memory_bytes, else
// temps of OUT), the values converted to the output type, and each stored
// element copied to its row-major place in the zero-filled output, mapped
// shared with its pages dropped as it goes. Quantized sparse tensors are
// densified too, each stored value dequantized with the parameters of its
// logical position (stream/ingest/output/sparse_dequant.h). Above
// max_dense_bytes, or with sparse = kKeep, a sparse tensor is kept as its
// arrays instead: the values, converted (dequantized) in stored order, as
// OUT/<name>.values.npy, and each index buffer as it is stored (uint64) as
// <name>.indices / .indptr / .pos_L / .crd_L (.u64 raw for f32; tensors of
// those names in model.safetensors). Each array is complete in its temp
// before any is published (TensorRecord::more), and each has its CRC-32C,
// so a resumable run keeps them like any output (keep_unnamed_outputs).
//
// Block-paged tensors (layouts/block-paged.md) are written as their logical
// dense tensor [tokens, num_heads, head_dim], the sequences one after the
// other (stream/ingest/output/block_paged.h: when the file does not
// determine each sequence's token count, every slot of every logical page,
// and the verdict says so). Every buffer is spooled (memory within
// spool_memory_bytes, else temps of OUT); at the tensor's end the page pool
// is converted — dequantized, per-page-slot scales included — into a spool
// of output elements, and its pages copied out in block-table order.
//
// A tensor that failed leaves no file. A composite head has no output (its
// members have theirs); extension element types, quantization schemes this
// reader does not interpret and compositions the spec leaves undefined
// (block-paged with NF4/MXFP, permissive input only) get none, with a verdict
// "no output: ..." saying why (the tensor itself stays valid).
// Data-level rejections (TYPE-PACK-0x, QNT-PCA-10, ...: dequantizer.h) fail
// the sink with the rule id.
//
// Who does what: DequantSink keeps the records, publishes the outputs and
// resumes them; each tensor's bytes go to one TensorWriter
// (stream/ingest/tensor_writer.h: dense, spooled, sparse or paged), its
// output through an OutputFile (stream/ingest/output_file.h), its names
// from stream/ingest/output_naming.h.
#ifndef HURRAY_STREAM_INGEST_SINKS_H_
#define HURRAY_STREAM_INGEST_SINKS_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "dequant/large_buffer.h"
#include "parser/data_checks.h"
#include "parser/descriptor.h"
#include "parser/element_checks.h"
#include "parser/options.h"
#include "stream/container/safe_output_dir.h"
#include "stream/container/tensor_sink.h"
#include "stream/ingest/dequant_sink_options.h"
#include "stream/ingest/output/element_convert.h"
#include "stream/ingest/output/safetensors.h"
#include "stream/ingest/output_naming.h"
#include "stream/ingest/tensor_writer.h"
#include "stream/resume/tensor_record.h"

namespace hurray::stream::ingest {

class IngestSink : public container::TensorSink {
 public:
  // .hrry: names[i] is the index name of tensor i (file order, from 0);
  // empty when no entry names it. Called once the file passed, before
  // OnEndOfStream.
  [[nodiscard]] virtual absl::Status OnTensorNames(
      absl::Span<const std::string> /*names*/) {
    return absl::OkStatus();
  }
  // The container names its tensors at its end (.hrry: the index): nothing
  // may be published under a name before OnTensorNames. Called by the
  // consumer before any tensor.
  virtual void ExpectTensorNames() {}
  // .hrry: the KV section as (key, text) pairs (strings as they are,
  // numbers in decimal, bools true/false, bytes in hex, arrays as JSON),
  // once the file passed, before OnTensorNames.
  virtual void OnMetadata(
      absl::Span<const std::pair<std::string, std::string>> /*kv*/) {}
  // The input was rejected (not merely interrupted: the source failing is
  // no verdict on it): nothing it names may be published.
  virtual void OnInputRejected() {}
  // No status() to poll: a callback that fails returns its status, which
  // stops the reader at once; the walker (stream/container/tensor_walker.h)
  // is the one that remembers it, and the consumer reports it.
};

// Keeps one TensorRecord per tensor; the base of the sinks below.
class RecordingIngestSink : public IngestSink {
 public:
  [[nodiscard]] absl::Status OnTensorKey(absl::string_view key) override;
  [[nodiscard]] absl::Status OnDescriptor(const TensorDescriptor& d) override;
  [[nodiscard]] absl::Status OnBufferPiece(
      uint32_t buffer_index, uint64_t offset_in_buffer,
      absl::Span<const uint8_t> piece) override;
  [[nodiscard]] absl::Status OnTensorEnd() override;
  [[nodiscard]] absl::Status OnTensorNames(
      absl::Span<const std::string> names) override;
  // The first failure this sink answered a callback with (the records say
  // "rejected: ..."), for tests and the fuzzer to compare with the
  // consumer's verdict; nothing in the library polls it.
  const absl::Status& status() const { return status_; }

  const std::vector<resume::TensorRecord>& records() const { return records_; }
  // Moves the records out (at the end of a run; the sink keeps none).
  std::vector<resume::TensorRecord> TakeRecords() {
    return std::move(records_);
  }
  // Compute TensorRecord::data_crc32c (off by default: it costs a pass
  // over every data byte).
  void set_record_data_crc(bool on) { record_data_crc_ = on; }
  // Resume: the records of the tensors an earlier run completed. An error
  // (an output of the earlier run missing or changed) means the run must not
  // go on.
  [[nodiscard]] virtual absl::Status Preload(
      std::vector<resume::TensorRecord> done);
  // `hurray ingest --tensors` over a forward pass (the names come only at
  // the end): before OnTensorNames, forgets tensor i unless keep[i] (its
  // record and its finished output, never published); the records left are
  // numbered again from 0 and OnTensorNames then takes their names.
  [[nodiscard]] virtual absl::Status DropTensors(const std::vector<bool>& keep);

 protected:
  resume::TensorRecord* current() {
    return in_tensor_ ? &records_.back() : nullptr;
  }
  // Marks the record of the tensor being read rejected (the first failure
  // only) and returns `s`, for the callback to return.
  [[nodiscard]] absl::Status Fail(absl::Status s);
  // Every override of OnBufferPiece calls it: the data-level element rules
  // (TYPE-PACK-01…05, parser/element_checks.h) over the bytes as they pass,
  // and the index data rules of the sparse and block-paged layouts
  // (LAY-COO/CSR/CSC/CSF/BPG, parser/data_checks.h), and
  // TensorRecord::data_crc32c. A violation is returned (Fail).
  [[nodiscard]] absl::Status NoteData(uint32_t buffer_index,
                                      uint64_t offset_in_buffer,
                                      absl::Span<const uint8_t> piece);
  // Ends the data checks of the tensor being read (once; OnTensorEnd calls
  // it, an override that publishes outputs calls it first): a violation
  // is returned (Fail); an order rule the bounded window could not check
  // (parser/data_checks.h) is named in the verdict.
  [[nodiscard]] absl::Status FinishDataChecks();
  // The mode of the element rules (strict-only ones are off in permissive).
  void set_element_mode(Mode mode) { element_mode_ = mode; }

  std::vector<resume::TensorRecord> records_;
  bool in_tensor_ = false;
  std::string pending_key_;
  absl::Status status_;
  bool record_data_crc_ = false;
  Mode element_mode_ = Mode::kStrict;
  std::optional<ElementDataChecker> elements_;  // the tensor being read
  std::unique_ptr<IndexDataChecker> index_;     // its index buffers, if any
  std::string unchecked_;  // order rules the window could not check
};

// Validate only: the verdict of a complete tensor is "valid" (its data
// passed the element rules).
class ValidateSink : public RecordingIngestSink {
 public:
  explicit ValidateSink(Mode mode = Mode::kStrict) { set_element_mode(mode); }
};

class DequantSink : public RecordingIngestSink {
 public:
  explicit DequantSink(const DequantSinkOptions& options);
  ~DequantSink() override;

  [[nodiscard]] absl::Status OnDescriptor(const TensorDescriptor& d) override;
  [[nodiscard]] absl::Status OnBufferPiece(
      uint32_t buffer_index, uint64_t offset_in_buffer,
      absl::Span<const uint8_t> piece) override;
  [[nodiscard]] absl::Status OnTensorEnd() override;
  [[nodiscard]] absl::Status OnTensorNames(
      absl::Span<const std::string> names) override;
  void ExpectTensorNames() override { names_at_end_ = true; }
  void OnInputRejected() override;
  void OnMetadata(
      absl::Span<const std::pair<std::string, std::string>> kv) override;
  [[nodiscard]] absl::Status OnEndOfStream() override;
  // Checks each output of `done` against its CRC-32C (read, never through a
  // symlink) and takes over the pending ones; changes nothing in OUT_DIR.
  [[nodiscard]] absl::Status Preload(
      std::vector<resume::TensorRecord> done) override;
  // Not with --format safetensors (its data is already in one file).
  [[nodiscard]] absl::Status DropTensors(
      const std::vector<bool>& keep) override;

 private:
  // Ends the tensor being written and frees the spool block kept for the
  // next one.
  void Discard();
  [[nodiscard]] absl::Status FailTensor(absl::Status s);
  absl::Status CheckEarlierOutput(const std::string& output,
                                  const std::string& pending, uint32_t crc32c);
  void DropPending(absl::string_view why);
  // Renames a finished output that waits for its name so that it survives
  // for --resume (SafeOutputDir::Keep); *temp becomes its new name.
  [[nodiscard]] absl::Status KeepForResume(std::string* temp);

  DequantSinkOptions options_;
  absl::Status dir_status_;
  std::unique_ptr<container::SafeOutputDir>
      dir_;  // null when it cannot be opened
  // --format safetensors: the one file of every tensor; the entry of each
  // record in it (-1: none).
  std::unique_ptr<SafetensorsWriter> safetensors_;
  // (entry, name suffix) pairs: a kept sparse tensor has several.
  std::vector<std::vector<std::pair<size_t, std::string>>> safetensors_entries_;
  std::vector<std::pair<std::string, std::string>> metadata_;
  dequant::LargeByteBuffer spool_memory_;
  std::vector<float> float_window_;
  // Writes the temps when files are written, not in safetensors (its
  // Append stays on this thread); outlives writer_.
  std::unique_ptr<WriteBehind> write_behind_;
  WriterContext ctx_;
  std::unique_ptr<TensorWriter> writer_;  // destroyed before dir_
  bool names_at_end_ = false;
};

}  // namespace hurray::stream::ingest

#endif  // HURRAY_STREAM_INGEST_SINKS_H_
