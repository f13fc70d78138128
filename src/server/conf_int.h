/* conf_int.h - what conf.c (defaults, checks) and conf_file.c (the YAML
 * file) share. */
#ifndef SL_SERVER_CONF_INT_H
#define SL_SERVER_CONF_INT_H

#include "conf.h"

/* A configuration file larger than this is refused unread. */
#define SL_CONF_FILE_MAX (8u << 20)
/* A token's secret travels in an Authorization header. */
#define SL_TOKEN_MAX 1024
/* F15: a clear secret shorter than this is refused (a random one of 16
 * characters from 64 symbols is 96 bits); `sluice token new` makes 64. */
#define SL_TOKEN_MIN 16
/* Longest key path ("tokens[123].prefixes[4]") and message we build. */
#define PATH_CAP 128
#define MSG_CAP 512
/* How much of libcyaml's log is kept for the error. */
#define LOG_CAP 1024

/* A rebalance key in a path ("semaphores[0].weights.KEY") is cut to this
 * many bytes, so that the path fits PATH_CAP. */
#define KEY_IN_PATH 60
/* preempt_grace when preempt is set without one: the API's default too
 * (sem_rules.c). */
#define CONF_PREEMPT_GRACE_DEFAULT_MS 30000

/* The rules between a semaphore's keys, worded once: the file's conversion
 * refuses a key given where it does not apply (even at its default, as the
 * API does), the whole-configuration checks a value set where it does not. */
#define MSG_PREEMPT_NOT_REBALANCED                                                                 \
    "applies to the strict and skip strategies only: a rebalanced semaphore hands out slots "      \
    "by share, not by priority; leave it out or use strategy: strict or skip"
#define MSG_GRACE_NEEDS_PREEMPT "applies only with preempt: true; leave it out or set preempt: true"
#define MSG_ON_FULL_NEEDS_MAX_PENDING                                                              \
    "applies only with a max_pending above 0; set max_pending, like 50, or leave it out"
#define MSG_REBALANCED_ONLY                                                                        \
    "applies to the rebalanced strategy only; leave it out or use strategy: rebalanced"
#define MSG_BURST_NEEDS_RATE "applies only with a rate; set rate, like 100/1m, or leave it out"
/* printf formats: the number of weights; a rebalance key. */
#define MSG_WEIGHTS_MAX_FMT                                                                        \
    "has %zu keys; at most 256 rebalance keys may have a weight of their own (the others "         \
    "weigh default_weight)"
#define MSG_WEIGHT_KEY_FMT "\"%.100s\" is not a rebalance key; use 1 to 253 characters, like paying"

/* Allocation: the daemon aborts when it runs out of memory. */
void *sl__conf_xcalloc(size_t count, size_t size);
void *sl__conf_xmalloc(size_t n);
char *sl__conf_xstrdup(const char *s);
void sl__conf_replace_str(char **dst, const char *src); /* frees *dst, copies src */

/* n weights and their keys copied into one allocation (NULL when n is 0),
 * which free() releases whole. */
sl_weight *sl__conf_weights_copy(const sl_weight *w, size_t n);
void sl__conf_dup(sl_conf *dst, const sl_conf *src); /* a deep copy */
void sl__conf_sems_free(sl_conf_sem *s, size_t n);
void sl__conf_tokens_free(sl_conf_token *t, size_t n);
/* The first problem of a whole configuration: PATH_CAP bytes of path and
 * MSG_CAP of message written; 0 when there is none. */
int sl__conf_problem(const sl_conf *c, char *path, char *msg);

#endif
