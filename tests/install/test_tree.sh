#!/bin/sh
# tests/install/test_tree.sh BUILDDIR - install/tree (see CMakeLists.txt).
#
# Installs BUILDDIR with `cmake --install BUILDDIR --prefix /usr/local` into
# DESTDIR=$tmp/root and checks the tree:
#   1. every expected file is there (programs executable, libsluice's
#      links), and nothing of the build tree leaks into it;
#   2. the installed programs run (sluice finds libsluice through its
#      RPATH, without LD_LIBRARY_PATH);
#   3. sluice.pc gives prefix, libdir and includedir inside the install;
#   4. the systemd unit names the installed sluiced and the installed
#      configuration, passes `systemd-analyze verify` (on a copy whose
#      ExecStart= points into DESTDIR), and a broken copy of it fails the
#      same check; `systemd-analyze security --offline=true` scores its
#      hardening 2.0 or less;
#   5. the manual pages format with `man --warnings` and `groff -ww`
#      without a single warning;
#   6. the installed sluiced accepts the installed default configuration
#      (listen and store overridden to stay in $tmp) and answers /healthz;
#   7. a C program compiled with `pkg-config --cflags --libs sluice` against
#      the installed header and library runs and prints what is expected;
#   8. installed with the prefixes /usr and /usr/local, the configuration
#      lands in /etc/sluice and /usr/local/etc/sluice (never /usr/etc) and
#      the unit's --config names that very file.
# The install directories come from CMake (GNUInstallDirs) in the
# environment: BINDIR SBINDIR LIBDIR INCLUDEDIR MANDIR SYSCONFDIR UNITDIR,
# and CC and TEST_CFLAGS for step 7.
set -eu

build=${1:?usage: test_tree.sh BUILDDIR}
prefix=/usr/local
: "${BINDIR:=bin}" "${SBINDIR:=sbin}" "${LIBDIR:=lib}" "${INCLUDEDIR:=include}"
: "${MANDIR:=share/man}" "${SYSCONFDIR:=etc}" "${CC:=cc}" "${TEST_CFLAGS:=}"
[ -n "${UNITDIR:-}" ] || UNITDIR=lib/systemd/system

failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
ok() { echo "ok: $*"; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/sluice-install.XXXXXX")
server_pid=
cleanup() {
    if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; fi
    rm -rf "$tmp"
}
trap cleanup EXIT INT TERM
root=$tmp/root
# An absolute GNUInstallDirs directory is used as it is; a relative one is
# under the prefix.
under_prefix() { case $1 in /*) echo "$1" ;; *) echo "$prefix/$1" ;; esac; }
# The configuration directory for prefix $1, as GNUInstallDirs' FULL_SYSCONFDIR:
# /etc for the prefixes / and /usr, /etc/opt/P for /opt/P, else PREFIX/etc.
etc_of() {
    case $SYSCONFDIR in
        /*) echo "$SYSCONFDIR" ;;
        *) case $1 in
               / | /usr | /usr/) echo "/$SYSCONFDIR" ;;
               /opt/homebrew/*) echo "$1/$SYSCONFDIR" ;;
               /opt/*) echo "/$SYSCONFDIR$1" ;;
               *) echo "$1/$SYSCONFDIR" ;;
           esac ;;
    esac
}
P_BIN=$root$(under_prefix "$BINDIR")
P_SBIN=$root$(under_prefix "$SBINDIR")
P_LIB=$root$(under_prefix "$LIBDIR")
P_INC=$root$(under_prefix "$INCLUDEDIR")
P_MAN=$root$(under_prefix "$MANDIR")
P_ETC=$root$(etc_of "$prefix")
P_UNIT=$root$(under_prefix "$UNITDIR")

# ---- 0. install ------------------------------------------------------------
if ! DESTDIR=$root cmake --install "$build" --prefix "$prefix" >"$tmp/install.log" 2>&1; then
    cat "$tmp/install.log" >&2
    echo "FAIL: cmake --install $build failed" >&2
    exit 1
fi
ok "cmake --install $build --prefix $prefix (DESTDIR=$root)"

# ---- 1. the files ----------------------------------------------------------
for f in "$P_SBIN/sluiced" "$P_BIN/sluice"; do
    if [ -f "$f" ] && [ -x "$f" ]; then ok "executable ${f#"$root"}"; else fail "no executable ${f#"$root"}"; fi
done
for f in "$P_LIB/libsluice.so" "$P_LIB/libsluice.so.0" "$P_INC/sluice/client.h" \
         "$P_LIB/pkgconfig/sluice.pc" \
         "$P_MAN/man1/sluice.1" "$P_MAN/man5/sluiced.yaml.5" "$P_MAN/man8/sluiced.8" \
         "$P_ETC/sluice/sluiced.yaml" "$P_UNIT/sluiced.service"; do
    if [ -f "$f" ]; then ok "file ${f#"$root"}"; else fail "no file ${f#"$root"}"; fi
done
if [ -L "$P_LIB/libsluice.so" ] && [ -L "$P_LIB/libsluice.so.0" ]; then
    ok "libsluice.so and libsluice.so.0 are links to the versioned library"
else
    fail "libsluice.so / libsluice.so.0 are not symbolic links"
fi
if [ -e "$P_SBIN/sluice" ] || [ -e "$P_BIN/sluiced" ]; then
    fail "sluice belongs in bin and sluiced in sbin only"
fi
# Nothing installed may point back into the build or source tree.
if grep -rlF "$build" "$P_LIB/pkgconfig" "$P_UNIT" "$P_ETC" "$P_MAN" >"$tmp/leak" 2>/dev/null; then
    fail "installed files name the build tree: $(cat "$tmp/leak")"
fi

# ---- 2. the programs run ---------------------------------------------------
# The file libsluice.so.0 of program $1 resolves to, as ldd sees it.
loaded_lib() {
    p=$(ldd "$1" 2>/dev/null | awk '$1 == "libsluice.so.0" {print $3}')
    if [ -n "$p" ]; then readlink -f "$p"; fi
}
v=$(env -u LD_LIBRARY_PATH "$P_BIN/sluice" --version 2>&1) || true
case $v in *0.*) ok "installed sluice --version: $v" ;; *) fail "installed sluice --version: $v" ;; esac
if command -v ldd >/dev/null 2>&1; then
    got=$(loaded_lib "$P_BIN/sluice")
    if [ "$got" = "$(readlink -f "$P_LIB/libsluice.so.0")" ]; then
        ok "installed sluice loads the installed libsluice (RPATH)"
    else
        fail "installed sluice loads '$got', not ${P_LIB#"$root"}/libsluice.so.0"
    fi
fi
v=$("$P_SBIN/sluiced" --version 2>&1) || true
case $v in "sluiced "*) ok "installed sluiced --version: $v" ;; *) fail "installed sluiced --version: $v" ;; esac

# ---- 3. sluice.pc ------------------------------------------------------------
export PKG_CONFIG_PATH="$P_LIB/pkgconfig"
unset PKG_CONFIG_SYSROOT_DIR PKG_CONFIG_LIBDIR 2>/dev/null || true
canon() { (cd "$1" 2>/dev/null && pwd -P) || echo "missing:$1"; }
for var in prefix libdir includedir; do
    got=$(pkg-config --variable="$var" sluice) || { fail "pkg-config --variable=$var sluice"; continue; }
    case $var in
        prefix) want=$root$prefix ;;
        libdir) want=$P_LIB ;;
        includedir) want=$P_INC ;;
    esac
    if [ "$(canon "$got")" = "$(canon "$want")" ]; then
        ok "sluice.pc $var is ${want#"$root"} in the install ($got)"
    else
        fail "sluice.pc $var is $got, not ${want#"$root"} under DESTDIR"
    fi
done

# ---- 4. the systemd unit ---------------------------------------------------
unit=$P_UNIT/sluiced.service
want_exec="ExecStart=$(under_prefix "$SBINDIR")/sluiced --config $(etc_of "$prefix")/sluice/sluiced.yaml"
if grep -qxF "$want_exec" "$unit"; then ok "unit: $want_exec"; else fail "unit has no line '$want_exec'"; fi
if grep -q '@[A-Z_]*@' "$unit"; then fail "unit has an unreplaced @VARIABLE@"; fi
# shellcheck disable=SC2016 # $MAINPID is systemd's, not the shell's
for line in DynamicUser=yes StateDirectory=sluice ConfigurationDirectory=sluice \
            Restart=on-failure ProtectSystem=strict ProtectHome=yes PrivateTmp=yes \
            NoNewPrivileges=yes 'ExecReload=/bin/kill -HUP $MAINPID' \
            'Documentation=man:sluiced(8) man:sluiced.yaml(5)' WantedBy=multi-user.target; do
    if grep -qxF "$line" "$unit"; then ok "unit: $line"; else fail "unit has no line '$line'"; fi
done
if grep -q '^ExecStartPost=.*127\.0\.0\.1:7700/healthz' "$unit"; then
    ok "unit: a readiness check of /healthz"
else
    fail "unit has no ExecStartPost= readiness check of /healthz"
fi

# systemd-analyze verify checks that ExecStart='s program exists: verify a
# copy whose sluiced is the one in DESTDIR. Its man: links are looked up in
# the installed pages (MANPATH). Any output is a failure, not just the
# status: unknown keys are only warnings to it.
verify() {
    if MANPATH="$P_MAN" SYSTEMD_LOG_COLOR=0 systemd-analyze verify "$1" >"$tmp/verify.out" 2>&1; then
        if grep -q . "$tmp/verify.out"; then return 1; fi
    else
        return 1
    fi
}
if command -v systemd-analyze >/dev/null 2>&1; then
    mkdir -p "$tmp/verify/good" "$tmp/verify/bad"
    sed "s|^ExecStart=$(under_prefix "$SBINDIR")/sluiced|ExecStart=$P_SBIN/sluiced|" \
        "$unit" >"$tmp/verify/good/sluiced.service"
    if verify "$tmp/verify/good/sluiced.service"; then
        ok "systemd-analyze verify sluiced.service"
    else
        fail "systemd-analyze verify sluiced.service: $(cat "$tmp/verify.out")"
    fi
    # The check must catch a broken unit: a missing program, a misspelt key.
    sed -e "s|^ExecStart=$(under_prefix "$SBINDIR")/sluiced|ExecStart=$tmp/nowhere/sluiced|" \
        "$unit" >"$tmp/verify/bad/sluiced.service"
    if verify "$tmp/verify/bad/sluiced.service"; then
        fail "systemd-analyze verify accepts a unit whose ExecStart= program is missing"
    else
        ok "systemd-analyze verify refuses a unit with a missing program"
    fi
    sed -e "s|^ExecStart=$(under_prefix "$SBINDIR")/sluiced|ExecStart=$P_SBIN/sluiced|" \
        -e 's|^ProtectHome=yes|ProtectHomes=yes|' \
        "$unit" >"$tmp/verify/bad/sluiced.service"
    if verify "$tmp/verify/bad/sluiced.service"; then
        fail "systemd-analyze verify accepts a unit with an unknown key"
    else
        ok "systemd-analyze verify refuses a unit with an unknown key"
    fi
    # The hardening: systemd's exposure score, 0 (best) to 10, of the unit
    # as installed. 5.8 before the sandboxing of the unit's Hardening part.
    SYSTEMD_LOG_COLOR=0 systemd-analyze security --offline=true \
        "$tmp/verify/good/sluiced.service" >"$tmp/security.out" 2>&1 || true
    score=$(sed -n 's/.*Overall exposure level for sluiced.service: \([0-9.]*\).*/\1/p' \
        "$tmp/security.out")
    if [ -z "$score" ]; then
        fail "systemd-analyze security gave no score: $(tail -5 "$tmp/security.out")"
    elif awk -v s="$score" 'BEGIN { exit !(s <= 2.0) }'; then
        ok "systemd-analyze security: exposure $score (at most 2.0)"
    else
        fail "systemd-analyze security: exposure $score, more than 2.0: $(grep '✗' "$tmp/security.out")"
    fi
else
    fail "systemd-analyze not found (apt-get install systemd, or ./scripts/deps)"
fi

# ---- 5. the manual pages ---------------------------------------------------
for page in "$P_MAN/man1/sluice.1" "$P_MAN/man5/sluiced.yaml.5" "$P_MAN/man8/sluiced.8"; do
    [ -f "$page" ] || continue
    if LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -l "$page" >"$tmp/man.out" 2>"$tmp/man.err" \
        && ! grep -q . "$tmp/man.err" && grep -q 'NAME' "$tmp/man.out"; then
        ok "man --warnings -l ${page#"$root"}"
    else
        fail "man --warnings -l ${page#"$root"}: $(cat "$tmp/man.err")"
    fi
    if groff -ww -man -z "$page" >"$tmp/groff.err" 2>&1 && ! grep -q . "$tmp/groff.err"; then
        ok "groff -ww -man -z ${page#"$root"}"
    else
        fail "groff -ww -man -z ${page#"$root"}: $(cat "$tmp/groff.err")"
    fi
done
# Every flag of sluiced --help is in sluiced(8), every command of
# sluice --help in sluice(1).
flags=$("$P_SBIN/sluiced" --help | grep -o -- '--[a-z][a-z-]*' | sort -u)
for flag in $flags; do
    grep -qF -- "\\fB$flag\\fR" "$P_MAN/man8/sluiced.8" \
        || fail "sluiced(8) does not document $flag"
done
cmds=$(env -u LD_LIBRARY_PATH "$P_BIN/sluice" --help | sed -n '/^Commands:/,/^$/p' | awk 'NF && !/Commands:/ {print $1}')
[ -n "$cmds" ] || fail "no commands found in sluice --help"
for cmd in $cmds; do
    grep -qF -- "\\fB$cmd" "$P_MAN/man1/sluice.1" || fail "sluice(1) does not document the command $cmd"
done
ok "sluiced(8) and sluice(1) name every flag and command of --help"

# ---- 6. the default configuration ------------------------------------------
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])' 2>/dev/null || echo 17700)
"$P_SBIN/sluiced" --config "$P_ETC/sluice/sluiced.yaml" --listen "127.0.0.1:$port" \
    --store "sqlite:$tmp/sluice.db" >"$tmp/sluiced.log" 2>&1 &
