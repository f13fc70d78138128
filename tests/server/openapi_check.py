"""openapi_check.py - checks sluiced's answers against docs/openapi.yaml.

check(method, target, status, headers, body) finds the operation the request
reached (the path templates of the document, with the path percent-decoded;
a lock's {name} may hold '/'), the response the document gives for the
status, and checks the answer against it:

- an unknown path, a status the document does not give for the operation
  (nor for every request: x-sluice-any-request, x-sluice-any-api-request,
  x-sluice-unknown-path, x-sluice-other-methods for another method) fails;
- the Content-Type must be one of the response's media types (a response
  without content must have no body);
- a response header the document marks required must be there, and a header
  sent must match its schema;
- a JSON body is validated with jsonschema (Draft 2020-12), its
  #/components/... references resolved in the document. Other bodies (the
  event stream, /metrics, the dashboard's files) are checked for their
  content type only. A HEAD answer has no body to check.

Failures raise AssertionError naming the method, path, status and what did
not match. Works with Debian 12's python3-jsonschema (4.10, RefResolver) and
with newer ones (the `referencing` library).
"""
import json
import os
import re
import threading
import urllib.parse

import jsonschema
import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
DOCUMENT = os.path.join(HERE, "..", "..", "docs", "openapi.yaml")
BASE_URI = "urn:sluice:openapi"

# Path parameters that may hold '/': lock names, dashboard files, lock keys
# and runs of the dashboard's pages.
SLASHED_PARAMS = ("name", "file", "key", "run")

VALID_KEPT = 64 << 20  # bytes of bodies remembered as valid (then forgotten, all at once)

_lock = threading.Lock()
_state = {}
stats = {"validated": 0, "bodies": 0}


def enabled():
    """Whether the fixture checks answers: SLUICE_OPENAPI_CHECK is not "0"."""
    return os.environ.get("SLUICE_OPENAPI_CHECK", "1") != "0"


def load(path=None):
    # libyaml's loader when PyYAML has it: the same document in a fifth of
    # the time (0.1 s, not 0.5 s, in every test process that checks answers).
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    with open(path or DOCUMENT, encoding="utf-8") as f:
        return yaml.load(f, Loader=loader)


def _escape(token):
    return str(token).replace("~", "~0").replace("/", "~1")


def pointer_get(doc, pointer):
    """The node at a JSON pointer ("/a/b", "" for the root)."""
    node = doc
    if not pointer:
        return node
    for part in pointer.lstrip("/").split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        if isinstance(node, list):
            node = node[int(part)]
        else:
            node = node[part]
    return node


def _deref(doc, pointer):
    """(pointer, node) after following $ref (local references only)."""
    node = pointer_get(doc, pointer)
    seen = set()
    while isinstance(node, dict) and "$ref" in node:
        ref = node["$ref"]
        if not ref.startswith("#") or ref in seen:
            raise AssertionError("openapi: unresolvable $ref %r at %s" % (ref, pointer))
        seen.add(ref)
        pointer = ref[1:]
        node = pointer_get(doc, pointer)
    return pointer, node


def _template_regex(template):
    out = "^"
    for piece in re.split(r"(\{[^}]+\})", template):
        if piece.startswith("{") and piece.endswith("}"):
            name = piece[1:-1]
            out += "(?P<%s>%s)" % (name, ".+" if name in SLASHED_PARAMS else "[^/]+")
        else:
            out += re.escape(piece)
    return re.compile(out + "$")


def _setup():
    with _lock:
        if _state:
            return _state
        doc = load()
        templates = []
        for template in doc.get("paths", {}):
            literal = len(re.sub(r"\{[^}]+\}", "", template))
            # Fixed paths first, then the most specific templates.
            templates.append(("{" not in template, literal, template, _template_regex(template)))
        templates.sort(key=lambda t: (not t[0], -t[1]))
        _state.update(doc=doc, templates=templates, validators={}, registry=_registry(doc),
                      valid={}, valid_bytes=0)
        return _state


def _registry(doc):
    try:
        from referencing import Registry, Resource
        from referencing.jsonschema import DRAFT202012
    except ImportError:
        return None  # jsonschema < 4.18: RefResolver (below)
    return Registry().with_resource(
        BASE_URI, Resource.from_contents(doc, default_specification=DRAFT202012))


def _validator(state, pointer):
    v = state["validators"].get(pointer)
    if v is not None:
        return v
    cls = jsonschema.Draft202012Validator
    if state["registry"] is not None:
        v = cls({"$ref": BASE_URI + "#" + pointer}, registry=state["registry"])
    else:
        resolver = jsonschema.RefResolver.from_schema(state["doc"])
        v = cls({"$ref": "#" + pointer}, resolver=resolver)
    state["validators"][pointer] = v
    return v


def _innermost(err):
    """For a oneOf/anyOf that nothing matched, the error of the branch that
    came closest (fewest errors), so that a claim missing "by" reads as
    that rather than as "not valid under any of the given schemas"."""
    while err.context:
        branches = {}
        for sub in err.context:
            branches.setdefault(sub.relative_schema_path[0], []).append(sub)
        closest = min(branches.values(), key=len)
        err = _best(closest)
    return err


