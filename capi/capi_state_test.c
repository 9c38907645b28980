/* Call order of every handle (issue 46 item 11), from plain C11 against
 * libhurray.so: each handle's state machine walked through every transition
 * hurray.h lists, the calls its state does not allow answered BAD_STATE
 * (never OK with the bytes dropped), on corpus/golden/. */
#include "capi/testing/c_check.h"
#include "hurray.h"

/* Decoder: NEED_MORE -> OK / REJECTED (final until reset); a fresh finish
 * -> END, after which feeding is out of order until reset. */
static void TestDecoderStates(void) {
  size_t size;
  uint8_t* d = ReadGolden("row_major_f32_3x4.bin", &size);
  if (d == NULL) return;
  hurray_decoder* dec = hurray_decoder_new(0);
  size_t consumed = 99;

  /* Fresh -> finish -> END: the input has ended. */
  CHECK_STATUS(hurray_decoder_state(dec), HURRAY_NEED_MORE);
  CHECK_STATUS(hurray_decoder_finish(dec), HURRAY_END);
  CHECK_STATUS(hurray_decoder_feed(dec, d, size, &consumed), HURRAY_BAD_STATE);
  CHECK(consumed == 0);
  CHECK(hurray_decoder_consumed(dec) == 0);
  CHECK(hurray_decoder_descriptor(dec) == NULL);
  CHECK_STATUS(hurray_decoder_state(dec), HURRAY_END);
  CHECK_STATUS(hurray_decoder_finish(dec), HURRAY_END);

  /* reset -> fresh -> feed -> OK, final: nothing more consumed. */
  hurray_decoder_reset(dec);
  CHECK_STATUS(hurray_decoder_state(dec), HURRAY_NEED_MORE);
  CHECK_STATUS(hurray_decoder_feed(dec, d, size, &consumed), HURRAY_OK);
  CHECK(consumed == size);
  CHECK_STATUS(hurray_decoder_feed(dec, d, size, &consumed), HURRAY_OK);
  CHECK(consumed == 0);
  CHECK_STATUS(hurray_decoder_finish(dec), HURRAY_OK);
  CHECK(hurray_decoder_descriptor(dec) != NULL);

  /* Part of one -> finish -> REJECTED (DESC-HDR-01), final until reset. */
  hurray_decoder_reset(dec);
  CHECK_STATUS(hurray_decoder_feed(dec, d, 5, &consumed), HURRAY_NEED_MORE);
  CHECK_STATUS(hurray_decoder_finish(dec), HURRAY_REJECTED);
  CHECK(strcmp(hurray_decoder_rule_id(dec), "DESC-HDR-01") == 0);
  CHECK_STATUS(hurray_decoder_feed(dec, d + 5, size - 5, &consumed),
               HURRAY_REJECTED);
  CHECK(consumed == 0);
  CHECK_STATUS(hurray_decoder_finish(dec), HURRAY_REJECTED);

  /* reset after each final state gives a working decoder. */
  hurray_decoder_reset(dec);
  CHECK_STATUS(hurray_decoder_feed(dec, d, size, &consumed), HURRAY_OK);
  CHECK(consumed == size);
  hurray_decoder_free(dec);
  free(d);
}

/* The golden f32 descriptor and its 48 data bytes: one whole tensor. */
static uint8_t* OneTensorStream(size_t* total) {
  size_t size;
  uint8_t* d = ReadGolden("row_major_f32_3x4.bin", &size);
  if (d == NULL) return NULL;
  uint8_t* s = calloc(size + 48, 1);
  if (s != NULL) memcpy(s, d, size);
  free(d);
  *total = size + 48;
  return s;
}

static int CountTensor(void* user) {
  ++*(int*)user;
  return 0;
}

/* Stream: feeding -> finish -> ended; feed after finish is BAD_STATE, with
 * nothing consumed, whatever finish returned; a second finish repeats the
 * result. */
