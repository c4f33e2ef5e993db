/* Informers: list (paged) + watch, modelled on client-go's Reflector
 * (docs/kube-protocol.md §C.3, §C.4). Each keeps a cache keyed by namespace/name,
 * so a relist reports objects gone since (or replaced under the same name,
 * by uid) as deletions. Events reach the sink under k->sink_mu, in order.
 * One file of a little over 800 lines: the paged list, the watch and the
 * cache they both keep are one state machine, as client-go's Reflector is. */
#include "arena.h"
#include <gpushare/alloc.h>
#include "kube_entry.h"
#include "kube_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#define LIST_TIMEOUT_MIN_MS 60000 /* one page of a big list may be slow */
#define LIST_ARENA_CHUNK (1u << 20) /* grows to what one page's parse needs */
#define LIST_TRIM_MIN (8u << 20)     /* parse memory after which a list trims the heap */

/* ---- small JSON helpers --------------------------------------------------- */

static const char *meta_str(const json_t *obj, const char *key) {
  const json_t *v = json_object_get(json_object_get(obj, "metadata"), key);
  return json_is_string(v) ? json_string_value(v) : NULL;
}

static bool str_eq(const char *a, const char *b) {
  if (a == NULL || b == NULL)
    return a == b;
  return strcmp(a, b) == 0;
}

/* "ns/name" or "name"; false when the object has no name. */
static bool object_key(const struct gs__informer *inf, const json_t *obj, char *out, size_t cap) {
  const char *name = meta_str(obj, "name"), *ns = meta_str(obj, "namespace");
  int n;
  if (name == NULL || name[0] == '\0')
    return false;
  if (inf->kind == GS__INF_NODES || inf->kind == GS__INF_SLICES)
    n = snprintf(out, cap, "%s", name);
  else
    n = snprintf(out, cap, "%s/%s", ns ? ns : "", name);
  return n > 0 && (size_t)n < cap;
}

static bool wanted(const struct gs__informer *inf, const json_t *obj) {
  const char *name;
  if (inf->name_prefix == NULL)
    return true;
  name = meta_str(obj, "name");
  return name != NULL && strncmp(name, inf->name_prefix, strlen(inf->name_prefix)) == 0;
}

/* ---- compact cache entries -------------------------------------------------
 *
 * Pods and nodes are cached as compact entries (kube_entry.h); the sink
 * always gets the object whole, as it arrives. A pending pod (no nodeName)
 * is cached whole: bind decodes its request from it. */

static const char *spec_node(const json_t *obj) {
  const json_t *v = json_object_get(json_object_get(obj, "spec"), "nodeName");
  return json_is_string(v) ? json_string_value(v) : NULL;
}

/* Field i of two entries (either form) equal; absent equals absent. */
static bool ids_eq(const struct gs__entry_ids *a, const struct gs__entry_ids *b, int i) {
  if (a->f[i] == NULL || b->f[i] == NULL)
    return a->f[i] == b->f[i];
  return a->len[i] == b->len[i] && memcmp(a->f[i], b->f[i], a->len[i]) == 0;
}

/* A reference to obj that may be kept: obj itself, or a copy when obj lives
 * in a list page's arena (nothing of a page outlives it, arena.h). */
static json_t *keepable(json_t *obj, const struct gs_arena *arena) {
  if (arena != NULL && gs_arena_owns(arena, obj))
    return json_deep_copy(obj);
  return json_incref(obj);
}

/* What the cache keeps of obj: a new reference (arena: the page's, or
 * NULL). */
static json_t *cache_form(const struct gs__informer *inf, json_t *obj,
                          const struct gs_arena *arena) {
  json_t *entry;
  if (inf->kind != GS__INF_PODS && inf->kind != GS__INF_NODES)
    return keepable(obj, arena);
  if (inf->kind == GS__INF_PODS && (spec_node(obj) == NULL || spec_node(obj)[0] == '\0'))
    return keepable(obj, arena); /* pending: bind needs it whole */
  entry = gs__entry_compact(obj, inf->kind == GS__INF_PODS ? GS__ENTRY_FIELDS
                                                           : GS__ENTRY_NODE_FIELDS);
  return entry != NULL ? entry : keepable(obj, arena); /* cannot be split back: whole */
}

/* A cache entry back as an object with what it kept (new reference). */
static json_t *expand(const struct gs__informer *inf, const char *key, const json_t *e) {
  if (!json_is_string(e))
    return json_incref((json_t *)e);
  return gs__entry_expand(key, e, inf->item_kind, inf->kind == GS__INF_PODS);
}

/* ---- delivery ------------------------------------------------------------- */

