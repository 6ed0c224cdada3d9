"""Real Git hosts on 127.0.0.1 for tests, each started and always stopped by the test:

- `HttpsGit`: nginx over TLS (a certificate of a test CA made here with `cryptography`) with
  basic auth in front of `git http-backend` (through fcgiwrap), as a company Git server or a
  GitLab behind a private CA; the user `reader` may fetch but not push (403).
- `SshGit`: OpenSSH's sshd on a high port with a host key pinned in a known_hosts file; plain
  deploy keys (`authorized_keys`) and gitolite users (forced `gitolite-shell` commands).
- gitolite with per-branch write rules (`Gitolite`), behind that sshd.
"""

from __future__ import annotations

import contextlib
import datetime
import getpass
import ipaddress
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519
from cryptography.x509.oid import NameOID

from tests.gitserver import free_port

HTTP_BACKEND = "/usr/lib/git-core/git-http-backend"
GITOLITE_SHELL = "/usr/share/gitolite3/gitolite-shell"


def have(*programs: str) -> bool:
    return all(shutil.which(p) or Path(p).exists() for p in programs)


# -- certificates --------------------------------------------------------------------------------

@dataclass(frozen=True)
class TestCA:
    cert: Path          # the CA certificate (what --git-ca-file gets)
    server_cert: Path
    server_key: Path


def make_ca(folder: Path, *, name: str = "gitfleet test CA") -> TestCA:
    """A CA and a server certificate for 127.0.0.1 and localhost, valid for a day."""
    folder.mkdir(parents=True, exist_ok=True)
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name)
          .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
          .not_valid_before(now - datetime.timedelta(minutes=5))
          .not_valid_after(now + datetime.timedelta(days=1))
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                       content_commitment=False, key_encipherment=False,
                                       data_encipherment=False, key_agreement=False,
                                       encipher_only=False, decipher_only=False), critical=True)
          .sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")]))
            .issuer_name(ca_name).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([
                x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                critical=False)
            .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]),
                           critical=False)
            .sign(ca_key, hashes.SHA256()))
    paths = TestCA(cert=folder / "ca.pem", server_cert=folder / "server.pem",
                   server_key=folder / "server.key")
    paths.cert.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    paths.server_cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    paths.server_key.write_bytes(key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption()))
    paths.server_key.chmod(0o600)
    return paths


def ssh_keypair(path: Path, comment: str = "gitfleet-test") -> str:
    """An Ed25519 key in OpenSSH format at `path` (0600); returns the public line."""
    key = ed25519.Ed25519PrivateKey.generate()
    path.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                       serialization.PrivateFormat.OpenSSH,
                                       serialization.NoEncryption()))
    path.chmod(0o600)
    public = key.public_key().public_bytes(serialization.Encoding.OpenSSH,
                                           serialization.PublicFormat.OpenSSH).decode()
    line = f"{public} {comment}"
    path.with_suffix(".pub").write_text(line + "\n")
    return line


# -- processes -----------------------------------------------------------------------------------

