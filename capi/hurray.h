/* hurray.h: the C interface of hurray-cpp (libhurray.so), for C and for
 * any language with a C FFI (Go, Rust, Java, Python ctypes, ...).
 *
 * It wraps the C++ reader (parser/, dequant/, stream/); the format is
 * implemented once, there. Conventions:
 *   - Every symbol starts with hurray_ / HURRAY_; the library exports nothing
 *     else (symbol version HURRAY_1).
 *   - Handles are opaque. Every function accepts NULL for any pointer and
 *     answers HURRAY_INVALID_ARGUMENT, 0, NULL or "" instead of crashing.
 *   - No C++ exception or type crosses the interface. Output goes to buffers
 *     the caller provides; the only allocations are the handles themselves
 *     (and what the C++ reader needs for a .hrry index or a dequantizer's
 *     parameters, bounded by the input's real size, never by declared sizes).
 *   - A rejected input reports the rule it breaks ("QNT-PCA-03") and where:
 *     a byte offset from the descriptor's first byte (decoder), from the
 *     stream's first byte (stream reader) or from the file's (file reader);
 *     data-level rules found while dequantizing count elements, blocks or
 *     parameter entries instead (hurray_error.offset_unit).
 *   - A handle is not thread-safe; distinct handles are independent.
 *   - Call order: a call the handle's state does not allow returns
 *     HURRAY_BAD_STATE and does nothing (never OK with the bytes dropped):
 *     feeding a decoder after its finish returned END (until reset), feeding
 *     a stream after hurray_stream_finish, a callback feeding or finishing
 *     its own stream. Each handle's states are listed with its functions.
 */
#ifndef HURRAY_CAPI_HURRAY_H_
#define HURRAY_CAPI_HURRAY_H_

#include <stddef.h>
#include <stdint.h>

#if defined(HURRAY_BUILDING_LIBRARY)
#define HURRAY_API __attribute__((visibility("default")))
#else
#define HURRAY_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Versions ---------------------------------------------------------- */

/* Version of this interface. Additions raise the minor; the major changes
 * only if an existing function changes meaning (never within HURRAY_1). */
#define HURRAY_API_VERSION_MAJOR 1
#define HURRAY_API_VERSION_MINOR 2
#define HURRAY_API_VERSION_PATCH 0

/* (major << 16) | (minor << 8) | patch of the loaded library, to compare
 * with the header it was compiled against. */
HURRAY_API uint32_t hurray_version(void);
/* The release of the library (version.bzl: "0.9.0"), not the interface
 * version above: hurray --version and Python's hurray.__version__ say the
 * same. */
HURRAY_API const char* hurray_version_string(void);
/* The Hurray format version this reader supports (1.0). */
HURRAY_API void hurray_format_version(uint32_t* major, uint32_t* minor);

/* ---- Status codes ------------------------------------------------------ */

typedef int32_t hurray_status;
enum {
  HURRAY_OK = 0,               /* done: a descriptor decoded, a file opened */
  HURRAY_NEED_MORE = 1,        /* feed more bytes */
  HURRAY_END = 2,              /* input ended cleanly, nothing in progress */
  HURRAY_REJECTED = 3,         /* the input breaks a rule (see the error) */
  HURRAY_INVALID_ARGUMENT = 4, /* NULL handle or pointer, bad index */
  HURRAY_BUFFER_TOO_SMALL = 5, /* the caller's buffer is short */
  HURRAY_NOT_FOUND = 6,        /* no tensor of that name */
  HURRAY_BAD_STATE = 7,        /* a call out of order: feed after finish */
  HURRAY_UNSUPPORTED = 8,      /* e.g. dequantizing a sparse layout */
  HURRAY_IO_ERROR = 9,         /* a file could not be opened or mapped */
  HURRAY_NO_MEMORY = 10,       /* an allocation failed */
  HURRAY_CANCELLED = 11,       /* a stream callback asked to stop */
  HURRAY_INTERNAL = 12         /* a bug: please report it */
};
/* "OK", "NEED_MORE", ...; "UNKNOWN" for other values. */
HURRAY_API const char* hurray_status_name(hurray_status status);

