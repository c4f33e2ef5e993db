/* gpushare — the one JSON text writer: values appended to a struct gs_buf
 * (buf.h) as compact JSON, byte for byte what jansson's json_dumps with
 * JSON_COMPACT writes for the same values (test/unit/api/test_jw.c holds
 * them equal). Every JSON gpushare writes goes through it: the extender's
 * answers, the Binding's annotations (core/annot.c), the apiserver bodies;
 * documents built as jansson values are dumped through it too
 * (gs_api_dump). A failed append sticks in the buffer. libc only. */
#ifndef GPUSHARE_UTIL_JW_H
#define GPUSHARE_UTIL_JW_H

#include "buf.h"

#include <stdint.h>

/* n raw bytes (JSON punctuation, or text already written as JSON). */
void gs_jw_raw(struct gs_buf *w, const char *s, size_t n);
/* A C string of punctuation or digits. */
static inline void gs_jw_lit(struct gs_buf *w, const char *s) { gs_jw_raw(w, s, strlen(s)); }
/* s as a JSON string with its quotes, escaped as jansson escapes, invalid
 * UTF-8 bytes replaced by '?' (NULL: ""). */
void gs_jw_str(struct gs_buf *w, const char *s);
void gs_jw_int(struct gs_buf *w, int64_t v);
void gs_jw_uint(struct gs_buf *w, uint64_t v);
/* An object key that is a decimal number: "v": */
void gs_jw_key_uint(struct gs_buf *w, uint64_t v);

/* Bytes of the valid UTF-8 sequence at s (1 for ASCII), 0 when invalid
 * (overlong, surrogate, beyond U+10FFFF, cut short). */
size_t gs_utf8_len(const unsigned char *s);

#endif
