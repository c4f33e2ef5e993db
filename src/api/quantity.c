/* Kubernetes resource quantities that must be whole numbers (docs/kube-protocol.md
 * §C.12): extended resources, node capacity; and CPU and memory requests
 * scaled and rounded up (milli-CPU, MiB).
 *
 * Grammar (apimachinery resource.Quantity):
 *   quantity ::= [+-] number suffix
 *   number   ::= digits | digits "." digits | digits "." | "." digits
 *   suffix   ::= "" | Ki Mi Gi Ti Pi Ei | m k M G T P E | (e|E) [+-] digits
 * The value D × 10^E10 × 1024^B is computed exactly: the significant digits
 * D are kept as a decimal string, so "0.5Ki" (512) and "1000m" (1) are
 * whole while "1.5", "500m" and "1e-3" are not. Results above
 * GS_API_QUANTITY_MAX (2^53, the largest integer every JSON reader keeps
 * exactly) are refused.
 *
 * Errors: syntax and fractions → GS_EPARSE; negative values and overflow →
 * GS_ERANGE. "-0" is zero and accepted.
 */
#include "api_internal.h"

#include <stdio.h>
#include <string.h>

#define QTY_TEXT_MAX 64 /* longest quantity string we read */
#define EXP_CAP 100000  /* exponents are saturated here: both ends fail */

struct qty {
  char digits[QTY_TEXT_MAX + 1]; /* significant digits, no leading zeros */
  size_t ndigits;
  long e10;    /* decimal exponent applied to digits */
  unsigned b;  /* binary suffix: 1024^b */
  bool neg;
};

/* Splits text into digits/exponents. Returns false on a syntax error. */
static bool qty_scan(const char *s, struct qty *q) {
  size_t nfrac = 0;
  bool any = false, dot = false;
  long exp = 0;
  memset(q, 0, sizeof *q);
  if (*s == '+' || *s == '-')
    q->neg = *s++ == '-';
  for (;; s++) {
    if (*s >= '0' && *s <= '9') {
      any = true;
      if (q->ndigits == 0 && *s == '0') {
        /* leading zero: not significant, but still shifts fractions */
      } else {
        q->digits[q->ndigits++] = *s;
      }
      if (dot)
        nfrac++;
    } else if (*s == '.' && !dot) {
      dot = true;
    } else {
      break;
    }
  }
  if (!any)
    return false;
  /* suffix */
  if (*s == '\0') {
    /* none */
  } else if (s[1] == 'i' && s[2] == '\0') {
    static const char bin[] = "KMGTPE";
    const char *p = strchr(bin, s[0]);
    if (p == NULL || s[0] == '\0')
      return false;
    q->b = (unsigned)(p - bin) + 1;
  } else if ((s[0] == 'e' || s[0] == 'E') && s[1] != '\0') {
    bool eneg = false;
    const char *e = s + 1;
    if (*e == '+' || *e == '-')
      eneg = *e++ == '-';
    if (*e == '\0')
      return false;
    for (; *e != '\0'; e++) {
      if (*e < '0' || *e > '9')
        return false;
      if (exp < EXP_CAP)
        exp = exp * 10 + (*e - '0');
    }
    if (eneg)
      exp = -exp;
  } else if (s[1] == '\0') {
    switch (s[0]) {
    case 'm':
      exp = -3;
      break;
    case 'k':
      exp = 3;
      break;
    case 'M':
      exp = 6;
      break;
    case 'G':
      exp = 9;
      break;
    case 'T':
      exp = 12;
      break;
    case 'P':
      exp = 15;
      break;
    case 'E':
      exp = 18;
      break;
    default:
      return false;
    }
  } else {
    return false;
  }
  q->e10 = exp - (long)nfrac;
  /* trailing zeros of the significand move into the exponent */
  while (q->ndigits > 0 && q->digits[q->ndigits - 1] == '0') {
    q->ndigits--;
    q->e10++;
  }
  q->digits[q->ndigits] = '\0';
  return true;
}

/* Divides the decimal string by 5 in place; false if it leaves a remainder. */
static bool div5(struct qty *q) {
  unsigned rem = 0;
  size_t i, j = 0;
  for (i = 0; i < q->ndigits; i++) {
    unsigned cur = rem * 10 + (unsigned)(q->digits[i] - '0');
    char d = (char)('0' + cur / 5);
    rem = cur % 5;
    if (j > 0 || d != '0')
      q->digits[j++] = d;
  }
  q->ndigits = j;
  q->digits[j] = '\0';
  return rem == 0;
}

static enum gs_err qty_fail(struct gs_diag *diag, const char *where, enum gs_err err,
                            const char *text, const char *why) {
  gs_diag_set(diag, where, "quantity \"%s\" %s", text, why);
  return err;
}

/* The value of q if it is a whole number ≤ GS_API_QUANTITY_MAX. */
static enum gs_err qty_value(struct qty *q, const char *text, const char *where,
                             uint64_t *ret, struct gs_diag *diag) {
  uint64_t v = 0;
  long shift = 10L * (long)q->b; /* remaining power of two */
  size_t i;
  if (q->ndigits == 0) {
    *ret = 0;
    return GS_EOK;
  }
  if (q->neg)
    return qty_fail(diag, where, GS_ERANGE, text, "is negative");
  if (q->e10 < 0) {
    /* D × 2^shift / (2^k × 5^k): D has no factor 10, so the 5^k must
     * divide D and the 2^k must come from the binary suffix. */
    long k = -q->e10;
    if (k > shift)
      return qty_fail(diag, where, GS_EPARSE, text,
                      "is not a whole number (extended resources must be integers)");
    for (long n = 0; n < k; n++)
      if (!div5(q))
        return qty_fail(diag, where, GS_EPARSE, text,
                        "is not a whole number (extended resources must be integers)");
    shift -= k;
    q->e10 = 0;
  }
  if (q->ndigits > 16 || q->e10 > 16)
    return qty_fail(diag, where, GS_ERANGE, text, "is too large");
  for (i = 0; i < q->ndigits; i++)
    v = v * 10 + (uint64_t)(q->digits[i] - '0');
  for (long n = 0; n < q->e10; n++) {
    v *= 10;
    if (v > GS_API_QUANTITY_MAX)
      return qty_fail(diag, where, GS_ERANGE, text, "is too large");
  }
  for (; shift > 0; shift--) {
    v *= 2;
    if (v > GS_API_QUANTITY_MAX)
      return qty_fail(diag, where, GS_ERANGE, text, "is too large");
  }
  if (v > GS_API_QUANTITY_MAX)
    return qty_fail(diag, where, GS_ERANGE, text, "is too large");
  *ret = v;
  return GS_EOK;
}

