"""A progress line on stderr for the commands that can take a while (render, diff).

It appears only when stderr is a terminal and only once the work has lasted `after` seconds
(2 s): quick commands, pipes, logs and CI output stay free of it. The render is one call
with no known fraction done, so the line shows what runs and for how long; it is erased when
the work ends.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TextIO

FRAMES = "|/-\\"


@contextmanager
def progress(label: str, *, stream: TextIO | Any, after: float = 2.0,
             every: float = 0.2) -> Iterator[None]:
    """Show `label … 3.4s` on `stream` (a terminal) while the block runs past `after`."""
    isatty = getattr(stream, "isatty", None)
    if not (callable(isatty) and isatty()):
        yield
        return
    done = threading.Event()
    shown = threading.Event()
    started = time.monotonic()

    def draw() -> None:
        if done.wait(after):
            return
        frame = 0
        while not done.is_set():
            elapsed = time.monotonic() - started
            stream.write(f"\r{FRAMES[frame % len(FRAMES)]} {label} {elapsed:.1f}s")
            stream.flush()
            shown.set()
            frame += 1
            done.wait(every)

    thread = threading.Thread(target=draw, name="gitfleet-progress", daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join(timeout=5)
        if shown.is_set():
            stream.write("\r\033[K")  # erase the line
            stream.flush()
