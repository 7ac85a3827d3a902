"""Turn latency with a slow model summary, with and without starting it in the background."""
