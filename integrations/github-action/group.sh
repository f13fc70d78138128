#!/usr/bin/env bash
# group.sh - GitHub's concurrency group names as sluice group names.
#
# GitHub accepts any string as `concurrency.group` and compares them without
# regard to case; a sluice group is a lock name (A-Z a-z 0-9 . _ - / : =, at
# most 247 bytes, no leading or trailing '/', no '//', no '.' or '..'
# segment). sluice_group NAME prints the sluice group for NAME:
#   1. ASCII letters are lower-cased ("Prod" and "prod" are one group); other
#      letters are compared as they are, byte for byte, so that every runner
#      maps a name the same way whatever its locale;
#   2. every byte outside a-z 0-9 . _ - / : is written =XX (its value in
#      upper-case hex), '=' itself included, and so is a '/' at either end or
#      next to another '/', and the dots of a '.' or '..' segment;
#   3. a result longer than 247 bytes keeps its first 181 bytes (never half
#      of an =XX) followed by '==' and the SHA-256 of the lower-cased name.
# Two names GitHub takes as one group give one sluice group; two it takes as
# different give different ones: an =XX stands for one byte, '=' is always
# escaped, and '==' appears only before a hash. Names already made of
# a-z 0-9 . _ - / : (deploy/main, acme/app-refs/heads/main) are unchanged.
# Run as a script, it prints the group for its argument.

SLUICE_GROUP_MAX=247

# The SHA-256 of stdin in hex (coreutils on Linux, shasum on macOS).
sluice_group_sha256() {
    if command -v sha256sum >/dev/null 2>&1; then
        sha256sum | cut -c1-64
    else
        shasum -a 256 | cut -c1-64
    fi
}

sluice_group() {
    local LC_ALL=C
    local s=${1,,} out="" hex b c prev next i n
    # One hex pair per byte: the name's bytes, whatever their encoding.
    read -r -d '' -a hex < <(printf '%s' "$s" | od -An -v -tx1) || true
    n=${#hex[@]}
    for ((i = 0; i < n; i++)); do
        b=${hex[i]}
        printf -v c '%b' "\\x$b"
        case $c in
            [a-z0-9._:-]) out+=$c ;;
            /)
                prev=${hex[i - 1]:-}
                next=${hex[i + 1]:-}
                if ((i == 0 || i == n - 1)) || [ "$prev" = 2f ] || [ "$next" = 2f ]; then
                    out+='=2F'
                else
                    out+=/
                fi
                ;;
            *) out+="=${b^^}" ;;
        esac
    done
    # '.' and '..' segments: their dots escaped (escapes hold no '/' or '.').
    local seg segs=() fixed=""
    IFS=/ read -ra segs <<<"$out"
    for seg in "${segs[@]}"; do
        case $seg in . | ..) seg=${seg//./=2E} ;; esac
        fixed+=${fixed:+/}$seg
    done
    [ -z "$fixed" ] || out=$fixed
    if ((${#out} > SLUICE_GROUP_MAX)); then
        local keep=$((SLUICE_GROUP_MAX - 2 - 64))
        local head=${out:0:keep}
        case $head in *=) head=${head%=} ;; *=?) head=${head%=?} ;; esac
        out="$head==$(printf '%s' "$s" | sluice_group_sha256)"
    fi
    printf '%s\n' "$out"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    set -euo pipefail
    sluice_group "${1?usage: group.sh NAME}"
fi
