/* gpushare-inspect — the text around the HTTP request: the URL asked for
 * and the message of an error answer. Pure string work, so it is unit
 * tested; main.c does the transfer with libcurl.
 */
#ifndef GPUSHARE_INSPECT_REQUEST_H
#define GPUSHARE_INSPECT_REQUEST_H

#include <gpushare/err.h>

#include <stdbool.h>
#include <stddef.h>

#define GS_INSPECT_DEFAULT_URL "http://127.0.0.1:32766"
#define GS_INSPECT_BODY_MAX ((size_t)256 << 20) /* answer size cap: 256 MiB */
#define GS_INSPECT_URL_MAX 8192                 /* built request URL */
#define GS_INSPECT_ERROR_TEXT_MAX 256           /* error text quoted from a body */

/* True when base starts with "http://" or "https://" (any case) followed by
 * a host; anything else is a usage error. */
bool gs_inspect_url_is_valid(const char *base);

/* Length of base without its trailing slashes ("http://h:1//" → 10). */
size_t gs_inspect_base_len(const char *base);

/* The ledger URL: "<base>/debug/ledger", or with node non-NULL
 * "<base>/debug/ledger?node=<node percent-encoded>" (RFC 3986: only
 * unreserved characters stay as they are). Trailing slashes of base are
 * dropped. *ret_url is malloc'd, owned by the caller. GS_ETOOBIG beyond
 * GS_INSPECT_URL_MAX, GS_ENOMEM. */
enum gs_err gs_inspect_url_new(const char *base, const char *node, char **ret_url) GS_WUR;

/* The human text of an error answer into out (size len > 0): the "error"
 * (or "Error") string when the body is a JSON object carrying one, else the
 * body's first non-empty line with surrounding blanks trimmed. Control
 * characters become '?'; longer text is cut and ends in "...". Empty when
 * the body says nothing. body need not be NUL-terminated. */
void gs_inspect_error_text(const char *body, size_t body_len, char *out, size_t len);

#endif