server_pid=$!
up=no
i=0
while [ $i -lt 100 ]; do
    if curl -sf -o /dev/null --max-time 2 "http://127.0.0.1:$port/healthz"; then up=yes; break; fi
    kill -0 "$server_pid" 2>/dev/null || break
    sleep 0.1
    i=$((i + 1))
done
if [ $up = yes ]; then
    ok "the installed sluiced runs with the installed sluiced.yaml"
else
    fail "the installed sluiced did not start with the installed sluiced.yaml: $(cat "$tmp/sluiced.log")"
fi
kill "$server_pid" 2>/dev/null || true
wait "$server_pid" 2>/dev/null || true
server_pid=
if grep -v '^[[:space:]]*#' "$P_ETC/sluice/sluiced.yaml" | grep -v '^[[:space:]]*$' >"$tmp/keys" \
   && [ "$(cat "$tmp/keys")" = "listen: 127.0.0.1:7700
store: sqlite:/var/lib/sluice/sluice.db" ]; then
    ok "sluiced.yaml sets listen and store only; the rest is commented out"
else
    fail "sluiced.yaml sets more than listen and store: $(cat "$tmp/keys")"
fi

# ---- 7. a program against the installed libsluice --------------------------
cat >"$tmp/prog.c" <<'PROG'
#include <sluice/client.h>
#include <stdio.h>
#include <string.h>

int main(void)
{
    sl_client_error err;
    sl_client *c = NULL;
    sl_client_options bad = {.server = "htp://nowhere"};
    int rc = sl_client_new(&bad, &c, &err);
    if (rc != SL_CLIENT_EINVAL || c != NULL || err.message[0] == '\0') {
        printf("bad URL: rc %d\n", rc);
        return 1;
    }
    sl_client_options good = {.server = "http://127.0.0.1:1,http://127.0.0.1:2"};
    rc = sl_client_new(&good, &c, &err);
    if (rc != SL_CLIENT_OK) {
        printf("sl_client_new: %s\n", err.message);
        return 1;
    }
    printf("libsluice %s: %zu servers, first %s; %s\n", SL_CLIENT_VERSION,
           sl_client_server_count(c), sl_client_server(c), sl_client_strerror(SL_CLIENT_EINVAL));
    sl_client_free(c);
    return 0;
}
PROG
if flags=$(pkg-config --cflags --libs sluice); then
    ok "pkg-config --cflags --libs sluice: $flags"
    # shellcheck disable=SC2086,SC2046 # the flags are words
    if $CC -std=c17 -Wall -Wextra -Werror -pedantic $TEST_CFLAGS -o "$tmp/prog" "$tmp/prog.c" \
        $(pkg-config --cflags sluice) $(pkg-config --libs sluice) >"$tmp/cc.out" 2>&1; then
        ok "compiled a program against the installed libsluice"
        out=$(LD_LIBRARY_PATH="$P_LIB" ASAN_OPTIONS=detect_leaks=0 "$tmp/prog" 2>&1) || fail "the program failed: $out"
        want="libsluice $(sed -n 's/^#define SL_CLIENT_VERSION "\(.*\)"$/\1/p' "$P_INC/sluice/client.h"): 2 servers, first http://127.0.0.1:1; "
        case $out in
            "$want"?*) ok "the program printed: $out" ;;
            *) fail "the program printed '$out', not '$want...'" ;;
        esac
        if command -v ldd >/dev/null 2>&1; then
            got=$(LD_LIBRARY_PATH="$P_LIB" loaded_lib "$tmp/prog")
            if [ "$got" != "$(readlink -f "$P_LIB/libsluice.so.0")" ]; then
                fail "the program loads '$got', not the installed libsluice"
            fi
        fi
    else
        fail "compiling against the installed libsluice: $(cat "$tmp/cc.out")"
    fi