/* Offset units of hurray_error.offset. */
enum {
  HURRAY_OFFSET_BYTE = 0,
  HURRAY_OFFSET_ELEMENT = 1,
  HURRAY_OFFSET_BLOCK = 2,
  HURRAY_OFFSET_ENTRY = 3
};

/* Details of a failure, written into a struct the caller owns. */
#define HURRAY_RULE_ID_SIZE 32
#define HURRAY_MESSAGE_SIZE 256
typedef struct hurray_error {
  hurray_status status;
  char rule_id[HURRAY_RULE_ID_SIZE]; /* "" unless status is REJECTED */
  uint64_t offset;                   /* where the rule broke */
  uint32_t offset_unit;              /* HURRAY_OFFSET_* */
  char message[HURRAY_MESSAGE_SIZE]; /* NUL-terminated, may be truncated */
} hurray_error;

/* ---- Options ------------------------------------------------------------ */

/* Flags of the _new / _open functions. 0: strict mode, validator on, the
 * library's default limits. */
#define HURRAY_PERMISSIVE 0x1u  /* relax the strict-only rules */
#define HURRAY_NO_VALIDATE 0x2u /* decoder: framing rules only */

/* ---- Descriptors -------------------------------------------------------- */

/* A decoded tensor descriptor, owned by the decoder, file tensor or stream
 * callback that hands it out (valid as long as that owner says). */
typedef struct hurray_descriptor hurray_descriptor;

/* Quantization scheme tags (quantization.md). */
enum {
  HURRAY_SCHEME_NONE = 0,
  HURRAY_SCHEME_PER_TENSOR_AFFINE = 1,
  HURRAY_SCHEME_PER_CHANNEL_AFFINE = 2,
  HURRAY_SCHEME_PER_BLOCK_AFFINE = 3,
  HURRAY_SCHEME_NF4 = 4,
  HURRAY_SCHEME_MXFP = 5
};

/* The quantization section of a descriptor, copied out. */
typedef struct hurray_quantization {
  uint8_t scheme;         /* HURRAY_SCHEME_*, or another tag as read */
  uint8_t scheme_version; /* 1 */
  uint8_t symmetric;      /* 1 when the symmetric flag is set */
  uint8_t scale_type_tag; /* per-channel and per-block: the scale type */
  float scale;            /* per-tensor affine */
  int32_t zero_point;     /* per-tensor affine */
  uint32_t axis;
  uint32_t block_size;              /* per-block, NF4, MXFP */
  uint32_t scale_buffer_index;      /* 0xFFFFFFFF when unused */
  uint32_t zero_point_buffer_index; /* 0xFFFFFFFF when symmetric */
} hurray_quantization;

HURRAY_API uint32_t hurray_descriptor_rank(const hurray_descriptor* d);
/* Copies the rank dimensions into shape[0..capacity); *rank (optional)
 * receives the rank. BUFFER_TOO_SMALL when capacity < rank (nothing copied).
 * A dynamic dimension reads 0xFFFFFFFFFFFFFFFF. */
HURRAY_API hurray_status hurray_descriptor_shape(const hurray_descriptor* d,
                                                 uint64_t* shape,
                                                 size_t capacity,
                                                 uint32_t* rank);
/* The element type tag (float32 = 0x03, int8 = 0x10, ...) and its name
 * ("float32"; "" for an unassigned tag). */
HURRAY_API uint8_t hurray_descriptor_type_tag(const hurray_descriptor* d);
HURRAY_API const char* hurray_type_name(uint8_t type_tag);
/* The layout tag (row-major = 0x01, ...) and its name ("row_major"). */
HURRAY_API uint8_t hurray_descriptor_layout_tag(const hurray_descriptor* d);
HURRAY_API const char* hurray_layout_name(uint8_t layout_tag);
HURRAY_API uint32_t hurray_descriptor_flags(const hurray_descriptor* d);
HURRAY_API uint64_t hurray_descriptor_byte_offset(const hurray_descriptor* d);
/* Bytes of the descriptor on the wire (its descriptor_length). */
HURRAY_API uint32_t hurray_descriptor_length(const hurray_descriptor* d);
/* Product of the dimensions; UNSUPPORTED when one is dynamic or it
 * overflows 64 bits. */