typedef void (*obj_hook)(void *ctx, const json_t *obj);

/* The sink's hooks for the informer's kind (NULL: the sink takes none); a
 * node's delete goes by name (deliver_delete). */
static void sink_hooks(const struct gs__informer *inf, obj_hook *ret_upsert,
                       obj_hook *ret_delete) {
  const struct gs_cluster_sink *s = &inf->k->sink;
  switch (inf->kind) {
  case GS__INF_NODES:
    *ret_upsert = s->node_upsert;
    *ret_delete = NULL;
    break;
  case GS__INF_PODS:
    *ret_upsert = s->pod_upsert;
    *ret_delete = s->pod_delete;
    break;
  case GS__INF_SLICES:
    *ret_upsert = s->slice_upsert;
    *ret_delete = s->slice_delete;
    break;
  case GS__INF_CLAIMS:
    *ret_upsert = s->claim_upsert;
    *ret_delete = s->claim_delete;
    break;
  case GS__INF_PDBS:
    *ret_upsert = s->pdb_upsert;
    *ret_delete = s->pdb_delete;
    break;
  default:
    *ret_upsert = s->configmap_upsert;
    *ret_delete = s->configmap_delete;
    break;
  }
}

static void deliver_upsert(struct gs__informer *inf, const json_t *obj) {
  obj_hook upsert, del;
  sink_hooks(inf, &upsert, &del);
  if (upsert != NULL)
    upsert(inf->k->sink.ctx, obj);
}

static void deliver_delete(struct gs__informer *inf, const json_t *obj) {
  const struct gs_cluster_sink *s = &inf->k->sink;
  obj_hook upsert, del;
  if (inf->kind == GS__INF_NODES) {
    if (s->node_delete && meta_str(obj, "name") != NULL)
      s->node_delete(s->ctx, meta_str(obj, "name"));
    return;
  }
  sink_hooks(inf, &upsert, &del);
  if (del != NULL)
    del(s->ctx, obj);
}

/* ---- set-up ----------------------------------------------------------------- */

/* What each kind lists and watches; the ConfigMap kinds' path names their
 * namespace (gs__informer_init). */
static const struct {
  const char *resource, *item_kind, *path;
} kinds[GS__INF_COUNT] = {
    [GS__INF_NODES] = {"nodes", "Node", "/api/v1/nodes"},
    [GS__INF_PODS] = {"pods", "Pod", "/api/v1/pods"},
    [GS__INF_CM_GPUSHARE] = {"configmaps", "ConfigMap", NULL},
    [GS__INF_CM_UNHEALTHY] = {"configmaps", "ConfigMap", NULL},
    [GS__INF_SLICES] = {"resourceslices", "ResourceSlice",
                        "/apis/resource.k8s.io/v1/resourceslices"},
    [GS__INF_CLAIMS] = {"resourceclaims", "ResourceClaim",
                        "/apis/resource.k8s.io/v1/resourceclaims"},
    [GS__INF_PDBS] = {"poddisruptionbudgets", "PodDisruptionBudget",
                      "/apis/policy/v1/poddisruptionbudgets"},
};

/* A ConfigMap kind's path (its namespace's configmaps) and selection: the
 * gpushare ConfigMap by name, the unhealthy-gpu-* ones by prefix. */
static enum gs_err configmaps_init(struct gs__informer *inf, struct gs_buf *b) {
  const struct gs__kube *k = inf->k;
  bool ours = inf->kind == GS__INF_CM_GPUSHARE;
  enum gs_err e;
  size_t n;

  if ((e = gs_buf_str(b, "/api/v1/namespaces/")) != GS_EOK ||
      (e = gs__kube_escape(b, ours ? k->cm_ns : "kube-system")) != GS_EOK ||
      (e = gs_buf_str(b, "/configmaps")) != GS_EOK)
    return e;
  if (!ours) {
    inf->name_prefix = GS_KUBE_UNHEALTHY_PREFIX;
    return GS_EOK;
  }
  n = strlen(k->cm_name) + sizeof "metadata.name=";
  if ((inf->field_selector = gs_malloc(n)) == NULL)
    return GS_ENOMEM;
  snprintf(inf->field_selector, n, "metadata.name=%s", k->cm_name);
  return GS_EOK;
}

