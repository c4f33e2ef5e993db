/* gpushare — compact cache entries for pods and nodes (src/k8s internal).
 *
 * The live informer's cache and the demo backend keep a bound pod or a node
 * in the few fields asked for later: uid and resourceVersion (what changed
 * on a relist), and for a pod its nodeName and phase (pod_get of a bound
 * pod: bind's idempotent retry). Whole objects cost 7-10 KiB each in
 * jansson (a real pod with managedFields several times that): at 50,000
 * pods a cache of them was 500 MiB (docs/benchmarks.md, memory). The entry
 * is one JSON string "uid<US>rv<US>nodeName<US>phase" (nodes: "uid<US>rv"),
 * US = 0x1f. */
#ifndef GPUSHARE_KUBE_ENTRY_H
#define GPUSHARE_KUBE_ENTRY_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#define GS__ENTRY_SEP '\x1f'
#define GS__ENTRY_FIELDS 4 /* uid, resourceVersion, nodeName, phase */
#define GS__ENTRY_NODE_FIELDS 2

struct gs__entry_ids {
  const char *f[GS__ENTRY_FIELDS]; /* borrowed from the entry or object; NULL: absent */
  size_t len[GS__ENTRY_FIELDS];
};

/* The fields of an entry or of a whole object. */
void gs__entry_ids(const json_t *e, struct gs__entry_ids *ids);
/* The entry for obj with its first nfields fields (new reference), or
 * NULL: a field holds the separator (it could not be split back), out of
 * memory, or not valid UTF-8 — the caller keeps the object whole. */
json_t *gs__entry_compact(const json_t *obj, int nfields);
/* An entry back as an object of kind with what it kept: metadata (name,
 * namespace for pods, from key "ns/name"; uid and resourceVersion when
 * kept), and for a pod spec.nodeName and status.phase (when kept). New
 * reference, or NULL when out of memory. */
json_t *gs__entry_expand(const char *key, const json_t *e, const char *kind, bool pod);

#endif