HURRAY_API hurray_status
hurray_descriptor_element_count(const hurray_descriptor* d, uint64_t* count);
HURRAY_API uint32_t hurray_descriptor_buffer_count(const hurray_descriptor* d);
/* byte_size of buffer `index`; INVALID_ARGUMENT past buffer_count. */
HURRAY_API hurray_status hurray_descriptor_buffer_size(
    const hurray_descriptor* d, uint32_t index, uint64_t* byte_size);
/* HURRAY_SCHEME_NONE when the tensor is not quantized. */
HURRAY_API uint8_t
hurray_descriptor_quantization_scheme(const hurray_descriptor* d);
/* NOT_FOUND when the tensor is not quantized. */
HURRAY_API hurray_status hurray_descriptor_quantization(
    const hurray_descriptor* d, hurray_quantization* out);

/* ---- Incremental descriptor decoder -------------------------------------- */

/* Decodes one descriptor at a time from chunks of any size. The handle
 * (about 20 KiB) is allocated once by _new; feeding never allocates.
 * States (hurray_decoder_state): NEED_MORE (fresh or part way) -> feed ->
 * OK or REJECTED, final until reset (feed consumes nothing and returns the
 * state again, finish returns it); NEED_MORE -> finish -> END when no byte
 * of a descriptor was fed (then feed returns BAD_STATE, consuming nothing,
 * until reset), REJECTED (DESC-HDR-01) otherwise. reset -> fresh. */
typedef struct hurray_decoder hurray_decoder;

/* NULL when out of memory. flags: HURRAY_PERMISSIVE, HURRAY_NO_VALIDATE. */
HURRAY_API hurray_decoder* hurray_decoder_new(uint32_t flags);
HURRAY_API void hurray_decoder_free(hurray_decoder* decoder);
/* Consumes bytes of the current descriptor, never past its end: after OK
 * the bytes data[*consumed..] (its buffers, the next descriptor) are the
 * caller's. Returns NEED_MORE, OK (done) or REJECTED; after OK or REJECTED
 * it consumes nothing until hurray_decoder_reset. `consumed` is optional;
 * `data` may be NULL when `size` is 0. */
HURRAY_API hurray_status hurray_decoder_feed(hurray_decoder* decoder,
                                             const uint8_t* data, size_t size,
                                             size_t* consumed);
/* End of input: a descriptor in progress is rejected (DESC-HDR-01). Returns
 * OK (one was done), REJECTED, or END when no byte of one was fed; after
 * END the decoder takes no more bytes until hurray_decoder_reset. */
HURRAY_API hurray_status hurray_decoder_finish(hurray_decoder* decoder);
/* Ready for the next descriptor; keeps the flags. */
HURRAY_API void hurray_decoder_reset(hurray_decoder* decoder);
/* NEED_MORE, OK, REJECTED or END, as the last feed or finish returned. */
HURRAY_API hurray_status hurray_decoder_state(const hurray_decoder* decoder);
/* Bytes of the current descriptor consumed so far. */
HURRAY_API uint64_t hurray_decoder_consumed(const hurray_decoder* decoder);
/* The decoded descriptor, valid until the next feed, reset or free; NULL
 * unless the state is OK. */
HURRAY_API const hurray_descriptor* hurray_decoder_descriptor(
    const hurray_decoder* decoder);
/* The rejection: rule id ("" when none), byte offset from the descriptor's
 * first byte, static message. Strings live as long as the library. */
HURRAY_API const char* hurray_decoder_rule_id(const hurray_decoder* decoder);
HURRAY_API uint64_t hurray_decoder_offset(const hurray_decoder* decoder);
HURRAY_API const char* hurray_decoder_message(const hurray_decoder* decoder);
/* All of the above in one struct; returns the state. */
HURRAY_API hurray_status hurray_decoder_error(const hurray_decoder* decoder,
                                              hurray_error* error);

/* ---- .hrry files (random access over mmap) ------------------------------ */

typedef struct hurray_file hurray_file;
/* One tensor of an open file: its descriptor and views of its buffers. A
 * tensor keeps its file's mapping alive: hurray_file_close before
 * hurray_tensor_free is allowed (the file handle is then gone, its
 * tensors still read, and the last hurray_tensor_free releases the file). */
typedef struct hurray_tensor hurray_tensor;

