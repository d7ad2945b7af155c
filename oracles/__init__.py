"""Independent reference ports of the seer_env models (outside the package)."""
