"""Drop-ins for the agent frameworks people already use.

Each module here converts one framework's messages to [`Message`][compaction.messages.Message]
and back, losslessly, and calls the same [`Compactor`][compaction.trigger.Compactor] before each
model call. Each is an optional extra (``pip install 'compaction-ladder[langchain]'``, ...),
imports its framework at import time, and is never imported by the core: ``import compaction``
stays cheap.
"""
