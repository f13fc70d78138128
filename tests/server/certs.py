"""certs.py - certificates made at test time with the openssl command: a CA,
and certificates it signs (EC P-256 keys: a fraction of a second each). The
TLS tests of the server (test_tls.py, test_cluster_tls.py) and of the Python
client (clients/python/tests/test_tls.py) make theirs with it.

Each name is a pair of files in the directory: NAME.key and NAME.pem."""
from __future__ import annotations

import os
import subprocess
from typing import Optional


def openssl(d: str, *args: str) -> None:
    subprocess.run(["openssl", *args], cwd=d, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def make_ca(d: str, name: str) -> None:
    """A self-signed CA valid two days, CN=name."""
    openssl(d, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", name + ".key", "-out", name + ".pem", "-days", "2", "-subj", "/CN=" + name)


def make_cert(d: str, name: str, ca: str, cn: Optional[str] = None, days: str = "2",
              san: Optional[str] = None) -> None:
    """A certificate for cn (default: name) signed by ca, for the names of
    san (default: localhost and 127.0.0.1); days "-1": already expired."""
    openssl(d, "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", name + ".key", "-out", name + ".csr", "-subj", "/CN=" + (cn or name))
    ext = os.path.join(d, name + ".ext")
    with open(ext, "w", encoding="ascii") as f:
        f.write("subjectAltName=%s\n" % (san or "DNS:localhost,IP:127.0.0.1"))
    openssl(d, "x509", "-req", "-in", name + ".csr", "-CA", ca + ".pem", "-CAkey", ca + ".key",
            "-days", days, "-out", name + ".pem", "-extfile", ext)
