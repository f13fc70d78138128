/* main.c - sluiced: the command line, then the server's life (server.c). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "duration.h"
#include "server.h"

static const char usage[] =
    "usage: sluiced [--listen HOST:PORT] [--plain-listen HOST:PORT] [--store URL]\n"
    "               [--config FILE]\n"
    "               [--durability normal|full] [--log-level error|warn|info|debug]\n"
    "               [--advertise URL] [--leader-timeout DURATION] [--allow-open]\n"
    "               [--tls-cert FILE --tls-key FILE [--tls-client-ca FILE]\n"
    "                [--tls-min-version 1.2|1.3]]\n"
    "               [--cluster-ca FILE [--cluster-cert FILE --cluster-key FILE]]\n"
    "               [--cluster-insecure]\n"
    "\n"
    "sluiced decides what may run now: mutexes, semaphores and pools, queues,\n"
    "concurrency groups and leases, over an HTTP/JSON API under /v1/ (the\n"
    "project's docs/api.md describes it) with a web dashboard at /.\n"
    "\n"
    "  --listen HOST:PORT   where to listen (default 127.0.0.1:7700, loopback only)\n"
    "  --plain-listen H:P   beside TLS, a plain HTTP listener on loopback (health checks)\n"
    "  --store URL          where state lives: sqlite:PATH (default sqlite:./sluice.db)\n"
    "                       or a PostgreSQL database, postgres://USER@HOST:PORT/DB\n"
    "  --config FILE        a YAML configuration (docs/configuration.md); flags win\n"
    "  --advertise URL      shared mode (several servers on one PostgreSQL database):\n"
    "                       the URL the others reach this one at when it leads\n"
    "                       (default http://LISTEN, https://LISTEN with TLS)\n"
    "  --leader-timeout D   shared mode: how long a leader that stopped answering\n"
    "                       keeps the lead (default 5s; docs/shared-mode.md)\n"
    "  --allow-open         listen off loopback without tokens, on purpose (anyone\n"
    "                       who reaches the port may do everything)\n"
    "  --durability MODE    normal: survives a killed process (default);\n"
    "                       full: fsync every commit, survives power loss\n"
    "  --log-level LEVEL    error, warn, info (default) or debug\n"
    "  --tls-cert FILE      serve HTTPS: the PEM certificate (and its chain);\n"
    "  --tls-key FILE       its PEM private key (both re-read on SIGHUP)\n"
    "  --tls-client-ca FILE mTLS: clients must show a certificate these CAs signed\n"
    "  --tls-min-version V  1.2 (default) or 1.3\n"
    "  --cluster-ca FILE    shared mode: relay only to a leader whose certificate\n"
    "                       these CAs signed, for its advertised host\n"
    "  --cluster-cert FILE  the certificate a relay shows the leader (default: the\n"
    "  --cluster-key FILE   TLS certificate and key)\n"
    "  --cluster-insecure   shared mode with tokens over a trusted network: relay\n"
    "                       to the leader without proving it, on purpose\n"
    "  --help, --version\n"
    "\n"
    "example: sluiced --listen 127.0.0.1:7700 --store sqlite:/var/lib/sluice/sluice.db\n";

static void replace(char **field, const char *value)
{
    free(*field);
    *field = strdup(value);
    if (!*field)
        abort();
}

typedef struct flags {
    const char *listen, *plain_listen, *store, *config, *durability, *log_level, *advertise, *leader_timeout;
    const char *tls_cert, *tls_key, *tls_client_ca, *tls_min_version;
    const char *cluster_ca, *cluster_cert, *cluster_key;
    bool allow_open, cluster_insecure;
} flags;

static int parse_flags(int argc, char **argv, flags *f)
{
    static const struct option opts[] = {
        {"listen", required_argument, NULL, 'l'},   {"store", required_argument, NULL, 's'},
        {"config", required_argument, NULL, 'c'},   {"durability", required_argument, NULL, 'd'},
        {"log-level", required_argument, NULL, 'v'}, {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},        {"advertise", required_argument, NULL, 'a'},
        {"leader-timeout", required_argument, NULL, 't'},
        {"tls-cert", required_argument, NULL, 'C'},  {"tls-key", required_argument, NULL, 'K'},
        {"tls-client-ca", required_argument, NULL, 'A'},
        {"tls-min-version", required_argument, NULL, 'M'},
        {"allow-open", no_argument, NULL, 'o'},
        {"cluster-ca", required_argument, NULL, 'P'},
        {"cluster-cert", required_argument, NULL, 'Q'},
        {"cluster-key", required_argument, NULL, 'R'},
        {"cluster-insecure", no_argument, NULL, 'I'},
        {"plain-listen", required_argument, NULL, 'p'},     {NULL, 0, NULL, 0},
    };
    int ch;
    while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (ch) {
        case 'l': f->listen = optarg; break;
        case 'p': f->plain_listen = optarg; break;
        case 's': f->store = optarg; break;
        case 'c': f->config = optarg; break;
        case 'd': f->durability = optarg; break;
        case 'v': f->log_level = optarg; break;
        case 'a': f->advertise = optarg; break;
        case 't': f->leader_timeout = optarg; break;
        case 'C': f->tls_cert = optarg; break;
        case 'K': f->tls_key = optarg; break;
        case 'A': f->tls_client_ca = optarg; break;
        case 'M': f->tls_min_version = optarg; break;
        case 'o': f->allow_open = true; break;
        case 'P': f->cluster_ca = optarg; break;
        case 'Q': f->cluster_cert = optarg; break;
        case 'R': f->cluster_key = optarg; break;
        case 'I': f->cluster_insecure = true; break;
        case 'h': fputs(usage, stdout); exit(0);
        case 'V': printf("sluiced %s\n", SL_VERSION); exit(0);
        default: fputs(usage, stderr); return -1;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "sluiced: unexpected argument \"%s\"\n%s", argv[optind], usage);
        return -1;
    }
    return 0;
}

static int apply_flags(const flags *f, sl_conf *conf)
{
    if (f->listen)
        replace(&conf->listen, f->listen);
    if (f->plain_listen)
        replace(&conf->plain_listen, f->plain_listen);
    if (f->store)
        replace(&conf->store, f->store);
    if (f->advertise)
        replace(&conf->advertise, f->advertise);
    if (f->tls_cert)
        replace(&conf->tls_cert, f->tls_cert);
    if (f->tls_key)
        replace(&conf->tls_key, f->tls_key);
    if (f->tls_client_ca)
        replace(&conf->tls_client_ca, f->tls_client_ca);
    if (f->tls_min_version &&
        sl_tls_version_parse(f->tls_min_version, &conf->tls_min_version) != 0) {
        fprintf(stderr, "sluiced: --tls-min-version is 1.2 or 1.3, not \"%s\"\n",
                f->tls_min_version);
        return -1;
    }
    if (f->allow_open)
        conf->insecure_open = true;
    if (f->cluster_ca)
        replace(&conf->cluster_ca, f->cluster_ca);
    if (f->cluster_cert)
        replace(&conf->cluster_cert, f->cluster_cert);
    if (f->cluster_key)
        replace(&conf->cluster_key, f->cluster_key);
    if (f->cluster_insecure)
        conf->cluster_insecure = true;
    if (f->leader_timeout) {
        const char *problem = sl_duration_problem(f->leader_timeout);
        if (problem || sl_duration_parse(f->leader_timeout, &conf->leader_timeout_ms) != 0) {
            fprintf(stderr, "sluiced: --leader-timeout \"%s\" %s; use a duration like 5s\n",
                    f->leader_timeout, problem ? problem : "is not a duration");
            return -1;
        }
    }
    if (f->durability) {
        if (strcmp(f->durability, "full") == 0)
            conf->durability = SL_DURABILITY_FULL;
        else if (strcmp(f->durability, "normal") == 0)
            conf->durability = SL_DURABILITY_NORMAL;
        else {
            fprintf(stderr, "sluiced: --durability is normal or full, not \"%s\"\n",
                    f->durability);
            return -1;
        }
    }
    if (f->log_level && sl_log_level_parse(f->log_level, &conf->log_level) != 0) {
        fprintf(stderr, "sluiced: --log-level is error, warn, info or debug, not \"%s\"\n",
                f->log_level);
        return -1;
    }
    return 0;
}

/* SIGHUP (reload.c): the flags applied again over the file read again. */
static int reapply_flags(sl_conf *conf, void *arg)
{
    return apply_flags(arg, conf);
}

