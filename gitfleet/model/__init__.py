"""The kinds gitfleet reads and writes: parsing, JSON Schema validation, typed objects."""
