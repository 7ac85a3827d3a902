"""Drop-ins for the agent frameworks and tools people already use (each an optional extra)."""
