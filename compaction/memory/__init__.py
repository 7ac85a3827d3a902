"""What a compaction leaves behind, and how a conversation is read to decide it.

- :mod:`~compaction.memory.transcript`: the shape every strategy reads (system block, groups,
  turns, the task anchor, provenance in ``meta``);
- :mod:`~compaction.memory.ledger` and :mod:`~compaction.memory.note`: the one running,
  model-free record of what was removed, and the bounded text the model reads for it;
- :mod:`~compaction.memory.facts`, :mod:`~compaction.memory.shell`,
  :mod:`~compaction.memory.words`: the readers that fill it (facts of a message, what a shell
  line reads and edits, what the person said, verbatim);
- :mod:`~compaction.memory.trace`: a cut's marker and the recall ids that get the original back.

May import the core (messages, tokens, budget, validate) and nothing above it: strategies,
summarizers, adapters, integrations and sessions read memory, never the other way round.
"""
