/* Pure parts of the k8s layer: NDJSON splitting at every chunk boundary,
 * Status decoding, URL building, Retry-After, MicroTime, backoff and the
 * lease decision. No network. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "../test_main.h"

#include "kube_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../test_files.h"

/* ---- NDJSON ---------------------------------------------------------------- */

struct lines {
  char *text[16];
  size_t n;
  size_t stop_after; /* 0 = never */
};

static bool collect(void *ctx, const char *line, size_t len) {
  struct lines *l = ctx;
  assert_true(l->n < 16);
  l->text[l->n] = malloc(len + 1);
  memcpy(l->text[l->n], line, len);
  l->text[l->n][len] = '\0';
  l->n++;
  return l->stop_after == 0 || l->n < l->stop_after;
}

static void lines_free(struct lines *l) {
  for (size_t i = 0; i < l->n; i++)
    free(l->text[i]);
  l->n = 0;
}

static void check_fixture_lines(struct lines *l) {
  json_t *a, *b;
  assert_int_equal(l->n, 2);
  a = json_loads(l->text[0], 0, NULL);
  b = json_loads(l->text[1], 0, NULL);
  assert_non_null(a);
  assert_non_null(b);
  assert_string_equal(json_string_value(json_object_get(a, "type")), "ADDED");
  assert_string_equal(json_string_value(json_object_get(b, "type")), "BOOKMARK");
  assert_string_equal(
      json_string_value(json_object_get(
          json_object_get(json_object_get(b, "object"), "metadata"), "resourceVersion")),
      "964");
  json_decref(a);
  json_decref(b);
}

static void test_ndjson_fixture_every_split(void **state) {
  size_t len;
  char *data = gs_test_slurp(GS_TEST_DATA "/k8s/watch-events-decoded.ndjson", &len);
  (void)state;
  /* One split point anywhere, then every chunk size from 1 byte up. */
  for (size_t cut = 0; cut <= len; cut++) {
    struct gs__ndjson s;
    struct lines l = {0};
    gs__ndjson_init(&s, 1 << 20);
    assert_int_equal(gs__ndjson_feed(&s, data, cut, collect, &l), GS_EOK);
    assert_int_equal(gs__ndjson_feed(&s, data + cut, len - cut, collect, &l), GS_EOK);
    check_fixture_lines(&l);
    assert_int_equal(gs__ndjson_pending(&s), 0);
    lines_free(&l);
    gs__ndjson_release(&s);
  }
  for (size_t chunk = 1; chunk <= 64; chunk++) {
    struct gs__ndjson s;
    struct lines l = {0};
    gs__ndjson_init(&s, 1 << 20);
    for (size_t off = 0; off < len; off += chunk) {
      size_t n = len - off < chunk ? len - off : chunk;
      assert_int_equal(gs__ndjson_feed(&s, data + off, n, collect, &l), GS_EOK);
    }
    check_fixture_lines(&l);
    lines_free(&l);
    gs__ndjson_release(&s);
  }
  free(data);
}

static void test_ndjson_crlf_blank_cap_stop(void **state) {
  struct gs__ndjson s;
  struct lines l = {0};
  (void)state;
  gs__ndjson_init(&s, 8);
  assert_int_equal(gs__ndjson_feed(&s, "{}\r\n\n  \n{\"a\"", 12, collect, &l), GS_EOK);
  assert_int_equal(l.n, 1);
  assert_string_equal(l.text[0], "{}");
  assert_int_equal(gs__ndjson_pending(&s), 4);
  assert_int_equal(gs__ndjson_feed(&s, ":1}\n", 4, collect, &l), GS_EOK);
  assert_int_equal(l.n, 2);
  assert_string_equal(l.text[1], "{\"a\":1}");
  /* A line past the cap, whole or split. */
  assert_int_equal(gs__ndjson_feed(&s, "0123456789\n", 11, collect, &l), GS_ETOOBIG);
  gs__ndjson_reset(&s);
  assert_int_equal(gs__ndjson_feed(&s, "01234", 5, collect, &l), GS_EOK);
  assert_int_equal(gs__ndjson_feed(&s, "56789", 5, collect, &l), GS_ETOOBIG);
  gs__ndjson_reset(&s);
  lines_free(&l);
  /* The callback stops the stream. */
  l.stop_after = 1;
  assert_int_equal(gs__ndjson_feed(&s, "1\n2\n3\n", 6, collect, &l), GS_EAGAIN);
  assert_int_equal(l.n, 1);
  lines_free(&l);
  gs__ndjson_release(&s);
}

