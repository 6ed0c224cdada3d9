"""The Git store: snapshots of the source branch, the state tree, refs, status branches."""