/* Scans quantity text into *q, with the errors every reader gives. */
static enum gs_err qty_read(const char *text, const char *where, struct qty *q,
                            struct gs_diag *diag) {
  if (text == NULL || text[0] == '\0') {
    gs_diag_set(diag, where, "quantity is empty");
    return GS_EPARSE;
  }
  if (strlen(text) > QTY_TEXT_MAX) {
    gs_diag_set(diag, where, "quantity is longer than %d characters", QTY_TEXT_MAX);
    return GS_EPARSE;
  }
  if (!qty_scan(text, q))
    return qty_fail(diag, where, GS_EPARSE, text, "is not a valid quantity");
  return GS_EOK;
}

enum gs_err gs_api_quantity_whole_str(const char *text, const char *where, uint64_t *ret,
                                      struct gs_diag *diag) {
  struct qty q;
  enum gs_err err = qty_read(text, where, &q, diag);
  return err != GS_EOK ? err : qty_value(&q, text, where, ret, diag);
}

/* 128-bit exact arithmetic (gcc and clang; __extension__ keeps -Wpedantic
 * quiet). */
__extension__ typedef unsigned __int128 u128;

/* ceil(q × 10^e10 × 2^b2), exactly: the significand has at most 18
 * digits (< 2^60) and the binary suffix at most 2^60, so the numerator
 * stays below 2^120; a decimal exponent below -24 leaves less than 1. */
static enum gs_err qty_scaled(const struct qty *q, int e10, int b2, const char *text,
                              const char *where, uint64_t *ret, struct gs_diag *diag) {
  u128 num = 0, den = 1;
  long e = q->e10 + e10, shift = 10L * (long)q->b + b2;
  if (q->ndigits == 0) {
    *ret = 0;
    return GS_EOK;
  }
  if (q->neg)
    return qty_fail(diag, where, GS_ERANGE, text, "is negative");
  if (q->ndigits > 18)
    return qty_fail(diag, where, GS_EPARSE, text, "has more than 18 significant digits");
  for (size_t i = 0; i < q->ndigits; i++)
    num = num * 10 + (unsigned)(q->digits[i] - '0');
  if (shift >= 0)
    num <<= shift;
  else
    den <<= -shift;
  if (e < -24) {
    *ret = 1;
    return GS_EOK;
  }
  for (; e < 0; e++)
    den *= 10;
  for (; e > 0; e--) {
    if (num > ((u128)1 << 100))
      return qty_fail(diag, where, GS_ERANGE, text, "is too large");
    num *= 10;
  }
  num = (num + den - 1) / den;
  if (num > GS_API_QUANTITY_MAX)
    return qty_fail(diag, where, GS_ERANGE, text, "is too large");
  *ret = (uint64_t)num;
  return GS_EOK;
}

enum gs_err gs_api_quantity_scaled_diag(const json_t *value, int e10, int b2, const char *where,
                                        uint64_t *ret, struct gs_diag *diag) {
  struct qty q;
  const char *text;
  char buf[32];
  enum gs_err err;
  if (json_is_integer(value)) {
    snprintf(buf, sizeof buf, "%" JSON_INTEGER_FORMAT, json_integer_value(value));
    text = buf;
  } else if (json_is_string(value)) {
    text = json_string_value(value);
  } else {
    gs_diag_set(diag, where, "quantity must be a string or an integer");
    return GS_EPARSE;
  }
  if ((err = qty_read(text, where, &q, diag)) != GS_EOK)
    return err;
  return qty_scaled(&q, e10, b2, text, where, ret, diag);
}

enum gs_err gs_api_quantity_whole_diag(const json_t *value, const char *where, uint64_t *ret,
                                       struct gs_diag *diag) {
  json_int_t i;
  if (json_is_string(value))
    return gs_api_quantity_whole_str(json_string_value(value), where, ret, diag);
  if (json_is_integer(value)) {
    i = json_integer_value(value);
    if (i < 0) {
      gs_diag_set(diag, where, "quantity %" JSON_INTEGER_FORMAT " is negative", i);
      return GS_ERANGE;
    }
    if ((uint64_t)i > GS_API_QUANTITY_MAX) {
      gs_diag_set(diag, where, "quantity %" JSON_INTEGER_FORMAT " is too large", i);
      return GS_ERANGE;
    }
    *ret = (uint64_t)i;
    return GS_EOK;
  }
  if (json_is_real(value)) {
    gs_diag_set(diag, where,
                "quantity must be a string or an integer, not a real number (%g)",
                json_real_value(value));
    return GS_EPARSE;
  }
  gs_diag_set(diag, where, "quantity must be a string or an integer");
  return GS_EPARSE;
}

enum gs_err gs_api_quantity_whole(const json_t *value, uint64_t *ret) {
  return gs_api_quantity_whole_diag(value, "quantity", ret, NULL);
}
