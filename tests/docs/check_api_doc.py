#!/usr/bin/env python3
"""Keeps docs/api.md the complete reference of the HTTP API.

Fails, naming what is missing, when:
  - an operation (method and path) of docs/openapi.yaml has no section in
    docs/api.md: a heading whose code span is exactly `METHOD /path`, as in
    openapi.yaml (### `GET /v1/claims/{id}`);
  - a query or header parameter of an operation has no row in a table of
    that operation's section (the heading down to the next heading of the
    same or a higher level): a line starting | `name` |;
  - an error code the server can send (string literals in src/server/*.c
    passed as an error body's code, and openapi.yaml's ErrorCode enum) is not
    in the Errors section of docs/api.md, as `code`;
  - a link to #anchor inside docs/api.md names no heading of it;
  - a file under docs/ mentions /work/shared, ../shared, API.md or DESIGN.md
    (the product documents itself; it never points outside the repository).

Usage: check_api_doc.py [SOURCE_DIR]   (default: two levels above this file)
Standard library and PyYAML only.
"""
import os
import re
import sys

import yaml

METHODS = ("get", "put", "post", "delete", "patch", "head", "options")

# Where the server writes an error code (src/server/*.c):
#   sl_reply_error(c, 404, "not_found", ...)     the handlers' helper
#   answer_error(r, 503, "no_leader", ...)       the relay's
#   json_pack(... "code", "leader_changed" ...)  a body built with jansson
#   "{\"error\":{\"code\":\"not_leader\", ...     a body written as a literal
#   code = "unknown_semaphore";                  an engine error's mapping
#   return "too_large";                          the HTTP layer's error_code()
CODE_PATTERNS = [
    re.compile(r'\b(?:sl_reply_error|answer_error)\s*\(\s*[^,]+,\s*\d+\s*,\s*"([a-z_]+)"'),
    re.compile(r'"code"\s*,\s*"([a-z_]+)"'),
    re.compile(r'\\"code\\"\s*:\s*\\"([a-z_]+)\\"'),
    re.compile(r'\bcode\s*=\s*"([a-z_]+)"'),
]
ERROR_CODE_FN = re.compile(r"error_code\s*\(\s*int\s+status\s*\)\s*\{(.*?)\n\}", re.S)
RETURN_STR = re.compile(r'return\s+"([a-z_]+)"\s*;')

# Codes every version of the server has: if the scan stops finding these, the
# patterns above have rotted and the check would pass vacuously.
EXPECTED_AT_LEAST = {"bad_request", "unauthorized", "forbidden", "not_found", "conflict",
                     "unknown_semaphore", "too_large", "method_not_allowed", "unavailable"}

FORBIDDEN_MENTIONS = ["/work/shared", "../shared", "API.md", "DESIGN.md"]

HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
FENCE = re.compile(r"^\s*(```|~~~)")


def headings(lines):
    """(index, level, text) of every heading outside code fences."""
    out, fenced = [], False
    for i, line in enumerate(lines):
        if FENCE.match(line):
            fenced = not fenced
            continue
        m = None if fenced else HEADING.match(line)
        if m:
            out.append((i, len(m.group(1)), m.group(2)))
    return out


def section(lines, heads, k):
    """The text of heading k down to the next heading of its level or higher."""
    start, level, _ = heads[k]
    end = len(lines)
    for i, lv, _ in heads[k + 1:]:
        if lv <= level:
            end = i
            break
    return "\n".join(lines[start:end])


def gh_anchor(text):
    """GitHub's anchor for a heading's text."""
    t = re.sub(r"`", "", text).strip().lower()
    t = re.sub(r"[^\w\- ]", "", t)
    return t.replace(" ", "-")


def operations(spec):
    """{(METHOD, path): [(name, in), ...]} with path-level parameters merged."""
    params_c = spec.get("components", {}).get("parameters", {})

    def resolve(p):
        ref = p.get("$ref") if isinstance(p, dict) else None
        if ref:
            return params_c[ref.rsplit("/", 1)[-1]]
        return p

    ops = {}
    for path, item in (spec.get("paths") or {}).items():
        common = [resolve(p) for p in item.get("parameters", [])]
        for method in METHODS:
            op = item.get(method)
            if not isinstance(op, dict):
                continue
            ps = common + [resolve(p) for p in op.get("parameters", [])]
            ops[(method.upper(), path)] = [(p["name"], p["in"]) for p in ps]
    return ops


