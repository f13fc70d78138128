"""A throwaway PostgreSQL server for the tests of sluiced's PostgreSQL store
and of shared mode: a cluster made with initdb in a temporary directory,
listening on a free loopback port (and its Unix socket in the same
directory), started and stopped by the test, removed at the end.

PostgreSQL refuses to run as root. When the tests run as root, initdb and
postgres run as Debian's `postgres` user (made by the postgresql package)
through runuser, and the directory is handed to that user. The binaries come
from $PG_BINDIR, else `pg_config --bindir` when it has initdb, else the
newest /usr/lib/postgresql/*/bin.

With tls=True the server also serves TLS (ssl=on) with a certificate made at
start by the openssl command, for IP:127.0.0.1 only, signed by a CA of its
own (ca_file), so that a client can check it with sslmode=verify-full and a
wrong host (localhost) or CA is refused.

A cluster is a copy of a template that initdb made once for every test
process of the machine (TEMPLATE: a directory in the temporary directory per
PostgreSQL version and user, put in place by a rename, so that a process
sees it whole or not at all): a copy takes a fraction of initdb's time, which
about forty test processes of each CI run paid.

Waits are on the server's own answer (pg_isready), with deadlines; never on
time alone."""
import glob
import os
import pwd
import shutil
import subprocess
import tempfile

from sluiced_fixture import free_port, wait_until

READY_DEADLINE_S = 60.0  # initdb's cluster under a loaded CI machine
STOP_DEADLINE_S = 60.0
SUPERUSER = "postgres"
PASSWORD = "not-shown-anywhere"


def bindir():
    """Where initdb, postgres and pg_ctl are; raises when nowhere."""
    candidates = []
    if os.environ.get("PG_BINDIR"):
        candidates.append(os.environ["PG_BINDIR"])
    try:
        out = subprocess.run(["pg_config", "--bindir"], capture_output=True, text=True,
                             check=False)
        if out.returncode == 0:
            candidates.append(out.stdout.strip())
    except FileNotFoundError:
        pass
    candidates += sorted(glob.glob("/usr/lib/postgresql/*/bin"),
                         key=lambda p: int(p.split("/")[-2]) if p.split("/")[-2].isdigit()
                         else 0, reverse=True)
    for d in candidates:
        if os.access(os.path.join(d, "initdb"), os.X_OK) and \
                os.access(os.path.join(d, "postgres"), os.X_OK):
            return d
    raise RuntimeError("no PostgreSQL server binaries (initdb, postgres) found: "
                       "apt-get install postgresql (or run ./scripts/deps), or set PG_BINDIR")


