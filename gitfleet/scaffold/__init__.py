"""The files `gitfleet init` writes: a small fleet repo with one example of each kind."""