def _wait_port(port: int, proc: subprocess.Popen[bytes], what: str, log: Path,
               timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                text = log.read_text(errors="replace") if log.exists() else ""
                raise RuntimeError(f"{what} did not start: {text[-2000:]}") from None
            time.sleep(0.05)


def _stop(proc: subprocess.Popen[bytes] | None) -> None:
    """Stop a server started in its own session, with every child it forked (fcgiwrap's
    workers outlive their parent otherwise)."""
    if proc is None:
        return
    for sig in (signal.SIGTERM, signal.SIGKILL):   # the KILL is for what is left of the group
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            continue


def start_fcgiwrap(sock: Path, *, workers: int = 4) -> subprocess.Popen[bytes]:
    """fcgiwrap with `workers` workers listening on the unix socket `sock` (stop it with
    `_stop`)."""
    sock.parent.mkdir(parents=True, exist_ok=True)
    sock.unlink(missing_ok=True)
    proc = subprocess.Popen(["fcgiwrap", "-c", str(workers), "-s", f"unix:{sock}"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    deadline = time.monotonic() + 60
    while not sock.exists():
        if time.monotonic() > deadline or proc.poll() is not None:
            _stop(proc)
            raise RuntimeError("fcgiwrap did not start")
        time.sleep(0.02)
    return proc


def write_nginx_conf(folder: Path, http: str, *, connections: int = 64) -> None:
    """`folder`/nginx.conf: one foreground worker (at most `connections` at once), its pid,
    logs and temporary files in `folder`, and `http` (access log, servers) inside the `http`
    block."""
    (folder / "tmp").mkdir(parents=True, exist_ok=True)
    user = "user root;" if os.geteuid() == 0 else ""
    (folder / "nginx.conf").write_text(f"""
{user}
daemon off;
worker_processes 1;
pid {folder}/nginx.pid;
error_log {folder}/error.log warn;
events {{ worker_connections {connections}; }}
http {{
  client_body_temp_path {folder}/tmp/body;
  fastcgi_temp_path {folder}/tmp/fastcgi;
  proxy_temp_path {folder}/tmp/proxy;
  uwsgi_temp_path {folder}/tmp/uwsgi;
  scgi_temp_path {folder}/tmp/scgi;
{http}
}}
""")


def start_nginx(folder: Path, port: int) -> subprocess.Popen[bytes]:
    """nginx with `folder`/nginx.conf, once it listens on `port` (its errors in error.log)."""
    log = folder / "error.log"
    proc = subprocess.Popen(["nginx", "-p", str(folder), "-e", str(log), "-c",
                             str(folder / "nginx.conf")],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        _wait_port(port, proc, "nginx", log)
    except BaseException:
        _stop(proc)
        raise
    return proc


class HttpsGit:
    """nginx + fcgiwrap + git http-backend serving every repository under `base`."""

    def __init__(self, base: Path, workdir: Path, *, users: dict[str, str]) -> None:
        self.base = base
        self.dir = workdir
        self.port = free_port()
        self.ca = make_ca(workdir / "tls")
        self.users = dict(users)
        self._nginx: subprocess.Popen[bytes] | None = None
        self._fcgi: subprocess.Popen[bytes] | None = None

    def url(self, repo: str) -> str:
        return f"https://127.0.0.1:{self.port}/{repo}"

    def set_users(self, users: dict[str, str]) -> None:
        """Rewrite the password file (nginx reads it at every request: a revoked token)."""
        self.users = dict(users)
        lines = "".join(f"{u}:{{PLAIN}}{p}\n" for u, p in self.users.items())
        (self.dir / "htpasswd").write_text(lines)

    def up(self) -> None:
        d = self.dir
        (d / "tmp").mkdir(parents=True, exist_ok=True)
        self.set_users(self.users)
        sock = d / "fcgi.sock"
        self._fcgi = start_fcgiwrap(sock)
        write_nginx_conf(d, f"""
  access_log {d}/access.log;
  server {{
    listen 127.0.0.1:{self.port} ssl;
    ssl_certificate {self.ca.server_cert};
    ssl_certificate_key {self.ca.server_key};
    client_max_body_size 0;
    location / {{
      set $deny "";
      if ($arg_service = "git-receive-pack") {{ set $deny "w"; }}
      if ($uri ~ "/git-receive-pack$") {{ set $deny "w"; }}
      if ($remote_user = "reader") {{ set $deny "${{deny}}r"; }}
      if ($deny = "wr") {{ return 403; }}
      auth_basic "git";
      auth_basic_user_file {d}/htpasswd;
      include /etc/nginx/fastcgi_params;
      fastcgi_param SCRIPT_FILENAME {HTTP_BACKEND};
      fastcgi_param GIT_PROJECT_ROOT {self.base};
      fastcgi_param GIT_HTTP_EXPORT_ALL "";
      fastcgi_param PATH_INFO $uri;
      fastcgi_param REMOTE_USER $remote_user;
      fastcgi_pass unix:{sock};
    }}
  }}
""")
        try:
            self._nginx = start_nginx(d, self.port)
        except BaseException:
            self.down()
            raise

    def down(self) -> None:
        _stop(self._nginx)
        _stop(self._fcgi)
        self._nginx = self._fcgi = None


class SshGit:
    """sshd on 127.0.0.1:PORT; `authorize` adds deploy keys and gitolite users."""

    def __init__(self, workdir: Path) -> None:
        self.dir = workdir
        self.port = free_port()
        self.user = getpass.getuser()
        self.host_key = workdir / "ssh_host_ed25519_key"
        self.known_hosts = workdir / "known_hosts"
        self._entries: list[str] = []
        self._proc: subprocess.Popen[bytes] | None = None

    def url(self, path: str | Path) -> str:
        return f"ssh://{self.user}@127.0.0.1:{self.port}/{str(path).lstrip('/')}"

    def authorize(self, public_line: str, *, command: str = "") -> None:
        opts = (f'command="{command}",no-port-forwarding,no-X11-forwarding,'
                f'no-agent-forwarding,no-pty ' if command else "")
        self._entries.append(opts + public_line)
        self.dir.mkdir(parents=True, exist_ok=True)
        (self.dir / "authorized_keys").write_text("\n".join(self._entries) + "\n")

    def up(self) -> None:
        d = self.dir
        d.mkdir(parents=True, exist_ok=True)
        public = ssh_keypair(self.host_key, "host")
        self.known_hosts.write_text(f"[127.0.0.1]:{self.port} {public}\n")
        (d / "authorized_keys").write_text("\n".join(self._entries) + "\n")
        Path("/run/sshd").mkdir(exist_ok=True)   # privilege separation (Debian's sshd wants it)
        (d / "sshd_config").write_text(f"""
Port {self.port}
ListenAddress 127.0.0.1
HostKey {self.host_key}
PidFile {d}/sshd.pid
AuthorizedKeysFile {d}/authorized_keys
StrictModes no
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
UsePAM no
LogLevel ERROR
""")
        log = d / "sshd.log"
        self._proc = subprocess.Popen(["/usr/sbin/sshd", "-D", "-e", "-f", str(d / "sshd_config"),
                                       "-E", str(log)],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                      start_new_session=True)
        try:
            _wait_port(self.port, self._proc, "sshd", log)
        except BaseException:
            self.down()
            raise

    def down(self) -> None:
        _stop(self._proc)
        self._proc = None


class Gitolite:
    """A gitolite installation (its own HOME) whose users log in through `SshGit`."""

    def __init__(self, home: Path, sshd: SshGit) -> None:
        self.home = home
        self.sshd = sshd

    def env(self) -> dict[str, str]:
        return {**{k: v for k, v in os.environ.items() if not k.startswith("GIT_")},
                "HOME": str(self.home), "GIT_CONFIG_NOSYSTEM": "1"}

    def setup(self, admin_pub: Path) -> None:
        self.home.mkdir(parents=True, exist_ok=True)
        subprocess.run(["gitolite", "setup", "-pk", str(admin_pub)], env=self.env(),
                       check=True, capture_output=True)

    def user(self, name: str, public_line: str) -> None:
        """`name` logs in with this key (gitolite-shell decides what it may do)."""
        self.sshd.authorize(public_line,
                            command=f"env HOME={self.home} {GITOLITE_SHELL} {name}")

    def configure(self, conf: str) -> None:
        """Write conf/gitolite.conf and compile it (new repositories are created)."""
        (self.home / ".gitolite" / "conf" / "gitolite.conf").write_text(conf)
        for args in (["gitolite", "compile"], ["gitolite", "trigger", "POST_COMPILE"]):
            subprocess.run(args, env=self.env(), check=True, capture_output=True)
        subprocess.run(["gitolite", "setup"], env=self.env(), check=True, capture_output=True)

    def url(self, repo: str) -> str:
        return f"ssh://{self.sshd.user}@127.0.0.1:{self.sshd.port}/{repo}"

    def repo_path(self, repo: str) -> Path:
        return self.home / "repositories" / f"{repo}.git"


def grep_tree(folder: Path, needle: bytes) -> list[Path]:
    """Every file under `folder` whose bytes contain `needle`."""
    hits = []
    for path in folder.rglob("*"):
        if path.is_file() and not path.is_symlink():
            try:
                if needle in path.read_bytes():
                    hits.append(path)
            except OSError:
                continue
    return hits


def cmdlines(pids: Iterable[int] | None = None) -> list[tuple[int, bytes]]:
    """(pid, argv with NULs) of every process now running (or of `pids`)."""
    result = []
    for entry in (Path(f"/proc/{p}") for p in pids) if pids else Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            result.append((int(entry.name), (entry / "cmdline").read_bytes()))
        except OSError:
            continue
    return result