enum gs_err gs__informer_init(struct gs__informer *inf, struct gs__kube *k,
                              enum gs__inf_kind kind) {
  struct gs_buf b = {.max = 4096};
  enum gs_err e = GS_EOK;
  memset(inf, 0, sizeof *inf);
  inf->k = k;
  inf->kind = kind;
  pthread_mutex_init(&inf->mu, NULL);
  gs__ndjson_init(&inf->nd, GS_KUBE_EVENT_MAX);
  gs__backoff_init(&inf->bo, k->bo_initial_ms, k->bo_max_ms);
  atomic_init(&inf->relist_req, 0);
  if ((inf->cache = json_object()) == NULL)
    return GS_ENOMEM;
  if ((unsigned)kind >= GS__INF_COUNT)
    return GS_EINVAL;
  inf->resource = kinds[kind].resource;
  inf->item_kind = kinds[kind].item_kind;
  e = kinds[kind].path != NULL ? gs_buf_str(&b, kinds[kind].path) : configmaps_init(inf, &b);
  if (e == GS_EOK)
    inf->path = b.p;
  else
    gs_buf_release(&b);
  return e;
}

void gs__informer_release(struct gs__informer *inf) {
  if (inf->k == NULL)
    return;
  gs__kube_handle_release(&inf->h);
  gs__ndjson_release(&inf->nd);
  json_decref(inf->cache);
  gs_free(inf->path);
  gs_free(inf->field_selector);
  pthread_mutex_destroy(&inf->mu);
  memset(inf, 0, sizeof *inf);
}

json_t *gs__informer_get(struct gs__informer *inf, const char *key) {
  json_t *e, *obj = NULL;
  pthread_mutex_lock(&inf->mu);
  e = json_object_get(inf->cache, key);
  /* Callers run on other threads: they get their own copy, never a shared
   * reference (jansson's refcount check in json_incref is not atomic). */
  if (e != NULL)
    obj = json_is_string(e) ? expand(inf, key, e) : json_deep_copy(e);
  pthread_mutex_unlock(&inf->mu);
  return obj;
}

static bool inf_abort(void *ctx) {
  struct gs__informer *inf = ctx;
  return gs__kube_stopping(inf->k) || atomic_load(&inf->relist_req) != inf->cur_gen;
}

/* ---- list ---------------------------------------------------------------- */

/* ABSENT: the apiserver does not serve the resource (404 on a DRA list):
 * listed as empty, asked again later (docs/dra.md). */
enum outcome { OK_, STOPPED, RETRY, RELIST, ABSENT };
#define ABSENT_RELIST_MS 60000

static void log_status(const struct gs__informer *inf, const char *what,
                       const struct gs__kube_resp *resp) {
  struct gs__kube_status st;
  gs__kube_status_decode(resp->body.p, resp->body.len, resp->code, &st);
  gs__kube_log(GS_LVL_WARN, what, "resource=%s path=%s code=%ld reason=%s error=\"%s\"",
               inf->resource, inf->path, st.code, st.reason[0] ? st.reason : "-", st.message);
}

/* Sleeps the next backoff (at least retry_after_s); false when stopping. */
static bool back_off(struct gs__informer *inf, long retry_after_s) {
  int64_t ms = gs__backoff_next(&inf->bo, gs__kube_now_ms());
  if (retry_after_s > 0 && ms < retry_after_s * 1000)
    ms = retry_after_s * 1000;
  return gs__kube_sleep(inf->k, ms);
}

/* One page of a list: its request, reply and parse. Made in the list's
 * thread or in a prefetch thread, one at a time (the informer's handle is
 * shared by both). */
struct page_req {
  struct gs__informer *inf;
  struct page_req *next;   /* the slot for the page after this one */
  const char *cont;        /* NULL: the first page */
  char *token;             /* cont when read ahead (owned) */
  long timeout_ms;
  struct gs__kube_resp resp;
  enum gs_err e;
  bool bad_path;
  bool fetching, working;  /* a fetch thread, a worker thread runs */
  pthread_t fetch_thread, work_thread;
  struct gs_arena *arena;  /* the parse's memory; NULL: malloc */
  json_t *doc;             /* the parsed 200 reply, or NULL */
};

static void fetch_page(struct page_req *r) {
  struct gs__informer *inf = r->inf;
  struct gs_buf path = {.max = 64 * 1024};
  struct gs__kube_req req = {.method = "GET", .body_max = GS_KUBE_LIST_MAX,
                             .timeout_ms = r->timeout_ms};
  char limit[16];
  snprintf(limit, sizeof limit, "%d", GS_KUBE_PAGE_LIMIT);
  r->bad_path = gs_buf_str(&path, inf->path) != GS_EOK ||
                gs__kube_query(&path, "limit", limit) != GS_EOK ||
                (inf->field_selector && gs__kube_query(&path, "fieldSelector", inf->field_selector)) ||
                (r->cont && gs__kube_query(&path, "continue", r->cont));
  if (r->bad_path) {
    gs_buf_release(&path);
    r->e = GS_ETOOBIG;
    return;
  }
  req.path = path.p;
  r->e = gs__kube_do(&inf->k->conn, &inf->h, &req, &r->resp);
  gs_buf_release(&path);
}

