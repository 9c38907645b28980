/* The checks and file helpers the C tests of capi/ share: plain C11, one
 * test program per translation unit (each gets its own failure count). */
#ifndef HURRAY_CAPI_TESTING_C_CHECK_H_
#define HURRAY_CAPI_TESTING_C_CHECK_H_

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hurray.h"

static int failures = 0;

#define CHECK(cond)                                                            \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
      ++failures;                                                              \
    }                                                                          \
  } while (0)

#define CHECK_STATUS(expr, want)                                               \
  do {                                                                         \
    hurray_status got_ = (expr);                                               \
    if (got_ != (want)) {                                                      \
      fprintf(stderr, "%s:%d: %s is %s, want %s\n", __FILE__, __LINE__, #expr, \
              hurray_status_name(got_), hurray_status_name(want));             \
      ++failures;                                                              \
    }                                                                          \
  } while (0)

#define CHECK_STR(a, b)                                               \
  do {                                                                \
    const char* a_ = (a);                                             \
    const char* b_ = (b);                                             \
    if (a_ == NULL || strcmp(a_, b_) != 0) {                          \
      fprintf(stderr, "%s:%d: %s is \"%s\", want \"%s\"\n", __FILE__, \
              __LINE__, #a, a_ != NULL ? a_ : "(null)", b_);          \
      ++failures;                                                     \
    }                                                                 \
  } while (0)

/* The exit status of a test program: 0 when every check held. */
static inline int CheckResult(const char* program) {
  if (failures != 0) {
    fprintf(stderr, "%s: %d check(s) failed\n", program, failures);
    return 1;
  }
  printf("%s: all checks passed\n", program);
  return 0;
}

/* The path of a data file of the test (a runfile), by its workspace path. */
static inline void Runfile(const char* rel, char* path, size_t size) {
  const char* root = getenv("TEST_SRCDIR");
  snprintf(path, size, "%s/hurray_cpp/%s", root != NULL ? root : ".", rel);
}

/* The whole runfile, malloc'ed; NULL (and a failure) when it cannot be
 * read. */
static inline uint8_t* ReadFile(const char* rel, size_t* size) {
  char path[1024];
  Runfile(rel, path, sizeof path);
  FILE* f = fopen(path, "rb");
  *size = 0;
  if (f == NULL) {
    fprintf(stderr, "cannot open %s\n", path);
    ++failures;
    return NULL;
  }
  uint8_t* bytes = NULL;
  size_t cap = 0;
  for (;;) {
    if (*size == cap) {
      cap = cap ? 2 * cap : 4096;
      uint8_t* grown = realloc(bytes, cap);
      if (grown == NULL) break;
      bytes = grown;
    }
    size_t n = fread(bytes + *size, 1, cap - *size, f);
    if (n == 0) break;
    *size += n;
  }
  fclose(f);
  return bytes;
}

/* A golden descriptor of corpus/golden/descriptors/, as ReadFile. */
static inline uint8_t* ReadGolden(const char* name, size_t* size) {
  char rel[256];
  snprintf(rel, sizeof rel, "corpus/golden/descriptors/%s", name);
  return ReadFile(rel, size);
}

#endif /* HURRAY_CAPI_TESTING_C_CHECK_H_ */
