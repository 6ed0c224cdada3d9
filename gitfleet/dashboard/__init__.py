"""The fleet in a browser: a read-only dashboard over the same Git branches `gitfleet get` reads.

Served by the hub at `/` (`gitfleet hub --listen`), standalone (`gitfleet dashboard --repo R`),
or written as a static site (`--out DIR`). Data comes from gitfleet.fleetview (no second
reader), cached by commit id; every asset ships in this package (no CDN, no build step).
"""
