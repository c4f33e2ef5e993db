/* gpushare — helpers shared by the src/api codec files (not public).
 *
 * Typed member access with diagnostics: every getter treats an absent key
 * and a JSON null alike (Go decodes null into a zero value), and answers a
 * wrong JSON type with GS_EPARSE and a diag naming the JSON path.
 */
#ifndef GPUSHARE_API_INTERNAL_H
#define GPUSHARE_API_INTERNAL_H

#include "api.h"
#include "buf.h"

#include <stdarg.h>

/* Longest annotation value we parse as JSON. */
#define GS__API_ANN_TEXT_MAX (256u * 1024u)

/* Room for a JSON path; equals sizeof(struct gs_diag){0}.where. */
#define GS__API_PATH_MAX 128

/* printf into a path buffer (truncates silently: paths are for humans). */
void gs__api_path(char path[GS__API_PATH_MAX], const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* parent.key, or parent["key"] when key is not a plain identifier
 * (labels such as "aliyun.com/gpu-count"). */
void gs__api_member_path(char path[GS__API_PATH_MAX], const char *parent, const char *key);

/* Member key of obj, or NULL when obj is not an object, the key is absent
 * or its value is null. Borrowed. */
const json_t *gs__api_get(const json_t *obj, const char *key);

/* Member key of obj (a JSON object) that must be an object when present.
 * Absent/null → *ret = NULL and GS_EOK. path names obj. */
enum gs_err gs__api_get_object(const json_t *obj, const char *key, const char *path,
                               const json_t **ret, struct gs_diag *diag) GS_WUR;
/* Same for an array. */
enum gs_err gs__api_get_array(const json_t *obj, const char *key, const char *path,
                              const json_t **ret, struct gs_diag *diag) GS_WUR;
/* Same for a string (*ret borrowed from obj). */
enum gs_err gs__api_get_string(const json_t *obj, const char *key, const char *path,
                               const char **ret, struct gs_diag *diag) GS_WUR;

/* Copies src into dst[cap] (cap includes the NUL); longer → GS_ETOOBIG
 * with diag at where. */
enum gs_err gs__api_copy(char *dst, size_t cap, const char *src, const char *where,
                         const char *what, struct gs_diag *diag) GS_WUR;

/* Parses a strict decimal (digits only, at most 19 of them) no larger than
 * max. Returns false for anything else. */
bool gs__api_parse_decimal(const char *s, uint64_t max, uint64_t *ret);
/* Same, for a string that may start with '-' (int64 range). */
bool gs__api_parse_int64(const char *s, int64_t *ret);

/* A json string for text, replacing invalid UTF-8 bytes by '?' (diag
 * texts may have been cut in the middle of a character). New reference. */
json_t *gs__api_text(const char *text);

/* Answers are written without building jansson values (filter and
 * prioritize answers name every node of a request; a value per node was
 * most of a request's cost: docs/benchmarks.md) with util's one JSON writer
 * (jw.h), whose bytes equal json_dumps(JSON_COMPACT) of the same values. */
#include "jw.h"

/* Parses the device-resource annotation {"<gpuIndex>":<units>,...}
 * (units: JSON integers or quantity strings) into per_gpu (indices not
 * named are 0); per_gpu is written only on success. */
enum gs_err gs__api_device_resource_decode(const char *text, uint64_t per_gpu[GS_MAX_GPUS],
                                           const char *where, struct gs_diag *diag) GS_WUR;

/* Dumps compact, in insertion order. Malloc'd string, or NULL when memory
 * runs out (never a truncated document: jansson's own json_dumps ignores a
 * failure while writing an object key and returns the JSON without it). */
char *gs__api_dump(const json_t *value);
/* Parses a request body (≤ GS_API_BODY_MAX) into an object; what names it
 * in diag. */
enum gs_err gs__api_body_load(const char *body, size_t len, const char *what, json_t **ret,
                              struct gs_diag *diag);
/* A request body whose "Pod" must be an object with a metadata.name: the
 * document (new reference) and the Pod in it. */
enum gs_err gs__api_body_pod(const char *body, size_t len, const char *what, json_t **ret_root,
                             const json_t **ret_pod, struct gs_diag *diag);
/* metadata.name of an object at path: a non-empty string ≤ GS_NAME_MAX. */
enum gs_err gs__api_object_name(const json_t *obj, const char *path, const char *what,
                                const char **ret, struct gs_diag *diag);

/* json_loadb that tells running out of memory (GS_ENOMEM: not the input's
 * fault, callers must not call it malformed) from bad input (GS_EPARSE,
 * jerr says why) in *ret_err when it returns NULL. jansson reports some
 * failed allocations as syntax errors, so this relies on jansson
 * allocating through src/util/alloc.h (json_set_alloc_funcs(gs_malloc,
 * gs_free), as gpushare-extender's main does); without that it still
 * catches the failures jansson reports as such. */
json_t *gs__api_loadb(const char *text, size_t len, size_t flags, json_error_t *jerr,
                      enum gs_err *ret_err);

/* An annotation's JSON text parsed (duplicate keys rejected), new reference
 * in *ret: GS_ETOOBIG over GS__API_ANN_TEXT_MAX ("<too_long>longer than N
 * bytes"), GS_EPARSE ("invalid JSON: ...") or GS_ENOMEM, told in diag at
 * where. The caller checks the document's shape. */
enum gs_err gs__api_ann_load(const char *text, const char *where, const char *too_long,
                             json_t **ret, struct gs_diag *diag);

#endif