def server_codes(src_dir):
    codes, where = set(), {}
    server = os.path.join(src_dir, "src", "server")
    for name in sorted(os.listdir(server)):
        if not name.endswith(".c"):
            continue
        text = open(os.path.join(server, name), encoding="utf-8").read()
        found = set()
        for pat in CODE_PATTERNS:
            found.update(pat.findall(text))
        for body in ERROR_CODE_FN.findall(text):
            found.update(RETURN_STR.findall(body))
        for c in found:
            where.setdefault(c, name)
        codes |= found
    return codes, where


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    src = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else os.path.dirname(
        os.path.dirname(here))
    api_path = os.path.join(src, "docs", "api.md")
    spec_path = os.path.join(src, "docs", "openapi.yaml")
    problems = []

    doc = open(api_path, encoding="utf-8").read()
    lines = doc.splitlines()
    heads = headings(lines)
    with open(spec_path, encoding="utf-8") as f:
        spec = yaml.safe_load(f)

    # 1. A section per operation, and each of its parameters in it.
    ops = operations(spec)
    if len(ops) < 20:
        problems.append(f"docs/openapi.yaml: only {len(ops)} operations found; "
                        "is the file whole?")
    by_op = {}
    for k, (_, _, text) in enumerate(heads):
        for span in re.findall(r"`([^`]+)`", text):
            m = re.fullmatch(r"([A-Z]+) (/\S*)", span.strip())
            if m:
                by_op.setdefault((m.group(1), m.group(2)), k)
    for (method, path), params in sorted(ops.items(), key=lambda o: (o[0][1], o[0][0])):
        k = by_op.get((method, path))
        if k is None:
            problems.append(f"docs/api.md has no section for {method} {path} "
                            f"(a heading such as: ### `{method} {path}`)")
            continue
        body = section(lines, heads, k)
        for name, where in params:
            if where not in ("query", "header"):
                continue
            # Described: a row of a parameters table, "| `name` | type | ...".
            if not re.search(r"^\s*\|\s*`" + re.escape(name) + r"`\s*\|", body, re.M):
                problems.append(f"docs/api.md, section {method} {path}: the {where} "
                                f"parameter `{name}` has no row in a table there "
                                f"(| `{name}` | type | ... |)")

    # 2. Every error code the server can send, in the Errors section.
    codes, where = server_codes(src)
    missing_expected = EXPECTED_AT_LEAST - codes
    if missing_expected:
        problems.append("the scan of src/server/*.c for error codes found none of "
                        f"{sorted(missing_expected)}: update CODE_PATTERNS in "
                        "tests/docs/check_api_doc.py to how the server writes them")
    enum = (spec.get("components", {}).get("schemas", {}).get("ErrorCode", {})
            .get("enum", []))
    for c in enum:
        where.setdefault(c, "docs/openapi.yaml (ErrorCode)")
    codes |= set(enum)
    errors_k = next((k for k, (_, lv, t) in enumerate(heads)
                     if lv == 2 and t.strip().lower() == "errors"), None)
    if errors_k is None:
        problems.append("docs/api.md has no '## Errors' section")
    else:
        errors = section(lines, heads, errors_k)
        for c in sorted(codes):
            if f"`{c}`" not in errors:
                problems.append(f"docs/api.md, section Errors: the error code `{c}` "
                                f"(sent by {where[c]}) is not documented")

    # 3. Links to anchors of the page itself.
    anchors = {gh_anchor(t) for _, _, t in heads}
    for a in sorted(set(re.findall(r"\]\(#([^)\s]+)\)", doc))):
        if a not in anchors:
            problems.append(f"docs/api.md links to #{a}, which is no heading of it")

    # 4. The documentation stands on its own.
    docs_dir = os.path.join(src, "docs")
    for root, _, files in os.walk(docs_dir):
        for name in sorted(files):
            path = os.path.join(root, name)
            try:
                text = open(path, encoding="utf-8").read()
            except (UnicodeDecodeError, OSError):
                continue  # images and other binary files
            for n, line in enumerate(text.splitlines(), 1):
                for bad in FORBIDDEN_MENTIONS:
                    if bad in line:
                        rel = os.path.relpath(path, src)
                        problems.append(f"{rel}:{n}: mentions {bad!r}; the docs must not "
                                        "refer to files outside the repository")

    if problems:
        print(f"docs/api.md is not a complete reference ({len(problems)} problems):")
        for p in problems:
            print("  - " + p)
        return 1
    print(f"docs/api.md: {len(ops)} operations, {len(codes)} error codes, "
          f"{len(anchors)} headings checked; docs/ self-contained")
    return 0


if __name__ == "__main__":
    sys.exit(main())
