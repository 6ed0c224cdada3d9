"""`gitfleet demo`: the whole loop on one machine — a fleet repo served by `git daemon`, a hub,
two kubesim clusters each with an agent — started, exercised and stopped in under a minute."""
