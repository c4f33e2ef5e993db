/* Pure helpers of the k8s layer: logging, time, buffers, URL escaping,
 * NDJSON splitting, Status decoding, Retry-After, backoff. No network. */
#include "kube_int.h"
#include <gpushare/alloc.h>

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- logging ---------------------------------------------------------- */

/* The project's one logger (util/log.c): the same timestamps, levels and
 * threshold as the rest of the extender. */
void gs__kube_log(enum gs_log_lvl level, const char *msg, const char *fmt, ...) {
  char fields[1024] = "";
  va_list ap;
  if (!gs_log_enabled(level))
    return;
  if (fmt != NULL) {
    va_start(ap, fmt);
    vsnprintf(fields, sizeof fields, fmt, ap);
    va_end(ap);
  }
  gs_log(level, msg, "%s", fields);
}

/* ---- time and randomness ---------------------------------------------- */

int64_t gs__kube_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static uint64_t seed_value(void) {
  uint64_t v = 0;
  int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    if (read(fd, &v, sizeof v) != (ssize_t)sizeof v)
      v = 0;
    close(fd);
  }
  if (v == 0) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    v = ((uint64_t)ts.tv_sec << 30) ^ (uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 16);
  }
  return v ? v : 0x9e3779b97f4a7c15ull;
}

uint64_t gs__kube_rand(uint64_t *state) {
  uint64_t x = *state;
  if (x == 0)
    x = seed_value();
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  *state = x;
  return x;
}

void gs__kube_uuid(char out[37]) {
  uint64_t rng = 0;
  unsigned char b[16];
  for (int i = 0; i < 16; i += 8) {
    uint64_t r = gs__kube_rand(&rng);
    memcpy(b + i, &r, 8);
  }
  b[6] = (unsigned char)((b[6] & 0x0f) | 0x40);
  b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);
  snprintf(out, 37,
           "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
           b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
           b[14], b[15]);
}

static void utc_fields(const struct timespec *ts, struct tm *tm) {
  time_t t = ts->tv_sec;
  gmtime_r(&t, tm);
}

void gs__kube_microtime(const struct timespec *ts, char out[32]) {
  struct tm tm;
  utc_fields(ts, &tm);
  snprintf(out, 32, "%04u-%02u-%02uT%02u:%02u:%02u.%06uZ", (unsigned)(tm.tm_year + 1900) % 10000u,
           (unsigned)(tm.tm_mon + 1) % 100u, (unsigned)tm.tm_mday % 100u,
           (unsigned)tm.tm_hour % 100u, (unsigned)tm.tm_min % 100u, (unsigned)tm.tm_sec % 100u,
           (unsigned)(ts->tv_nsec / 1000) % 1000000u);
}

void gs__kube_rfc3339(const struct timespec *ts, char out[32]) {
  struct tm tm;
  utc_fields(ts, &tm);
  snprintf(out, 32, "%04u-%02u-%02uT%02u:%02u:%02uZ", (unsigned)(tm.tm_year + 1900) % 10000u,
           (unsigned)(tm.tm_mon + 1) % 100u, (unsigned)tm.tm_mday % 100u,
           (unsigned)tm.tm_hour % 100u, (unsigned)tm.tm_min % 100u, (unsigned)tm.tm_sec % 100u);
}

/* ---- buffers ----------------------------------------------------------- */

static size_t skip_ws(const char *p, size_t n, size_t i) {
  while (i < n && (p[i] == ' ' || p[i] == '\t' || p[i] == '\n' || p[i] == '\r'))
    i++;
  return i;
}

/* One JSON value at p[*i] by jansson, which says how far it read. Strings
 * and objects end at their closing character (no look-ahead); a number
 * may be followed by one byte read ahead, which the caller's check of the
 * next punctuation then refuses. */
static json_t *value_at(const char *p, size_t n, size_t *i) {
  json_error_t err;
  json_t *v = json_loadb(p + *i, n - *i, JSON_DECODE_ANY | JSON_DISABLE_EOF_CHECK, &err);
  if (v != NULL)
    *i += (size_t)err.position;
  return v;
}

#define PEEK_FIELDS 8 /* kind, apiVersion, metadata: a few to spare */