/* Maps and validates the whole file (header, trailer, index, KV, every
 * descriptor, the tensor region). On failure *file is NULL and `error`
 * (optional) says why: REJECTED with the rule and the absolute file offset,
 * IO_ERROR, ... flags: HURRAY_PERMISSIVE (HURRAY_NO_VALIDATE is ignored:
 * a file is always validated). */
HURRAY_API hurray_status hurray_file_open(const char* path, uint32_t flags,
                                          hurray_file** file,
                                          hurray_error* error);
/* The same over a .hrry image in memory (no copy): the caller keeps
 * data[0..size) alive and unchanged until hurray_file_close and the
 * hurray_tensor_free of its last tensor. */
HURRAY_API hurray_status hurray_file_open_memory(const uint8_t* data,
                                                 size_t size, uint32_t flags,
                                                 hurray_file** file,
                                                 hurray_error* error);
HURRAY_API void hurray_file_close(hurray_file* file);
HURRAY_API size_t hurray_file_tensor_count(const hurray_file* file);
/* Name of the index entry `index` (index order), not NUL-terminated: a view
 * into the file, valid until close. */
HURRAY_API hurray_status hurray_file_tensor_name(const hurray_file* file,
                                                 size_t index,
                                                 const char** name,
                                                 size_t* name_size);
/* Finds a tensor by name (name_size bytes, no NUL needed). NOT_FOUND when
 * absent. Free the result with hurray_tensor_free. */
HURRAY_API hurray_status hurray_file_lookup(const hurray_file* file,
                                            const char* name, size_t name_size,
                                            hurray_tensor** tensor,
                                            hurray_error* error);
HURRAY_API void hurray_tensor_free(hurray_tensor* tensor);
/* Valid until hurray_tensor_free. */
HURRAY_API const hurray_descriptor* hurray_tensor_descriptor(
    const hurray_tensor* tensor);
/* Bytes of buffer `index`, a read-only view into the mapped file.
 * REJECTED (BUF-19, with the buffer's file offset) when the view would miss
 * the alignment its handle declares: a permissive open of a misaligned file,
 * or an image in memory not aligned like a mapped file (64 bytes, or the
 * largest alignment the file declares). `error` is optional. */
HURRAY_API hurray_status hurray_tensor_buffer(const hurray_tensor* tensor,
                                              uint32_t index,
                                              const uint8_t** data,
                                              uint64_t* size,
                                              hurray_error* error);

/* ---- Dequantization ------------------------------------------------------ */

/* Floats hurray_dequantize writes: the logical element count of a quantized
 * dense tensor. UNSUPPORTED when it is not quantized or not dense. */
HURRAY_API hurray_status hurray_dequantized_count(const hurray_descriptor* d,
                                                  uint64_t* count);
/* Dequantizes a quantized dense tensor to float32, logical row-major order,
 * into out[0..count). buffers[i] / sizes[i] are the bytes of buffer i of the
 * buffer table (buffer_count entries: the data, then the scales and zero
 * points the quantization section names). The descriptor is validated
 * first. flags: HURRAY_PERMISSIVE. BUFFER_TOO_SMALL when out_count < count;
 * REJECTED for a data-level rule (e.g. a zero scale, QNT-PBA-12). */
HURRAY_API hurray_status hurray_dequantize(const hurray_descriptor* d,
                                           const uint8_t* const* buffers,
                                           const uint64_t* sizes,
                                           uint32_t buffer_count, float* out,
                                           uint64_t out_count, uint32_t flags,
                                           hurray_error* error);
/* The same for a tensor of an open file. */
HURRAY_API hurray_status hurray_tensor_dequantize(const hurray_tensor* tensor,
                                                  float* out,
                                                  uint64_t out_count,
                                                  uint32_t flags,
                                                  hurray_error* error);

/* ---- Stream reader with callbacks ---------------------------------------- */

/* Events of the bare streaming format (descriptor, then its buffers, tensor
 * after tensor). Each callback may be NULL. Views (descriptor, piece) are
 * valid only during the call. Return 0 to go on, non-zero to stop: the
 * reader then reports CANCELLED and calls nothing more. A callback's calls
 * of hurray_stream_feed/finish on its own reader return BAD_STATE; its
 * hurray_stream_free takes effect when the feed or finish returns (which
 * returns CANCELLED; the handle is gone). */