/* ---- Status ------------------------------------------------------------------ */

static void test_status_fixture(void **state) {
  size_t len;
  char *body = gs_test_slurp(GS_TEST_DATA "/k8s/status-404-notfound.json", &len);
  struct gs__kube_status st;
  (void)state;
  gs__kube_status_decode(body, len, 404, &st);
  assert_int_equal(st.code, 404);
  assert_string_equal(st.reason, "NotFound");
  assert_string_equal(st.message, "services \"missing\" not found");
  assert_false(gs__kube_status_is_expired(&st));
  free(body);
}

static void test_status_other(void **state) {
  struct gs__kube_status st;
  const char *expired = "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":"
                        "\"Failure\",\"message\":\"too old resource version: 1 (5)\","
                        "\"reason\":\"Expired\",\"code\":410}";
  (void)state;
  gs__kube_status_decode(expired, strlen(expired), 200, &st);
  assert_int_equal(st.code, 410);
  assert_true(gs__kube_status_is_expired(&st));
  gs__kube_status_decode("{\"code\":410,\"reason\":\"Gone\"}", 28, 200, &st);
  assert_true(gs__kube_status_is_expired(&st));
  assert_string_equal(st.message, "HTTP 410 Gone");
  gs__kube_status_decode("upstream connect error\nmore", 27, 503, &st);
  assert_int_equal(st.code, 503);
  assert_string_equal(st.message, "HTTP 503: upstream connect error");
  gs__kube_status_decode(NULL, 0, 500, &st);
  assert_string_equal(st.message, "HTTP 500");
  assert_string_equal(st.reason, "");
}

/* ---- URLs ------------------------------------------------------------------ */

static void test_url_building(void **state) {
  struct gs_buf b = {.max = 1024};
  char url[128];
  (void)state;
  assert_int_equal(gs_buf_str(&b, "/api/v1/namespaces/kube-system/configmaps"), GS_EOK);
  assert_int_equal(gs__kube_query(&b, "limit", "500"), GS_EOK);
  assert_int_equal(gs__kube_query(&b, "fieldSelector", "metadata.name=gpushare-config"), GS_EOK);
  assert_int_equal(gs__kube_query(&b, "continue", "eyJ2IjoibWV0YS/+=="), GS_EOK);
  assert_string_equal(b.p, "/api/v1/namespaces/kube-system/configmaps?limit=500"
                           "&fieldSelector=metadata.name%3Dgpushare-config"
                           "&continue=eyJ2IjoibWV0YS%2F%2B%3D%3D");
  gs_buf_release(&b);
  b.max = 1024;
  assert_int_equal(gs__kube_escape(&b, "a b/c~d_e.f-g%"), GS_EOK);
  assert_string_equal(b.p, "a%20b%2Fc~d_e.f-g%25");
  gs_buf_release(&b);
  b.max = 4;
  assert_int_equal(gs__kube_escape(&b, "/////"), GS_ETOOBIG);
  gs_buf_release(&b);

  assert_int_equal(gs__kube_incluster_url("10.96.0.1", "443", url, sizeof url), GS_EOK);
  assert_string_equal(url, "https://10.96.0.1:443");
  assert_int_equal(gs__kube_incluster_url("fd00::1", "6443", url, sizeof url), GS_EOK);
  assert_string_equal(url, "https://[fd00::1]:6443");
  assert_int_equal(gs__kube_incluster_url("", "443", url, sizeof url), GS_EINVAL);
  assert_int_equal(gs__kube_incluster_url("h", NULL, url, sizeof url), GS_EINVAL);
  assert_int_equal(gs__kube_incluster_url("host", "443", url, 8), GS_ETOOBIG);
}

