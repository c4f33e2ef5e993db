/* DRA coexistence (dra.h, docs/dra.md): the slices' devices and the
 * allocated claims, kept as small JSON tables, and each claim's charge
 * resolved against them and handed to the service. */
#include "dra.h"

#include "api.h"
#include "log.h"

#include <gpushare/alloc.h>

#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum problem {
  P_MALFORMED,     /* an object that is not a slice / claim as the API defines it */
  P_UNKNOWN,       /* a result's device is in no slice (yet) */
  P_CAPACITY,      /* a shared device's result without consumedCapacity memory */
  P_NOT_MANAGED,   /* a result on a device that is not gpushare's */
  P_STALE,         /* a device gone from its slice while a claim holds it */
  P_MULTI_NODE,    /* results on two nodes */
  P_GPU_RANGE,     /* gpushare.io/index past the node's GPUs */
  P_NODE_UNKNOWN,  /* the device's node is not (yet) a node gpushare manages */
  P_SHARE,         /* a shareID on a device that is not shared, or used twice */
  P_OVERCOMMIT,    /* charged beside gpu-mem pods past the GPU's memory */
  P_COUNT
};

static const char *const problem_label[P_COUNT] = {
    "malformed", "device_unknown", "capacity_absent", "device_not_managed", "stale",
    "multi_node", "gpu_out_of_range", "node_unknown", "share_conflict", "over_committed"};

struct gs__dra {
  pthread_mutex_t mu;
  json_t *devices; /* key → {"node","gpu"(int|null),"multi","slice"} */
  json_t *slices;  /* slice name → [key, ...] */
  json_t *claims;  /* uid → {"ns","name","results":[{"key","mib","share"}],"last":{key:[node,gpu]},
                      "charged","report","unresolved"} */
  json_t *shares;  /* key "|" shareID → uid */
  json_t *users;   /* device key → {uid: true}: the claims a slice's change concerns */
  json_t *bynode;  /* node → {"<gpu>": key}: gpushare's own driver's devices (placing claims) */
  uint64_t problems[P_COUNT];
};

struct gs__dra *gs__dra_new(void) {
  struct gs__dra *d = gs_calloc(1, sizeof *d);
  if (d == NULL)
    return NULL;
  d->devices = json_object();
  d->slices = json_object();
  d->claims = json_object();
  d->shares = json_object();
  d->users = json_object();
  d->bynode = json_object();
  if (d->devices == NULL || d->slices == NULL || d->claims == NULL || d->shares == NULL ||
      d->users == NULL || d->bynode == NULL) {
    gs__dra_free(d);
    return NULL;
  }
  pthread_mutex_init(&d->mu, NULL);
  return d;
}

void gs__dra_free(struct gs__dra *d) {
  if (d == NULL)
    return;
  if (d->devices && d->slices && d->claims && d->shares && d->users && d->bynode)
    pthread_mutex_destroy(&d->mu);
  json_decref(d->bynode);
  json_decref(d->users);
  json_decref(d->devices);
  json_decref(d->slices);
  json_decref(d->claims);
  json_decref(d->shares);
  gs_free(d);
}

static const char *obj_str(const json_t *obj, const char *key) {
  return json_string_value(json_object_get(obj, key));
}

static const char *meta(const json_t *obj, const char *key) {
  return obj_str(json_object_get(obj, "metadata"), key);
}

/* "driver|pool|device": none of the three may hold '|' (DNS names). */
static bool device_key(char *out, size_t cap, const char *driver, const char *pool,
                       const char *dev) {
  int n;
  if (driver == NULL || pool == NULL || dev == NULL || !driver[0] || !pool[0] || !dev[0])
    return false;
  n = snprintf(out, cap, "%s|%s|%s", driver, pool, dev);
  return n > 0 && (size_t)n < cap;
}

#define KEY_MAX 800

/* ---- slices --------------------------------------------------------------- */

/* The device's GPU index by gpushare's attribute (or the NVIDIA driver's
 * own "index"); -1: not gpushare's; -2: the attribute is there but not a
 * GPU index. */