char *gs__kube_list_peek_continue(const char *p, size_t n) {
  size_t i;
  if (p == NULL)
    return NULL;
  i = skip_ws(p, n, 0);
  if (i >= n || p[i] != '{')
    return NULL;
  i++;
  for (int f = 0; f < PEEK_FIELDS; f++) {
    json_t *key, *value;
    bool meta;
    char *out = NULL;
    i = skip_ws(p, n, i);
    if (i >= n || p[i] != '"' || (key = value_at(p, n, &i)) == NULL)
      return NULL;
    meta = json_is_string(key) && strcmp(json_string_value(key), "metadata") == 0;
    if (json_is_string(key) && strcmp(json_string_value(key), "items") == 0) {
      json_decref(key);
      return NULL; /* items first: no look-ahead */
    }
    json_decref(key);
    i = skip_ws(p, n, i);
    if (i >= n || p[i] != ':')
      return NULL;
    i = skip_ws(p, n, i + 1);
    /* Only short values before metadata are read whole (never items). */
    if ((value = value_at(p, n, &i)) == NULL)
      return NULL;
    if (meta) {
      const json_t *c = json_object_get(value, "continue");
      if (json_is_string(c) && json_string_length(c) > 0)
        out = gs_strdup(json_string_value(c));
      json_decref(value);
      return out;
    }
    json_decref(value);
    i = skip_ws(p, n, i);
    if (i >= n || p[i] != ',')
      return NULL;
    i++;
  }
  return NULL;
}

/* ---- URLs -------------------------------------------------------------- */

enum gs_err gs__kube_escape(struct gs_buf *b, const char *s) {
  static const char hex[] = "0123456789ABCDEF";
  for (; *s; s++) {
    unsigned char ch = (unsigned char)*s;
    enum gs_err e;
    if (isalnum(ch) || ch == '-' || ch == '.' || ch == '_' || ch == '~') {
      e = gs_buf_add(b, (const char *)&ch, 1);
    } else {
      char enc[3] = {'%', hex[ch >> 4], hex[ch & 15]};
      e = gs_buf_add(b, enc, 3);
    }
    if (e != GS_EOK)
      return e;
  }
  return GS_EOK;
}

enum gs_err gs__kube_query(struct gs_buf *b, const char *key, const char *value) {
  enum gs_err e;
  const char *sep = (b->p != NULL && memchr(b->p, '?', b->len) != NULL) ? "&" : "?";
  if ((e = gs_buf_str(b, sep)) != GS_EOK || (e = gs__kube_escape(b, key)) != GS_EOK ||
      (e = gs_buf_str(b, "=")) != GS_EOK)
    return e;
  return gs__kube_escape(b, value);
}

enum gs_err gs__kube_incluster_url(const char *host, const char *port, char *out, size_t cap) {
  int n;
  if (host == NULL || port == NULL || host[0] == '\0' || port[0] == '\0')
    return GS_EINVAL;
  if (strchr(host, ':') != NULL && host[0] != '[')
    n = snprintf(out, cap, "https://[%s]:%s", host, port);
  else
    n = snprintf(out, cap, "https://%s:%s", host, port);
  return (n < 0 || (size_t)n >= cap) ? GS_ETOOBIG : GS_EOK;
}

/* ---- NDJSON ------------------------------------------------------------ */

void gs__ndjson_init(struct gs__ndjson *s, size_t line_max) {
  memset(s, 0, sizeof *s);
  s->pending.max = line_max;
}

static bool emit_line(const char *line, size_t len, gs__ndjson_fn fn, void *ctx) {
  if (len > 0 && line[len - 1] == '\r')
    len--;
  for (size_t i = 0; i < len; i++)
    if (!isspace((unsigned char)line[i]))
      return fn(ctx, line, len);
  return true; /* blank line */
}

enum gs_err gs__ndjson_feed(struct gs__ndjson *s, const char *data, size_t n, gs__ndjson_fn fn,
                            void *ctx) {
  while (n > 0) {
    const char *nl = memchr(data, '\n', n);
    size_t take;
    enum gs_err e;
    if (nl == NULL) {
      /* No line end: keep the bytes for the next call. */
      if ((e = gs_buf_add(&s->pending, data, n)) != GS_EOK)
        return e;
      return GS_EOK;
    }
    take = (size_t)(nl - data);
    if (s->pending.len == 0) {
      /* Whole line inside this chunk: no copy. */
      if (take > s->pending.max)
        return GS_ETOOBIG;
      if (!emit_line(data, take, fn, ctx))
        return GS_EAGAIN;
    } else {
      bool go;
      if ((e = gs_buf_add(&s->pending, data, take)) != GS_EOK)
        return e;
      go = emit_line(s->pending.p, s->pending.len, fn, ctx);
      gs_buf_clear(&s->pending);
      if (!go)
        return GS_EAGAIN;
    }
    data = nl + 1;
    n -= take + 1;
  }
  return GS_EOK;
}

