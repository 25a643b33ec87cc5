"""Memory: host and device peaks of one step, their growth with batch size, and leaks
(kinds/__init__.py says which file is which)."""