static json_int_t device_index(const char *driver, const json_t *dev) {
  const json_t *attrs = json_object_get(dev, "attributes");
  const json_t *a = json_object_get(attrs, GS_DRA_ATTR_INDEX);
  const json_t *v;
  if (a == NULL && strcmp(driver, GS_DRA_NVIDIA_DRIVER) == 0)
    a = json_object_get(attrs, "index");
  if (a == NULL)
    return -1;
  v = json_object_get(a, "int");
  if (!json_is_integer(v) || json_integer_value(v) < 0 ||
      json_integer_value(v) >= GS_MAX_GPUS)
    return -2;
  return json_integer_value(v);
}

static void report(struct gs__dra *d, enum problem p, int level, const char *msg,
                   const char *fmt_kind, const char *ns, const char *name, const char *detail) {
  d->problems[p]++;
  gs_log(level, msg, "%s=%s%s%s reason=%s detail=\"%s\"", fmt_kind, ns ? ns : "",
         ns ? "/" : "", name ? name : "?", problem_label[p], detail);
}

/* Under d->mu: the claims using key, added to the set affected. */
static void affected_add(struct gs__dra *d, const char *key, json_t *affected) {
  const char *uid;
  json_t *v;
  json_object_foreach(json_object_get(d->users, key), uid, v)
    json_object_set(affected, uid, json_true());
}

/* Under d->mu: gpushare's own device key of (node, gpu) dropped. */
static void bynode_del(struct gs__dra *d, const json_t *dev, const char *key) {
  json_t *gpus = json_object_get(d->bynode, obj_str(dev, "node") ? obj_str(dev, "node") : "");
  char idx[24];
  const char *have;
  if (gpus == NULL || !json_is_integer(json_object_get(dev, "gpu")))
    return;
  snprintf(idx, sizeof idx, "%lld", (long long)json_integer_value(json_object_get(dev, "gpu")));
  have = json_string_value(json_object_get(gpus, idx));
  if (have != NULL && strcmp(have, key) == 0)
    json_object_del(gpus, idx);
  if (json_object_size(gpus) == 0)
    json_object_del(d->bynode, obj_str(dev, "node"));
}

static void slice_forget(struct gs__dra *d, const char *slice, json_t *affected) {
  json_t *keys = json_object_get(d->slices, slice);
  size_t i;
  json_t *k;
  json_array_foreach(keys, i, k) {
    affected_add(d, json_string_value(k), affected);
    const json_t *dev = json_object_get(d->devices, json_string_value(k));
    /* a device moved to another slice of the pool stays */
    if (dev != NULL && strcmp(obj_str(dev, "slice") ? obj_str(dev, "slice") : "", slice) == 0) {
      bynode_del(d, dev, json_string_value(k));
      json_object_del(d->devices, json_string_value(k));
    }
  }
  json_object_del(d->slices, slice);
}

static void claims_resolve(struct gs__dra *d, struct gs_sched *s, json_t *affected);

void gs__dra_slice(struct gs__dra *d, struct gs_sched *s, const json_t *slice) {
  const char *name = meta(slice, "name");
  const json_t *spec = json_object_get(slice, "spec");
  const char *driver = obj_str(spec, "driver"), *node = obj_str(spec, "nodeName");
  const char *pool = obj_str(json_object_get(spec, "pool"), "name");
  const json_t *devs = json_object_get(spec, "devices"), *dev;
  json_t *keys = json_array(), *affected = json_object();
  size_t i;
  if (keys == NULL || affected == NULL) {
    json_decref(keys);
    json_decref(affected);
    return;
  }
  pthread_mutex_lock(&d->mu);
  if (name == NULL || driver == NULL || pool == NULL || (devs != NULL && !json_is_array(devs))) {
    report(d, P_MALFORMED, GS_LVL_WARN, "ignoring ResourceSlice", "slice", NULL, name,
           "spec.driver, spec.pool.name or spec.devices missing");
    goto unlock;
  }
  slice_forget(d, name, affected);
  json_array_foreach(devs, i, dev) {
    char key[KEY_MAX];
    const char *dname = obj_str(dev, "name");
    json_int_t idx;
    json_t *entry;
    if (i >= GS_DRA_DEVICES_MAX)
      break;
    if (!device_key(key, sizeof key, driver, pool, dname)) {
      report(d, P_MALFORMED, GS_LVL_WARN, "ignoring device", "slice", NULL, name,
             "a device without a name");
      continue;
    }
    idx = device_index(driver, dev);
    if (idx == -2)
      report(d, P_MALFORMED, GS_LVL_WARN, "device index is not a GPU index", "slice", NULL,
             name, dname);
    /* A device on no node (network-attached) is never gpushare's. */
    entry = json_pack("{s:s?,s:o,s:b,s:s}", "node", node,
                      "gpu", idx >= 0 && node != NULL ? json_integer(idx) : json_null(), "multi",
                      json_is_true(json_object_get(dev, "allowMultipleAllocations")), "slice",
                      name);
    if (entry == NULL || json_object_set_new(d->devices, key, entry) != 0 ||
        json_array_append_new(keys, json_string(key)) != 0)
      break;
    if (idx >= 0 && node != NULL && strcmp(driver, GS_DRA_DRIVER) == 0) {
      char at[24];
      json_t *gpus = json_object_get(d->bynode, node);
      if (gpus == NULL && json_object_set_new(d->bynode, node, gpus = json_object()) != 0)
        gpus = NULL;
      snprintf(at, sizeof at, "%lld", (long long)idx);
      if (gpus != NULL)
        json_object_set_new(gpus, at, json_string(key));
    }
    affected_add(d, key, affected);
  }
  json_object_set(d->slices, name, keys);
  claims_resolve(d, s, affected);
unlock:
  pthread_mutex_unlock(&d->mu);
  json_decref(keys);
  json_decref(affected);
}