size_t gs__ndjson_pending(const struct gs__ndjson *s) {
  return s->pending.len;
}

void gs__ndjson_reset(struct gs__ndjson *s) { gs_buf_clear(&s->pending); }

void gs__ndjson_release(struct gs__ndjson *s) {
  gs_buf_release(&s->pending);
}

/* ---- Status ------------------------------------------------------------ */

void gs__kube_status_from_json(const json_t *obj, long http_code, struct gs__kube_status *ret) {
  const json_t *v;
  memset(ret, 0, sizeof *ret);
  ret->code = http_code;
  if (!json_is_object(obj))
    goto fallback;
  v = json_object_get(obj, "code");
  if (json_is_integer(v) && json_integer_value(v) > 0)
    ret->code = (long)json_integer_value(v);
  v = json_object_get(obj, "reason");
  if (json_is_string(v))
    snprintf(ret->reason, sizeof ret->reason, "%s", json_string_value(v));
  v = json_object_get(obj, "message");
  if (json_is_string(v) && json_string_length(v) > 0) {
    snprintf(ret->message, sizeof ret->message, "%s", json_string_value(v));
    return;
  }
fallback:
  if (ret->reason[0])
    snprintf(ret->message, sizeof ret->message, "HTTP %ld %s", ret->code, ret->reason);
  else
    snprintf(ret->message, sizeof ret->message, "HTTP %ld", ret->code);
}

void gs__kube_status_decode(const char *body, size_t len, long http_code,
                            struct gs__kube_status *ret) {
  json_t *obj = NULL;
  if (body != NULL && len > 0)
    obj = json_loadb(body, len, 0, NULL);
  if (json_is_object(obj)) {
    gs__kube_status_from_json(obj, http_code, ret);
    json_decref(obj);
    return;
  }
  json_decref(obj);
  gs__kube_status_from_json(NULL, http_code, ret);
  if (body != NULL && len > 0) {
    /* A proxy's plain-text answer: keep its first printable line. */
    size_t used = strlen(ret->message), i;
    if (used + 2 < sizeof ret->message) {
      ret->message[used++] = ':';
      ret->message[used++] = ' ';
      for (i = 0; i < len && used + 1 < sizeof ret->message && i < 200; i++) {
        unsigned char ch = (unsigned char)body[i];
        if (ch == '\n' || ch == '\r')
          break;
        ret->message[used++] = isprint(ch) ? (char)ch : '?';
      }
      ret->message[used] = '\0';
    }
  }
}

bool gs__kube_status_is_expired(const struct gs__kube_status *st) {
  return st->code == 410 &&
         (st->reason[0] == '\0' || strcmp(st->reason, "Expired") == 0 ||
          strcmp(st->reason, "Gone") == 0);
}

long gs__kube_retry_after_parse(const char *value) {
  char *end;
  long v;
  if (value == NULL)
    return -1;
  while (*value == ' ' || *value == '\t')
    value++;
  if (!isdigit((unsigned char)*value))
    return -1;
  errno = 0;
  v = strtol(value, &end, 10);
  while (*end == ' ' || *end == '\t' || *end == '\r' || *end == '\n')
    end++;
  if (errno != 0 || *end != '\0' || v < 0)
    return -1;
  return v > 3600 ? 3600 : v;
}

bool gs__kube_http_is_retryable(long code) {
  return code == 0 || code == 429 || (code >= 500 && code != 501);
}

/* ---- backoff ----------------------------------------------------------- */

void gs__backoff_init(struct gs__backoff *b, uint32_t initial_ms, uint32_t max_ms) {
  memset(b, 0, sizeof *b);
  b->initial_ms = initial_ms ? initial_ms : 800;
  b->max_ms = max_ms ? max_ms : 30000;
  if (b->max_ms < b->initial_ms)
    b->max_ms = b->initial_ms;
}

uint32_t gs__backoff_next(struct gs__backoff *b, int64_t now_ms) {
  uint32_t base;
  double jitter;
  if (b->cur_ms == 0 || (b->last_fail_ms != 0 && now_ms - b->last_fail_ms > 120000))
    b->cur_ms = b->initial_ms;
  base = b->cur_ms;
  b->cur_ms = base > b->max_ms / 2 ? b->max_ms : base * 2;
  b->last_fail_ms = now_ms;
  jitter = (double)(gs__kube_rand(&b->rng) >> 11) / 9007199254740992.0; /* [0,1) */
  return base + (uint32_t)(jitter * base);
}

void gs__backoff_reset(struct gs__backoff *b) {
  b->cur_ms = 0;
  b->last_fail_ms = 0;
}
