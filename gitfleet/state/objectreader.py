"""One resident `git cat-file --batch-command` per repository and process.

The state layer reads objects and resolves revisions every round: before, each batch was a
new `git cat-file --batch[-check]` and each revision a new `git rev-parse --verify` (~2 ms of
CPU each to start, a third of the Git processes of the test suite and of an idle hub). The
`ObjectReader` keeps one `cat-file --batch-command --buffer` running and sends each batch
down its pipe, read back as the one-shot command would have printed it.

What it keeps of a process per call:
- What another process wrote is seen: Git looks up each name afresh (loose refs are read
  again, packed-refs when its stat changed) and looks for packs again when an object is not
  in the ones it knows, so a push received or a fetch is read at once.
- A hung child never wedges the caller: every exchange has the command timeout and the
  child is killed past it. A child that died (killed, crashed) is started again once for
  the same request; a second death is the caller's error (terminal or transient, as the
  command's exit says).
- One request at a time per child: a thread that finds it busy is told to run its own
  process instead (`None`), so no thread waits on another's batch.
- Never shared across fork: a forked process starts its own child. The child is closed when
  its reader is dropped or the process exits; its pipes are close-on-exec, so no other
  command inherits them.
- At most `MAX_RESIDENT` children per process (the least recently used is ended first): a
  process that opens many repositories, or drops `Git`s that a collector frees late, never
  piles up idle children.
- A child is replaced when the repository's folder was removed and made again at its path,
  and after `MAX_AGE` seconds: a pack that a `gc --auto` (run by fetch or
  receive-pack) deleted stays open in the process that mapped it, its disk space held, and
  Git's caches of the packs only grow.
- A Git older than 2.36 (no `--batch-command`) or an input the command language cannot carry
  (an empty line) falls back to a process per call (`None`).
"""

from __future__ import annotations

import os
import select
import subprocess
import tempfile
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO

_CHUNK = 1 << 16
MAX_RESIDENT = 32
MAX_AGE = 300.0


class ReaderDied(Exception):
    """The child ended twice in one request: its exit code (negative: the signal) and stderr."""

    def __init__(self, returncode: int, stderr: str) -> None:
        super().__init__(f"git cat-file ended ({returncode}): {stderr.strip()}")
        self.returncode = returncode
        self.stderr = stderr


class _Child:
    """One running `git cat-file --batch-command --buffer` and its stderr file."""

    def __init__(self, path: Path, env: Mapping[str, str]) -> None:
        self.errors: IO[bytes] = tempfile.TemporaryFile()  # noqa: SIM115 (lives with the child)
        try:
            self.proc = subprocess.Popen(
                ["git", "cat-file", "--batch-command", "--buffer"], cwd=path, env=env,
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.errors)
        except BaseException:
            self.errors.close()
            raise
        self.pid = os.getpid()          # the process that started it (fork check)
        self.since = time.monotonic()
        self.folder = _identity(path)
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.stdin, self.stdout = self.proc.stdin.fileno(), self.proc.stdout.fileno()
        os.set_blocking(self.stdin, False)

    def stderr(self) -> str:
        self.errors.seek(0)
        return self.errors.read().decode(errors="replace")

    def close(self, *, kill: bool = False) -> int | None:
        """End the child (EOF on its input, or SIGKILL) and reap it; its exit code."""
        if self.pid != os.getpid():     # a forked copy: the child is the parent's to end
            return None
        if kill:
            self.proc.kill()
        for pipe in (self.proc.stdin, self.proc.stdout):
            try:
                if pipe is not None:
                    pipe.close()
            except OSError:
                pass
        try:
            code = self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            code = self.proc.wait()
        self.errors.close()
        return code


class _Died(Exception):
    """The child's pipes closed under a request."""


def _close(holder: list[_Child]) -> None:
    """Finalizer of an ObjectReader: ends its child (at exit or when dropped)."""
    if holder:
        holder.pop().close()