int main(int argc, char **argv)
{
    flags f = {0};
    if (parse_flags(argc, argv, &f) != 0)
        return 2;
    sl_conf conf;
    sl_conf_defaults(&conf);
    char err[1024];
    if (f.config && sl_conf_load_file(&conf, f.config, err, sizeof(err)) != 0) {
        fprintf(stderr, "sluiced: %s\n", err);
        sl_conf_free(&conf);
        return 2;
    }
    err[0] = '\0';
    if (apply_flags(&f, &conf) != 0 || sl_conf_check(&conf, err, sizeof(err)) != 0) {
        if (err[0])
            fprintf(stderr, "sluiced: %s\n", err);
        sl_conf_free(&conf);
        return 2;
    }
    const char *open = sl_conf_open_problem(&conf);
    if (open) {
        fprintf(stderr, "sluiced: listen: %s %s\n", conf.listen, open);
        sl_conf_free(&conf);
        return 2;
    }
    const char *cluster = sl_conf_cluster_problem(&conf);
    if (cluster) {
        fprintf(stderr, "sluiced: this server %s\n", cluster);
        sl_conf_free(&conf);
        return 2;
    }
    sl_server srv;
    int rc = sl_server_init(&srv, &conf);
    srv.config_path = f.config;
    srv.apply_flags = reapply_flags;
    srv.apply_flags_arg = &f;
    if (rc == 0)
        sl_reload_warn_exposed(&srv);
    rc = rc == 0 ? sl_server_run(&srv) : -1;
    sl_server_free(&srv);
    sl_conf_free(&conf);
    return rc == 0 ? 0 : 1;
}