else
    fail "pkg-config --cflags --libs sluice"
fi

# ---- 8. the configuration where the unit reads it, for /usr and /usr/local --
# The default SYSCONFDIR (etc) gives these; an absolute one is used as it is.
for p in /usr /usr/local; do
    case $SYSCONFDIR in
        /*) want=$SYSCONFDIR/sluice/sluiced.yaml ;;
        *) if [ $p = /usr ]; then want=/etc/sluice/sluiced.yaml; else want=/usr/local/etc/sluice/sluiced.yaml; fi ;;
    esac
    r=$tmp/prefix$(echo $p | tr / _)
    if ! DESTDIR=$r cmake --install "$build" --prefix $p >"$tmp/install$(echo $p | tr / _).log" 2>&1; then
        fail "cmake --install $build --prefix $p: $(tail -3 "$tmp/install$(echo $p | tr / _).log")"
        continue
    fi
    u=$r$(case $UNITDIR in /*) echo "$UNITDIR" ;; *) echo "$p/$UNITDIR" ;; esac)/sluiced.service
    if [ -f "$r$want" ]; then ok "prefix $p: $want"; else fail "prefix $p: no $want"; fi
    if [ -e "$r$p/etc" ] && [ "$p" = /usr ]; then fail "prefix $p: $p/etc exists (not FHS)"; fi
    if grep -q "^ExecStart=.* --config $want\$" "$u"; then
        ok "prefix $p: the unit reads $want"
    else
        fail "prefix $p: the unit does not read $want: $(grep '^ExecStart=' "$u")"
    fi
done

if [ $failures -ne 0 ]; then
    echo "install/tree: $failures failure(s)" >&2
    exit 1
fi
echo "install/tree: all checks passed"