void gs__dra_slice_delete(struct gs__dra *d, struct gs_sched *s, const json_t *slice) {
  const char *name = meta(slice, "name");
  json_t *affected = json_object();
  if (name == NULL || affected == NULL) {
    json_decref(affected);
    return;
  }
  pthread_mutex_lock(&d->mu);
  slice_forget(d, name, affected);
  claims_resolve(d, s, affected);
  pthread_mutex_unlock(&d->mu);
  json_decref(affected);
}

/* ---- claims --------------------------------------------------------------- */

/* Under d->mu: the claim (uid, its record) out of the indexes: the users of
 * its devices, the shares (key|shareID → uid) it holds. */
static void claim_unindex(struct gs__dra *d, const char *uid, const json_t *claim) {
  json_t *res, *sk;
  size_t i;
  json_array_foreach(json_object_get(claim, "results"), i, res) {
    json_t *u = json_object_get(d->users, obj_str(res, "key"));
    json_object_del(u, uid);
    if (u != NULL && json_object_size(u) == 0)
      json_object_del(d->users, obj_str(res, "key"));
  }
  json_array_foreach(json_object_get(claim, "shares"), i, sk) {
    const char *holder = obj_str(d->shares, json_string_value(sk));
    if (holder != NULL && strcmp(holder, uid) == 0)
      json_object_del(d->shares, json_string_value(sk));
  }
}

/* Under d->mu: the claim's devices' users gain uid. */
static void claim_index(struct gs__dra *d, const char *uid, const json_t *claim) {
  json_t *res;
  size_t i;
  json_array_foreach(json_object_get(claim, "results"), i, res) {
    const char *key = obj_str(res, "key");
    json_t *u = json_object_get(d->users, key);
    if (u == NULL) {
      u = json_object();
      if (u == NULL || json_object_set_new(d->users, key, u) != 0)
        continue;
    }
    json_object_set(u, uid, json_true());
  }
}

/* Under d->mu: forgets the claim entirely. */
static void claim_forget(struct gs__dra *d, const char *uid) {
  json_t *old = json_object_get(d->claims, uid);
  if (old == NULL)
    return;
  claim_unindex(d, uid, old);
  json_object_del(d->claims, uid);
}

struct resolved {
  char node[GS_NAME_MAX + 1];
  struct gs_alloc_part parts[GS_DRA_RESULTS_MAX];
  uint32_t nparts;
  unsigned problems;        /* bit per enum problem */
  char detail[256];         /* the first problem's text */
};

