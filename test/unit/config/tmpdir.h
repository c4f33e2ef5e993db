/* A scratch directory for one test binary: files written with tmp_write()
 * are removed by tmp_cleanup(). */
#ifndef GS_TEST_TMPDIR_H
#define GS_TEST_TMPDIR_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define TMP_MAX_FILES 64

static char tmp_dir[64];
static char tmp_files[TMP_MAX_FILES][256];
static int tmp_nfiles;

static inline const char *tmp_path(const char *name) {
  static char buf[16][256];
  static int n;
  char *p = buf[n++ % 16];
  if (tmp_dir[0] == '\0') {
    snprintf(tmp_dir, sizeof tmp_dir, "/tmp/gs-config-test-XXXXXX");
    if (mkdtemp(tmp_dir) == NULL)
      abort();
  }
  snprintf(p, 256, "%s/%s", tmp_dir, name);
  return p;
}

/* Writes text to DIR/name (name may hold one subdirectory) and returns the
 * path, valid until tmp_cleanup(). */
static inline const char *tmp_write(const char *name, const char *text) {
  const char *path = tmp_path(name);
  const char *slash = strchr(name, '/');
  FILE *fp;
  if (slash != NULL) {
    char sub[256];
    snprintf(sub, sizeof sub, "%s/%.*s", tmp_dir, (int)(slash - name), name);
    mkdir(sub, 0700);
  }
  fp = fopen(path, "wb");
  if (fp == NULL)
    abort();
  fputs(text, fp);
  fclose(fp);
  if (tmp_nfiles >= TMP_MAX_FILES)
    abort();
  snprintf(tmp_files[tmp_nfiles], 256, "%s", path);
  return tmp_files[tmp_nfiles++];
}

static inline void tmp_cleanup(void) {
  for (int i = 0; i < tmp_nfiles; i++) {
    char *slash;
    unlink(tmp_files[i]);
    slash = strrchr(tmp_files[i], '/');
    *slash = '\0';
    if (strcmp(tmp_files[i], tmp_dir) != 0)
      rmdir(tmp_files[i]);
  }
  if (tmp_dir[0])
    rmdir(tmp_dir);
}

#endif
