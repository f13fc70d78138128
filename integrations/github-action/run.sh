#!/usr/bin/env bash
# run.sh - the action's second step: the inputs (INPUT_*) become `sluice run`
# flags and INPUT_RUN runs under them with GitHub's own bash options
# (bash --noprofile --norc -eo pipefail). The step's status is the script's;
# a run that a newer one of its group replaced or stopped is a failure, or a
# success with cancelled: success, and says so in a warning either way. The
# TLS inputs reach sluice as SLUICE_CACERT, SLUICE_CERT and SLUICE_KEY; one
# given as PEM text is written to a private file (0600) in RUNNER_TEMP,
# removed when the step ends, whatever its outcome.
set -euo pipefail
# shellcheck source=integrations/github-action/group.sh
. "$(dirname "${BASH_SOURCE[0]}")/group.sh"

fail() { echo "::error::$*"; exit 2; }

script=""
private=()
cleanup() { rm -f "$script" ${private[@]+"${private[@]}"}; }
trap cleanup EXIT
trap 'exit 143' TERM
trap 'exit 130' INT

# A TLS input (NAME VALUE VARIABLE): a file's path, relative to the workspace,
# or the PEM text itself (a secret), then written to a private file. Exports
# VARIABLE as the file for sluice; an empty input leaves the job's own.
tls_input() {
    local name=$1 value=$2 var=$3 file
    [ -n "$value" ] || return 0
    if [[ $value == *"-----BEGIN "* ]]; then
        file=$(umask 077 && mktemp "${RUNNER_TEMP:-/tmp}/sluice-tls.XXXXXX")
        private+=("$file")
        printf '%s\n' "$value" > "$file"
    else
        case $value in
            /*) file=$value ;;
            *) file=${GITHUB_WORKSPACE:-$PWD}/$value ;;
        esac
        if [ ! -f "$file" ] || [ ! -r "$file" ]; then
            fail "$name: no readable file at $file: give a PEM file's path (relative to the workspace) or the PEM text itself, e.g. \${{ secrets.NAME }}"
        fi
    fi
    export "$var=$file"
}

# Comma- or newline-separated values, trimmed, empty ones dropped.
items() { tr ',' '\n' <<<"$1" | sed -e 's/^[[:space:]]*//' -e 's/[[:space:]]*$//' | sed '/^$/d'; }

args=()
while IFS= read -r v; do args+=(--mutex "$v"); done < <(items "${INPUT_MUTEX:-}")
while IFS= read -r v; do args+=(--semaphore "$v"); done < <(items "${INPUT_SEMAPHORE:-}")
while IFS= read -r v; do args+=(--tag "$v"); done < <(items "${INPUT_TAG:-}")
if [ -n "${INPUT_GROUP:-}" ]; then
    case "${INPUT_CANCEL_IN_PROGRESS:-false}" in
        true) cancel=in-progress ;;
        false) cancel=pending ;;
        *) fail "cancel-in-progress must be true or false, not '${INPUT_CANCEL_IN_PROGRESS}'" ;;
    esac
    # Any name GitHub accepts, with GitHub's equality (group.sh).
    group=$(sluice_group "$INPUT_GROUP")
    echo "concurrency group '$INPUT_GROUP' is the sluice group '$group'"
    args+=(--group "$group" --cancel "$cancel")
fi
[ "${#args[@]}" -gt 0 ] || fail "nothing to hold: give at least one of mutex, semaphore, tag or group"
case "${INPUT_CANCELLED:-failure}" in
    failure | success) ;;
    *) fail "cancelled must be failure or success, not '${INPUT_CANCELLED}'" ;;
esac
[ -z "${INPUT_GRACE:-}" ] || args+=(--grace "$INPUT_GRACE")
[ -z "${INPUT_PRIORITY:-}" ] || args+=(--priority "$INPUT_PRIORITY")
[ -z "${INPUT_LEASE:-}" ] || args+=(--lease "$INPUT_LEASE")
[ -z "${INPUT_TIMEOUT:-}" ] || args+=(--timeout "$INPUT_TIMEOUT")
[ -z "${INPUT_HOLDER:-}" ] || args+=(--holder "$INPUT_HOLDER")
[ -z "${INPUT_SERVER:-}" ] || export SLUICE_SERVER="$INPUT_SERVER"
[ -z "${INPUT_TOKEN:-}" ] || export SLUICE_TOKEN="$INPUT_TOKEN"
if [ -n "${INPUT_CLIENT_KEY:-}" ] && [ -z "${INPUT_CLIENT_CERT:-}" ] && [ -z "${SLUICE_CERT:-}" ]; then
    fail "client-key needs client-cert: give the certificate the key belongs to"
fi
tls_input ca-cert "${INPUT_CA_CERT:-}" SLUICE_CACERT
tls_input client-cert "${INPUT_CLIENT_CERT:-}" SLUICE_CERT
tls_input client-key "${INPUT_CLIENT_KEY:-}" SLUICE_KEY
# The commands get the files (a sluice of their own reaches the server too),
# not the PEM text.
unset INPUT_CA_CERT INPUT_CLIENT_CERT INPUT_CLIENT_KEY

script="$(mktemp "${RUNNER_TEMP:-/tmp}/sluice-step.XXXXXX")"
printf '%s\n' "${INPUT_RUN:?the run input is required}" > "$script"

# The claim's id and first token, for the step's outputs, written by the
# command's own environment as soon as the locks are held.
outputs='echo "claim-id=$SLUICE_CLAIM_ID" >> "$GITHUB_OUTPUT"; echo "fencing-token=$SLUICE_FENCING_TOKEN" >> "$GITHUB_OUTPUT"'

set +e
sluice run "${args[@]}" -- bash --noprofile --norc -eo pipefail -c "$outputs"'; . "$0"' "$script"
rc=$?
set -e
case $rc in
    124 | 125)
        echo "::warning::a newer run of group '${INPUT_GROUP:-}' replaced or stopped this one (sluice exit $rc)"
        [ "${INPUT_CANCELLED:-failure}" = success ] && exit 0 ;;
esac
exit $rc
