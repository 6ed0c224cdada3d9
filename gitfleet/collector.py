"""The cycle collector paused while a round builds its large results.

A render of 10,000 clusters makes millions of containers that all stay alive (the state it
renders, the fleet status it folds), and almost none of them in reference cycles (about a
hundred objects of cyclic garbage per round). While they are being made, CPython's collector
keeps scanning them, the whole heap on each full pass: 4 s of CPU in such a first round, and
0.4 s in every other one-change round. The render, the state write (its tree build and pack:
some 400,000 objects at 10,000 clusters) and the fold therefore run with it paused; it runs
again, as usual, once they are done, and frees whatever cycles they left.

The hub pauses it for its whole round (`Hub._rounds`): a round also loads the fleet and plans
over every cluster, and what lives through a few young collections in that time counts towards
a full one; in a hub shard at 20,000 clusters that made one full pass, 0.4 s, in every
one-change round. Paused, what a round drops is freed by its reference count alone and only
what it keeps is scanned once it ends (a full pass about once in a hundred rounds).
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def collector_paused() -> Iterator[None]:
    """No automatic cycle collection inside the block (nested blocks keep it paused)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
