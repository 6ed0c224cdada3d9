"""Helm charts, rendered by the hub: chart sources, an archive cache, and the real `helm template`.

The render core (gitfleet.render) never does IO; this package is what it is handed as its chart
renderer. It resolves a HelmChart's version against its source (an HTTP chart repository, an OCI
registry or a chart folder in the fleet repo), fetches each archive once and keeps it by digest
in the hub's work folder, and runs `helm template` once per distinct (archive digest, values,
capabilities), remembering the output across rounds. Credentials come from the hub's side only.
"""