/* Parsing allocates a block per value; from the arena that is a pointer
 * bump, and the page is freed at once by page_done (docs/benchmarks.md,
 * start-up). */
static void parse_page(struct page_req *r) {
  r->doc = NULL;
  if (r->e != GS_EOK || r->resp.code != 200)
    return;
  gs_arena_enter(r->arena);
  r->doc = json_loadb(r->resp.body.p, r->resp.body.len, 0, NULL);
  gs_arena_leave();
}

/* Frees the parsed page. With an arena every block of it is the arena's
 * (take_page attaches nothing else, and what is kept was copied out):
 * resetting the arena frees it without walking it. */
static void page_done(struct page_req *r) {
  if (r->arena == NULL)
    json_decref(r->doc);
  else
    gs_arena_reset(r->arena);
  r->doc = NULL;
}

static void *fetch_main(void *arg) {
  fetch_page(arg);
  return NULL;
}

/* Asks for the page of token in slot r, in a thread (token is r's). */
static void fetch_ahead(struct page_req *r, char *token) {
  gs_free(r->token);
  r->token = token;
  r->cont = token;
  r->fetching = pthread_create(&r->fetch_thread, NULL, fetch_main, r) == 0;
}

static void fetch_join(struct page_req *r) {
  if (r->fetching)
    pthread_join(r->fetch_thread, NULL);
  r->fetching = false;
}

/* A page whose fetch was started: its reply, then the request for the page
 * after it (its token read ahead), then its parse. */
static void *work_main(void *arg) {
  struct page_req *r = arg;
  char *token;
  fetch_join(r);
  if (r->e == GS_EOK && r->resp.code == 200 &&
      (token = gs__kube_list_peek_continue(r->resp.body.p, r->resp.body.len)) != NULL)
    fetch_ahead(r->next, token);
  parse_page(r);
  return NULL;
}

/* The fetched and parsed page of r (its worker's work, done here when no
 * worker thread could be started). */
static void work_join(struct page_req *r) {
  if (r->working)
    pthread_join(r->work_thread, NULL);
  else
    work_main(r);
  r->working = false;
}

/* Drops the prefetched page r and the request it may have started. */
static void drop_ahead(struct page_req *r) {
  if (r->working) {
    pthread_join(r->work_thread, NULL);
    r->working = false;
  }
  fetch_join(r);
  fetch_join(r->next);
  page_done(r->next);
  page_done(r);
}

/* Adds the parsed page's items to fresh in their cache form, and tells the
 * sink about those that are new or changed against the current cache,
 * whole and at once, so a list never holds every object whole (apply_list
 * reports the ones gone). Sets rv and cont (malloc'd or NULL). Frees the
 * page (page_done): what the cache keeps of it is copied out (cache_form). */