/* ---- Retry-After, retryable ------------------------------------------------ */

static void test_retry_after(void **state) {
  (void)state;
  assert_int_equal(gs__kube_retry_after_parse(" 5\r\n"), 5);
  assert_int_equal(gs__kube_retry_after_parse("0"), 0);
  assert_int_equal(gs__kube_retry_after_parse("99999"), 3600);
  assert_int_equal(gs__kube_retry_after_parse("Wed, 21 Oct 2015 07:28:00 GMT"), -1);
  assert_int_equal(gs__kube_retry_after_parse("-3"), -1);
  assert_int_equal(gs__kube_retry_after_parse("3s"), -1);
  assert_int_equal(gs__kube_retry_after_parse(NULL), -1);
  assert_true(gs__kube_http_is_retryable(429));
  assert_true(gs__kube_http_is_retryable(503));
  assert_true(gs__kube_http_is_retryable(0));
  assert_false(gs__kube_http_is_retryable(501));
  assert_false(gs__kube_http_is_retryable(409));
  assert_false(gs__kube_http_is_retryable(404));
}

/* ---- time ------------------------------------------------------------------ */

static void test_microtime(void **state) {
  struct timespec ts = {.tv_sec = 1741064767, .tv_nsec = 123456789};
  char out[32];
  (void)state;
  gs__kube_microtime(&ts, out);
  assert_string_equal(out, "2025-03-04T05:06:07.123456Z");
  ts.tv_nsec = 3000;
  gs__kube_microtime(&ts, out);
  assert_string_equal(out, "2025-03-04T05:06:07.000003Z");
  ts.tv_nsec = 0;
  gs__kube_microtime(&ts, out);
  assert_string_equal(out, "2025-03-04T05:06:07.000000Z");
  gs__kube_rfc3339(&ts, out);
  assert_string_equal(out, "2025-03-04T05:06:07Z");
}

static void test_uuid(void **state) {
  char a[37], b[37];
  (void)state;
  gs__kube_uuid(a);
  gs__kube_uuid(b);
  assert_int_equal(strlen(a), 36);
  assert_int_equal(a[14], '4');
  assert_int_equal(a[8], '-');
  assert_string_not_equal(a, b);
}

/* ---- backoff ----------------------------------------------------------------- */

static void test_backoff(void **state) {
  struct gs__backoff b;
  int64_t now = 1000000;
  uint32_t d;
  (void)state;
  gs__backoff_init(&b, 800, 30000);
  d = gs__backoff_next(&b, now);
  assert_true(d >= 800 && d < 1600);
  d = gs__backoff_next(&b, now += 1000);
  assert_true(d >= 1600 && d < 3200);
  for (int i = 0; i < 20; i++)
    d = gs__backoff_next(&b, now += 1000);
  assert_true(d >= 30000 && d < 60000);
  /* Two quiet minutes start over. */
  d = gs__backoff_next(&b, now += 121000);
  assert_true(d >= 800 && d < 1600);
  gs__backoff_reset(&b);
  d = gs__backoff_next(&b, now);
  assert_true(d >= 800 && d < 1600);
  gs__backoff_init(&b, 0, 0);
  assert_int_equal(b.initial_ms, 800);
  assert_int_equal(b.max_ms, 30000);
}

/* ---- lease --------------------------------------------------------------------- */