typedef struct hurray_stream_callbacks {
  void* user;
  int (*on_descriptor)(void* user, const hurray_descriptor* descriptor);
  int (*on_buffer_piece)(void* user, uint32_t buffer_index,
                         uint64_t offset_in_buffer, const uint8_t* piece,
                         size_t size);
  int (*on_tensor_end)(void* user);
  void (*on_end_of_stream)(void* user);
} hurray_stream_callbacks;

typedef struct hurray_stream hurray_stream;

/* `callbacks` is copied (NULL: validate only). flags: HURRAY_PERMISSIVE.
 * The library's limits apply (buffer and total sizes are checked against
 * them from the descriptor, before any buffer byte). NULL when out of
 * memory. */
HURRAY_API hurray_stream* hurray_stream_new(
    const hurray_stream_callbacks* callbacks, uint32_t flags);
HURRAY_API void hurray_stream_free(hurray_stream* stream);
/* States: feeding -> (feed) NEED_MORE | REJECTED (final: later feeds
 * consume nothing and return REJECTED) | CANCELLED (final) -> (finish)
 * ended. Consumes all of data[0..size). NEED_MORE (go on), REJECTED,
 * CANCELLED; BAD_STATE (nothing consumed) after hurray_stream_finish or
 * from a callback of this stream. */
HURRAY_API hurray_status hurray_stream_feed(hurray_stream* stream,
                                            const uint8_t* data, size_t size);
/* End of input: OK when the stream ended between tensors, else REJECTED
 * (DESC-HDR-01 inside a descriptor, STREAM-EOF-BUFFER inside a buffer).
 * Called again, returns the same result; the stream then takes no more
 * bytes (hurray_stream_feed returns BAD_STATE). */
HURRAY_API hurray_status hurray_stream_finish(hurray_stream* stream);
/* The rejection (absolute stream offset); returns the state. */
HURRAY_API hurray_status hurray_stream_error(const hurray_stream* stream,
                                             hurray_error* error);
HURRAY_API uint64_t hurray_stream_position(const hurray_stream* stream);
HURRAY_API uint64_t
hurray_stream_tensors_completed(const hurray_stream* stream);

/* ---- Ingest: a whole source, as `hurray ingest` reads it ---------------- */

/* One call reads a source (a path, "-" for standard input,
 * "tcp://HOST:PORT[/name1,name2]" for a `hurray serve` peer, or an
 * "https://" / "http://" URL), validates every tensor as its bytes arrive
 * and hands each one over, dequantized to float32 (or writes a directory of
 * outputs, as `hurray ingest --dequant` does). It runs the C++
 * stream::Ingest() (stream/ingest/ingest.h), which every front end uses.
 *
 * Status: OK (the input is valid), REJECTED (the rule id and the byte offset
 * from the source's first byte in the error), IO_ERROR (the source could not
 * be opened or read, timed out: no verdict on the input), CANCELLED (a
 * callback asked to stop), NOT_FOUND (a selected tensor the index lacks),
 * INVALID_ARGUMENT (a bad source string or option), INTERNAL (the outputs
 * could not be written, ...; the message says). */

/* Options. Call hurray_ingest_options_init first: it sets `size` (so that a
 * later, larger struct can be told apart) and every default. Strings are
 * copied by the call; NULL means "none" or the default. */
