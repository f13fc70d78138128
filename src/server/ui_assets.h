/* ui_assets.h - the dashboard's files compiled into sluiced.
 *
 * ui_assets.c is generated at build time by cmake/embed_ui.cmake from every
 * file under ui/; ui.c serves them. The data is static and lives as long as
 * the program; each array also ends in a NUL that `len` does not count. */
#ifndef SL_UI_ASSETS_H
#define SL_UI_ASSETS_H

#include <stddef.h>

typedef struct sl_ui_asset {
    const char *path;  /* URL path, "/ui/app.js" */
    const char *ctype; /* Content-Type */
    const unsigned char *data;
    size_t len;
} sl_ui_asset;

/* Ends with an entry whose path is NULL. */
extern const sl_ui_asset sl_ui_assets[];

#endif
