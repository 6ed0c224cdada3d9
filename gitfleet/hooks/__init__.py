"""Scoped writes for self-hosted Git: a pre-receive hook that lets each writer push only the
branches that are its own, signed with its own key (`gitfleet hooks install BARE_REPO`)."""