static void TestStreamStates(void) {
  size_t total;
  uint8_t* bytes = OneTensorStream(&total);
  if (bytes == NULL) return;
  int tensors = 0;
  hurray_stream_callbacks cb = {&tensors, NULL, NULL, CountTensor, NULL};
  hurray_error e;

  /* Ended cleanly (OK). */
  hurray_stream* s = hurray_stream_new(&cb, 0);
  CHECK_STATUS(hurray_stream_feed(s, bytes, total), HURRAY_NEED_MORE);
  CHECK_STATUS(hurray_stream_finish(s), HURRAY_OK);
  CHECK(tensors == 1);
  CHECK_STATUS(hurray_stream_feed(s, bytes, total), HURRAY_BAD_STATE);
  CHECK_STATUS(hurray_stream_feed(s, NULL, 0), HURRAY_BAD_STATE);
  CHECK(tensors == 1);
  CHECK(hurray_stream_position(s) == total);
  CHECK(hurray_stream_tensors_completed(s) == 1);
  CHECK_STATUS(hurray_stream_finish(s), HURRAY_OK);
  CHECK_STATUS(hurray_stream_error(s, &e), HURRAY_OK);
  hurray_stream_free(s);

  /* An empty stream: finish first, then a feed is out of order. */
  s = hurray_stream_new(NULL, 0);
  CHECK_STATUS(hurray_stream_finish(s), HURRAY_OK);
  CHECK_STATUS(hurray_stream_feed(s, bytes, total), HURRAY_BAD_STATE);
  CHECK(hurray_stream_position(s) == 0);
  hurray_stream_free(s);

  /* Ended inside a buffer (REJECTED at finish), then fed. */
  s = hurray_stream_new(NULL, 0);
  CHECK_STATUS(hurray_stream_feed(s, bytes, total - 1), HURRAY_NEED_MORE);
  CHECK_STATUS(hurray_stream_finish(s), HURRAY_REJECTED);
  CHECK_STATUS(hurray_stream_feed(s, bytes + total - 1, 1), HURRAY_BAD_STATE);
  CHECK_STATUS(hurray_stream_finish(s), HURRAY_REJECTED);
  CHECK_STATUS(hurray_stream_error(s, &e), HURRAY_REJECTED);
  CHECK(strcmp(e.rule_id, "STREAM-EOF-BUFFER") == 0);
  hurray_stream_free(s);

  /* Rejected by a feed: final; later feeds consume nothing and say so;
   * after finish they are out of order. */
  bytes[4] = 2; /* version_major: DESC-HDR-03 */
  s = hurray_stream_new(NULL, 0);
  CHECK_STATUS(hurray_stream_feed(s, bytes, total), HURRAY_REJECTED);
  const uint64_t at = hurray_stream_position(s);
  CHECK_STATUS(hurray_stream_feed(s, bytes, total), HURRAY_REJECTED);
  CHECK(hurray_stream_position(s) == at);
  CHECK_STATUS(hurray_stream_finish(s), HURRAY_REJECTED);
  CHECK_STATUS(hurray_stream_feed(s, bytes, total), HURRAY_BAD_STATE);
  CHECK_STATUS(hurray_stream_error(s, &e), HURRAY_REJECTED);
  CHECK(strcmp(e.rule_id, "DESC-HDR-03") == 0);
  hurray_stream_free(s);
  free(bytes);
}

/* File and tensors: open -> lookup -> (free, close) in either order; a
 * tensor outlives its file's close and still reads the mapped bytes. */
static void TestFileStates(void) {
  char path[1024];
  Runfile("corpus/golden/files/basic.hrry", path, sizeof path);
  hurray_error e;
  for (int memory = 0; memory < 2; ++memory) {
    hurray_file* f = NULL;
    uint8_t* image = NULL;
    if (memory) {
      FILE* in = fopen(path, "rb");
      image = aligned_alloc(4096, 1 << 20);
      size_t n = in != NULL && image != NULL ? fread(image, 1, 1 << 20, in) : 0;
      if (in != NULL) fclose(in);
      CHECK_STATUS(hurray_file_open_memory(image, n, 0, &f, &e), HURRAY_OK);
    } else {
      CHECK_STATUS(hurray_file_open(path, 0, &f, &e), HURRAY_OK);
    }
    if (f == NULL) {
      free(image);
      continue;
    }
    hurray_tensor* w = NULL;
    hurray_tensor* b = NULL;
    CHECK_STATUS(hurray_file_lookup(f, "weights", 7, &w, &e), HURRAY_OK);
    CHECK_STATUS(hurray_file_lookup(f, "bias", 4, &b, &e), HURRAY_OK);
    const uint8_t* data = NULL;
    uint64_t size = 0;
    uint8_t bias[3] = {0};
    CHECK_STATUS(hurray_tensor_buffer(b, 0, &data, &size, &e), HURRAY_OK);
    if (data != NULL && size == 3) memcpy(bias, data, 3);

    /* The file closed first: its tensors go on reading. */
    hurray_file_close(f);
    CHECK(hurray_descriptor_rank(hurray_tensor_descriptor(w)) == 2);
    CHECK_STATUS(hurray_tensor_buffer(w, 0, &data, &size, &e), HURRAY_OK);
    CHECK(size == 16);
    if (data != NULL && size == 16) {
      float v[4];
      memcpy(v, data, sizeof v);
      for (int i = 0; i < 4; ++i) CHECK(v[i] == 0.0f);
    }
    hurray_tensor_free(w);
    CHECK_STATUS(hurray_tensor_buffer(b, 0, &data, &size, &e), HURRAY_OK);
    CHECK(size == 3 && data != NULL && memcmp(data, bias, 3) == 0);
    float out[3];
    CHECK_STATUS(hurray_tensor_dequantize(b, out, 3, 0, &e),
                 HURRAY_UNSUPPORTED);
    hurray_tensor_free(b); /* the last one: the file is released */
    free(image);
  }
}

int main(void) {
  TestDecoderStates();
  TestStreamStates();
  TestFileStates();
  return CheckResult("capi_state_test");
}