static void test_lease_decide(void **state) {
  struct gs__lease_spec cur = {0}, d;
  const char *now_s = "2025-03-04T05:06:07.123456Z";
  (void)state;
  /* Released lease (holder ""): take over at once, transitions + 1. */
  cur.duration_s = 1;
  cur.transitions = 4;
  assert_int_equal(gs__lease_decide(&cur, "me", 0, 0, now_s, 15, &d), GS__LEASE_TAKEOVER);
  assert_string_equal(d.holder, "me");
  assert_int_equal(d.duration_s, 15);
  assert_int_equal(d.transitions, 5);
  assert_string_equal(d.acquire, now_s);
  assert_string_equal(d.renew, now_s);
  /* Someone else, seen changing 10 s ago, 15 s lease: wait. */
  snprintf(cur.holder, sizeof cur.holder, "other");
  cur.duration_s = 15;
  assert_int_equal(gs__lease_decide(&cur, "me", 100000, 110000, now_s, 15, &d), GS__LEASE_WAIT);
  /* ... 15 s or more ago (by local observation): expired, take over. */
  assert_int_equal(gs__lease_decide(&cur, "me", 100000, 115000, now_s, 15, &d),
                   GS__LEASE_TAKEOVER);
  assert_int_equal(d.transitions, 5);
  /* Mine: renew, keeping acquireTime and transitions. */
  snprintf(cur.holder, sizeof cur.holder, "me");
  snprintf(cur.acquire, sizeof cur.acquire, "2025-03-04T05:00:00.000000Z");
  assert_int_equal(gs__lease_decide(&cur, "me", 100000, 101000, now_s, 15, &d), GS__LEASE_RENEW);
  assert_string_equal(d.acquire, "2025-03-04T05:00:00.000000Z");
  assert_string_equal(d.renew, now_s);
  assert_int_equal(d.transitions, 4);
}

static void test_lease_json(void **state) {
  size_t len;
  char *text = gs_test_slurp(GS_TEST_DATA "/k8s/lease.json", &len);
  json_t *obj = json_loadb(text, len, 0, NULL), *back;
  struct gs__lease_spec s, s2;
  (void)state;
  assert_non_null(obj);
  gs__lease_spec_from_json(obj, &s);
  assert_string_equal(s.holder, "master-1_3f0c9d6e");
  assert_int_equal(s.duration_s, 15);
  assert_string_equal(s.renew, "2025-03-04T05:06:07.123456Z");
  assert_int_equal(s.transitions, 2);
  back = gs__lease_spec_to_json(&s);
  assert_non_null(back);
  assert_true(json_equal(back, json_object_get(obj, "spec")));
  {
    json_t *wrap = json_pack("{s:o}", "spec", back); /* steals back */
    gs__lease_spec_from_json(wrap, &s2);
    json_decref(wrap);
  }
  assert_true(gs__lease_spec_equal(&s, &s2));
  s2.transitions++;
  assert_false(gs__lease_spec_equal(&s, &s2));
  /* A zero time encodes as null. */
  s.acquire[0] = '\0';
  back = gs__lease_spec_to_json(&s);
  assert_true(json_is_null(json_object_get(back, "acquireTime")));
  json_decref(back);
  json_decref(obj);
  free(text);
}

/* The next page's token, read ahead of the parse. A real list reply
 * (client-go's golden ServiceAccountList) shows the field order it relies
 * on; anything laid out otherwise, truncated or odd gives NULL, never a
 * wrong token. */
