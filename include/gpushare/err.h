/* gpushare — the one code of the whole project: whether a call worked
 * (errno-like, every layer) and, in a struct gs_status, a scheduling
 * verdict (gpushare/status.h: GS_EOK, GS_ENOFIT, GS_EUNRESOLVABLE,
 * GS_ESKIP, GS_EWAIT, or any other code for an internal error).
 *
 * One X-macro list generates the enum and its strings. Values are append-only:
 * never renumber or remove an entry, only add at the end (curl's rule).
 */
#ifndef GPUSHARE_ERR_H
#define GPUSHARE_ERR_H

#define GS_ERR_MAP(X)                                                        \
  X(OK, "success")                                                           \
  X(NOMEM, "out of memory")                                                  \
  X(INVAL, "invalid argument")                                               \
  X(PARSE, "malformed input")                                                \
  X(RANGE, "value out of range")                                             \
  X(TOOBIG, "input exceeds a size limit")                                    \
  X(NOTFOUND, "not found")                                                   \
  X(EXISTS, "already exists")                                                \
  X(NOFIT, "does not fit")                                                   \
  X(CONFLICT, "conflicting state")                                           \
  X(IO, "input/output error")                                                \
  X(UNIT, "unknown memory unit")                                             \
  X(UNSUPPORTED, "unsupported")                                              \
  X(TIMEOUT, "timed out")                                                    \
  X(HTTP, "HTTP error")                                                      \
  X(NOTLEADER, "not leader")                                                 \
  X(AGAIN, "try again")                                                      \
  X(UNRESOLVABLE, "cannot fit on any node")                                  \
  X(SKIP, "not applicable")                                                  \
  X(WAIT, "waiting")

enum gs_err {
#define GS__ERR_ENUM(name, text) GS_E##name,
  GS_ERR_MAP(GS__ERR_ENUM)
#undef GS__ERR_ENUM
  GS_ERR_COUNT_
};

#if defined(__GNUC__)
#define GS_WUR __attribute__((warn_unused_result))
#else
#define GS_WUR
#endif

/* Returns a static string for err; never NULL. */
const char *gs_strerror(enum gs_err err);
/* Returns the symbolic name ("GS_ENOMEM"); never NULL. */
const char *gs_err_name(enum gs_err err);

/* The text of an error, beside its enum gs_err: what was wrong and where
 * (like jansson's json_error_t). Caller-owned; filled by the decoders and
 * config readers, by a cluster's binder (the apiserver's answer) and by the
 * service's bind. The first error wins: gs_diag_set writes it only when
 * diag->text[0] == '\0'. Nothing is allocated. A scheduling verdict is a
 * struct gs_status instead (gpushare/status.h). */
#define GS_DIAG_TEXT_MAX 1024 /* room for two object names and an apiserver message */
struct gs_diag {
  char where[128]; /* JSON path ("Pod.spec.containers[0]"), file:line:col, or "" */
  char text[GS_DIAG_TEXT_MAX];
};

/* Records an error in diag (if non-NULL and still empty). printf-style. */
void gs_diag_set(struct gs_diag *diag, const char *where, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

#endif