static enum gs_err take_page(struct gs__informer *inf, struct page_req *r, json_t *fresh,
                             char *rv, char **cont) {
  json_t *doc = r->doc, *items, *item;
  struct gs_arena *arena = r->arena;
  const char *v;
  size_t i;
  bool full;
  enum gs_err err = GS_EOK;
  char key[GS_NS_MAX + GS_NAME_MAX + 4];
  *cont = NULL;
  if (doc == NULL) {
    err = GS_EPARSE;
    goto out;
  }
  items = json_object_get(doc, "items");
  if (!json_is_array(items) && !json_is_null(items)) {
    err = GS_EPARSE;
    goto out;
  }
  /* A relist for a leader take-over replays everything, so the new leader
   * can rebuild from it; other relists deliver only what changed. */
  pthread_mutex_lock(&inf->k->mu);
  full = inf->cur_gen != inf->list_gen;
  pthread_mutex_unlock(&inf->k->mu);
  pthread_mutex_lock(&inf->k->sink_mu);
  json_array_foreach(items, i, item) {
    json_t *prev, *prev_obj;
    struct gs__entry_ids a, b;
    if (!json_is_object(item) || !wanted(inf, item) || !object_key(inf, item, key, sizeof key))
      continue;
    /* Items of a list carry no kind/apiVersion; watch objects do. Added
     * from the arena: every block of the page is the arena's. */
    gs_arena_enter(arena);
    if (json_object_get(item, "kind") == NULL)
      json_object_set_new(item, "kind", json_string(inf->item_kind));
    if (json_object_get(item, "apiVersion") == NULL)
      json_object_set_new(item, "apiVersion", json_string("v1"));
    gs_arena_pause(); /* frees of the page's blocks stay no-ops */
    if (json_object_set_new(fresh, key, cache_form(inf, item, arena)) != 0) {
      pthread_mutex_unlock(&inf->k->sink_mu);
      err = GS_ENOMEM;
      goto out;
    }
    pthread_mutex_lock(&inf->mu);
    prev = json_object_get(inf->cache, key);
    prev_obj = prev != NULL ? expand(inf, key, prev) : NULL;
    pthread_mutex_unlock(&inf->mu);
    gs__entry_ids(item, &a);
    if (prev_obj != NULL)
      gs__entry_ids(prev_obj, &b);
    if (prev_obj != NULL && !ids_eq(&a, &b, 0))
      deliver_delete(inf, prev_obj); /* replaced under the same name */
    if (full || prev_obj == NULL || !ids_eq(&a, &b, 0) || !ids_eq(&a, &b, 1))
      deliver_upsert(inf, item); /* the sink keeps nothing of item */
    json_decref(prev_obj);
  }
  pthread_mutex_unlock(&inf->k->sink_mu);
  v = meta_str(doc, "resourceVersion");
  snprintf(rv, GS_KUBE_RV_MAX + 1, "%s", v ? v : "");
  v = meta_str(doc, "continue");
  if (v != NULL && v[0] != '\0' && (*cont = gs_strdup(v)) == NULL)
    err = GS_ENOMEM;
out:
  gs_arena_leave();
  page_done(r);
  return err;
}

/* Replaces the cache with fresh and tells the sink what is gone (new and
 * changed objects were told page by page, take_page). */
static void apply_list(struct gs__informer *inf, json_t *fresh, const char *rv) {
  struct gs__kube *k = inf->k;
  json_t *old, *prev;
  const char *key;
  bool all;
  pthread_mutex_lock(&k->sink_mu);
  pthread_mutex_lock(&inf->mu);
  old = inf->cache;
  inf->cache = fresh;
  snprintf(inf->rv, sizeof inf->rv, "%s", rv);
  pthread_mutex_unlock(&inf->mu);
  json_object_foreach(old, key, prev) {
    if (json_object_get(fresh, key) == NULL) {
      json_t *gone = expand(inf, key, prev);
      if (gone != NULL)
        deliver_delete(inf, gone);
      json_decref(gone);
    }
  }
  pthread_mutex_lock(&k->mu);
  if (!inf->listed) {
    inf->listed = true;
    k->nlisted += inf->kind < GS__INF_PDBS;
  }
  inf->list_gen = inf->cur_gen;
  all = k->nlisted == GS__INF_PDBS && inf->kind < GS__INF_PDBS;
  pthread_cond_broadcast(&k->cond);
  pthread_mutex_unlock(&k->mu);
  if (all && k->sink.synced)
    k->sink.synced(k->sink.ctx);
  pthread_mutex_unlock(&k->sink_mu);
  json_decref(old);
  gs__kube_log(GS_LVL_INFO, "listed", "resource=%s path=%s items=%zu rv=%s", inf->resource,
               inf->path, json_object_size(fresh), rv);
}

/* Lists in pages (limit/continue), as client-go's pager, three pages at a
 * time: while page i is delivered, page i+1 is parsed and page i+2 is
 * asked for, each in its own thread, so the apiserver's time, the parse
 * and the delivery overlap instead of adding up (docs/benchmarks.md,
 * start-up). A page's token is read ahead as soon as it has arrived
 * (gs__kube_list_peek_continue); the token of the delivered page decides:
 * prefetched pages for another token are dropped and the list goes on
 * from the right one. */
#define LIST_SLOTS 3