typedef struct hurray_ingest_options {
  uint32_t size;  /* sizeof(hurray_ingest_options), set by _init */
  uint32_t flags; /* HURRAY_PERMISSIVE */
  /* Only these tensors (a .hrry file or URL; the keys of a tcp:// peer). */
  const char* const* tensors;
  size_t tensor_count;
  /* A resume state file: rewritten after each completed tensor, removed
   * when the run ends with a verdict; a rerun continues there. */
  const char* resume_file;
  /* Outputs: out_dir/<name>.npy (format "npy"), .f32 ("f32") or
   * model.safetensors ("safetensors"); dtype "auto", "float32", "float16",
   * "bfloat16". NULL out_dir: no files. */
  const char* out_dir;
  const char* format;
  const char* dtype;
  /* 1 (the default): each tensor's dequantized float32 values go to
   * on_tensor / hurray_ingest_next (staged in scratch_dir, or read from
   * out_dir, which then needs format "f32" and dtype "float32"); 0: the
   * tensor's name, shape, type and verdict only. */
  uint32_t want_values;
  const char* scratch_dir; /* NULL: $TMPDIR, else /tmp */
  /* Bytes per read (0: 1 MiB; at most 1 GiB). */
  uint64_t chunk_size;
  /* Seconds. idle: no byte for this long from a source that can stall
   * (< 0, the default: 60 for tcp:// and http(s)://, none for the others;
   * 0: none). connect: resolving and connecting (default 10). total:
   * http(s):// only, 0 (the default) for none. */
  double idle_timeout_seconds;
  double connect_timeout_seconds;
  double total_timeout_seconds;
  /* tcp://: LIMIT-OPEN-STREAMS, LIMIT-SPOOL-BYTES (0: the defaults). */
  uint32_t max_open_streams;
  uint64_t max_spool_bytes;
  /* http(s):// only: a PEM trust anchor, "Name: value" request headers,
   * and 1 to verify nothing (a warning goes to on_notice). */
  const char* ca_file;
  const char* const* headers;
  size_t header_count;
  uint32_t insecure;
  /* http(s):// only: the object over this many range requests at once,
   * 1 to 32, fed in order through a window of at most 2 x N x 1 MiB
   * (`hurray ingest --connections N`); 0 (the default): 1. */
  uint32_t connections;
} hurray_ingest_options;

HURRAY_API void hurray_ingest_options_init(hurray_ingest_options* options);

/* One tensor whose verdict is final, valid only during the callback (or
 * until the next hurray_ingest_next / hurray_ingest_close). */
typedef struct hurray_ingest_tensor {
  uint32_t size;    /* sizeof(hurray_ingest_tensor) of the library */
  uint64_t index;   /* in input order, from 0 */
  const char* name; /* the key or index name, NUL-terminated ("" when the
                       source names none: a bare stream) */
  size_t name_size; /* bytes of name (a name may hold NUL) */
  const uint64_t* shape;
  uint32_t rank;
  uint8_t type_tag;
  const char* verdict; /* "valid", "dequantized", "no output: ...", ... */
  /* want_values: the logical elements as float32, row-major; NULL and 0
   * for a tensor with no output (a composite head, an extension type: the
   * verdict says why) and a sparse tensor kept as its arrays. */
  const float* values;
  uint64_t value_count;
  uint32_t has_values;
} hurray_ingest_tensor;

/* Callbacks of hurray_ingest. Each may be NULL. All run on the thread that
 * called hurray_ingest, one at a time. They may block: the library's reader
 * thread keeps filling its ring of chunks meanwhile (4 chunks for a file;
 * up to 16 MiB for a socket), then waits, and a network peer's sends stall
 * (no data is lost; a server may give up on a slow client). */
typedef struct hurray_ingest_callbacks {
  void* user;
  /* Return 0 to go on, non-zero to stop (the call returns CANCELLED). */
  int (*on_tensor)(void* user, const hurray_ingest_tensor* tensor);
  /* After each chunk: bytes of the input so far, its size when known (an
   * HTTP Content-Length, else 0), tensors completed. */
  void (*on_progress)(void* user, uint64_t bytes, uint64_t total,
                      uint64_t tensors);
  /* Polled after each chunk and each tensor: non-zero stops the run. */
  int (*cancelled)(void* user);
  /* Something to tell the user that is not an error (NUL-terminated; it may
   * quote the source raw: escape it before printing it to a terminal). */
  void (*on_notice)(void* user, const char* text);
} hurray_ingest_callbacks;

/* Reads `source` to its end. options and callbacks may be NULL (defaults,
 * validate and dequantize only). `error` (optional) gets the rule id and
 * offset of a rejection, or the message of another failure. */
HURRAY_API hurray_status hurray_ingest(const char* source,
                                       const hurray_ingest_options* options,
                                       const hurray_ingest_callbacks* callbacks,
                                       hurray_error* error);

/* The pull form: open, then one tensor per hurray_ingest_next. A thread of
 * the library reads the source; it stops at each tensor until the caller
 * asks for the next, so nothing is copied and memory stays bounded. */
typedef struct hurray_ingest_reader hurray_ingest_reader;