class Postgres:
    """One throwaway cluster. start() makes and starts it; stop() stops it;
    close() stops it and removes its directory."""

    def __init__(self, settings=None, tls=False):
        self.bin = bindir()
        self.dir = tempfile.mkdtemp(prefix="sluice-pg-")
        self.data = os.path.join(self.dir, "data")
        self.log = os.path.join(self.dir, "postgres.log")
        self.port = None
        self.settings = dict(settings or {})
        self.as_user = None
        if os.geteuid() == 0:
            self.as_user = SUPERUSER
            pw = pwd.getpwnam(SUPERUSER)
            os.chown(self.dir, pw.pw_uid, pw.pw_gid)
        self.proc = None
        self.tls = tls
        self.ca_file = os.path.join(self.dir, "pg-ca.pem") if tls else None

    def _run(self, argv, **kw):
        if self.as_user:
            argv = ["runuser", "-u", self.as_user, "--"] + argv
        return subprocess.run(argv, capture_output=True, text=True, cwd=self.dir, **kw)

    def _tool(self, name):
        return os.path.join(self.bin, name)

    def _initdb(self, data):
        out = self._run([self._tool("initdb"), "-D", data, "-U", SUPERUSER, "-A", "trust",
                         "-E", "UTF8", "--no-sync"], check=False)
        if out.returncode != 0:
            raise RuntimeError("initdb failed: %s%s" % (out.stdout, out.stderr))

    def _template(self):
        """initdb's cluster, made on first use by any test process."""
        version = os.path.basename(os.path.dirname(self.bin))  # /usr/lib/postgresql/15/bin
        path = os.path.join(tempfile.gettempdir(), "sluice-pg-template-v1-%s-%s"
                            % (version, self.as_user or os.getuid()))
        if os.path.isfile(os.path.join(path, "PG_VERSION")):
            return path
        work = tempfile.mkdtemp(prefix="sluice-pg-template-", dir=self.dir)
        if self.as_user:
            pw = pwd.getpwnam(self.as_user)
            os.chown(work, pw.pw_uid, pw.pw_gid)
        self._initdb(os.path.join(work, "data"))
        try:
            os.rename(os.path.join(work, "data"), path)
        except OSError:
            pass  # another process put its own in place first
        return path

    def init(self):
        out = self._run(["cp", "-a", self._template(), self.data], check=False)
        if out.returncode != 0:
            raise RuntimeError("copying the template cluster failed: %s%s"
                               % (out.stdout, out.stderr))
        if self.tls:
            self._make_tls()

    def _make_tls(self):
        """A CA and the server's certificate (IP:127.0.0.1) in the data
        directory, owned by the server's user, its key readable by it alone."""
        def openssl(*args):
            subprocess.run(["openssl", *args], cwd=self.dir, check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]
        openssl("req", "-x509", *ec, "-keyout", "pg-ca.key", "-out", "pg-ca.pem", "-days", "2",
                "-subj", "/CN=throwaway PostgreSQL CA")
        with open(os.path.join(self.dir, "pg.ext"), "w") as f:
            f.write("subjectAltName=IP:127.0.0.1\n")
        openssl("req", *ec, "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=pg")
        openssl("x509", "-req", "-in", "server.csr", "-CA", "pg-ca.pem", "-CAkey", "pg-ca.key",
                "-days", "2", "-out", "server.crt", "-extfile", "pg.ext")
        for name in ("server.crt", "server.key"):
            dst = os.path.join(self.data, name)
            shutil.move(os.path.join(self.dir, name), dst)
            os.chmod(dst, 0o600)
            if self.as_user:
                pw = pwd.getpwnam(self.as_user)
                os.chown(dst, pw.pw_uid, pw.pw_gid)
        self.settings.setdefault("ssl", "on")

    def start(self):
        """Makes the cluster on first use, then starts it on a free port and
        waits until it accepts connections."""
        if not os.path.isdir(self.data):
            self.init()
        self.port = self.port or free_port()
        opts = ["-c", "listen_addresses=127.0.0.1", "-c", "port=%d" % self.port,
                "-c", "unix_socket_directories=%s" % self.dir, "-c", "max_connections=200"]
        for k, v in self.settings.items():
            opts += ["-c", "%s=%s" % (k, v)]
        out = self._run([self._tool("pg_ctl"), "-D", self.data, "-l", self.log, "-w",
                         "-t", str(int(READY_DEADLINE_S)), "-o", " ".join(opts), "start"],
                        check=False)
        if out.returncode != 0:
            raise RuntimeError("postgres did not start: %s%s\n%s"
                               % (out.stdout, out.stderr, self.log_tail()))
        wait_until(self.ready, READY_DEADLINE_S, poll_s=0.05, what="PostgreSQL accepting")
        return self

    def ready(self):
        out = subprocess.run([self._tool("pg_isready"), "-h", "127.0.0.1", "-p", str(self.port),
                              "-U", SUPERUSER], capture_output=True, text=True, check=False)
        return out.returncode == 0

    def url(self, db="postgres"):
        """A libpq URI for sluiced's --store. It carries a password (the
        cluster trusts local connections and never asks for it) so that the
        tests see that sluiced shows it nowhere."""
        return "postgres://%s:%s@127.0.0.1:%d/%s" % (SUPERUSER, PASSWORD, self.port, db)

    def psql(self, sql, db="postgres"):
        """Runs sql with psql; returns its unaligned, tuples-only output."""
        out = subprocess.run([self._tool("psql"), "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1",
                              "-h", "127.0.0.1", "-p", str(self.port), "-U", SUPERUSER,
                              "-d", db, "-c", sql],
                             capture_output=True, text=True, check=False)
        if out.returncode != 0:
            raise RuntimeError("psql failed (%s): %s" % (sql, out.stderr.strip()))
        return out.stdout.strip()

    def stop(self, mode="fast"):
        """pg_ctl stop -m fast (clean) or immediate (as a crash)."""
        if not os.path.isfile(os.path.join(self.data, "postmaster.pid")):
            return
        out = self._run([self._tool("pg_ctl"), "-D", self.data, "-m", mode, "-w",
                         "-t", str(int(STOP_DEADLINE_S)), "stop"], check=False)
        if out.returncode != 0:
            raise RuntimeError("postgres did not stop: %s%s" % (out.stdout, out.stderr))

    def restart(self, mode="immediate"):
        """Stops (immediate: as a crash) and starts again on the same port."""
        self.stop(mode)
        return self.start()

    def log_tail(self, n=4000):
        try:
            with open(self.log, errors="replace") as f:
                return f.read()[-n:]
        except OSError:
            return ""

    def close(self):
        try:
            self.stop("immediate")
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.close()
