"""harvester: every coding agent's session history, captured into one bank per git repository."""

__version__ = "0.1.0"
