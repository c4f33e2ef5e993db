/* Fuzz target "watch": a watch response body through the NDJSON splitter
 * (gs__ndjson_feed) in chunks whose sizes come from the input, each line
 * decoded as a watch event the way the informer does (ERROR → Status,
 * Pod/Node objects → the api decoders).
 *
 * Input: byte 0 picks the line cap (low 2 bits) and after how many lines
 * the consumer stops (high bits, 0 = never); bytes 1..8 seed the chunk
 * sizes; the rest is the stream. The lines seen must be exactly those of a
 * plain reference split of the whole stream, whatever the chunking. */
#include "fuzz.h"

#include "api.h"
#include "kube_int.h"

#include <ctype.h>

struct sink {
  const uint8_t *stream; /* the whole stream, for the reference */
  size_t len;
  size_t pos;   /* reference: where the next line starts */
  size_t line_max;
  unsigned lines, stop_after;
  bool ref_toobig; /* the reference ran into a line over the cap */
};

/* The next line the reference split yields, or false at the end (or at a
 * line over the cap: ref_toobig). */
static bool ref_next(struct sink *s, const uint8_t **ret, size_t *ret_len) {
  while (s->pos < s->len) {
    const uint8_t *p = s->stream + s->pos;
    const uint8_t *nl = memchr(p, '\n', s->len - s->pos);
    size_t raw, len;
    bool blank = true;
    if (nl == NULL)
      return false; /* unfinished line: stays pending */
    raw = (size_t)(nl - p);
    if (raw > s->line_max) {
      s->ref_toobig = true;
      return false;
    }
    s->pos += raw + 1;
    len = raw > 0 && p[raw - 1] == '\r' ? raw - 1 : raw;
    for (size_t i = 0; i < len; i++)
      blank = blank && isspace(p[i]);
    if (!blank) {
      *ret = p;
      *ret_len = len;
      return true;
    }
  }
  return false;
}

static void decode_event(const char *line, size_t len) {
  static struct gs_topo topo;
  static struct gs_api_alloc alloc;
  json_t *ev = json_loadb(line, len, 0, NULL);
  const json_t *type, *obj, *kind;
  struct gs__kube_status st;
  struct gs_diag diag = {{0}, {0}};
  if (ev == NULL)
    return;
  type = json_object_get(ev, "type");
  obj = json_object_get(ev, "object");
  if (json_is_string(type) && strcmp(json_string_value(type), "ERROR") == 0) {
    gs__kube_status_from_json(obj, 500, &st);
    FUZZ_CHECK(memchr(st.reason, '\0', sizeof st.reason) != NULL);
    FUZZ_CHECK(st.message[0] != '\0' && memchr(st.message, '\0', sizeof st.message) != NULL);
    (void)gs__kube_status_is_expired(&st);
  }
  kind = json_object_get(obj, "kind");
  if (json_is_string(kind) && strcmp(json_string_value(kind), "Pod") == 0) {
    struct gs_pod_request req;
    enum gs_err err = gs_api_pod_decode(obj, &req, &diag);
    FUZZ_CHECK_DIAG(err, diag);
    memset(&diag, 0, sizeof diag);
    err = gs_api_alloc_from_pod(obj, GS_UNIT_GIB, &alloc, &diag);
    if (err != GS_ENOTFOUND)
      FUZZ_CHECK_DIAG(err, diag);
  } else if (json_is_string(kind) && strcmp(json_string_value(kind), "Node") == 0) {
    struct gs_node_spec spec;
    enum gs_err err = gs_api_node_decode(obj, &spec, &topo, &diag);
    FUZZ_CHECK_DIAG(err, diag);
  }
  json_decref(ev);
}

static bool on_line(void *ctx, const char *line, size_t len) {
  struct sink *s = ctx;
  const uint8_t *want;
  size_t want_len;
  FUZZ_CHECK(ref_next(s, &want, &want_len));
  FUZZ_CHECK(len == want_len && memcmp(line, want, len) == 0);
  decode_event(line, len);
  s->lines++;
  return s->stop_after == 0 || s->lines < s->stop_after;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const size_t caps[4] = {16, 256, 4096, GS_KUBE_EVENT_MAX};
  struct gs__ndjson nd;
  struct sink s;
  uint64_t rng = 0;
  const uint8_t *stream;
  size_t n, off = 0;
  enum gs_err err = GS_EOK;

  fuzz_init();
  if (size < 9)
    return 0;
  memset(&s, 0, sizeof s);
  s.line_max = caps[data[0] & 3u];
  s.stop_after = data[0] >> 2;
  for (int i = 1; i <= 8; i++)
    rng = rng << 8 | data[i];
  rng |= 1; /* xorshift must not start at 0 */
  stream = data + 9;
  n = size - 9;
  s.stream = stream;
  s.len = n;
  gs__ndjson_init(&nd, s.line_max);
  while (off < n) {
    size_t chunk;
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    chunk = 1 + (size_t)(rng % (rng & 64 ? 4096 : 16));
    if (chunk > n - off)
      chunk = n - off;
    err = gs__ndjson_feed(&nd, (const char *)stream + off, chunk, on_line, &s);
    off += chunk;
    if (err != GS_EOK)
      break;
  }
  if (err == GS_EAGAIN) {
    FUZZ_CHECK(s.stop_after != 0 && s.lines == s.stop_after);
  } else if (err == GS_ETOOBIG) {
    /* The splitter refuses a line over the cap, possibly before its end. */
    const uint8_t *want;
    size_t want_len;
    FUZZ_CHECK(!ref_next(&s, &want, &want_len));
    if (!s.ref_toobig) { /* only an unfinished last line can be over the cap */
      size_t tail = n - s.pos;
      FUZZ_CHECK(memchr(stream + s.pos, '\n', tail) == NULL && tail > s.line_max);
    }
  } else {
    const uint8_t *want;
    size_t want_len;
    FUZZ_CHECK(err == GS_EOK);
    FUZZ_CHECK(!ref_next(&s, &want, &want_len) && !s.ref_toobig);
    /* What is left is the unfinished last line. */
    FUZZ_CHECK(gs__ndjson_pending(&nd) == n - s.pos);
  }
  gs__ndjson_reset(&nd);
  FUZZ_CHECK(gs__ndjson_pending(&nd) == 0);
  gs__ndjson_release(&nd);
  return 0;
}
