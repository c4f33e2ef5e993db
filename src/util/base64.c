/* Base64 decoding: see base64.h for the accepted dialect. */
#include "base64.h"

#include <stdbool.h>
#include <stdint.h>

size_t gs_base64_decoded_max(size_t len) {
  return len / 4 * 3 + 3;
}

/* 0..63 for alphabet characters, -1 otherwise. */
static int sextet(unsigned char c) {
  if (c >= 'A' && c <= 'Z')
    return c - 'A';
  if (c >= 'a' && c <= 'z')
    return c - 'a' + 26;
  if (c >= '0' && c <= '9')
    return c - '0' + 52;
  if (c == '+')
    return 62;
  if (c == '/')
    return 63;
  return -1;
}

static bool is_space(unsigned char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == '\v';
}

enum gs_err gs_base64_decode(const char *in, size_t len, unsigned char *out, size_t cap,
                             size_t *ret_len) {
  uint32_t acc = 0;   /* sextets of the current quantum */
  unsigned nq = 0;    /* characters in the current quantum (0..3) */
  unsigned npad = 0;  /* '=' seen */
  size_t n = 0;

  for (size_t i = 0; i < len; i++) {
    unsigned char c = (unsigned char)in[i];
    if (is_space(c))
      continue;
    if (c == '=') {
      /* Padding completes a quantum of 2 or 3 characters, at the end. */
      if (nq < 2 || nq + npad >= 4)
        return GS_EPARSE;
      npad++;
      continue;
    }
    int v = sextet(c);
    if (v < 0 || npad > 0)
      return GS_EPARSE;
    acc = acc << 6 | (uint32_t)v;
    if (++nq == 4) {
      if (cap - n < 3)
        return GS_ETOOBIG;
      out[n++] = (unsigned char)(acc >> 16);
      out[n++] = (unsigned char)(acc >> 8);
      out[n++] = (unsigned char)acc;
      acc = 0;
      nq = 0;
    }
  }
  /* A final quantum of 2 or 3 characters: padded fully or not at all. */
  if (nq == 1 || (npad > 0 && nq + npad != 4))
    return GS_EPARSE;
  if (nq >= 2) {
    unsigned extra = nq - 1; /* 2 chars → 1 byte, 3 chars → 2 bytes */
    if (cap - n < extra)
      return GS_ETOOBIG;
    acc <<= 6 * (4 - nq);
    out[n++] = (unsigned char)(acc >> 16);
    if (extra == 2)
      out[n++] = (unsigned char)(acc >> 8);
  }
  *ret_len = n;
  return GS_EOK;
}
