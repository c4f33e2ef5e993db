/* gpushare — base64 decoding (RFC 4648 §4, standard alphabet). libc only.
 *
 * Used for kubeconfig "*-data" fields, which hold the base64 of a PEM file.
 * The decoder follows Go's encoding/base64.StdEncoding as kubectl uses it,
 * with two deliberate leniencies: ASCII whitespace anywhere is skipped (PEM
 * blobs pasted with line breaks), and the final "=" padding may be left out.
 * Everything else is refused: characters outside the alphabet (including
 * the URL-safe '-' and '_'), "=" before the end, a lone trailing character.
 */
#ifndef GPUSHARE_BASE64_H
#define GPUSHARE_BASE64_H

#include <gpushare/err.h>

#include <stddef.h>

/* Bytes that decoding len characters can produce at most. */
size_t gs_base64_decoded_max(size_t len);

/* Decodes in[0..len) into out (room for cap bytes). On success writes the
 * decoded length to *ret_len. GS_EPARSE for malformed input, GS_ETOOBIG if
 * out is too small (cap >= gs_base64_decoded_max(len) always suffices).
 * out may be partly written on error; *ret_len is not. */
enum gs_err gs_base64_decode(const char *in, size_t len, unsigned char *out, size_t cap,
                             size_t *ret_len) GS_WUR;

#endif
