"""allocation."""
