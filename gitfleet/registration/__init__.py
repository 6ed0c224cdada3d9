"""Cluster registration through Git: an agent asks on `<prefix>/registrations/<name>`, the hub
answers there, and approval adds `clusters/<name>.yaml` to the source branch (at once with
`registration.approval: auto`, else through a branch to review or `gitfleet approve <name>`)."""