static void note(struct resolved *r, enum problem p, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void note(struct resolved *r, enum problem p, const char *fmt, ...) {
  va_list ap;
  if (r->problems == 0) {
    va_start(ap, fmt);
    vsnprintf(r->detail, sizeof r->detail, fmt, ap);
    va_end(ap);
  }
  r->problems |= 1u << p;
}

/* The GPUs of node that the ledger knows (0 for an unknown node). */
struct ngpus_call {
  const char *node;
  uint32_t n;
  bool known;
  uint64_t over; /* GPUs holding more than they have (bit per index) */
};
static void ngpus_fn(const struct gs_ledger *ledger, void *arg) {
  struct ngpus_call *c = arg;
  const struct gs_node *n = gs_ledger_node_get(ledger, c->node);
  c->known = n != NULL;
  c->n = n ? n->ngpus : 0;
  c->over = 0;
  for (uint32_t g = 0; n != NULL && g < n->ngpus; g++)
    if (n->gpus[g].used_mib > n->gpus[g].total_mib)
      c->over |= UINT64_C(1) << g;
}

/* Under d->mu: the claim's results against the devices known now. */
static void resolve(struct gs__dra *d, json_t *claim, struct resolved *r) {
  json_t *results = json_object_get(claim, "results"), *last = json_object_get(claim, "last");
  json_t *res;
  size_t i;
  memset(r, 0, sizeof *r);
  json_array_foreach(results, i, res) {
    const char *key = obj_str(res, "key");
    const json_t *dev = json_object_get(d->devices, key);
    const char *node;
    json_int_t gpu, mib = json_integer_value(json_object_get(res, "mib"));
    if (dev == NULL) {
      const json_t *was = json_object_get(last, key);
      if (was == NULL) {
        note(r, P_UNKNOWN, "device %s is in no ResourceSlice", key);
        continue;
      }
      note(r, P_STALE, "device %s left its ResourceSlice; its last charge stays", key);
      node = json_string_value(json_array_get(was, 0));
      gpu = json_integer_value(json_array_get(was, 1));
    } else if (json_is_null(json_object_get(dev, "gpu"))) {
      note(r, P_NOT_MANAGED, "device %s is not a GPU gpushare manages", key);
      continue;
    } else {
      node = obj_str(dev, "node");
      gpu = json_integer_value(json_object_get(dev, "gpu"));
      if (!json_is_true(json_object_get(dev, "multi")) && mib >= 0) {
        /* not shared: the claim holds the device whatever it says */
        if (json_is_string(json_object_get(res, "share")))
          note(r, P_SHARE, "a shareID on device %s, which is not shared", key);
        mib = -1;
      } else if (mib < 0 && json_is_true(json_object_get(dev, "multi"))) {
        note(r, P_CAPACITY, "no consumedCapacity memory on shared device %s: the whole GPU is charged",
             key);
      }
      json_object_set_new(last, key, json_pack("[s,I]", node, gpu));
    }
    if (r->nparts == 0) {
      snprintf(r->node, sizeof r->node, "%s", node);
    } else if (strcmp(r->node, node) != 0) {
      note(r, P_MULTI_NODE, "results on two nodes; those on %s are not charged", node);
      continue;
    }
    if (r->nparts < GS_DRA_RESULTS_MAX)
      r->parts[r->nparts++] = (struct gs_alloc_part){
          .container = (uint32_t)i, .gpu = (uint32_t)gpu,
          .units = mib < 0 ? GS_CLAIM_WHOLE : (uint64_t)mib};
  }
}

/* Under d->mu: the claim's charge handed to the service, problems logged
 * when they change. */
static void claim_apply(struct gs__dra *d, struct gs_sched *s, const char *uid, json_t *claim) {
  const char *ns = obj_str(claim, "ns"), *name = obj_str(claim, "name");
  struct resolved r;
  struct ngpus_call nc = {NULL, 0, false, 0};
  char sig[300];
  uint32_t kept = 0;
  resolve(d, claim, &r);
  if (r.nparts > 0) {
    nc = (struct ngpus_call){r.node, 0, false, 0};
    gs_sched_read(s, ngpus_fn, NULL, &nc);
    for (uint32_t i = 0; i < r.nparts; i++) {
      if (nc.known && r.parts[i].gpu >= nc.n) {
        note(&r, P_GPU_RANGE, "a gpushare.io/index past the GPUs of node %s", r.node);
        continue;
      }
      r.parts[kept++] = r.parts[i];
    }
    r.nparts = kept;
  }
  if (r.nparts > 0) {
    struct gs_alloc a = {.ns = ns, .name = name, .uid = uid, .node = r.node,
                         .kind = GS_ALLOC_CLAIM, .state = GS_ALLOC_BOUND,
                         .unit_mib = GS_CLAIM_UNIT_MIB, .nparts = r.nparts, .parts = r.parts,
                         .priority = INT32_MAX};
    enum gs_err e = gs_sched_claim_set(s, &a);
    if (e == GS_EOK) {
      /* another allocator (kube-scheduler's) put it where gpu-mem pods
       * already were: the truth is charged, and said (docs/dra.md) */
      gs_sched_read(s, ngpus_fn, NULL, &nc);
      for (uint32_t i = 0; i < r.nparts; i++)
        if (nc.over >> r.parts[i].gpu & 1)
          note(&r, P_OVERCOMMIT, "GPU %u of node %s holds more memory than it has", r.parts[i].gpu,
               r.node);
    }
    if (e == GS_EAGAIN)
      note(&r, P_NODE_UNKNOWN, "node %s is not (yet) a node gpushare manages", r.node);
    else if (e != GS_EOK)
      gs_log(GS_LVL_WARN, "cannot charge claim", "claim=%s/%s node=%s error=\"%s\"", ns, name,
             r.node, gs_strerror(e));
    json_object_set_new(claim, "charged", json_boolean(e == GS_EOK));
    json_object_set_new(claim, "kept", json_boolean(e == GS_EAGAIN));
  } else if (json_is_true(json_object_get(claim, "charged"))) {
    gs_sched_claim_gone(s, uid);
    json_object_set_new(claim, "charged", json_false());
  } else {
    gs_sched_claim_gone(s, uid); /* a kept copy, if any */
  }
  json_object_set_new(claim, "unresolved", json_boolean(r.problems & (1u << P_UNKNOWN)));
  /* Logged and counted when a problem appears: one claim's lasting problem
   * is one report, however often its slices change. */
  snprintf(sig, sizeof sig, "%x:%s", r.problems, r.detail);
  if (strcmp(sig, obj_str(claim, "report") ? obj_str(claim, "report") : "0:") != 0) {
    unsigned was = (unsigned)strtoul(obj_str(claim, "report") ? obj_str(claim, "report") : "0",
                                     NULL, 16);
    for (int p = 0; p < P_COUNT; p++) {
      if (!(r.problems >> p & 1) || (was >> p & 1))
        continue;
      /* a device of another driver is ordinary in a cluster: no warning */
      report(d, (enum problem)p, p == P_NOT_MANAGED ? GS_LVL_DEBUG : GS_LVL_WARN,
             "ResourceClaim not fully charged", "claim", ns, name, r.detail);
    }
    json_object_set_new(claim, "report", json_string(sig));
  }
}

static void claims_resolve(struct gs__dra *d, struct gs_sched *s, json_t *affected) {
  const char *uid;
  json_t *v;
  json_object_foreach(affected, uid, v) {
    json_t *claim = json_object_get(d->claims, uid);
    if (claim != NULL)
      claim_apply(d, s, uid, claim);
  }
}

/* Under d->mu: the claim's results as {"key","mib"(-1: whole),"share"};
 * NULL and a problem noted when malformed. */
static json_t *decode_results(const json_t *results, char *why, size_t cap) {
  json_t *out = json_array(), *res;
  size_t i;
  if (out == NULL)
    return NULL;
  json_array_foreach(results, i, res) {
    char key[KEY_MAX], where[64];
    const json_t *mem = json_object_get(json_object_get(res, "consumedCapacity"), GS_DRA_CAPACITY);
    const json_t *share = json_object_get(res, "shareID");
    struct gs_diag diag = {"", ""};
    uint64_t mib = 0;
    if (i >= GS_DRA_RESULTS_MAX) {
      snprintf(why, cap, "more than %d results", GS_DRA_RESULTS_MAX);
      goto bad;
    }
    if (!device_key(key, sizeof key, obj_str(res, "driver"), obj_str(res, "pool"),
                    obj_str(res, "device"))) {
      snprintf(why, cap, "results[%zu]: driver, pool or device missing", i);
      goto bad;
    }
    snprintf(where, sizeof where, "results[%zu].consumedCapacity.memory", i);
    if (mem != NULL &&
        gs_api_quantity_scaled_diag(mem, 0, -20, where, &mib, &diag) != GS_EOK) {
      /* the diagnostic's text is cut to what why holds */
      if (snprintf(why, cap, "%s: %.120s", where, diag.text) < 0)
        why[0] = '\0';
      goto bad;
    }
    if (json_array_append_new(out, json_pack("{s:s,s:I,s:O?}", "key", key, "mib",
                                             mem != NULL ? (json_int_t)mib : (json_int_t)-1,
                                             "share", json_is_string(share) ? share : NULL)) != 0)
      goto bad;
  }
  return out;
bad:
  json_decref(out);
  return NULL;
}

/* True when rv (a ResourceClaim's metadata.resourceVersion) is older than
 * the one the record saw: an event that arrives after a newer one (a front
 * end that fed an update itself, then hears an older one from its
 * informer). resourceVersions are opaque to clients, but the apiserver's
 * are decimal etcd revisions of one object, increasing; anything else is
 * never called older. */
static bool older(const json_t *record, const char *rv) {
  const char *seen = obj_str(record, "rv");
  char *e1, *e2;
  unsigned long long a, b;
  if (seen == NULL || rv == NULL || *seen == '\0' || *rv == '\0')
    return false;
  a = strtoull(rv, &e1, 10);
  b = strtoull(seen, &e2, 10);
  return *e1 == '\0' && *e2 == '\0' && a < b;
}

void gs__dra_claim(struct gs__dra *d, struct gs_sched *s, const json_t *claim) {
  const char *uid = meta(claim, "uid"), *ns = meta(claim, "namespace"),
             *name = meta(claim, "name");
  const json_t *alloc = json_object_get(json_object_get(claim, "status"), "allocation");
  const json_t *results = json_object_get(json_object_get(alloc, "devices"), "results");
  json_t *old, *fresh = NULL, *decoded = NULL, *res;
  char why[200] = "";
  size_t i;
  if (uid == NULL || uid[0] == '\0' || strlen(uid) > GS_UID_MAX)
    return;
  pthread_mutex_lock(&d->mu);
  old = json_object_get(d->claims, uid);
  if (old != NULL && older(old, meta(claim, "resourceVersion")))
    goto unlock; /* an older version than the one charged: never undoes it */
  if (alloc != NULL && !json_is_array(results)) {
    snprintf(why, sizeof why, "status.allocation.devices.results is not a list");
  } else if (results != NULL) {
    decoded = decode_results(results, why, sizeof why);
    if (decoded == NULL && why[0] == '\0')
      snprintf(why, sizeof why, "out of memory");
  }
  if (why[0] != '\0') {
    /* A malformed update changes nothing: the earlier charge stays. */
    report(d, P_MALFORMED, GS_LVL_WARN, "ignoring ResourceClaim", "claim", ns, name, why);
    goto unlock;
  }
  if (decoded == NULL || json_array_size(decoded) == 0) {
    /* not allocated (or deallocated): its charge goes */
    if (old != NULL) {
      gs_sched_claim_gone(s, uid);
      claim_forget(d, uid);
    }
    goto unlock;
  }
  /* the same allocation again (reservedFor, conditions changed): nothing to
   * do but remember the version */
  if (old != NULL && json_equal(json_object_get(old, "results"), decoded)) {
    if (meta(claim, "resourceVersion") != NULL)
      json_object_set_new(old, "rv", json_string(meta(claim, "resourceVersion")));
    goto unlock;
  }
  fresh = json_pack("{s:s,s:s,s:O,s:o,s:b,s:b,s:[]}", "ns", ns ? ns : "", "name",
                    name ? name : "", "results", decoded, "last",
                    old ? json_deep_copy(json_object_get(old, "last")) : json_object(),
                    "charged", old && json_is_true(json_object_get(old, "charged")), "kept",
                    old && json_is_true(json_object_get(old, "kept")), "shares");
  if (fresh == NULL)
    goto unlock;
  if (old != NULL && json_is_string(json_object_get(old, "report")))
    json_object_set(fresh, "report", json_object_get(old, "report"));
  if (meta(claim, "resourceVersion") != NULL)
    json_object_set_new(fresh, "rv", json_string(meta(claim, "resourceVersion")));
  if (old != NULL)
    claim_unindex(d, uid, old);
  json_array_foreach(decoded, i, res) {
    char sk[KEY_MAX + 80];
    const char *share = obj_str(res, "share"), *other;
    if (share == NULL)
      continue;
    snprintf(sk, sizeof sk, "%s|%s", obj_str(res, "key"), share);
    other = obj_str(d->shares, sk);
    if (other != NULL && strcmp(other, uid) != 0)
      report(d, P_SHARE, GS_LVL_WARN, "shareID already held by another claim", "claim", ns,
             name, sk);
    else if (json_object_set_new(d->shares, sk, json_string(uid)) == 0)
      json_array_append_new(json_object_get(fresh, "shares"), json_string(sk));
  }
  json_object_set(d->claims, uid, fresh);
  claim_index(d, uid, fresh);
  claim_apply(d, s, uid, fresh);
unlock:
  pthread_mutex_unlock(&d->mu);
  json_decref(decoded);
  json_decref(fresh);
}

void gs__dra_claim_delete(struct gs__dra *d, struct gs_sched *s, const json_t *claim) {
  const char *uid = meta(claim, "uid");
  if (uid == NULL || uid[0] == '\0')
    return;
  pthread_mutex_lock(&d->mu);
  gs_sched_claim_gone(s, uid);
  claim_forget(d, uid);
  pthread_mutex_unlock(&d->mu);
}

/* ---- counts --------------------------------------------------------------- */

struct gs__dra_counts gs__dra_counts(struct gs__dra *d) {
  struct gs__dra_counts c = {0};
  const char *k;
  json_t *v;
  pthread_mutex_lock(&d->mu);
  c.slices = json_object_size(d->slices);
  json_object_foreach(d->devices, k, v) c.devices += !json_is_null(json_object_get(v, "gpu"));
  c.claims = json_object_size(d->claims);
  json_object_foreach(d->claims, k, v) {
    c.charged += json_is_true(json_object_get(v, "charged"));
    c.unresolved += json_is_true(json_object_get(v, "unresolved"));
  }
  pthread_mutex_unlock(&d->mu);
  return c;
}

void gs__dra_gauges(struct gs__dra *d, struct gs_metrics *m) {
  struct gs__dra_counts c = gs__dra_counts(d);
  uint64_t problems[P_COUNT];
  const char *none[] = {NULL};
  pthread_mutex_lock(&d->mu);
  memcpy(problems, d->problems, sizeof problems);
  pthread_mutex_unlock(&d->mu);
  gs_metrics_gauge_set(m, "gpushare_dra_devices",
                       "DRA devices (ResourceSlices) mapped to GPUs gpushare manages.", none,
                       (double)c.devices);
  static const char claims_help[] =
      "Allocated ResourceClaims seen, by state: charged to the ledger, or unresolved (a "
      "device in no slice yet).";
  gs_metrics_gauge_set(m, "gpushare_dra_claims", claims_help,
                       (const char *[]){"state", "charged", NULL}, (double)c.charged);
  gs_metrics_gauge_set(m, "gpushare_dra_claims", claims_help,
                       (const char *[]){"state", "unresolved", NULL}, (double)c.unresolved);
  for (int p = 0; p < P_COUNT; p++) {
    /* a counter kept here: rendered as one at each scrape */
    gs_metrics_gauge_set(m, "gpushare_dra_problems",
                         "ResourceSlice and ResourceClaim problems reported since start, by reason "
                         "(docs/dra.md).",
                         (const char *[]){"reason", problem_label[p], NULL}, (double)problems[p]);
  }
}

/* ---- gpushare placing claims ---------------------------------------------- */

static bool names_class(const json_t *r) {
  const char *cls = obj_str(json_object_get(r, "exactly"), "deviceClassName");
  const json_t *sub;
  size_t i;
  if (cls != NULL && strcmp(cls, GS_DRA_CLASS) == 0)
    return true;
  json_array_foreach(json_object_get(r, "firstAvailable"), i, sub) {
    cls = obj_str(sub, "deviceClassName");
    if (cls != NULL && strcmp(cls, GS_DRA_CLASS) == 0)
      return true;
  }
  return false;
}

#define REFUSE(...) (snprintf(why, wcap, __VA_ARGS__), -1)

int gs__dra_request(const json_t *claim, struct gs_claim_request *req, char *request, size_t rcap,
                    char *why, size_t wcap) {
  const json_t *devs = json_object_get(json_object_get(claim, "spec"), "devices");
  const json_t *reqs = json_object_get(devs, "requests"), *r, *ex, *caps, *mem, *count;
  const char *mode, *key;
  const json_t *v;
  bool ours = false;
  size_t i;
  json_array_foreach(reqs, i, r) ours = ours || names_class(r);
  if (!ours)
    return 0;
  r = json_array_get(reqs, 0);
  ex = json_object_get(r, "exactly");
  if (json_array_size(reqs) != 1)
    return REFUSE("spec.devices.requests: %zu requests; gpushare places one request of "
                  "DeviceClass %s alone",
                  json_array_size(reqs), GS_DRA_CLASS);
  if (ex == NULL)
    return REFUSE("spec.devices.requests[0]: firstAvailable is not supported for DeviceClass %s",
                  GS_DRA_CLASS);
  if (json_array_size(json_object_get(devs, "constraints")) > 0 ||
      json_array_size(json_object_get(devs, "config")) > 0)
    return REFUSE("spec.devices: constraints and config are not supported for DeviceClass %s",
                  GS_DRA_CLASS);
  if (json_array_size(json_object_get(ex, "selectors")) > 0)
    return REFUSE("spec.devices.requests[0].exactly.selectors: not supported for DeviceClass %s",
                  GS_DRA_CLASS);
  if (json_is_true(json_object_get(ex, "adminAccess")))
    return REFUSE("spec.devices.requests[0].exactly.adminAccess: not supported");
  mode = obj_str(ex, "allocationMode");
  if (mode != NULL && strcmp(mode, "ExactCount") != 0)
    return REFUSE("spec.devices.requests[0].exactly.allocationMode %s: only ExactCount", mode);
  count = json_object_get(ex, "count");
  if (count != NULL &&
      (!json_is_integer(count) || json_integer_value(count) < 1 ||
       json_integer_value(count) > GS_MAX_GPUS))
    return REFUSE("spec.devices.requests[0].exactly.count: 1..%d", GS_MAX_GPUS);
  req->count = count != NULL ? (uint32_t)json_integer_value(count) : 1;
  req->mib_per_gpu = 0;
  caps = json_object_get(json_object_get(ex, "capacity"), "requests");
  json_object_foreach((json_t *)caps, key, v) {
    if (strcmp(key, GS_DRA_CAPACITY) != 0)
      return REFUSE("spec.devices.requests[0].exactly.capacity.requests.%s: only %s", key,
                    GS_DRA_CAPACITY);
  }
  mem = json_object_get(caps, GS_DRA_CAPACITY);
  if (mem != NULL) {
    struct gs_diag diag = {"", ""};
    uint64_t bytes = 0;
    if (gs_api_quantity_scaled_diag(mem, 0, 0, "spec.devices.requests[0].exactly.capacity."
                                               "requests.memory",
                                    &bytes, &diag) != GS_EOK)
      return REFUSE("%s: %.120s", diag.where, diag.text);
    if (bytes == 0)
      return REFUSE("spec.devices.requests[0].exactly.capacity.requests.memory: 0");
    /* DRA's meaning: a capacity request is what each allocated device
     * gives (count: 2 with 4Gi is 4 GiB on each of 2 GPUs), as
     * kube-scheduler's own allocator reads the same claim */
    req->mib_per_gpu = (bytes + (UINT64_C(1) << 20) - 1) >> 20;
  }
  snprintf(request, rcap, "%s", obj_str(r, "name") ? obj_str(r, "name") : "");
  if (request[0] == '\0')
    return REFUSE("spec.devices.requests[0].name missing");
  return 1;
}

bool gs__dra_node_published(struct gs__dra *d, const char *node) {
  bool yes;
  pthread_mutex_lock(&d->mu);
  yes = node != NULL && json_object_size(json_object_get(d->bynode, node)) > 0;
  pthread_mutex_unlock(&d->mu);
  return yes;
}

bool gs__dra_device_at(struct gs__dra *d, const char *node, uint32_t gpu, char *pool, size_t pcap,
                       char *dev, size_t dcap, bool *multi) {
  char at[24];
  const char *key, *p1, *p2;
  bool found = false;
  snprintf(at, sizeof at, "%u", (unsigned)gpu);
  pthread_mutex_lock(&d->mu);
  key = json_string_value(json_object_get(json_object_get(d->bynode, node ? node : ""), at));
  /* key is "driver|pool|device" (device_key) */
  if (key != NULL && (p1 = strchr(key, '|')) != NULL && (p2 = strchr(p1 + 1, '|')) != NULL) {
    snprintf(pool, pcap, "%.*s", (int)(p2 - p1 - 1), p1 + 1);
    snprintf(dev, dcap, "%s", p2 + 1);
    *multi = json_is_true(json_object_get(json_object_get(d->devices, key), "multi"));
    found = true;
  }
  pthread_mutex_unlock(&d->mu);
  return found;
}
