"""Live plans: a revision of the fleet repo tried on the live clusters before it merges
(`gitfleet plan`; SEMANTICS "Plans"). `requests` renders and publishes, `answers` collects
the agents' answers and removes expired plans, `report` shows them."""
