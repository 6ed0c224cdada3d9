"""The cycle collector paused while a round builds its large results, and the hub's heap
frozen between rounds.

A render of 10,000 clusters makes millions of containers that all stay alive (the state it
renders, the fleet status it folds), and almost none of them in reference cycles (about a
hundred objects of cyclic garbage per round). While they are being made, CPython's collector
keeps scanning them, the whole heap on each full pass: 4 s of CPU in such a first round, and
0.4 s in every other one-change round. The render, the state write (its tree build and pack:
some 400,000 objects at 10,000 clusters) and the fold therefore run with it paused; it runs
again, as usual, once they are done, and frees whatever cycles they left.

The hub pauses it for its whole round (`Hub._rounds`): a round also loads the fleet and plans
over every cluster, and what lives through a few young collections in that time counts towards
a full one. Paused, what a round drops is freed by its reference count alone; what it made
and keeps would still be scanned by a full pass of the whole heap once enough of it piled up:
at 100,000 clusters (a shard's heap of ~2 GB) that pass cost 2 s of CPU, in every second or
third one-change round. So after each round `HeapFreezer.round_done` collects only what the
round made (the young generations: cycles it left are freed) and freezes the survivors with
the rest of the heap (`gc.freeze`): later passes never scan them again. A cycle among frozen
objects that becomes garbage later (a round's result dropped by a later round) is not freed
until the heap is thawed and collected whole, which `round_done` does once every
`full_every` rounds (of every hub in the process: `HEAP`): a full pass then, as CPython would
have made on its own, but once in that many rounds instead of every few.
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


class HeapFreezer:
    """What a long-running loop calls after each of its rounds (see the module docstring)."""

    def __init__(self, *, full_every: int = 100) -> None:
        self.full_every = full_every
        self.rounds = 0            # rounds done since the heap was last collected whole
        self.full_passes = 0       # whole-heap collections made (tests, benchmarks)

    def round_done(self) -> None:
        """Collect what the round made and freeze it; every `full_every` rounds, thaw and
        collect the whole heap first. Nothing is done while the collector is paused (a
        caller inside `collector_paused` chose to keep it so)."""
        if not gc.isenabled():
            return
        self.rounds += 1
        if self.rounds >= self.full_every:
            self.rounds = 0
            self.full_passes += 1
            gc.unfreeze()
            gc.collect()
        else:
            gc.collect(1)
        gc.freeze()


HEAP = HeapFreezer()     # one per process: the heap is the process's, whatever hubs run in it
