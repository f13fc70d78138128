"""TLS for the client: which CA and client certificate to use, the ``ssl.SSLContext`` made
of them, and what a failed handshake means in words.

The files follow the ``sluice`` command's rules (docs/cli.md): each argument, else its
environment variable (``SLUICE_CACERT``, ``SLUICE_CERT``, ``SLUICE_KEY``; an empty one counts
as unset); a key needs its certificate; without a key, the key is read from the
certificate's file; with a CA file, the server's certificate is checked against that file
alone, else against the system's CAs.
"""
from __future__ import annotations

import os
import ssl
from typing import Mapping, NamedTuple, Optional, Tuple

#: Each argument's environment variable, as the ``sluice`` command reads them.
ENV = {"cafile": "SLUICE_CACERT", "certfile": "SLUICE_CERT", "keyfile": "SLUICE_KEY"}

# Alerts a server sends when it refuses the client's certificate (or its lack of one).
_REFUSED_ALERTS = {
    "TLSV13_ALERT_CERTIFICATE_REQUIRED": "it asks for a client certificate",
    "SSLV3_ALERT_HANDSHAKE_FAILURE": "it refused the handshake",
    "SSLV3_ALERT_BAD_CERTIFICATE": "it refused the client certificate",
    "TLSV1_ALERT_UNKNOWN_CA": "the client certificate is not of a CA it trusts",
    "SSLV3_ALERT_CERTIFICATE_EXPIRED": "the client certificate has expired",
    "SSLV3_ALERT_CERTIFICATE_UNKNOWN": "it refused the client certificate",
    "SSLV3_ALERT_UNSUPPORTED_CERTIFICATE": "it refused the client certificate",
    "TLSV1_ALERT_ACCESS_DENIED": "it refused the client certificate",
    "SSLV3_ALERT_CERTIFICATE_REVOKED": "the client certificate is revoked",
}
# What a TLS client reads from a server that answers in plain HTTP.
_NOT_TLS = {"WRONG_VERSION_NUMBER", "RECORD_LAYER_FAILURE", "PACKET_LENGTH_TOO_LONG",
            "HTTP_REQUEST", "UNKNOWN_PROTOCOL"}


class TLSFiles(NamedTuple):
    """The TLS files in use, each with where it came from (``cafile=`` or ``$SLUICE_CACERT``)."""

    cafile: Optional[str]
    certfile: Optional[str]
    keyfile: Optional[str]
    origin: Mapping[str, str]

    def named(self, what: str) -> str:
        """``/path (from cafile=)``: a file as a message names it."""
        return f"{getattr(self, what)} (from {self.origin[what]})"


def tls_files(cafile: Optional[str], certfile: Optional[str], keyfile: Optional[str],
              environ: Mapping[str, str] = os.environ) -> TLSFiles:
    """The files to use: each argument, else its variable. Raises :class:`ValueError` for a
    key without its certificate, as the ``sluice`` command does."""
    given = {"cafile": cafile, "certfile": certfile, "keyfile": keyfile}
    values: dict[str, Optional[str]] = {}
    origin: dict[str, str] = {}
    for name, value in given.items():
        if value:
            values[name], origin[name] = os.fspath(value), f"{name}="
        else:
            values[name], origin[name] = environ.get(ENV[name]) or None, f"${ENV[name]}"
    files = TLSFiles(values["cafile"], values["certfile"], values["keyfile"], origin)
    if files.keyfile and not files.certfile:
        raise ValueError(f"a client key needs its certificate: the key {files.named('keyfile')} "
                         f"was given without certfile= (or $SLUICE_CERT)")
    return files


def make_context(files: TLSFiles) -> ssl.SSLContext:
    """An ``ssl.SSLContext`` that checks the server's certificate and name, and presents the
    client certificate if there is one. Raises :class:`ValueError` naming the file that
    cannot be read and why."""
    try:
        ctx = ssl.create_default_context(cafile=files.cafile)
    except (OSError, ssl.SSLError) as e:
        raise ValueError(f"cannot read the CA file {files.named('cafile')}: {_why(e)}; "
                         f"give a PEM file of the CA certificates that signed the "
                         f"server's certificate") from None
    if files.certfile:
        try:
            ctx.load_cert_chain(files.certfile, files.keyfile)
        except (OSError, ssl.SSLError) as e:
            key = f"the key {files.named('keyfile')}" if files.keyfile else "its key in that file"
            raise ValueError(f"cannot read the client certificate {files.named('certfile')} "
                             f"with {key}: {_why(e)}; give the PEM certificate and the "
                             f"private key that belongs to it") from None
    return ctx


def _why(e: BaseException) -> str:
    if isinstance(e, ssl.SSLError) and e.reason:
        return e.reason.replace("_", " ").lower()
    if isinstance(e, OSError) and e.strerror:
        return e.strerror
    return str(e)


def explain(e: BaseException, server: str, files: Optional[TLSFiles]) -> Optional[Tuple[str, str]]:
    """``(code, message)`` for a TLS failure that trying again cannot mend (a certificate
    refused either way, a server that does not speak TLS), else ``None``: a connection
    closed in the middle of a handshake is the failover's to retry. ``files`` is ``None``
    when the caller gave its own ``ssl_context``."""
    if isinstance(e, ssl.SSLCertVerificationError):
        return "tls_verify", _verify_message(e, server, files)
    if not isinstance(e, ssl.SSLError) or isinstance(
            e, (ssl.SSLEOFError, ssl.SSLZeroReturnError, ssl.SSLSyscallError)):
        return None
    reason = e.reason or ""
    if reason in _REFUSED_ALERTS:
        return "tls_refused", _refused_message(reason, server, files)
    if reason in _NOT_TLS:
        return "tls_protocol", (f"{server} does not answer in TLS ({reason.lower()}): "
                                f"is it served over plain HTTP? then use an http:// URL")
    return "tls_handshake", f"the TLS handshake with {server} failed: {reason or e}"


def _verify_message(e: ssl.SSLCertVerificationError, server: str,
                    files: Optional[TLSFiles]) -> str:
    what = e.verify_message or e.reason or str(e)
    head = f"the certificate of {server} was not accepted: {what}"
    if "hostname mismatch" in what.lower() or "ip address mismatch" in what.lower():
        return (f"{head}; connect with a name or address its certificate holds "
                f"(its subjectAltName)")
    if files is None:
        return f"{head}; it was checked against the CAs of the ssl_context given"
    if files.cafile:
        return (f"{head}; it was checked against the CA file {files.named('cafile')}: give "
                f"the CA that signed the server's certificate")
    return (f"{head}; it was checked against the system's CAs: give the CA that signed the "
            f"server's certificate with cafile= or $SLUICE_CACERT")


def _refused_message(reason: str, server: str, files: Optional[TLSFiles]) -> str:
    head = f"{server} refused this client in the TLS handshake"
    if files is None:
        return f"{head}: {_REFUSED_ALERTS[reason]} (with the ssl_context given)"
    if not files.certfile:
        return (f"{head}: it asks for a client certificate and none was given; give certfile= "
                f"and keyfile= ($SLUICE_CERT, $SLUICE_KEY), a certificate signed by a CA of "
                f"the server's tls.client_ca")
    return (f"{head}: {_REFUSED_ALERTS[reason]} ({files.named('certfile')}); give a "
            f"certificate signed by a CA of the server's tls.client_ca, within its dates")
