/* conf_int.h - what conf.c (defaults, checks) and conf_file.c (the YAML
 * file) share. */
#ifndef SL_SERVER_CONF_INT_H
#define SL_SERVER_CONF_INT_H

#include "conf.h"

/* A configuration file larger than this is refused unread. */
#define SL_CONF_FILE_MAX (8u << 20)
/* A token's secret travels in an Authorization header. */
#define SL_TOKEN_MAX 1024
/* Longest key path ("tokens[123].prefixes[4]") and message we build. */
#define PATH_CAP 128
#define MSG_CAP 512
/* How much of libcyaml's log is kept for the error. */
#define LOG_CAP 1024

/* Allocation: the daemon aborts when it runs out of memory. */
void *sl__conf_xcalloc(size_t count, size_t size);
void *sl__conf_xmalloc(size_t n);
char *sl__conf_xstrdup(const char *s);
void sl__conf_replace_str(char **dst, const char *src); /* frees *dst, copies src */

void sl__conf_dup(sl_conf *dst, const sl_conf *src); /* a deep copy */
void sl__conf_sems_free(sl_conf_sem *s, size_t n);
void sl__conf_tokens_free(sl_conf_token *t, size_t n);
/* The first problem of a whole configuration: PATH_CAP bytes of path and
 * MSG_CAP of message written; 0 when there is none. */
int sl__conf_problem(const sl_conf *c, char *path, char *msg);

#endif
