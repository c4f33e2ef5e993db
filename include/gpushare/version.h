/* gpushare — the version of libgpushare and its headers.
 *
 * GS_VERSION_* follow semantic versioning: a public function or type that
 * changes incompatibly bumps MAJOR (while MAJOR is 0, MINOR). CMake checks
 * these numbers against project(VERSION) at configure time, so the header
 * and the build never disagree. gs_version() gives the library's own at run
 * time (a program built against one header, linked to another library). */
#ifndef GPUSHARE_VERSION_H
#define GPUSHARE_VERSION_H

#define GS_VERSION_MAJOR 0
#define GS_VERSION_MINOR 4
#define GS_VERSION_PATCH 0
#define GS_VERSION_STRING "0.4.0"
/* One number that compares: 0xMMmmpp. */
#define GS_VERSION_NUM ((GS_VERSION_MAJOR << 16) | (GS_VERSION_MINOR << 8) | GS_VERSION_PATCH)

/* The library's version string ("0.4.0"); static storage. Thread-safe. */
const char *gs_version(void);

#endif
