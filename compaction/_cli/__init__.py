"""The parts of the ``compaction`` command (entry point: [`compaction.cli.main`][]).

One module per job: ``parser`` builds the argument parser, ``errors`` maps failures to exit
codes and one-line messages, ``render`` draws tables (rich on a terminal, plain text when
piped), ``inputs`` finds, reads and writes conversation files, ``destinations`` decides where
``compact`` writes (and makes the target hold for the file written), ``batch`` runs many
files (``-j N`` worker processes) with one error policy, ``logs`` routes the library's log
lines (``-v``), ``ladder`` builds counters and ladders, and ``cmd_*`` hold one subcommand each.
"""