static enum outcome do_list(struct gs__informer *inf) {
  struct gs__kube *k = inf->k;
  json_t *fresh = json_object();
  char rv[GS_KUBE_RV_MAX + 1] = "", *cont = NULL;
  long timeout_ms = k->conn.request_timeout_s * 1000;
  enum outcome out = RETRY;
  /* Request slots in a ring, each with its reply buffer and its parse
   * arena (without an arena, out of memory, a page is parsed with malloc). */
  struct page_req slot[LIST_SLOTS];
  struct page_req *cur = &slot[0], *ahead;
  bool have = false; /* cur's fetch was started ahead (for cont) */
  size_t held = 0;
  if (fresh == NULL)
    return RETRY;
  inf->cur_gen = atomic_load(&inf->relist_req);
  if (timeout_ms < LIST_TIMEOUT_MIN_MS)
    timeout_ms = LIST_TIMEOUT_MIN_MS;
  memset(slot, 0, sizeof slot);
  for (int i = 0; i < LIST_SLOTS; i++) {
    slot[i].inf = inf;
    slot[i].next = &slot[(i + 1) % LIST_SLOTS];
    slot[i].timeout_ms = timeout_ms;
    slot[i].arena = gs_arena_new(LIST_ARENA_CHUNK);
  }
  for (;;) {
    enum gs_err e;
    bool started;
    if (have) {
      work_join(cur);
    } else {
      cur->cont = cont;
      fetch_page(cur);
      work_main(cur); /* fetch_join of nothing, read ahead, parse */
    }
    have = false;
    e = cur->e;
    ahead = cur->next;
    /* Only a 200 reply is read ahead: on the others nothing is in flight. */
    if (cur->bad_path)
      break;
    if (e == GS_EAGAIN) {
      /* A resync request restarts the list; stop ends it. */
      if (gs__kube_stopping(k)) {
        out = STOPPED;
        break;
      }
      inf->cur_gen = atomic_load(&inf->relist_req);
      json_object_clear(fresh);
      gs_free(cont);
      cont = NULL;
      continue;
    }
    if (e == GS_EOK && cur->resp.code == 410) {
      /* Continue token expired: start over (§C.3). */
      gs__kube_log(GS_LVL_INFO, "list continue expired, restarting", "resource=%s",
                   inf->resource);
      json_object_clear(fresh);
      gs_free(cont);
      cont = NULL;
      continue;
    }
    if (e == GS_EOK && cur->resp.code == 404 &&
        (inf->kind == GS__INF_SLICES || inf->kind == GS__INF_CLAIMS)) {
      json_object_clear(fresh);
      rv[0] = '\0';
      out = ABSENT;
      break;
    }
    if (e != GS_EOK || cur->resp.code != 200) {
      long ra = cur->resp.retry_after_s;
      if (e != GS_EOK)
        gs__kube_log(GS_LVL_WARN, "list failed", "resource=%s path=%s err=%s error=\"%s\"",
                     inf->resource, inf->path, gs_strerror(e), cur->resp.error);
      else
        log_status(inf, "list failed", &cur->resp);
      /* Retry the same page; an expired token comes back as 410. */
      if (!back_off(inf, ra)) {
        out = STOPPED;
        break;
      }
      continue;
    }
    /* The next page arrives and is parsed while this one is delivered
     * (ahead's flags are its worker's until joined: read them before). */
    started = ahead->fetching;
    if (started)
      ahead->working = pthread_create(&ahead->work_thread, NULL, work_main, ahead) == 0;
    gs_free(cont);
    e = take_page(inf, cur, fresh, rv, &cont);
    if (started) {
      if (e == GS_EOK && cont != NULL && strcmp(cont, ahead->token) == 0) {
        cur = ahead;
        have = true;
      } else {
        drop_ahead(ahead);
      }
    }
    if (e != GS_EOK) {
      gs__kube_log(GS_LVL_WARN, "list reply unreadable", "resource=%s err=%s", inf->resource,
                   gs_strerror(e));
      break; /* RETRY */
    }
    if (cont == NULL) {
      out = OK_;
      break;
    }
  }
  /* Nothing is in flight here (a page read ahead was taken or dropped);
   * workers first all the same, as they start fetches. */
  for (int i = 0; i < LIST_SLOTS; i++)
    if (slot[i].working) {
      pthread_join(slot[i].work_thread, NULL);
      slot[i].working = false;
    }
  for (int i = 0; i < LIST_SLOTS; i++)
    fetch_join(&slot[i]);
  for (int i = 0; i < LIST_SLOTS; i++) {
    page_done(&slot[i]);
    gs__kube_resp_release(&slot[i].resp);
    if (slot[i].arena != NULL)
      held += gs_arena_held(slot[i].arena);
    gs_arena_free(slot[i].arena);
    gs_free(slot[i].token);
  }
#if defined(__GLIBC__)
  /* The pages' arenas (megabytes each) are freed, but glibc keeps freed
   * heap memory unless asked: give it back, so that what stays resident is
   * the cache and the ledger (docs/benchmarks.md, memory). */
  if (held >= LIST_TRIM_MIN)
    malloc_trim(0);
#endif
  if (out == OK_ || out == ABSENT) {
    if (out == ABSENT)
      gs__kube_log(GS_LVL_INFO, "resource not served; none assumed", "resource=%s path=%s",
                   inf->resource, inf->path);
    apply_list(inf, fresh, rv); /* takes fresh */
    return out;
  }
  gs_free(cont);
  json_decref(fresh);
  return out;
}

