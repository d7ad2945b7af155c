"""The shipped environments: ``phold_v0``, ``pcs_v0``, ``aircraft_v0``."""
