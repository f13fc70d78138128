/* json_depth.c - the nesting depth of a request body, counted without
 * parsing it: jansson allows 2048 levels, the API 32 (SL_JSON_DEPTH_MAX),
 * and a body nested deeper is refused before jansson recurses into it. */
#include <stdbool.h>

#include "json_depth.h"

int sl_json_depth(const char *p, size_t n)
{
    int depth = 0, max = 0;
    bool in_string = false;
    for (size_t i = 0; i < n; i++) {
        char ch = p[i];
        if (in_string) {
            if (ch == '\\')
                i++;
            else if (ch == '"')
                in_string = false;
        } else if (ch == '"') {
            in_string = true;
        } else if (ch == '[' || ch == '{') {
            if (++depth > max)
                max = depth;
        } else if (ch == ']' || ch == '}') {
            depth--;
        }
    }
    return max;
}