/* Starts reading. On failure *ingest is NULL and `error` says why. */
HURRAY_API hurray_status
hurray_ingest_open(const char* source, const hurray_ingest_options* options,
                   hurray_ingest_reader** ingest, hurray_error* error);
/* OK: *tensor is the next tensor, valid until the next call of _next or
 * _close. END: the source ended and is valid. Otherwise the run's status
 * (REJECTED, IO_ERROR, ...), with `error`; every later call returns it
 * again. Not thread-safe: one caller at a time. */
HURRAY_API hurray_status hurray_ingest_next(hurray_ingest_reader* ingest,
                                            const hurray_ingest_tensor** tensor,
                                            hurray_error* error);
/* Bytes of the input read so far. */
HURRAY_API uint64_t hurray_ingest_bytes(const hurray_ingest_reader* ingest);
/* Stops the reader (if it is still running) and frees the handle. A reader
 * waiting for a silent source stops at its next byte or at the idle
 * timeout, whichever comes first. */
HURRAY_API void hurray_ingest_close(hurray_ingest_reader* ingest);

/* ---- Convert: safetensors and GGUF to .hrry ------------------------------ */

/* hurray_convert does what `hurray convert INPUT -o OUTPUT` does, with the
 * same C++ converter (stream/convert/convert_file.h): INPUT is a
 * safetensors or GGUF file (told apart by its first bytes), a sharded
 * model (a `*.index.json`, or a directory holding
 * model.safetensors.index.json) or the first part of a split GGUF
 * (`<prefix>-00001-of-0000N.gguf`, the parts beside it); OUTPUT is written
 * through a temp file of its directory and appears under its name only when
 * the conversion succeeded (replacing a file there; a failed run leaves
 * nothing and what was there stays). Memory is bounded by the chunk size and
 * the inputs' headers, never by tensor sizes (stream/convert/README.md).
 *
 * Returns OK; INVALID_ARGUMENT (a NULL path, a bad option: an unknown
 * scheme name, a data alignment that is not a power of two from 4096 to
 * 2 MiB, an options struct of an unknown size); IO_ERROR (the input or the
 * output could not be opened, read or written: no verdict on the input);
 * REJECTED (the input is refused: the message names the tensor, key or
 * shard; rule_id and offset are set when a Hurray rule is broken, e.g.
 * LIMIT-BUFFER-BYTES, and "" otherwise: the source formats have no rule
 * ids of their own); UNSUPPORTED (a GGUF type with no Hurray form, such as
 * Q4_1 without `requantize`, or IQ*); CANCELLED (a callback asked to stop);
 * NO_MEMORY; INTERNAL. */

/* Options. Call hurray_convert_options_init first: it sets `size` and
 * every default. Strings are copied by the call; NULL means "none". A
 * `size` below this struct's 1.2 size is refused; a larger one (a newer
 * header's struct) is taken when the bytes past this struct are all zero,
 * refused otherwise (an option this library does not know). */
typedef struct hurray_convert_options {
  uint32_t size; /* sizeof(hurray_convert_options), set by _init */
  /* 1: GGUF Q4_K and Q2_K as uint4 / uint2 codes within half of ggml's step
   * (`--compact-kquants`); 0 (the default): uint8 codes within 1/32 and
   * 1/128 of it. */
  uint32_t compact_kquants;
  /* `--quantize SCHEME`: float tensors of rank >= 2 whose name matches no
   * `skip` pattern (fnmatch(3)) quantized with SCHEME ("per_block:int8:32",
   * "nf4", "mxfp:e2m1", ...: stream/convert/quantizer.h). */
  const char* quantize;
  const char* const* skip;
  size_t skip_count;
  /* `--requantize SCHEME`: GGUF Q4_1, Q5_0, Q5_1, Q8_1 (and Q4_K, Q5_K,
   * Q2_K instead of their near-lossless form) re-quantized with SCHEME. */
  const char* requantize;
  /* `--kv KEY=VALUE`: string entries added to the KV section, replacing
   * source keys of the same name; kv_keys[i] / kv_values[i], kv_count of
   * them. */
  const char* const* kv_keys;
  const char* const* kv_values;
  size_t kv_count;
  /* `--data-alignment`: the output's data_buffer_alignment, a power of two
   * from 4096 to 2 MiB (0: 4096). */
  uint32_t data_alignment;
  uint32_t reserved; /* 0 */
  /* Source bytes read at a time (0: 512 KiB; at most 1 GiB). */
  uint64_t chunk_size;
  /* GGUF block tensors' scales kept in memory while their codes are
   * written (0: 32 MiB); a larger tensor is read again instead. */
  uint64_t scale_spool_bytes;
  /* The reader the output is for (0: `hurray ingest`'s defaults): nothing
   * it would refuse is written (LIMIT-BUFFER-BYTES, before a byte is
   * written). max_metadata_bytes bounds the output's KV section, index and
   * trailer (64 MiB), max_buffer_bytes each buffer (4 GiB). */
  uint64_t max_metadata_bytes;
  uint64_t max_buffer_bytes;
  /* The input readers (0: the defaults): a safetensors header (8 MiB), the
   * GGUF metadata read (32 MiB). */
  uint64_t max_safetensors_header_bytes;
  uint64_t max_gguf_metadata_bytes;
} hurray_convert_options;