def _best(errors):
    """best_match, but past unevaluatedProperties: when an allOf part fails,
    its properties count as unevaluated too, which says less than the
    failure itself."""
    errors = list(errors)
    plain = [e for e in errors if e.validator != "unevaluatedProperties"]
    return jsonschema.exceptions.best_match(plain or errors)


def _short(text, cap=400):
    return text if len(text) <= cap else text[:cap] + "..."


def find_path(target):
    """(template, decoded path) for a request target, template None when no
    path of the document matches."""
    state = _setup()
    parts = urllib.parse.urlsplit(target)
    raw = parts.path if (parts.scheme or target.startswith("/")) else target.split("?")[0]
    path = urllib.parse.unquote(raw)
    for _fixed, _lit, template, rx in state["templates"]:
        if rx.match(path):
            return template, path
    return None, path


def _is_api(path):
    return path.startswith("/v1/") or path == "/metrics"


def _response_for(state, method, template, path, status):
    """(pointer, response object) the document gives, or an AssertionError."""
    doc = state["doc"]
    candidates = []  # pointers of response maps, in order
    if template is not None:
        item_ptr = "/paths/" + _escape(template)
        item = doc["paths"][template]
        op = method.lower()
        if op == "head" and "head" not in item:
            op = "get"
        if op in item:
            candidates.append(item_ptr + "/" + op + "/responses")
        elif "x-sluice-other-methods" in item:
            candidates.append(item_ptr + "/x-sluice-other-methods")
    else:
        candidates.append("/x-sluice-unknown-path")
    candidates.append("/x-sluice-any-request")
    if _is_api(path):
        candidates.append("/x-sluice-any-api-request")
    key = str(status)
    for ptr in candidates:
        responses = pointer_get(doc, ptr)
        for k in (key, key[0] + "XX", "default"):
            if k in responses:
                return _deref(doc, ptr + "/" + _escape(k))
    where = template if template is not None else "no path of the document (%s)" % path
    raise AssertionError("openapi: %s %s -> %d: the document gives no %d answer for %s"
                         % (method, path, status, status, where))


def _media_matches(key, ctype):
    key = key.lower()
    if key == ctype or key in ("*/*",):
        return True
    return key.endswith("/*") and ctype.startswith(key[:-1])


def check(method, target, status, headers, body, body_read=True):
    """Checks one answer; headers with lower-cased names, body bytes (None
    or body_read=False when it was not read: only status, headers and
    content type are checked). Raises AssertionError on a mismatch."""
    state = _setup()
    doc = state["doc"]
    method = method.upper()
    template, path = find_path(target)
    if status == 100:
        return
    rptr, response = _response_for(state, method, template, path, status)
    what = "%s %s -> %d" % (method, path, status)
    # Headers the document requires, and the schemas of those sent.
    for name, hdr in (response.get("headers") or {}).items():
        hptr, hdr = _deref(doc, rptr + "/headers/" + _escape(name))
        value = headers.get(name.lower())
        if value is None:
            if hdr.get("required"):
                raise AssertionError("openapi: %s: header %s is missing" % (what, name))
            continue
        if "schema" in hdr:
            err = jsonschema.exceptions.best_match(
                _validator(state, hptr + "/schema").iter_errors(value))
            if err is not None:
                raise AssertionError("openapi: %s: header %s: %r: %s"
                                     % (what, name, value, err.message))
    content = response.get("content")
    ctype = (headers.get("content-type") or "").split(";")[0].strip().lower()
    is_head = method == "HEAD"
    if not content:
        if body and not is_head:
            raise AssertionError("openapi: %s: the document gives no body, the answer has %d bytes"
                                 % (what, len(body)))
        stats["validated"] += 1
        return
    media = None
    for key in content:
        if _media_matches(key, ctype):
            media = key
            break
    if media is None:
        raise AssertionError("openapi: %s: Content-Type %r is none of %s"
                             % (what, headers.get("content-type"), ", ".join(content)))
    stats["validated"] += 1
    if is_head or not body_read or body is None or media != "application/json":
        return
    mptr = rptr + "/content/" + _escape(media)
    if "schema" not in content[media]:
        return
    # The same bytes against the same schema have the same result: a body
    # seen valid before is not validated again. Tests read much again that
    # has not changed (test_crash reads every ended claim and the whole
    # event log after each restart), and validating is most of their CPU.
    body = bytes(body)
    if (mptr, body) in state["valid"]:
        stats["bodies"] += 1
        return
    try:
        data = json.loads(body.decode("utf-8"))
    except ValueError as e:
        raise AssertionError("openapi: %s: the body is not JSON (%s): %r"
                             % (what, e, body[:200]))
    err = _best(_validator(state, mptr + "/schema").iter_errors(data))
    if err is not None:
        err = _innermost(err)
        at = "/".join(str(p) for p in err.absolute_path) or "(the body)"
        raise AssertionError("openapi: %s: at %s: %s\nbody: %s"
                             % (what, at, _short(err.message),
                                body[:2000].decode("utf-8", "replace")))
    if state["valid_bytes"] > VALID_KEPT:
        state["valid"].clear()
        state["valid_bytes"] = 0
    state["valid"][(mptr, body)] = True
    state["valid_bytes"] += len(body)
    stats["bodies"] += 1
