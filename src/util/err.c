#include <gpushare/err.h>

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const char *const err_text[] = {
#define GS__ERR_TEXT(name, text) text,
    GS_ERR_MAP(GS__ERR_TEXT)
#undef GS__ERR_TEXT
};

static const char *const err_name[] = {
#define GS__ERR_NAME(name, text) "GS_E" #name,
    GS_ERR_MAP(GS__ERR_NAME)
#undef GS__ERR_NAME
};

const char *gs_strerror(enum gs_err err) {
  if ((unsigned)err >= GS_ERR_COUNT_)
    return "unknown error";
  return err_text[err];
}

const char *gs_err_name(enum gs_err err) {
  if ((unsigned)err >= GS_ERR_COUNT_)
    return "GS_E?";
  return err_name[err];
}

void gs_diag_set(struct gs_diag *diag, const char *where, const char *fmt, ...) {
  va_list ap;
  if (diag == NULL || diag->text[0] != '\0')
    return;
  snprintf(diag->where, sizeof diag->where, "%s", where ? where : "");
  va_start(ap, fmt);
  vsnprintf(diag->text, sizeof diag->text, fmt, ap);
  va_end(ap);
  if (diag->text[0] == '\0')
    snprintf(diag->text, sizeof diag->text, "error");
}
