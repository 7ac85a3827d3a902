"""A real, throwaway PostgreSQL server for the tests: ``initdb`` + ``pg_ctl`` in a temp dir.

PostgreSQL refuses to run as root, so as root (CI) the server runs as an unprivileged user
(``nobody``) through ``runuser``/``setpriv`` in a directory owned by that user. It listens
on 127.0.0.1 on a free port with trust authentication (nothing else can reach it) and is
stopped and removed at the end. When no PostgreSQL can be had, :func:`unavailable` says why.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

__all__ = ["PgBouncer", "PostgresServer", "pgbouncer_unavailable", "unavailable"]

USER = "compaction"


def _tool(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    # Debian's packages keep the binaries out of PATH.
    for base in sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True):
        if (base / name).is_file():
            return str(base / name)
    return None


def unavailable() -> str | None:
    """Why no server can be started here (None when one can)."""
    for name in ("initdb", "pg_ctl"):
        if _tool(name) is None:
            return f"PostgreSQL is not installed ({name} not found on PATH or /usr/lib/postgresql)"
    try:
        import psycopg  # noqa: F401
    except ImportError:
        return "psycopg is not installed (pip install 'compaction-ladder[postgres]')"
    if os.geteuid() == 0:
        try:
            pwd.getpwnam("nobody")
        except KeyError:
            return "running as root and there is no 'nobody' user to run PostgreSQL as"
        if not (shutil.which("runuser") or shutil.which("setpriv")):
            return "running as root without runuser/setpriv to drop privileges for PostgreSQL"
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class PostgresServer:
    """One server: ``start()``, ``url``, ``restart()``, ``stop()``."""

    def __init__(self, *, fsync: bool = False) -> None:
        # fsync off by default: the tests restart and kill, they never cut the power.
        self.fsync = fsync
        self.base = Path(tempfile.mkdtemp(prefix="compaction-pg-"))
        self.data = self.base / "data"
        self.log = self.base / "server.log"
        self.port = _free_port()
        self._as: list[str] = []
        if os.geteuid() == 0:
            nobody = pwd.getpwnam("nobody")
            os.chown(self.base, nobody.pw_uid, nobody.pw_gid)
            if shutil.which("runuser"):
                self._as = ["runuser", "-u", "nobody", "--"]
            else:
                self._as = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]
        os.chmod(self.base, 0o700)

    @property
    def url(self) -> str:
        return f"postgresql://{USER}@127.0.0.1:{self.port}/postgres"

    def _run(self, *argv: str, timeout: float = 120) -> None:
        env = {**os.environ, "LC_ALL": "C", "HOME": str(self.base)}
        out = subprocess.run(
            [*self._as, *argv],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=env,
            cwd=self.base,
            check=False,
        )
        if out.returncode != 0:
            log = self.log.read_text(errors="replace") if self.log.exists() else ""
            raise RuntimeError(
                f"{' '.join(argv[:2])} failed ({out.returncode}): {out.stderr}{out.stdout}{log}"
            )

    def start(self) -> PostgresServer:
        self._run(
            str(_tool("initdb")),
            "-D",
            str(self.data),
            "-U",
            USER,
            "--auth=trust",
            "-E",
            "UTF8",
            "--no-sync",
        )
        self._pg_ctl("start")
        return self

    def _pg_ctl(self, action: str, *extra: str) -> None:
        options = (
            f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.base} "
            f"-c fsync={'on' if self.fsync else 'off'} -c max_connections=200"
        )
        self._run(
            str(_tool("pg_ctl")),
            action,
            "-D",
            str(self.data),
            "-l",
            str(self.log),
            "-o",
            options,
            "-w",
            "-t",
            "60",
            *extra,
        )

    def restart(self) -> None:
        """Stop the server (fast: open connections are cut) and start it again."""
        self._pg_ctl("restart", "-m", "fast")

    def stop_only(self) -> None:
        self._pg_ctl("stop", "-m", "fast")

    def start_again(self) -> None:
        self._pg_ctl("start")

    def stop(self) -> None:
        with contextlib.suppress(RuntimeError, subprocess.TimeoutExpired):
            self._run(str(_tool("pg_ctl")), "stop", "-D", str(self.data), "-m", "immediate")
        shutil.rmtree(self.base, ignore_errors=True)

    def wait_ready(self, timeout: float = 30) -> None:
        import psycopg

        deadline = time.monotonic() + timeout
        while True:
            try:
                psycopg.connect(self.url, connect_timeout=2).close()
                return
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)


def pgbouncer_unavailable() -> str | None:
    """Why no PgBouncer can be started here (None when one can)."""
    if shutil.which("pgbouncer") is None and not Path("/usr/sbin/pgbouncer").is_file():
        return "PgBouncer is not installed (apt-get install pgbouncer)"
    return None


class PgBouncer:
    """PgBouncer in transaction pooling mode in front of ``server``: ``start()``, ``url``,
    ``stop()``. Consecutive transactions of one client land on different server connections,
    so nothing may outlive a transaction (prepared statements, session settings)."""

    def __init__(self, server: PostgresServer) -> None:
        self.server = server
        self.base = server.base / "pgbouncer"
        self.port = _free_port()
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"postgresql://{USER}@127.0.0.1:{self.port}/postgres"

    def url_for(self, database_url: str) -> str:
        """``database_url`` (a database on the server) through this PgBouncer."""
        return self.url.rsplit("/", 1)[0] + "/" + database_url.rsplit("/", 1)[1]

    def start(self) -> PgBouncer:
        self.base.mkdir()
        (self.base / "users.txt").write_text(f'"{USER}" ""\n')
        config = self.base / "pgbouncer.ini"
        config.write_text(
            "[databases]\n"
            f"* = host=127.0.0.1 port={self.server.port}\n"
            "[pgbouncer]\n"
            f"listen_addr = 127.0.0.1\nlisten_port = {self.port}\nunix_socket_dir =\n"
            f"auth_type = trust\nauth_file = {self.base / 'users.txt'}\n"
            "pool_mode = transaction\nmax_client_conn = 400\ndefault_pool_size = 20\n"
            f"logfile = {self.base / 'pgbouncer.log'}\n"
        )
        if os.geteuid() == 0:
            nobody = pwd.getpwnam("nobody")
            for path in (self.base, *self.base.iterdir()):
                os.chown(path, nobody.pw_uid, nobody.pw_gid)
        binary = shutil.which("pgbouncer") or "/usr/sbin/pgbouncer"
        argv = [binary, str(config)]
        if os.geteuid() == 0:
            argv = [binary, "-u", "nobody", str(config)]
        self._proc = subprocess.Popen(
            argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=self.base
        )
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return self
            except OSError:
                if self._proc.poll() is not None or time.monotonic() > deadline:
                    log = self.base / "pgbouncer.log"
                    raise RuntimeError(
                        "pgbouncer did not start: "
                        + (log.read_text(errors="replace") if log.exists() else "")
                    ) from None
                time.sleep(0.05)

    def stop(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.kill()  # a throwaway pooler: nothing to wind down
            self._proc.wait()