class _Residents:
    """The readers of this process with a child running, least recently used first."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._readers: OrderedDict[int, weakref.ref[ObjectReader]] = OrderedDict()

    def used(self, reader: ObjectReader) -> None:
        with self._lock:
            key = id(reader)
            known = self._readers.get(key)
            if known is not None and known() is reader:
                self._readers.move_to_end(key)
                return
            self._readers.pop(key, None)        # (a reader freed before, the same id)
            self._readers[key] = weakref.ref(reader)
            excess = len(self._readers) - MAX_RESIDENT
            oldest = [self._readers.popitem(last=False)[1] for _ in range(max(0, excess))]
        for ref in oldest:
            other = ref()
            if other is not None:
                other.idle()

    def gone(self, reader: ObjectReader) -> None:
        with self._lock:
            self._readers.pop(id(reader), None)


RESIDENTS = _Residents()


class ObjectReader:
    """The resident `cat-file` of one repository (see the module docstring)."""

    def __init__(self, path: Path, env: Mapping[str, str], *, timeout: float) -> None:
        self.path = path
        self.env = env                  # (by reference: a receiving repo adds to it)
        self.timeout = timeout
        self.started = 0                # children started so far (tests, benchmarks)
        self.unsupported = False        # Git without --batch-command
        self._lock = threading.Lock()
        self._child: list[_Child] = []  # zero or one; a list so the finalizer holds no self
        weakref.finalize(self, _close, self._child)

    def request(self, names: Sequence[str], *, contents: bool) -> bytes | None:
        """What `git cat-file --batch` (contents) or `--batch-check` prints for `names`, one
        per line, in its default format; None when the caller should run its own process
        (busy with another thread, Git too old, a name the command language cannot carry).

        Raises subprocess.TimeoutExpired (the child is killed) or ReaderDied.
        """
        if self.unsupported or any(not n or "\n" in n for n in names):
            return None
        if not names:
            return b""
        if not self._lock.acquire(blocking=False):
            return None
        try:
            word = "contents" if contents else "info"
            payload = ("".join(f"{word} {n}\n" for n in names) + "flush\n").encode(
                errors="surrogateescape")
            for attempt in (1, 2):
                child = self._running()
                try:
                    return self._exchange(child, payload, len(names), contents)
                except _Died:
                    self._child.clear()
                    stderr = child.stderr()
                    code = child.close(kill=True)
                    if code == 129 and "batch-command" in stderr:
                        self.unsupported = True
                        return None
                    if attempt == 2:
                        raise ReaderDied(-9 if code is None else code, stderr) from None
            raise AssertionError("unreachable")
        finally:
            self._lock.release()

    @property
    def pid(self) -> int | None:
        """The running child's process id, if one runs (tests)."""
        child = self._child[0] if self._child else None
        return child.proc.pid if child and child.proc.poll() is None else None

    def close(self) -> None:
        """End the child now (the next request starts a new one)."""
        with self._lock:
            _close(self._child)
        RESIDENTS.gone(self)

    def idle(self) -> None:
        """End the child unless a request is using it (too many children in this process)."""
        if self._lock.acquire(blocking=False):
            try:
                _close(self._child)
            finally:
                self._lock.release()

    def _running(self) -> _Child:
        if self._child and self._child[0].pid != os.getpid():
            self._child.clear()         # inherited across fork: leave it to the parent
        if self._child and (self._child[0].proc.poll() is not None or
                            time.monotonic() - self._child[0].since > MAX_AGE or
                            _identity(self.path) != self._child[0].folder):
            self._child.pop().close()
        if not self._child:
            self._child.append(_Child(self.path, self.env))
            self.started += 1
        RESIDENTS.used(self)
        return self._child[0]

    def _exchange(self, child: _Child, payload: bytes, count: int, contents: bool) -> bytes:
        """Write the commands and read the `count` answers, both at once (the pipes are
        small), within the timeout."""
        deadline = time.monotonic() + self.timeout
        poller = select.poll()
        poller.register(child.stdout, select.POLLIN)
        poller.register(child.stdin, select.POLLOUT)
        data = memoryview(payload)
        written = 0
        out = bytearray()
        pos = done = 0
        while done < count or written < len(data):
            left = deadline - time.monotonic()
            if left <= 0:
                self._child.clear()
                child.close(kill=True)
                raise subprocess.TimeoutExpired(["git", "cat-file"], self.timeout)
            for fd, event in poller.poll(left * 1000):
                if fd == child.stdin:
                    if event & (select.POLLERR | select.POLLHUP):
                        raise _Died
                    try:
                        written += os.write(fd, data[written:written + _CHUNK])
                    except BlockingIOError:
                        continue
                    except OSError as exc:      # (EPIPE: the child is gone)
                        raise _Died from exc
                    if written == len(data):
                        poller.unregister(fd)
                    continue
                chunk = os.read(fd, _CHUNK)
                if not chunk:
                    raise _Died
                out += chunk
                while done < count:
                    nl = out.find(b"\n", pos)
                    if nl < 0:
                        break
                    end = nl + 1
                    if contents:
                        size = object_size(out[pos:nl])
                        if size is not None:
                            end += size + 1
                            if len(out) < end:
                                break
                    pos = end
                    done += 1
        if pos != len(out):
            self._child.clear()
            child.close(kill=True)
            raise ReaderDied(0, f"unexpected output of git cat-file after {count} answers")
        return bytes(out)


def _identity(path: Path) -> tuple[int, int] | None:
    """Which folder `path` is (a repository removed and made again at the same path is
    another: a child working in the old one would read what is gone)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino)


def object_size(header: bytes | bytearray) -> int | None:
    """The size in a found object's line `<id> <type> <size>` (None: missing, ambiguous)."""
    parts = header.split(b" ")
    if len(parts) == 3 and parts[2].isdigit() and len(parts[0]) in (40, 64):
        return int(parts[2])
    return None