/* ---- watch ------------------------------------------------------------------ */

/* Applies one ADDED/MODIFIED/DELETED object. */
static void apply_event(struct gs__informer *inf, const char *type, json_t *obj) {
  struct gs__kube *k = inf->k;
  char key[GS_NS_MAX + GS_NAME_MAX + 4];
  json_t *prev;
  bool del = strcmp(type, "DELETED") == 0;
  if (!json_is_object(obj) || !object_key(inf, obj, key, sizeof key))
    return;
  if (!wanted(inf, obj))
    return;
  pthread_mutex_lock(&k->sink_mu);
  pthread_mutex_lock(&inf->mu);
  prev = json_object_get(inf->cache, key);
  prev = prev != NULL ? expand(inf, key, prev) : NULL;
  if (del)
    json_object_del(inf->cache, key);
  else
    json_object_set_new(inf->cache, key, cache_form(inf, obj, NULL));
  pthread_mutex_unlock(&inf->mu);
  if (del) {
    deliver_delete(inf, obj);
  } else {
    if (prev != NULL && !str_eq(meta_str(obj, "uid"), meta_str(prev, "uid")))
      deliver_delete(inf, prev);
    deliver_upsert(inf, obj);
  }
  pthread_mutex_unlock(&k->sink_mu);
  json_decref(prev);
}

static void set_rv(struct gs__informer *inf, const json_t *obj) {
  const char *rv = meta_str(obj, "resourceVersion");
  if (rv == NULL || rv[0] == '\0')
    return;
  pthread_mutex_lock(&inf->mu);
  snprintf(inf->rv, sizeof inf->rv, "%s", rv);
  pthread_mutex_unlock(&inf->mu);
}

static bool on_line(void *ctx, const char *line, size_t len) {
  struct gs__informer *inf = ctx;
  json_error_t jerr;
  json_t *ev = json_loadb(line, len, 0, &jerr), *obj;
  const char *type;
  if (ev == NULL || !json_is_string(json_object_get(ev, "type"))) {
    gs__kube_log(GS_LVL_WARN, "bad watch event", "resource=%s error=\"%s\"", inf->resource,
                 ev ? "no type" : jerr.text);
    json_decref(ev);
    inf->w_error = true;
    return false;
  }
  type = json_string_value(json_object_get(ev, "type"));
  obj = json_object_get(ev, "object");
  if (strcmp(type, "ERROR") == 0) {
    struct gs__kube_status st;
    gs__kube_status_from_json(obj, 0, &st);
    if (gs__kube_status_is_expired(&st)) {
      gs__kube_log(GS_LVL_INFO, "watch expired, relisting", "resource=%s error=\"%s\"",
                   inf->resource, st.message);
      inf->w_relist = true;
    } else {
      gs__kube_log(GS_LVL_WARN, "watch error event", "resource=%s code=%ld error=\"%s\"",
                   inf->resource, st.code, st.message);
      inf->w_error = true;
    }
    json_decref(ev);
    return false;
  }
  if (strcmp(type, "ADDED") == 0 || strcmp(type, "MODIFIED") == 0 ||
      strcmp(type, "DELETED") == 0) {
    apply_event(inf, type, obj);
    inf->w_events++;
  }
  if (strcmp(type, "BOOKMARK") == 0)
    inf->w_events++;
  set_rv(inf, obj);
  json_decref(ev);
  return true;
}

static bool on_stream(void *ctx, const char *data, size_t n) {
  struct gs__informer *inf = ctx;
  enum gs_err e = gs__ndjson_feed(&inf->nd, data, n, on_line, inf);
  if (e == GS_ETOOBIG || e == GS_ENOMEM) {
    gs__kube_log(GS_LVL_WARN, "watch event too large", "resource=%s err=%s", inf->resource,
                 gs_strerror(e));
    inf->w_error = true;
  }
  if (e != GS_EOK)
    return false;
  return !inf_abort(inf);
}