static void test_list_peek_continue(void **state) {
  size_t len;
  char *raw = gs_test_slurp(GS_TEST_DATA "/reference/kube-fixtures/list-response-raw-http.txt", &len);
  const char *body = strstr(raw, "\r\n\r\n");
  char *with, *got;
  static const struct {
    const char *text, *want;
  } cases[] = {
      {"{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":\"5\","
       "\"continue\":\"eyJ2IjoibWV0YS5rOHMuaW8vdjEifQ\",\"remainingItemCount\":3},\"items\":[]}",
       "eyJ2IjoibWV0YS5rOHMuaW8vdjEifQ"},
      {" {\n \"kind\" : \"PodList\" ,\n\t\"apiVersion\":\"v1\",\r\n \"metadata\" : "
       "{ \"continue\" : \"t\\u0041\" } , \"items\": [ ] }\n",
       "tA"},
      {"{\"kind\":\"Pod\\\"List\\\\\",\"metadata\":{\"continue\":\"x\"},\"items\":[]}", "x"},
      {"{\"metadata\":{\"continue\":\"first\"}}", "first"},
      {"{\"kind\":\"PodList\",\"metadata\":{\"continue\":\"\"},\"items\":[]}", NULL},
      {"{\"kind\":\"PodList\",\"metadata\":{\"resourceVersion\":\"9\"},\"items\":[]}", NULL},
      {"{\"items\":[],\"metadata\":{\"continue\":\"late\"}}", NULL},
      {"{\"kind\":\"PodList\",\"metadata\":{\"continue\":7},\"items\":[]}", NULL},
      {"{\"kind\":\"PodList\",\"metadata\":\"continue\",\"items\":[]}", NULL},
      {"{\"kind\":\"PodList\",\"metadata\":{\"continue\":\"tr", NULL},
      {"{\"kind\":\"PodList\"", NULL},
      {"{\"kind\" \"PodList\",\"metadata\":{\"continue\":\"t\"}}", NULL},
      {"{\"kind\":\"PodList\" \"metadata\":{\"continue\":\"t\"}}", NULL},
      {"[{\"metadata\":{\"continue\":\"t\"}}]", NULL},
      {"{kind:1}", NULL},
      {"{", NULL},
      {"", NULL},
      {"{\"a\":1,\"b\":2,\"c\":3,\"d\":4,\"e\":5,\"f\":6,\"g\":7,\"h\":8,\"metadata\":"
       "{\"continue\":\"far\"}}",
       NULL},
  };
  (void)state;
  assert_non_null(body);
  body += 4;
  assert_null(gs__kube_list_peek_continue(body, strlen(body))); /* the last page */
  with = malloc(strlen(body) + 64);
  assert_non_null(with);
  {
    const char *at = strstr(body, "\"resourceVersion\":\"222\"");
    assert_non_null(at);
    at += strlen("\"resourceVersion\":\"222\"");
    sprintf(with, "%.*s,\"continue\":\"tok-2\"%s", (int)(at - body), body, at);
  }
  got = gs__kube_list_peek_continue(with, strlen(with));
  assert_non_null(got);
  assert_string_equal(got, "tok-2");
  free(got);
  /* The token is read without reading beyond it: a cut after metadata
   * still gives it. */
  got = gs__kube_list_peek_continue(with, (size_t)(strstr(with, "\"items\"") - with));
  assert_non_null(got);
  assert_string_equal(got, "tok-2");
  free(got);
  free(with);
  assert_null(gs__kube_list_peek_continue(NULL, 0));
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    got = gs__kube_list_peek_continue(cases[i].text, strlen(cases[i].text));
    if (cases[i].want == NULL) {
      if (got != NULL)
        fail_msg("case %zu: got \"%s\", want none", i, got);
    } else {
      if (got == NULL)
        fail_msg("case %zu: got none, want \"%s\"", i, cases[i].want);
      assert_string_equal(got, cases[i].want);
    }
    free(got);
    /* Every truncation: a token only if the whole metadata was there. */
    for (size_t cut = 0; cut < strlen(cases[i].text); cut++) {
      got = gs__kube_list_peek_continue(cases[i].text, cut);
      if (got != NULL)
        assert_string_equal(got, cases[i].want);
      free(got);
    }
  }
  free(raw);
}

GS_TEST_MAIN(NULL, NULL,
             cmocka_unit_test(test_ndjson_fixture_every_split),
             cmocka_unit_test(test_ndjson_crlf_blank_cap_stop),
             cmocka_unit_test(test_status_fixture),
             cmocka_unit_test(test_status_other),
             cmocka_unit_test(test_url_building),
             cmocka_unit_test(test_retry_after),
             cmocka_unit_test(test_microtime),
             cmocka_unit_test(test_uuid),
             cmocka_unit_test(test_backoff),
             cmocka_unit_test(test_lease_decide),
             cmocka_unit_test(test_lease_json),
             cmocka_unit_test(test_list_peek_continue))
