"""What a compaction leaves behind, and how a conversation is read to decide it.

- [`transcript`][compaction.memory.transcript]: the shape every strategy reads (system block,
  groups, turns, the task anchor, provenance in ``meta``);
- [`ledger`][compaction.memory.ledger] and [`note`][compaction.memory.note]: the one running,
  model-free record of what was removed, and the bounded text the model reads for it;
- [`facts`][compaction.memory.facts], [`shell`][compaction.memory.shell],
  [`words`][compaction.memory.words]: the readers that fill it (facts of a message, what a shell
  line reads and edits, what the person said, verbatim);
- [`trace`][compaction.memory.trace]: a cut's marker and the recall ids that get the original back.

May import the core (messages, tokens, budget, validate) and nothing above it: strategies,
summarizers, adapters, integrations and sessions read memory, never the other way round.
"""