static enum outcome do_watch(struct gs__informer *inf) {
  struct gs__kube *k = inf->k;
  struct gs_buf path = {.max = 64 * 1024};
  struct gs__kube_resp resp = {0};
  struct gs__kube_req req = {.method = "GET", .stream = on_stream, .stream_ctx = inf};
  char rv[GS_KUBE_RV_MAX + 1], tmo[16];
  unsigned timeout_s = k->watch_timeout_s;
  int64_t started = gs__kube_now_ms();
  enum gs_err e;
  enum outcome out;
  if (timeout_s == 0)
    timeout_s = 300 + (unsigned)(gs__kube_rand(&inf->bo.rng) % 301);
  pthread_mutex_lock(&inf->mu);
  snprintf(rv, sizeof rv, "%s", inf->rv);
  pthread_mutex_unlock(&inf->mu);
  snprintf(tmo, sizeof tmo, "%u", timeout_s);
  if (gs_buf_str(&path, inf->path) != GS_EOK || gs__kube_query(&path, "watch", "1") ||
      gs__kube_query(&path, "resourceVersion", rv) ||
      gs__kube_query(&path, "allowWatchBookmarks", "true") ||
      gs__kube_query(&path, "timeoutSeconds", tmo) ||
      (inf->field_selector && gs__kube_query(&path, "fieldSelector", inf->field_selector))) {
    gs_buf_release(&path);
    return RETRY;
  }
  req.path = path.p;
  req.timeout_ms = ((long)timeout_s + 60) * 1000;
  req.low_speed_s = (long)timeout_s + 30;
  inf->w_relist = inf->w_error = false;
  inf->w_events = 0;
  gs__ndjson_reset(&inf->nd);
  gs__kube_log(GS_LVL_DEBUG, "watch", "resource=%s rv=%s timeout=%u", inf->resource, rv,
               timeout_s);
  e = gs__kube_do(&k->conn, &inf->h, &req, &resp);
  gs_buf_release(&path);
  if (gs__kube_stopping(k)) {
    out = STOPPED;
  } else if (inf->w_relist || atomic_load(&inf->relist_req) != inf->cur_gen) {
    out = RELIST;
  } else if (inf->w_error) {
    out = RETRY;
  } else if (e == GS_EOK && resp.code == 410) {
    gs__kube_log(GS_LVL_INFO, "watch expired, relisting", "resource=%s", inf->resource);
    out = RELIST;
  } else if (e == GS_EOK && resp.code != 200) {
    log_status(inf, "watch failed", &resp);
    out = RETRY;
  } else if (e != GS_EOK && inf->w_events == 0) {
    gs__kube_log(GS_LVL_WARN, "watch failed", "resource=%s err=%s error=\"%s\"", inf->resource,
                 gs_strerror(e), resp.error);
    out = RETRY;
  } else if (inf->w_events == 0 && gs__kube_now_ms() - started < 1000) {
    /* client-go: a watch closed within a second without events is trouble. */
    gs__kube_log(GS_LVL_DEBUG, "watch closed at once", "resource=%s", inf->resource);
    out = RETRY;
  } else {
    if (gs__ndjson_pending(&inf->nd) > 0)
      gs__kube_log(GS_LVL_DEBUG, "watch ended inside an event", "resource=%s", inf->resource);
    out = OK_;
  }
  if (out == RETRY || out == RELIST)
    atomic_fetch_add(&k->watch_restarts, 1);
  if (out == RETRY && !back_off(inf, resp.retry_after_s))
    out = STOPPED;
  gs__kube_resp_release(&resp);
  return out;
}

void *gs__informer_main(void *arg) {
  struct gs__informer *inf = arg;
  bool need_list = true;
  inf->h.abort = inf_abort;
  inf->h.abort_ctx = inf;
  while (!gs__kube_stopping(inf->k)) {
    enum outcome o;
    if (need_list) {
      o = do_list(inf);
      if (o == STOPPED)
        break;
      if (o == ABSENT) {
        /* nothing to watch: list again later (or when another list ends: a resync) */
        if (!gs__kube_wait(inf->k, ABSENT_RELIST_MS))
          break;
        continue;
      }
      if (o != OK_) {
        if (!back_off(inf, -1))
          break;
        continue;
      }
      need_list = false;
    }
    o = do_watch(inf);
    if (o == STOPPED)
      break;
    if (o == RELIST) {
      need_list = true;
      atomic_fetch_add(&inf->k->relists, 1);
    }
  }
  return NULL;
}

void gs__kube_request_resync(struct gs__kube *k, unsigned gen) {
  for (int i = 0; i < GS__INF_COUNT; i++) {
    atomic_store(&k->inf[i].relist_req, gen);
    gs__kube_handle_wake(&k->inf[i].h);
  }
}

bool gs__kube_resynced(struct gs__kube *k, unsigned gen) {
  bool ok = true;
  pthread_mutex_lock(&k->mu);
  for (int i = 0; i < GS__INF_PDBS; i++) /* the gating ones (kube_int.h) */
    if (!k->inf[i].listed || k->inf[i].list_gen < gen)
      ok = false;
  pthread_mutex_unlock(&k->mu);
  return ok;
}
