#include <stdio.h>
#include "hurray.h"
int main(void) {  /* Decodes the tensor descriptor on stdin (strict mode, validated), 4 KiB at a time. */
  hurray_decoder* dec = hurray_decoder_new(0); uint8_t buf[4096]; size_t n; hurray_status s = HURRAY_NEED_MORE;
  while (s == HURRAY_NEED_MORE && (n = fread(buf, 1, sizeof buf, stdin)) > 0) s = hurray_decoder_feed(dec, buf, n, NULL);
  if (s == HURRAY_NEED_MORE) hurray_decoder_finish(dec);  /* input ended inside the descriptor: DESC-HDR-01 */
  const hurray_descriptor* d = hurray_decoder_descriptor(dec);  /* NULL unless decoded and valid */
  if (d) printf("%s, rank %u, %u buffer(s)\n", hurray_type_name(hurray_descriptor_type_tag(d)), hurray_descriptor_rank(d), hurray_descriptor_buffer_count(d));
  else printf("rejected: %s at byte %llu\n", hurray_decoder_rule_id(dec), (unsigned long long)hurray_decoder_offset(dec));
  hurray_decoder_free(dec); return d ? 0 : 1; }