HURRAY_API void hurray_convert_options_init(hurray_convert_options* options);

/* One converted tensor, valid only during the on_tensor callback. */
typedef struct hurray_convert_tensor {
  uint32_t size;    /* sizeof(hurray_convert_tensor) of the library */
  uint64_t index;   /* in output order, from 0 */
  const char* name; /* NUL-terminated; name_size bytes (it may hold NUL) */
  size_t name_size;
  const uint64_t* shape;
  uint32_t rank;
  const char* source_type; /* "F32", "BF16", "Q8_0", "Q4_K", ... */
  const char* type;        /* the Hurray element type: "float32", "int4" */
  const char* scheme;      /* "" or "per_block_affine", "nf4", "mxfp", ... */
  /* 1: dequantizes to the source's values bit for bit; 0: quantized,
   * re-quantized or a GGUF Q4_K / Q5_K / Q2_K tensor, whose errors against
   * the source's values are max_abs_error and rms_error (0 when exact). */
  uint32_t exact;
  uint32_t quantized; /* 1: by `quantize` / `requantize` */
  double max_abs_error;
  double rms_error;
  const char* note; /* why `quantize` kept it ("1-D", ...), or "" */
} hurray_convert_tensor;

/* Callbacks of hurray_convert. Each may be NULL; all run on the calling
 * thread, one at a time. */
typedef struct hurray_convert_callbacks {
  void* user;
  /* Once per tensor, as it is written. Return 0 to go on, non-zero to stop
   * (the call returns CANCELLED and publishes nothing). */
  int (*on_tensor)(void* user, const hurray_convert_tensor* tensor);
  /* Polled before each write: non-zero stops the run (CANCELLED). */
  int (*cancelled)(void* user);
  /* A warning that is not an error (a shard index whose total_size
   * disagrees), given once the run ends, whatever its status;
   * NUL-terminated, may quote the input: escape it before printing it to a
   * terminal. */
  void (*on_notice)(void* user, const char* text);
} hurray_convert_callbacks;

/* The totals of a conversion. The caller sets `size` to
 * sizeof(hurray_convert_report) (a smaller size is INVALID_ARGUMENT); the
 * library fills the fields it knows, on success only. */
#define HURRAY_CONVERT_FORMAT_SIZE 16
typedef struct hurray_convert_report {
  uint32_t size;
  char format[HURRAY_CONVERT_FORMAT_SIZE]; /* "safetensors" or "gguf" */
  uint64_t tensor_count;
  uint64_t kv_entries;
  uint64_t bytes_written;       /* the output's size */
  uint64_t kernel_copied_bytes; /* of them, copied by copy_file_range */
  uint64_t padding_bytes;       /* of them, data buffer alignment */
} hurray_convert_report;

/* Converts `input` to `output`. options, callbacks, report and error may be
 * NULL (defaults, no callbacks, no totals, no details). */
HURRAY_API hurray_status
hurray_convert(const char* input, const char* output,
               const hurray_convert_options* options,
               const hurray_convert_callbacks* callbacks,
               hurray_convert_report* report, hurray_error* error);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* HURRAY_CAPI_HURRAY_H_ */
