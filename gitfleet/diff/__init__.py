"""Pull-request review: what a change of the fleet repo does to every cluster."""
