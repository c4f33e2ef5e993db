/* gpushare — a small string-keyed hash map (libc only).
 *
 * Open addressing with linear probing and backward-shift deletion, so there
 * are no tombstones and lookups stay short after many deletes (the ledger
 * reserves and releases pods all day long).
 *
 * Keys and values are borrowed: the map stores the key pointer as given and
 * never copies or frees it. A key must stay valid and unchanged while its
 * entry is in the map; the usual trick is to point the key into the value
 * (e.g. a record's own uid string), which costs no extra allocation.
 *
 * This is a reusable util module (like redis's dict) used by several layers,
 * so its functions carry the public-style gs_strmap_ prefix.
 */
#ifndef GPUSHARE_UTIL_STRMAP_H
#define GPUSHARE_UTIL_STRMAP_H

#include <gpushare/err.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Upper bound on entries: keeps the slot array well inside size_t and far
 * beyond anything a cluster has (50,000 pods is the design load). */
#define GS_STRMAP_MAX_ENTRIES (1u << 28)

struct gs_strmap;

/* Creates an empty map. NULL on allocation failure. Owned by the caller. */
struct gs_strmap *gs_strmap_new(void);
/* Frees the map's table (never its keys or values). Accepts NULL. */
void gs_strmap_free(struct gs_strmap *map);
/* Frees each value with free_value (a value's key lives in it or nowhere),
 * then the map. Accepts NULL. */
void gs_strmap_free_all(struct gs_strmap *map, void (*free_value)(void *value));
/* Number of entries. */
size_t gs_strmap_count(const struct gs_strmap *map);
/* Borrowed value for key, or NULL when absent. */
void *gs_strmap_get(const struct gs_strmap *map, const char *key);
/* For many lookups in a row (the ledger resolving every node name of a
 * request): hash the keys first, prefetch their slots, then (once the
 * slots have arrived) the key each holds, which the lookup compares, and
 * the start of its value, which the caller reads next; then look them up
 * by hash, so the cache misses overlap. Prefetches change nothing.
 * gs_strmap_hash also gives the key's length (*ret_len), which
 * gs_strmap_get_hashed takes back: with h = gs_strmap_hash(key, &len),
 * gs_strmap_get_hashed(map, key, len, h) is gs_strmap_get(map, key). */
uint64_t gs_strmap_hash(const char *key, size_t *ret_len);
void gs_strmap_prefetch(const struct gs_strmap *map, uint64_t hash);
void gs_strmap_prefetch_entry(const struct gs_strmap *map, uint64_t hash);
void *gs_strmap_get_hashed(const struct gs_strmap *map, const char *key, size_t len,
                           uint64_t hash);
/* Adds key → value (both borrowed; value must not be NULL). GS_EEXISTS if
 * the key is present (the map is unchanged), GS_ENOMEM if growing fails,
 * GS_ETOOBIG past GS_STRMAP_MAX_ENTRIES. */
enum gs_err gs_strmap_put(struct gs_strmap *map, const char *key, void *value) GS_WUR;
/* Makes room so that the next n puts cannot fail with GS_ENOMEM. Lets a
 * caller allocate everything first and then commit without a failure path. */
enum gs_err gs_strmap_reserve(struct gs_strmap *map, size_t n) GS_WUR;
/* Removes key; returns its value, or NULL when absent. */
void *gs_strmap_del(struct gs_strmap *map, const char *key);
/* Whether a and b, both len bytes long, hold the same bytes (the map's
 * key compare; exposed for its tests). */
bool gs__strmap_key_equal(const char *a, const char *b, size_t len);
/* Iteration in unspecified order: pass *cursor = 0 first; returns false at
 * the end. Invalidated by put and del. */
bool gs_strmap_next(const struct gs_strmap *map, size_t *cursor, const char **ret_key,
                    void **ret_value);

#endif
