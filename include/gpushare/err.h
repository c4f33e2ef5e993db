/* gpushare — error codes of the whole project.
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
  X(AGAIN, "try again")

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

/* Caller-owned diagnostic filled by parsers. The first error wins: a
 * function writes it only when diag->text[0] == '\0'. Nothing is allocated. */
struct gs_diag {
  char where[128]; /* JSON path ("Pod.spec.containers[0]") or file:line:col */
  char text[256];
};

/* Records an error in diag (if non-NULL and still empty). printf-style. */
void gs_diag_set(struct gs_diag *diag, const char *where, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

#endif
