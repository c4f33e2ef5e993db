/* The apiserver connection (docs/kube-protocol.md §D): in-cluster or kubeconfig,
 * TLS, bearer tokens re-read from their file, and one HTTP request over a
 * thread-owned libcurl handle. Retry policy lives with the callers (bind
 * has a time budget, informers retry forever). */
#include "kube_int.h"
#include <gpushare/alloc.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#define TOKEN_REREAD_MS 60000 /* client-go's cached file token source: 1 min */
#define DEFAULT_SA_DIR "/var/run/secrets/kubernetes.io/serviceaccount"

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc = CURLE_OK;

static void curl_init_once(void) {
  curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

static enum gs_err global_init(void) {
  pthread_once(&curl_once, curl_init_once);
  return curl_init_rc == CURLE_OK ? GS_EOK : GS_EIO;
}

/* ---- files ------------------------------------------------------------- */

/* Reads a whole small file (re-opened each time: the service-account
 * files are symlinks swapped atomically). */
static enum gs_err read_file(const char *path, size_t max, char **ret, size_t *ret_len) {
  FILE *f = fopen(path, "rb");
  struct gs_buf b = {.max = max};
  char chunk[4096];
  size_t n;
  enum gs_err e = GS_EOK;
  if (f == NULL)
    return GS_EIO;
  while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
    if ((e = gs_buf_add(&b, chunk, n)) != GS_EOK)
      break;
  if (e == GS_EOK && ferror(f))
    e = GS_EIO;
  fclose(f);
  if (e == GS_EOK && b.p == NULL)
    e = gs_buf_add(&b, "", 0);
  if (e != GS_EOK) {
    gs_buf_release(&b);
    return e;
  }
  *ret = b.p;
  if (ret_len != NULL)
    *ret_len = b.len;
  return GS_EOK;
}

static char *trim(char *s) {
  char *end;
  while (*s == ' ' || *s == '\t' || *s == '\r' || *s == '\n')
    s++;
  end = s + strlen(s);
  while (end > s && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r' || end[-1] == '\n'))
    *--end = '\0';
  return s;
}

/* The token in the file, trimmed; malloc'd. */
static enum gs_err read_token(const char *path, char **ret) {
  char *raw, *t, *copy;
  enum gs_err e = read_file(path, GS_KUBE_TOKEN_MAX, &raw, NULL);
  if (e != GS_EOK)
    return e;
  t = trim(raw);
  copy = gs_strdup(t);
  gs_free(raw);
  if (copy == NULL)
    return GS_ENOMEM;
  if (copy[0] == '\0') {
    gs_free(copy);
    return GS_EPARSE;
  }
  *ret = copy;
  return GS_EOK;
}

/* Current bearer token (malloc'd, NULL for none). force: re-read now. */
static char *token_get(struct gs__kube_conn *c, bool force) {
  char *out = NULL;
  if (c->token_static != NULL)
    return gs_strdup(c->token_static);
  if (c->token_file == NULL)
    return NULL;
  pthread_mutex_lock(&c->token_mu);
  if (force || c->token_cached == NULL || gs__kube_now_ms() - c->token_read_ms >= TOKEN_REREAD_MS) {
    char *fresh = NULL;
    enum gs_err e = read_token(c->token_file, &fresh);
    if (e == GS_EOK) {
      gs_free(c->token_cached);
      c->token_cached = fresh;
      c->token_read_ms = gs__kube_now_ms();
    } else {
      gs__kube_log(GS_LVL_WARN, "cannot read token file", "path=%s err=%s", c->token_file,
                   gs_strerror(e));
    }
  }
  if (c->token_cached != NULL)
    out = gs_strdup(c->token_cached);
  pthread_mutex_unlock(&c->token_mu);
  return out;
}

/* ---- connection set-up -------------------------------------------------- */

static void conn_common(struct gs__kube_conn *c) {
  snprintf(c->user_agent, sizeof c->user_agent, "gpushare-extender/%s", GS_VERSION);
  if (c->request_timeout_s <= 0)
    c->request_timeout_s = 10;
  if (!c->token_mu_init) {
    pthread_mutex_init(&c->token_mu, NULL);
    c->token_mu_init = true;
  }
}

static enum gs_err dup_to(char **dst, const char *src) {
  if (src == NULL || src[0] == '\0')
    return GS_EOK;
  *dst = gs_strdup(src);
  return *dst ? GS_EOK : GS_ENOMEM;
}

static enum gs_err blob_to(char **dst, size_t *dst_len, const char *src, size_t len) {
  if (src == NULL || len == 0)
    return GS_EOK;
  *dst = gs_malloc(len);
  if (*dst == NULL)
    return GS_ENOMEM;
  memcpy(*dst, src, len);
  *dst_len = len;
  return GS_EOK;
}

enum gs_err gs__kube_conn_incluster(struct gs__kube_conn *c, const char *sa_dir,
                                    struct gs_diag *diag) {
  char url[512], path[4096];
  const char *host = getenv("KUBERNETES_SERVICE_HOST"), *port = getenv("KUBERNETES_SERVICE_PORT");
  char *tok = NULL;
  struct stat st;
  enum gs_err e;
  if ((e = global_init()) != GS_EOK) {
    gs_diag_set(diag, "libcurl", "curl_global_init failed");
    return e;
  }
  conn_common(c);
  if (sa_dir == NULL || sa_dir[0] == '\0')
    sa_dir = DEFAULT_SA_DIR;
  if (gs__kube_incluster_url(host, port, url, sizeof url) != GS_EOK) {
    gs_diag_set(diag, "in-cluster",
                "unable to load in-cluster configuration, KUBERNETES_SERVICE_HOST and "
                "KUBERNETES_SERVICE_PORT must be defined");
    return GS_EINVAL;
  }
  if ((c->base = gs_strdup(url)) == NULL)
    return GS_ENOMEM;
  snprintf(path, sizeof path, "%s/token", sa_dir);
  if ((e = read_token(path, &tok)) != GS_EOK) {
    gs_diag_set(diag, path, "cannot read the service-account token: %s", gs_strerror(e));
    return e == GS_EPARSE ? GS_EINVAL : GS_EIO;
  }
  gs_free(tok);
  if ((e = dup_to(&c->token_file, path)) != GS_EOK)
    return e;
  snprintf(path, sizeof path, "%s/ca.crt", sa_dir);
  if (stat(path, &st) == 0) {
    if ((e = dup_to(&c->ca_file, path)) != GS_EOK)
      return e;
  } else {
    /* As client-go: log and fall back to the system roots. */
    gs__kube_log(GS_LVL_WARN, "no service-account CA, using system roots", "path=%s", path);
  }
  return GS_EOK;
}

/* tls-server-name: the URL names the server by that name (SNI and
 * certificate check), CURLOPT_CONNECT_TO sends the connection to the real
 * host. */
static enum gs_err set_server(struct gs__kube_conn *c, const char *server, const char *sni,
                              struct gs_diag *diag) {
  CURLU *u = curl_url();
  char *scheme = NULL, *host = NULL, *port = NULL, *full = NULL;
  enum gs_err e = GS_EOK;
  size_t n;
  if (u == NULL)
    return GS_ENOMEM;
  if (curl_url_set(u, CURLUPART_URL, server, 0) != CURLUE_OK ||
      curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
      curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK ||
      curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) != CURLUE_OK ||
      (strcasecmp(scheme, "https") != 0 && strcasecmp(scheme, "http") != 0)) {
    gs_diag_set(diag, "cluster.server", "invalid server URL \"%s\"", server);
    e = GS_EINVAL;
    goto out;
  }
  if (sni != NULL && sni[0] != '\0') {
    char map[1024];
    struct curl_slist *l;
    snprintf(map, sizeof map, "%s:%s:%s:%s", sni, port, host, port);
    if ((l = curl_slist_append(NULL, map)) == NULL) {
      e = GS_ENOMEM;
      goto out;
    }
    c->connect_to = l;
    if (curl_url_set(u, CURLUPART_HOST, sni, 0) != CURLUE_OK) {
      gs_diag_set(diag, "cluster.tls-server-name", "invalid tls-server-name \"%s\"", sni);
      e = GS_EINVAL;
      goto out;
    }
  }
  if (curl_url_get(u, CURLUPART_URL, &full, 0) != CURLUE_OK) {
    e = GS_EINVAL;
    goto out;
  }
  if ((c->base = gs_strdup(full)) == NULL) {
    e = GS_ENOMEM;
    goto out;
  }
  n = strlen(c->base);
  while (n > 0 && c->base[n - 1] == '/')
    c->base[--n] = '\0';
out:
  curl_free(scheme);
  curl_free(host);
  curl_free(port);
  curl_free(full);
  curl_url_cleanup(u);
  return e;
}

enum gs_err gs__kube_conn_kubeconfig(struct gs__kube_conn *c, const char *path,
                                     struct gs_diag *diag) {
  struct gs_kubeconfig *kc;
  enum gs_err e;
  if ((e = global_init()) != GS_EOK) {
    gs_diag_set(diag, "libcurl", "curl_global_init failed");
    return e;
  }
  conn_common(c);
  kc = gs_calloc(1, sizeof *kc); /* ~30 KiB: not on a thread's stack */
  if (kc == NULL)
    return GS_ENOMEM;
  if ((e = gs_kubeconfig_load(path, kc, diag)) != GS_EOK) {
    gs_free(kc);
    return e;
  }
  if (kc->server[0] == '\0') {
    gs_diag_set(diag, path, "the current context's cluster has no server");
    e = GS_EINVAL;
    goto out;
  }
  if ((e = set_server(c, kc->server, kc->tls_server_name, diag)) != GS_EOK)
    goto out;
  c->insecure = kc->insecure;
  if ((e = dup_to(&c->ca_file, kc->ca_file)) != GS_EOK ||
      (e = blob_to(&c->ca_blob, &c->ca_blob_len, kc->ca_data, kc->ca_data_len)) != GS_EOK ||
      (e = dup_to(&c->cert_file, kc->cert_file)) != GS_EOK ||
      (e = blob_to(&c->cert_blob, &c->cert_blob_len, kc->cert_data, kc->cert_data_len)) !=
          GS_EOK ||
      (e = dup_to(&c->key_file, kc->key_file)) != GS_EOK ||
      (e = blob_to(&c->key_blob, &c->key_blob_len, kc->key_data, kc->key_data_len)) != GS_EOK)
    goto out;
  if (kc->token[0] != '\0') {
    e = dup_to(&c->token_static, kc->token);
  } else if (kc->token_file[0] != '\0') {
    char *tok = NULL;
    if ((e = read_token(kc->token_file, &tok)) != GS_EOK) {
      gs_diag_set(diag, kc->token_file, "cannot read tokenFile: %s", gs_strerror(e));
      e = e == GS_EPARSE ? GS_EINVAL : GS_EIO;
      goto out;
    }
    gs_free(tok);
    e = dup_to(&c->token_file, kc->token_file);
  }
out:
  gs_kubeconfig_release(kc);
  gs_free(kc);
  return e;
}

void gs__kube_conn_release(struct gs__kube_conn *c) {
  if (c == NULL)
    return;
  gs_free(c->base);
  curl_slist_free_all(c->connect_to);
  gs_free(c->ca_file);
  gs_free(c->ca_blob);
  gs_free(c->cert_file);
  gs_free(c->key_file);
  gs_free(c->cert_blob);
  gs_free(c->key_blob);
  gs_free(c->token_static);
  gs_free(c->token_file);
  gs_free(c->token_cached);
  if (c->token_mu_init)
    pthread_mutex_destroy(&c->token_mu);
  memset(c, 0, sizeof *c);
}

/* ---- handles ------------------------------------------------------------- */

enum gs_err gs__kube_handle_init(struct gs__kube_handle *h, bool with_multi) {
  memset(h, 0, sizeof *h);
  if (global_init() != GS_EOK)
    return GS_EIO;
  if ((h->easy = curl_easy_init()) == NULL)
    return GS_ENOMEM;
  if (with_multi && (h->multi = curl_multi_init()) == NULL) {
    curl_easy_cleanup(h->easy);
    h->easy = NULL;
    return GS_ENOMEM;
  }
  return GS_EOK;
}

void gs__kube_handle_release(struct gs__kube_handle *h) {
  if (h == NULL)
    return;
  if (h->easy != NULL)
    curl_easy_cleanup(h->easy);
  if (h->multi != NULL)
    curl_multi_cleanup(h->multi);
  h->easy = NULL;
  h->multi = NULL;
}

void gs__kube_handle_wake(struct gs__kube_handle *h) {
  if (h->multi != NULL)
    curl_multi_wakeup(h->multi);
}

/* ---- one request --------------------------------------------------------- */

struct xfer {
  struct gs__kube_handle *h;
  const struct gs__kube_req *req;
  struct gs__kube_resp *resp;
  bool too_big, stopped;
};

static size_t on_write(char *data, size_t size, size_t nmemb, void *userp) {
  struct xfer *x = userp;
  size_t n = size * nmemb;
  long code = 0;
  curl_easy_getinfo(x->h->easy, CURLINFO_RESPONSE_CODE, &code);
  if (x->req->stream != NULL && code == 200) {
    if (!x->req->stream(x->req->stream_ctx, data, n)) {
      x->stopped = true;
      return 0;
    }
    return n;
  }
  if (gs_buf_add(&x->resp->body, data, n) != GS_EOK) {
    x->too_big = true;
    return 0;
  }
  return n;
}

static size_t on_header(char *data, size_t size, size_t nmemb, void *userp) {
  struct xfer *x = userp;
  size_t n = size * nmemb;
  static const char name[] = "retry-after:";
  if (n > sizeof name - 1 && n < 256 && strncasecmp(data, name, sizeof name - 1) == 0) {
    char v[256];
    memcpy(v, data + sizeof name - 1, n - (sizeof name - 1));
    v[n - (sizeof name - 1)] = '\0';
    x->resp->retry_after_s = gs__kube_retry_after_parse(v);
  }
  return n;
}

static int on_progress(void *userp, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                       curl_off_t ulnow) {
  struct xfer *x = userp;
  (void)dltotal, (void)dlnow, (void)ultotal, (void)ulnow;
  if (x->h->abort != NULL && x->h->abort(x->h->abort_ctx)) {
    x->stopped = true;
    return 1;
  }
  return 0;
}

static CURLcode perform(struct xfer *x) {
  struct gs__kube_handle *h = x->h;
  CURLcode cc = CURLE_OK;
  CURLMsg *msg;
  int running = 1, left;
  if (h->multi == NULL)
    return curl_easy_perform(h->easy);
  if (curl_multi_add_handle(h->multi, h->easy) != CURLM_OK)
    return CURLE_OUT_OF_MEMORY;
  for (;;) {
    if (curl_multi_perform(h->multi, &running) != CURLM_OK) {
      cc = CURLE_RECV_ERROR;
      break;
    }
    if (running == 0)
      break;
    if (h->abort != NULL && h->abort(h->abort_ctx)) {
      x->stopped = true;
      cc = CURLE_ABORTED_BY_CALLBACK;
      break;
    }
    curl_multi_poll(h->multi, NULL, 0, 1000, NULL);
  }
  if (running == 0) {
    cc = CURLE_RECV_ERROR;
    while ((msg = curl_multi_info_read(h->multi, &left)) != NULL)
      if (msg->msg == CURLMSG_DONE && msg->easy_handle == h->easy)
        cc = msg->data.result;
  }
  curl_multi_remove_handle(h->multi, h->easy);
  return cc;
}

static enum gs_err attempt(struct gs__kube_conn *c, struct gs__kube_handle *h,
                           const struct gs__kube_req *req, struct gs__kube_resp *resp,
                           bool force_token) {
  struct xfer x = {.h = h, .req = req, .resp = resp};
  struct curl_slist *hdr = NULL, *l;
  struct gs_buf url = {.max = 64 * 1024};
  char *token = token_get(c, force_token), *auth = NULL;
  CURL *e = h->easy;
  enum gs_err err = GS_EOK;
  CURLcode cc;

  gs_buf_clear(&resp->body); /* a list reuses one buffer for its pages */
  resp->body.max = req->body_max ? req->body_max : GS_KUBE_BODY_MAX;
  resp->code = 0;
  resp->retry_after_s = -1;
  resp->aborted = false;
  resp->error[0] = '\0';

  if (gs_buf_str(&url, c->base) != GS_EOK || gs_buf_str(&url, req->path) != GS_EOK) {
    err = GS_ETOOBIG;
    goto out;
  }
  l = curl_slist_append(hdr, "Accept: application/json");
  if (l != NULL)
    l = curl_slist_append(hdr = l, "Expect:");
  if (l != NULL && req->body != NULL)
    l = curl_slist_append(hdr = l, req->content_type != NULL &&
                                           strcmp(req->content_type, "application/merge-patch+json") == 0
                                       ? "Content-Type: application/merge-patch+json"
                                       : "Content-Type: application/json");
  if (l != NULL && token != NULL) {
    size_t n = strlen(token) + 32;
    if ((auth = gs_malloc(n)) == NULL) {
      err = GS_ENOMEM;
      goto out;
    }
    snprintf(auth, n, "Authorization: Bearer %s", token);
    l = curl_slist_append(hdr = l, auth);
  }
  if (l == NULL) {
    err = GS_ENOMEM;
    goto out;
  }
  hdr = l;

  /* Reset keeps the connection, DNS and TLS session caches. */
  curl_easy_reset(e);
  curl_easy_setopt(e, CURLOPT_URL, url.p);
  curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(e, CURLOPT_USERAGENT, c->user_agent);
  curl_easy_setopt(e, CURLOPT_HTTPHEADER, hdr);
  curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, "");
  curl_easy_setopt(e, CURLOPT_ERRORBUFFER, resp->error);
  curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
  if (req->timeout_ms > 0) {
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, req->timeout_ms);
    if (req->timeout_ms < 10000)
      curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, req->timeout_ms);
  }
  if (req->low_speed_s > 0) {
    curl_easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(e, CURLOPT_LOW_SPEED_TIME, req->low_speed_s);
  }
  curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
  curl_easy_setopt(e, CURLOPT_TCP_KEEPIDLE, 30L);
  curl_easy_setopt(e, CURLOPT_TCP_KEEPINTVL, 15L);
  curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, c->insecure ? 0L : 1L);
  curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, c->insecure ? 0L : 2L);
  if (c->ca_blob != NULL) {
    struct curl_blob b = {.data = c->ca_blob, .len = c->ca_blob_len, .flags = CURL_BLOB_COPY};
    curl_easy_setopt(e, CURLOPT_CAINFO_BLOB, &b);
  } else if (c->ca_file != NULL) {
    curl_easy_setopt(e, CURLOPT_CAINFO, c->ca_file);
  }
  if (c->cert_blob != NULL) {
    struct curl_blob b = {.data = c->cert_blob, .len = c->cert_blob_len, .flags = CURL_BLOB_COPY};
    curl_easy_setopt(e, CURLOPT_SSLCERT_BLOB, &b);
  } else if (c->cert_file != NULL) {
    curl_easy_setopt(e, CURLOPT_SSLCERT, c->cert_file);
  }
  if (c->key_blob != NULL) {
    struct curl_blob b = {.data = c->key_blob, .len = c->key_blob_len, .flags = CURL_BLOB_COPY};
    curl_easy_setopt(e, CURLOPT_SSLKEY_BLOB, &b);
  } else if (c->key_file != NULL) {
    curl_easy_setopt(e, CURLOPT_SSLKEY, c->key_file);
  }
  if (c->connect_to != NULL)
    curl_easy_setopt(e, CURLOPT_CONNECT_TO, c->connect_to);
  if (strcmp(req->method, "GET") != 0)
    curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, req->method);
  if (req->body != NULL) {
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, req->body);
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(req->body));
  }
  curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_write);
  curl_easy_setopt(e, CURLOPT_WRITEDATA, &x);
  curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(e, CURLOPT_HEADERDATA, &x);
  curl_easy_setopt(e, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(e, CURLOPT_XFERINFOFUNCTION, on_progress);
  curl_easy_setopt(e, CURLOPT_XFERINFODATA, &x);

  cc = perform(&x);
  resp->cc = cc;
  curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &resp->code);
  if (x.stopped) {
    resp->aborted = true;
    err = GS_EAGAIN;
  } else if (x.too_big) {
    err = GS_ETOOBIG;
  } else if (cc == CURLE_OPERATION_TIMEDOUT) {
    err = GS_ETIMEOUT;
  } else if (cc != CURLE_OK) {
    err = GS_EIO;
  }
  if (cc != CURLE_OK && resp->error[0] == '\0')
    snprintf(resp->error, sizeof resp->error, "%s", curl_easy_strerror(cc));
  /* The options point into this frame: drop them before it goes. */
  curl_easy_setopt(e, CURLOPT_HTTPHEADER, NULL);
  curl_easy_setopt(e, CURLOPT_ERRORBUFFER, NULL);
  curl_easy_setopt(e, CURLOPT_WRITEDATA, NULL);
  curl_easy_setopt(e, CURLOPT_HEADERDATA, NULL);
  curl_easy_setopt(e, CURLOPT_XFERINFODATA, NULL);
out:
  curl_slist_free_all(hdr);
  gs_free(auth);
  if (token != NULL) {
    memset(token, 0, strlen(token));
    gs_free(token);
  }
  gs_buf_release(&url);
  return err;
}

enum gs_err gs__kube_do(struct gs__kube_conn *c, struct gs__kube_handle *h,
                        const struct gs__kube_req *req, struct gs__kube_resp *ret) {
  enum gs_err e = attempt(c, h, req, ret, false);
  /* An expired projected token: re-read the file and retry once (§D.1). */
  if (e == GS_EOK && ret->code == 401 && c->token_file != NULL) {
    gs__kube_log(GS_LVL_INFO, "401 from apiserver, re-reading token", "path=%s",
                 c->token_file);
    e = attempt(c, h, req, ret, true);
  }
  /* 404, 409 and 410 are answers the callers expect, not failures. */
  if ((e != GS_EOK && e != GS_EAGAIN) ||
      (e == GS_EOK && ret->code >= 400 && ret->code != 404 && ret->code != 409 &&
       ret->code != 410))
    atomic_fetch_add(&c->errors, 1);
  return e;
}

void gs__kube_resp_release(struct gs__kube_resp *r) {
  if (r == NULL)
    return;
  gs_buf_release(&r->body);
}
