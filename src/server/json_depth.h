/* json_depth.h - how deeply a JSON text nests, counted before it is parsed
 * (json_depth.c). */
#ifndef SL_SERVER_JSON_DEPTH_H
#define SL_SERVER_JSON_DEPTH_H

#include <stddef.h>

/* The deepest nesting of arrays and objects in the n bytes at p, brackets
 * inside strings not counted. The text need not be valid JSON. */
int sl_json_depth(const char *p, size_t n);

#endif
